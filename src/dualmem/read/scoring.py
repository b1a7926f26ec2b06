"""The scoring maths of the evidence loop (paper §3.3 eq. 21-25) as pure functions.

``read/loop.py`` only orchestrates: it asks the controller, then calls these. Everything here is
deterministic arithmetic on numbers and plain data, golden-tested against the paper's formulas and
property-tested. Where dualmem goes beyond the paper (the superseded demotion, the hop decay, the
expansion priors and room, K-fill) the knob is a named ``ReadProfile`` field; see
``dualmem.config.EXTENSIONS``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dualmem.config import Lambdas
from dualmem.read.trace import Assessment, StopReason
from dualmem.types import Edge, Evidence

__all__ = [
    "ExpansionOption",
    "Judgement",
    "anchor_fill",
    "demote_superseded",
    "expansion_prior",
    "expansion_room",
    "graph_need",
    "hop_decayed",
    "pick_expansion",
    "recency",
    "recency_adjusted",
    "stop_reason",
    "transition",
    "view_quotas",
]

_DAY_S = 86_400.0


# -- stopping (eq. 21-22) ------------------------------------------------------------------------


def stop_reason(a: Assessment, *, theta_suff: float, theta_cont: float) -> StopReason | None:
    """Eq. 21: s_d >= θ_suff ∧ m_d < θ_cont ∧ c_d < θ_cont -> "sufficient".

    Eq. 22: u_d < θ_cont -> "no_gain". Otherwise ``None`` (continue).
    """
    if a.sufficient >= theta_suff and a.missing < theta_cont and a.contradiction < theta_cont:
        return "sufficient"
    if a.continue_useful < theta_cont:
        return "no_gain"
    return None


# -- transition score (eq. 23-25) ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Judgement:
    """The four System-One scores of one candidate (B.4): a_v, ℓ_v, n_v, c_v."""

    relevance: float
    relation_usefulness: float
    new_information: float
    support: float


def transition(*, z: float, j: Judgement, p_g: float, pi_e: float, lam: Lambdas) -> float:
    """Eq. 23: [λ1 z + λ2 a + λ3 p_g ℓ + λ4 n + λ5 (π_e + c)/2] / Σλ."""
    total = (
        lam.similarity * z
        + lam.relevance * j.relevance
        + lam.relation * p_g * j.relation_usefulness
        + lam.novelty * j.new_information
        + lam.support * (pi_e + j.support) / 2.0
    )
    return total / lam.total()


def recency(now: dt.datetime | None, at: dt.datetime | None) -> float | None:
    """Eq. 24: ρ_v = 1 / (1 + max(0, τ* − τ_v) / day); ``None`` when either time is unknown."""
    if now is None or at is None:
        return None
    return 1.0 / (1.0 + max(0.0, (now - at).total_seconds()) / _DAY_S)


def recency_adjusted(s: float, r: float, rho: float | None, *, weight: float) -> float:
    """Eq. 25: (s + w·r·ρ) / (1 + w·r), w = 0.1 in the paper; unchanged without a timestamp."""
    w = weight * r
    if w <= 0 or rho is None:
        return s
    return (s + w * rho) / (1.0 + w)


def demote_superseded(s: float, *, superseded: bool, asks_past: bool, factor: float | None) -> float:
    """dualmem extension: a superseded fact scores ``factor`` × s unless the query asks about the past.

    ``factor`` ``None`` disables the demotion (the paper has none).
    """
    if factor is None or not superseded or asks_past:
        return s
    return s * factor


def hop_decayed(s: float, *, hops: int, decay: float) -> float:
    """dualmem extension: ``s · decay^hops`` for a node reached over edges (1.0 = the paper)."""
    return s * decay**hops


def graph_need(view: str, need: Mapping[str, float], active: Sequence[str]) -> float:
    """p_g(q) of the graph that reached a candidate; an RRF anchor (no graph) takes the best active need."""
    if view in need:
        return need[view]
    return max((need[g] for g in active), default=1.0)


# -- expansion (budgets b_g, global limits) ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExpansionOption:
    """A neighbour reachable over one inspected edge, with its expansion prior."""

    node_id: str  # the neighbour
    edge: Edge  # the inspected edge that reaches it
    prior: float  # weight × p_g(q): the order in which neighbours are taken
    weight: float  # π_e × reach: what the candidate carries as its edge weight

    @property
    def view(self) -> str:
        return self.edge.view


def expansion_prior(
    *, source_score: float | None, top: float, edge_weight: float, need: float
) -> tuple[float, float]:
    """dualmem's expansion prior: (π_e · reach · p_g, π_e · reach), reach = source score / best score.

    Support flows along the path: an edge from a weak node supports its neighbour less. A source
    that is not yet evidence (an anchor seeding round 1) has reach 1.
    """
    reach = source_score / top if source_score is not None and top > 0 else 1.0
    weight = edge_weight * reach
    return weight * need, weight


def expansion_room(*, max_visited: int, visited: int, beam: int, factor: int) -> int:
    """Neighbours one round may propose: ``factor`` × W, within the visited-node limit."""
    return min(max_visited - visited, factor * beam)


def view_quotas(room: int, budgets: Mapping[str, int]) -> dict[str, int]:
    """Each open view's share of a round's room, in proportion to its remaining budget (at least 1)."""
    total = sum(budgets.values())
    if total <= 0:
        return {}
    return {g: max(1, round(room * b / total)) for g, b in budgets.items()}


def pick_expansion(
    options: Sequence[ExpansionOption], *, room: int, budgets: Mapping[str, int]
) -> tuple[list[ExpansionOption], dict[str, int]]:
    """The best options by prior within the room, the views' quotas and remaining budgets b_g.

    Returns the picked options (one per node) and the budgets left; every pick spends one unit of
    its view's budget.
    """
    left = dict(budgets)
    open_views = {g: b for g, b in left.items() if b > 0}
    quota = view_quotas(room, open_views)
    picked: dict[str, ExpansionOption] = {}
    for opt in sorted(options, key=lambda o: (-o.prior, o.node_id, o.edge.view, o.edge.label)):
        if len(picked) >= room:
            break
        g = opt.view
        if opt.node_id in picked or quota.get(g, 0) <= 0 or left.get(g, 0) <= 0:
            continue
        quota[g] -= 1
        left[g] -= 1
        picked[opt.node_id] = opt
    return list(picked.values()), left


# -- the K passed to System Two ------------------------------------------------------------------


def anchor_fill(
    ranked: Sequence[Evidence], fused: Sequence[tuple[str, float]], k: int
) -> list[tuple[str, float]]:
    """RRF anchors for the slots ``ranked`` leaves of K, scored below everything ranked.

    Each gets ``floor · s / s_top`` where floor is the lowest ranked score (1.0 if none).
    """
    if len(ranked) >= k or not fused:
        return []
    seen = {e.node.id for e in ranked}
    more = [(i, s) for i, s in fused if i not in seen][: k - len(ranked)]
    floor = min((e.score for e in ranked), default=1.0)
    top = fused[0][1]
    return [(i, floor * s / top) for i, s in more]

"""The evidence-loop maths (dualmem.read.scoring): golden cases worked by hand from the paper's
formulas (§3.3 eq. 21-25) and Hypothesis properties."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dualmem.config import EXTENSIONS, Lambdas, Profile
from dualmem.read import scoring
from dualmem.read.scoring import ExpansionOption, Judgement
from dualmem.read.trace import Assessment
from dualmem.types import Edge, Evidence, Node, Tenant

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
T = dt.datetime(2024, 5, 16, 10, tzinfo=dt.UTC)


def node(i: str, at: dt.datetime | None = None) -> Node:
    return Node(id=i, tenant=Tenant("u"), content=i, at=at)


def ev(i: str, score: float) -> Evidence:
    return Evidence(node(i), score)


# -- eq. 21-22 -------------------------------------------------------------------------------------


def stop(s: float, u: float, m: float, c: float) -> str | None:
    return scoring.stop_reason(Assessment(s, u, m, c), theta_suff=0.95, theta_cont=0.15)


def test_stop_rule_golden() -> None:
    assert stop(0.95, 0.9, 0.14, 0.14) == "sufficient"  # s >= θ_suff (equality counts), m, c < θ_cont
    assert stop(0.99, 0.9, 0.0, 0.0) == "sufficient"
    assert stop(0.99, 0.9, 0.5, 0.0) is None  # missing evidence above θ_cont blocks eq. 21
    assert stop(0.50, 0.15, 0.0, 0.0) is None  # eq. 22 is strict: u_d = θ_cont continues
    assert stop(0.96, 0.9, 0.10, 0.20) is None  # an unresolved contradiction blocks eq. 21
    assert stop(0.96, 0.9, 0.15, 0.10) is None  # missing evidence at θ_cont blocks eq. 21
    assert stop(0.94, 0.9, 0.0, 0.0) is None
    assert stop(0.50, 0.14, 0.9, 0.9) == "no_gain"  # eq. 22
    assert stop(0.96, 0.10, 0.10, 0.50) == "no_gain"  # not sufficient (conflict) but no gain


@given(unit, unit, unit, unit)
def test_stop_rule_is_eq_21_or_22(s: float, u: float, m: float, c: float) -> None:
    got = stop(s, u, m, c)
    if s >= 0.95 and m < 0.15 and c < 0.15:
        assert got == "sufficient"
    elif u < 0.15:
        assert got == "no_gain"
    else:
        assert got is None


# -- eq. 23 --------------------------------------------------------------------------------------


def test_transition_golden() -> None:
    j = Judgement(relevance=0.9, relation_usefulness=0.6, new_information=0.4, support=0.3)
    # [0.8 + 0.9 + 0.5*0.6 + 0.4 + (0.7 + 0.3)/2] / 5 = 2.9 / 5
    assert scoring.transition(z=0.8, j=j, p_g=0.5, pi_e=0.7, lam=Lambdas()) == pytest.approx(0.58)
    lam = Lambdas(similarity=2.0)  # [1.6 + 0.9 + 0.3 + 0.4 + 0.5] / 6
    assert scoring.transition(z=0.8, j=j, p_g=0.5, pi_e=0.7, lam=lam) == pytest.approx(3.7 / 6)
    # λ5 weighs the mean of π_e and c_v; λ3 weighs p_g(q) ℓ_v
    only_support = Lambdas(similarity=0, relevance=0, relation=0, novelty=0, support=1)
    assert scoring.transition(z=0.8, j=j, p_g=0.5, pi_e=0.7, lam=only_support) == pytest.approx(0.5)
    only_rel = Lambdas(similarity=0, relevance=0, relation=1, novelty=0, support=0)
    assert scoring.transition(z=0.8, j=j, p_g=0.5, pi_e=0.7, lam=only_rel) == pytest.approx(0.3)


@given(unit, unit, unit, unit, unit, unit, unit)
def test_transition_is_a_convex_combination(
    z: float, a: float, rel: float, nov: float, sup: float, p_g: float, pi_e: float
) -> None:
    s = scoring.transition(z=z, j=Judgement(a, rel, nov, sup), p_g=p_g, pi_e=pi_e, lam=Lambdas())
    assert 0.0 <= s <= 1.0 + 1e-12
    higher = scoring.transition(z=z, j=Judgement(a, rel, nov, sup), p_g=1.0, pi_e=pi_e, lam=Lambdas())
    assert higher >= s - 1e-12  # a more needed graph never lowers the score


# -- eq. 24-25 -------------------------------------------------------------------------------------


def test_recency_golden() -> None:
    assert scoring.recency(T, T - dt.timedelta(days=2)) == pytest.approx(1 / 3)
    assert scoring.recency(T, T + dt.timedelta(days=5)) == 1.0  # max(0, ·): a newer memory is not boosted
    assert scoring.recency(None, T) is None
    assert scoring.recency(T, None) is None
    # (0.58 + 0.1 * 0.5 * 1/3) / (1 + 0.1 * 0.5)
    expected = (0.58 + 0.05 / 3) / 1.05
    assert scoring.recency_adjusted(0.58, 0.5, 1 / 3, weight=0.1) == pytest.approx(expected)
    assert scoring.recency_adjusted(0.58, 0.0, 1 / 3, weight=0.1) == 0.58  # r(q) = 0: unchanged
    assert scoring.recency_adjusted(0.58, 0.5, None, weight=0.1) == 0.58  # no timestamp: unchanged


@given(unit, unit, unit)
def test_recency_adjustment_stays_between_score_and_rho(s: float, r: float, rho: float) -> None:
    out = scoring.recency_adjusted(s, r, rho, weight=0.1)
    assert min(s, rho) - 1e-12 <= out <= max(s, rho) + 1e-12


# -- extensions: demotion, hop decay, graph need ---------------------------------------------------


def test_superseded_demotion_and_hop_decay_golden() -> None:
    assert scoring.demote_superseded(0.6, superseded=True, asks_past=False, factor=0.5) == 0.3
    assert scoring.demote_superseded(0.6, superseded=True, asks_past=True, factor=0.5) == 0.6
    assert scoring.demote_superseded(0.6, superseded=False, asks_past=False, factor=0.5) == 0.6
    assert scoring.demote_superseded(0.6, superseded=True, asks_past=False, factor=None) == 0.6
    assert scoring.hop_decayed(0.5, hops=2, decay=0.8) == pytest.approx(0.32)
    assert scoring.hop_decayed(0.5, hops=0, decay=0.8) == 0.5
    need = {"semantic": 0.7, "temporal": 0.2, "causal": 0.9}
    assert scoring.graph_need("temporal", need, ["semantic", "causal"]) == 0.2
    assert scoring.graph_need("anchor", need, ["semantic", "temporal"]) == 0.7  # best active need
    assert scoring.graph_need("anchor", {}, []) == 1.0


# -- expansion -------------------------------------------------------------------------------------


def test_expansion_prior_golden() -> None:
    # reach = 0.4 / 0.8; weight = 0.9 * 0.5; prior = weight * p_g
    prior, weight = scoring.expansion_prior(source_score=0.4, top=0.8, edge_weight=0.9, need=0.5)
    assert (prior, weight) == pytest.approx((0.225, 0.45))
    assert scoring.expansion_prior(source_score=None, top=0.8, edge_weight=0.9, need=0.5) == pytest.approx(
        (0.45, 0.9)
    )
    assert scoring.expansion_room(max_visited=60, visited=10, beam=10, factor=2) == 20
    assert scoring.expansion_room(max_visited=60, visited=55, beam=10, factor=2) == 5
    assert scoring.view_quotas(20, {"semantic": 30, "temporal": 10}) == {"semantic": 15, "temporal": 5}
    assert scoring.view_quotas(20, {"semantic": 100, "temporal": 1}) == {"semantic": 20, "temporal": 1}


def opt(i: str, view: str, prior: float) -> ExpansionOption:
    label = {"semantic": "related", "temporal": "before", "causal": "causes", "entity": "shared_entity"}[view]
    return ExpansionOption(i, Edge("src", i, view, label, 1.0), prior, prior)  # type: ignore[arg-type]


def test_pick_expansion_spends_the_view_budgets() -> None:
    options = [opt("a", "semantic", 0.9), opt("b", "semantic", 0.8), opt("c", "temporal", 0.1)]
    picked, left = scoring.pick_expansion(options, room=10, budgets={"semantic": 1, "temporal": 5})
    assert [o.node_id for o in picked] == ["a", "c"]  # semantic's budget of 1 allows one pick
    assert left == {"semantic": 0, "temporal": 4}
    again, left2 = scoring.pick_expansion(options, room=10, budgets=left)
    assert [o.node_id for o in again] == ["c"]
    assert left2 == {"semantic": 0, "temporal": 3}


@given(
    st.lists(
        st.tuples(st.sampled_from("abcdefgh"), st.sampled_from(["semantic", "temporal"]), unit), max_size=30
    ),
    st.integers(min_value=0, max_value=12),
    st.integers(min_value=0, max_value=6),
    st.integers(min_value=0, max_value=6),
)
def test_pick_expansion_properties(
    raw: list[tuple[str, str, float]], room: int, b_sem: int, b_tmp: int
) -> None:
    options = [opt(i, v, p) for i, v, p in raw]
    budgets = {"semantic": b_sem, "temporal": b_tmp}
    picked, left = scoring.pick_expansion(options, room=room, budgets=budgets)
    ids = [o.node_id for o in picked]
    assert len(ids) == len(set(ids)) <= room
    for g in budgets:
        n = sum(1 for o in picked if o.view == g)
        assert n <= budgets[g]
        assert left[g] == budgets[g] - n  # every pick spends one unit of its view's budget


# -- K-fill ----------------------------------------------------------------------------------------


def test_anchor_fill_scores_the_anchors_below_everything_ranked() -> None:
    ranked = [ev("e1", 0.9), ev("r2", 0.7), ev("r1", 0.5)]
    fused = [("a", 0.03), ("e1", 0.02), ("b", 0.015)]
    # floor = 0.5 (lowest ranked); each anchor gets floor * s / s_top
    more = scoring.anchor_fill(ranked, fused, 5)
    assert [i for i, _ in more] == ["a", "b"]
    assert [s for _, s in more] == pytest.approx([0.5, 0.25])
    assert scoring.anchor_fill(ranked, fused, 3) == []
    alone = scoring.anchor_fill([], fused, 2)
    assert [i for i, _ in alone] == ["a", "e1"]
    assert [s for _, s in alone] == pytest.approx([1.0, 2 / 3])


# -- profiles --------------------------------------------------------------------------------------


def test_paper_profile_is_appendix_b() -> None:
    p = Profile.paper()
    w, r = p.write, p.read
    assert (w.k_candidates, w.theta_rel, w.consolidate_every) == (10, 0.60, 20)
    assert (w.consolidation_gate, w.contradiction_gate) == (0.85, 0.85)
    assert (r.budget, r.theta_act, r.gamma, r.min_per_view, r.beam, r.rrf_kappa) == (80, 0.10, 1.0, 1, 10, 60)
    assert (r.theta_suff, r.theta_cont, r.recency_weight) == (0.95, 0.15, 0.1)
    # the extensions the paper does not have are off
    assert w.supersede_threshold is None
    assert r.prefer_current is False
    assert r.hop_decay == 1.0
    assert r.k_fill is False
    assert p.controller_cache == 0
    assert p.controller_timeout_s is None


def test_every_extension_field_is_documented_and_exists() -> None:
    from dataclasses import fields

    from dualmem.config import ReadProfile, WriteProfile

    names = {f"write.{f.name}" for f in fields(WriteProfile)} | {
        f"read.{f.name}" for f in fields(ReadProfile)
    }
    names |= {f.name for f in fields(Profile)}
    for key in EXTENSIONS:
        assert key in names, key
    paper, default = Profile.paper(), Profile.dualmem()
    for section in ("write", "read"):
        for f in fields(getattr(default, section)):
            if getattr(getattr(paper, section), f.name) != getattr(getattr(default, section), f.name):
                assert f"{section}.{f.name}" in EXTENSIONS  # paper differs only in extensions
    builtin = Profile.builtin()
    assert (builtin.read.anchors, builtin.read.hop_decay, builtin.write.supersede_threshold) == (
        None,
        0.8,
        0.85,
    )

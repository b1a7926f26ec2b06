"""Adaptive retrieval (paper §3.3): route -> anchors -> assess -> expand -> score -> ... -> stop.

Control overhead is bounded: one routing request per query, and per round at most one assessment
and one scoring request. Hard limits (depth, visited nodes, inspected edges, controller calls,
wall time) each end the loop with their own stop reason.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from dualmem.config import ReadProfile
from dualmem.control import catalog
from dualmem.control.meter import Meter
from dualmem.control.questions import Batch, BatchResult
from dualmem.embed.base import Embedder
from dualmem.plane.base import Store
from dualmem.read.route import active_views, allocate, depth, rrf
from dualmem.read.trace import Assessment, Retrieval, RoundTrace, ScoredCandidate, StopReason, Trace
from dualmem.text.lexical import overlap
from dualmem.text.temporal import query_time_focus
from dualmem.types import VIEWS, Edge, Evidence, JSONValue, Node, Tenant, Vector

__all__ = ["Retriever"]

_DAY_S = 86_400.0


@dataclass(slots=True)
class _Run:
    """Mutable state of one retrieval."""

    query: str
    qvec: Vector
    tenant: Tenant
    started: float
    calls: dict[str, int] = field(default_factory=dict)  # requests this retrieval made, by purpose
    need: dict[str, float] = field(default_factory=dict)
    active: list[str] = field(default_factory=list)
    budgets: dict[str, int] = field(default_factory=dict)  # remaining, spent by expansion
    allocated: dict[str, int] = field(default_factory=dict)  # as allocated by eq. 13-14
    recency: float = 0.0
    temporal: bool = False
    now: dt.datetime | None = None
    evidence: dict[str, Evidence] = field(default_factory=dict)
    runners_up: dict[str, Evidence] = field(default_factory=dict)  # scored, not admitted to the beam
    visited: set[str] = field(default_factory=set)
    edges_inspected: int = 0
    rounds: list[RoundTrace] = field(default_factory=list)


class Retriever:
    """The read path over the Store/Embedder/Meter protocols."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        meter: Meter,
        profile: ReadProfile,
        *,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.meter = meter
        self.profile = profile
        self.clock = clock

    # -- public ------------------------------------------------------------------------------
    def search(self, query: str, tenant: Tenant, *, k: int) -> Retrieval:
        started = self.clock()
        qvec = self.embedder.embed([query])[0]
        run = _Run(query, qvec, tenant, started)
        fused = self.anchors(query, qvec, tenant)
        if not fused:
            return Retrieval(query, (), self._trace(run, [], 0, "empty"))
        if not self.profile.controller_enabled:
            nodes = self.store.get_nodes([i for i, _ in fused[:k]], tenant)
            top = fused[0][1]
            ev = [Evidence(nodes[i], s / top, "anchor") for i, s in fused[:k] if i in nodes]
            return Retrieval(query, tuple(ev), self._trace(run, fused[:k], 0, "controller_off"))
        self._route(run)
        max_depth = self.profile.fixed_depth or depth(
            run.need.get("multi_hop_need", 0.0), self.profile.limits.max_depth
        )
        anchors = fused[: self.profile.anchors]
        reason = self._loop(run, anchors, max_depth)
        return Retrieval(query, self._top(run, fused, k), self._trace(run, anchors, max_depth, reason))

    def _top(self, run: _Run, fused: list[tuple[str, float]], k: int) -> tuple[Evidence, ...]:
        """The K best: admitted evidence by score; when the loop stopped with fewer than K, the
        candidates it scored but did not admit, then the remaining RRF anchors."""
        ranked = sorted(run.evidence.values(), key=lambda e: (-e.score, e.node.id))[:k]
        if len(ranked) < k:
            rest = [e for i, e in run.runners_up.items() if i not in run.evidence]
            ranked += sorted(rest, key=lambda e: (-e.score, e.node.id))[: k - len(ranked)]
        if len(ranked) < k:
            seen = {e.node.id for e in ranked}
            more = [(i, s) for i, s in fused if i not in seen][: k - len(ranked)]
            nodes = self.store.get_nodes([i for i, _ in more], run.tenant)
            floor = min((e.score for e in ranked), default=1.0)
            top = fused[0][1]
            ranked += [Evidence(nodes[i], floor * s / top, "anchor") for i, s in more if i in nodes]
        return tuple(ranked)

    def clear_cache(self) -> None:
        clear = getattr(self.embedder, "clear", None)
        if clear is not None:
            clear()

    def anchors(self, query: str, qvec: Vector, tenant: Tenant) -> list[tuple[str, float]]:
        """Vector and lexical rankings fused by RRF (eq. 16)."""
        pool = self.profile.anchor_pool
        vec = [i for i, _ in self.store.vector_search(tenant, qvec, pool)]
        lex = [i for i, _ in self.store.lexical_search(tenant, query, pool)]
        return rrf([vec, lex], self.profile.rrf_kappa)

    # -- steps -------------------------------------------------------------------------------
    def _route(self, run: _Run) -> None:
        res = self._ask(
            run, Batch(state={"query": run.query}, questions=catalog.routing_questions(), purpose="routing")
        )
        allowed = set(self.profile.views)
        run.need = {g: (res.noul(g) if g in allowed else 0.0) for g in VIEWS}
        run.need["multi_hop_need"] = res.noul("multi_hop_need")
        run.recency = res.noul("recency_importance")
        views: dict[str, float] = {str(g): run.need[g] for g in VIEWS if g in allowed}
        run.active = active_views(views, self.profile.theta_act)
        if not run.active and views:
            run.active = [max(views, key=lambda g: (views[g], g))]
        run.budgets = allocate(
            views,
            run.active,
            budget=self.profile.budget,
            minimum=self.profile.min_per_view,
            gamma=self.profile.gamma,
        )
        run.allocated = dict(run.budgets)
        run.temporal = run.need["temporal"] >= self.profile.theta_act

    def _loop(self, run: _Run, anchors: list[tuple[str, float]], max_depth: int) -> StopReason:
        nodes = self.store.get_nodes([i for i, _ in anchors], run.tenant)
        top = anchors[0][1]
        pairs = [(nodes[i], None, s / top) for i, s in anchors if i in nodes]
        run.now = max((n.at for n, _, _ in pairs if n.at is not None), default=None)
        beam = self._score(run, pairs, round_no=0, assessment=None)
        depth_done = 0
        while True:
            limit = self._limit(run)
            if limit is not None:
                return limit
            assessment: Assessment | None = None
            if self.profile.fixed_depth is None:
                assessment = self._assess(run, depth_done, max_depth)
                reason = self._stop_rule(assessment)
                if reason is not None:
                    self._note_assessment(run, assessment)
                    return reason
            if depth_done >= max_depth:
                if assessment is not None:
                    self._note_assessment(run, assessment)
                return "fixed_depth" if self.profile.fixed_depth is not None else "depth"
            expansion = self._expand(run, beam)
            if not expansion:
                if assessment is not None:
                    self._note_assessment(run, assessment)
                return "exhausted" if run.edges_inspected < self.profile.limits.max_edges else "edge_limit"
            limit = self._limit(run)
            if limit is not None:
                return limit
            depth_done += 1
            beam = self._score(run, expansion, round_no=depth_done, assessment=assessment)

    def _ask(self, run: _Run, batch: Batch) -> BatchResult:
        """Every controller request of a retrieval goes through here, so the trace counts them."""
        run.calls[batch.purpose] = run.calls.get(batch.purpose, 0) + 1
        return self.meter.ask(batch).result

    def _limit(self, run: _Run) -> StopReason | None:
        lim = self.profile.limits
        if self.clock() - run.started >= lim.time_budget_s:
            return "time_limit"
        if sum(run.calls.values()) + 2 > lim.max_controller_calls:
            return "controller_limit"
        if len(run.visited) >= lim.max_visited:
            return "visited_limit"
        if run.edges_inspected >= lim.max_edges:
            return "edge_limit"
        return None

    def _stop_rule(self, a: Assessment) -> StopReason | None:
        p = self.profile
        if a.sufficient >= p.theta_suff and a.missing < p.theta_cont and a.contradiction < p.theta_cont:
            return "sufficient"
        if a.continue_useful < p.theta_cont:
            return "no_gain"
        return None

    def _note_assessment(self, run: _Run, a: Assessment) -> None:
        run.rounds.append(RoundTrace(len(run.rounds), a, ()))

    def _assess(self, run: _Run, depth_done: int, max_depth: int) -> Assessment:
        evidence = sorted(run.evidence.values(), key=lambda e: -e.score)[: self.profile.top_k]
        state: dict[str, JSONValue] = {
            "query": run.query,
            "evidence": [self._evidence_json(run, e) for e in evidence],
            "depth": depth_done,
            "max_depth": max_depth,
        }
        res = self._ask(run, Batch(state=state, questions=catalog.stopping_questions(), purpose="assessment"))
        return Assessment(
            sufficient=res.noul("evidence_sufficient"),
            continue_useful=res.noul("continue_useful"),
            missing=res.noul("missing_evidence"),
            contradiction=res.noul("contradiction"),
        )

    def _expand(self, run: _Run, beam: Sequence[Node]) -> list[tuple[Node, Edge | None, float]]:
        """Neighbours of the beam along the active views, within the per-view budgets.

        Every edge of the beam is inspected (up to the edge limit), each neighbour gets a prior
        (source score x edge weight x the view's need) and the best ones are taken, each view
        getting a share of the round's room in proportion to its remaining budget.
        """
        lim = self.profile.limits
        room = min(lim.max_visited - len(run.visited), 2 * self.profile.beam)
        views = [g for g in run.active if run.budgets.get(g, 0) > 0]
        if room <= 0 or not views:
            return []
        top = max((e.score for e in run.evidence.values()), default=1.0) or 1.0
        options: list[tuple[float, str, Edge, float]] = []
        for node in beam:
            # support flows along the path: an edge from a weak node supports its neighbour less
            source = run.evidence.get(node.id)
            reach = (source.score / top) if source is not None else 1.0
            for edge in self.store.edges_of(node.id, views):  # type: ignore[arg-type]
                if run.edges_inspected >= lim.max_edges:
                    break
                run.edges_inspected += 1
                other = edge.other(node.id)
                if other not in run.visited:
                    weight = edge.weight * reach
                    options.append((weight * run.need.get(edge.view, 0.0), other, edge, weight))
        total = sum(run.budgets[g] for g in views)
        quota = {g: max(1, round(room * run.budgets[g] / total)) for g in views}
        picked: dict[str, tuple[Edge, float]] = {}
        for _, other, edge, weight in sorted(options, key=lambda o: (-o[0], o[1], o[2].view, o[2].label)):
            if len(picked) >= room:
                break
            g = edge.view
            if other in picked or quota.get(g, 0) <= 0 or run.budgets.get(g, 0) <= 0:
                continue
            quota[g] -= 1
            run.budgets[g] -= 1
            picked[other] = (edge, weight)
        nodes = self.store.get_nodes(list(picked), run.tenant)
        return [(nodes[i], e, w) for i, (e, w) in picked.items() if i in nodes]

    def _score(
        self,
        run: _Run,
        cands: Sequence[tuple[Node, Edge | None, float]],
        *,
        round_no: int,
        assessment: Assessment | None,
    ) -> list[Node]:
        """One batched scoring request; admit the top W by transition score (eq. 23-25)."""
        if not cands:
            return []
        evidence = sorted(run.evidence.values(), key=lambda e: -e.score)[: self.profile.top_k]
        sims = [self._sim(run, n) for n, _, _ in cands]
        state: dict[str, JSONValue] = {
            "query": run.query,
            "evidence": [self._evidence_json(run, e) for e in evidence],
            "candidates": [
                self._candidate_json(run, n, e, w, s) for (n, e, w), s in zip(cands, sims, strict=True)
            ],
        }
        questions = {}
        for i in range(len(cands)):
            questions.update(catalog.traversal_questions(i))
        res = self._ask(run, Batch(state=state, questions=questions, purpose="scoring"))
        scored: list[tuple[float, ScoredCandidate, Node, Edge | None]] = []
        for i, ((node, edge, weight), sim) in enumerate(zip(cands, sims, strict=True)):
            a = res.noul(f"candidate_{i}_relevance")
            rel = res.noul(f"candidate_{i}_relation_usefulness")
            nov = res.noul(f"candidate_{i}_new_information")
            sup = res.noul(f"candidate_{i}_supports_current_evidence")
            view = edge.view if edge else "anchor"
            p_g = run.need.get(view, max((run.need[g] for g in run.active), default=1.0))
            s = self._transition(sim, a, p_g * rel, nov, (weight + sup) / 2.0)
            s = self._adjust(run, node, s) * (self.profile.hop_decay**round_no if edge is not None else 1.0)
            sc = ScoredCandidate(
                node.id, view, edge.label if edge else "rrf", s, sim, a, rel, nov, sup, False
            )
            scored.append((s, sc, node, edge))
            run.visited.add(node.id)
        scored.sort(key=lambda t: (-t[0], t[2].id))
        admitted = scored[: self.profile.beam]
        for s, _, node, edge in scored[self.profile.beam :]:
            run.runners_up[node.id] = Evidence(
                node, s, edge.view if edge else "anchor", edge, round_no, node.temporal_refs
            )
        for s, _, node, edge in admitted:
            run.evidence[node.id] = Evidence(
                node, s, edge.view if edge else "anchor", edge, round_no, node.temporal_refs
            )
        ids = {t[2].id for t in admitted}
        trace = tuple(replace(sc, admitted=sc.node_id in ids) for _, sc, _, _ in scored)
        run.rounds.append(RoundTrace(round_no, assessment, trace))
        return [node for _, _, node, _ in admitted]

    def _transition(self, z: float, a: float, rel: float, nov: float, sup: float) -> float:
        lam = self.profile.lambdas
        total = (
            lam.similarity * z
            + lam.relevance * a
            + lam.relation * rel
            + lam.novelty * nov
            + lam.support * sup
        )
        return total / lam.total()

    def _adjust(self, run: _Run, node: Node, s: float) -> float:
        """Recency (eq. 24-25) and the preference for current over superseded facts."""
        w = self.profile.recency_weight * run.recency
        if w > 0 and node.at is not None and run.now is not None:
            rho = 1.0 / (1.0 + max(0.0, (run.now - node.at).total_seconds()) / _DAY_S)
            s = (s + w * rho) / (1.0 + w)
        if (
            node.valid_to is not None
            and self.profile.prefer_current
            and query_time_focus(run.query) != "past"
        ):
            s *= 0.5
        return s

    def _sim(self, run: _Run, node: Node) -> float:
        if node.embedding is None:
            return 0.0
        return float(np.dot(run.qvec, node.embedding))

    def _evidence_json(self, run: _Run, e: Evidence) -> dict[str, JSONValue]:
        out = e.to_json() if run.temporal else e.node.memory_json()
        out["similarity"] = round(self._sim(run, e.node), 4)
        out["lexical_overlap"] = round(overlap(run.query, e.node.content), 4)
        return out

    def _candidate_json(
        self, run: _Run, node: Node, edge: Edge | None, weight: float, sim: float
    ) -> dict[str, JSONValue]:
        out = (
            Evidence(node, 0.0, "anchor", None, 0, node.temporal_refs).to_json()
            if run.temporal
            else node.memory_json()
        )
        out.update(
            {
                "view": edge.view if edge else "anchor",
                "label": edge.label if edge else "rrf",
                "source": edge.source if edge else None,
                "target": edge.target if edge else node.id,
                "edge_weight": round(weight, 4),
                "similarity": round(sim, 4),
                "lexical_overlap": round(overlap(run.query, node.content), 4),
            }
        )
        return out

    def _trace(
        self, run: _Run, anchors: list[tuple[str, float]], max_depth: int, reason: StopReason
    ) -> Trace:
        return Trace(
            query=run.query,
            route={g: run.need[g] for g in [*VIEWS, "multi_hop_need"] if g in run.need}
            | ({"recency_importance": run.recency} if run.need else {}),
            active=tuple(run.active),
            budgets=dict(run.allocated),
            depth=max_depth,
            anchors=tuple(anchors),
            rounds=tuple(run.rounds),
            stop_reason=reason,
            controller_calls=sum(run.calls.values()),
            calls_by_purpose=dict(run.calls),
            visited=len(run.visited),
            edges_inspected=run.edges_inspected,
            latency_ms=(self.clock() - run.started) * 1000.0,
        )

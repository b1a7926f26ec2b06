"""Adaptive retrieval (paper §3.3): route -> anchors -> assess -> expand -> score -> ... -> stop.

Control overhead is bounded: one routing request per query, and per round at most one assessment
and one scoring request. Hard limits (depth, visited nodes, inspected edges, controller calls,
wall time) each end the loop with their own stop reason.

Deadline: every controller request gets the time left of ``limits.time_budget_s`` as its timeout.
A request that runs out of it ends the search with ``stop_reason="time_limit"`` and the best
evidence found so far (K-filled from the anchors): a degraded result, not an exception.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from dualmem.config import Lambdas, ReadProfile
from dualmem.control import catalog
from dualmem.control.meter import Meter
from dualmem.control.questions import Batch, BatchResult, Question
from dualmem.control.states import (
    QUERY,
    EmbeddingFeatures,
    EvidenceItem,
    MemoryState,
    RoutingState,
    StoppingState,
    TraversalCandidate,
    TraversalState,
)
from dualmem.embed.base import Embedder
from dualmem.errors import ControllerTimeout
from dualmem.plane.base import SearchStore
from dualmem.read import scoring
from dualmem.read.channel_route import fitted_sizes
from dualmem.read.channels import routed_sizes
from dualmem.read.message import MessagePlan, understand
from dualmem.read.pool import (
    FEATURES,
    Pool,
    PoolFeatures,
    PoolNodes,
    PoolSettings,
    build_pool,
    extend_pool,
    pool_prior,
    restrict_pool,
)
from dualmem.read.route import active_views, allocate, depth
from dualmem.read.sessions import add_up, diversify
from dualmem.read.trace import Assessment, Retrieval, RoundTrace, ScoredCandidate, StopReason, Trace
from dualmem.read.versions import VersionRule, order_versions
from dualmem.text.slots import query_slot
from dualmem.text.temporal import query_time_focus
from dualmem.types import VIEWS, Edge, Evidence, Node, Tenant, Vector

__all__ = ["Retriever"]


#: the scoring question of each term of eq. 23 after the similarity (λ2..λ5), by the catalog's suffix
_TERMS: tuple[tuple[str, str], ...] = (
    ("relevance", "relevance"),
    ("relation", "relation_usefulness"),
    ("novelty", "new_information"),
    ("support", "supports_current_evidence"),
)


def _asked(lam: Lambdas) -> tuple[str, ...]:
    """The scoring questions eq. 23 reads: a term whose λ is 0 cannot change a score, so it is not
    asked (a backend is never billed for an answer the ranking ignores)."""
    return tuple(suffix for term, suffix in _TERMS if getattr(lam, term) != 0.0)


@lru_cache(maxsize=512)
def _traversal_questions(n: int, asked: tuple[str, ...]) -> Mapping[str, Question]:
    """The scoring questions of ``n`` candidates (the catalog's, built once per batch size from
    each candidate's, built once per index)."""
    questions: dict[str, Question] = {}
    for i in range(n):
        questions.update(_candidate_questions(i, asked))
    return MappingProxyType(questions)


@lru_cache(maxsize=2048)
def _candidate_questions(i: int, asked: tuple[str, ...]) -> Mapping[str, Question]:
    """The scoring questions of ``candidates[i]`` that eq. 23 reads (``asked``)."""
    prefix = f"candidate_{i}_"
    return MappingProxyType(
        {name: q for name, q in catalog.traversal_questions(i).items() if name.removeprefix(prefix) in asked}
    )


def _best(e: Evidence) -> tuple[float, str]:
    """Best first: by score, ties by node id."""
    return (-e.score, e.node.id)


def _best_first(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
    """Row indexes by score, best first, ties in row order (``sorted`` by ``(-score, row)``)."""
    order: npt.NDArray[np.intp] = np.argsort(-scores, kind="stable")
    return order


def _add_up(run: _Run, ranked: list[Evidence]) -> list[Evidence]:
    """A long message's turns with their exchange's evidence added up, one session kept from filling
    the top (``read.sessions.add_up``, ``diversify``)."""
    if run.message is None or run.pool is None:
        return ranked
    w = run.message.weights
    return diversify(add_up(ranked, run.pool.neighbours, w.adjacent), w.per_session)


def _full_nodes(pool: Pool, ids: Sequence[str], run: _Run) -> Mapping[str, Node]:
    """The full nodes of ``ids`` the retrieval has not already got as evidence (one batched read)."""
    want = [i for i in ids if i not in run.evidence and i not in run.runners_up]
    if isinstance(pool.nodes, PoolNodes):
        return pool.nodes.load(want)
    return {i: pool.nodes[i] for i in want if i in pool.nodes}


_NO_VECTOR = np.zeros(1, dtype=np.float32)  # a run's query vector before its pool is built


class _OutOfTime(Exception):
    """A controller request ran out of the time budget (caught in ``Retriever.search``)."""


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
    seeded: int = 0  # candidates the first round scored: max_visited bounds what expansion adds
    edges_inspected: int = 0
    rounds: list[RoundTrace] = field(default_factory=list)
    pool: Pool | None = None  # the query's candidate pool (expansion extends it)
    allowed: frozenset[str] | None = None  # a search filter: only these nodes may be candidates
    asks_past: bool = False  # the query asks about history (``query_time_focus``)
    message: MessagePlan | None = None  # a long query's clauses (``read.message``)
    routed: bool = False  # the route was asked (before the pool when channels are on)
    channel_need: dict[str, float] = field(default_factory=dict)  # the route's need of each channel's view
    channel_sizes: dict[str, int] = field(default_factory=dict)  # the channels that ran, candidates each


@dataclass(eq=False)
class Retriever:
    """The read path over the Store/Embedder/Meter protocols."""

    store: SearchStore
    embedder: Embedder
    meter: Meter
    profile: ReadProfile
    clock: Callable[[], float] = field(default=time.perf_counter, kw_only=True)

    # -- public ------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        tenant: Tenant,
        *,
        k: int,
        allowed: frozenset[str] | None = None,
        now: dt.datetime | None = None,
    ) -> Retrieval:
        """One pipeline for every backend: the candidate pool (vector, lexical, context, session
        neighbours) -> route (S1) -> score the pool (S1, eq. 23-25) -> assess (S1) -> expand over the
        active views (new candidates join the pool) -> score -> ... -> the K best scored candidates.

        ``allowed``: when given, only these node ids may be returned (a search filter); ``now``: the
        asker's present, what relative time in the query is grounded against ("last weekend" before
        it; the pool's ``time`` feature and the temporal channel)."""
        started = self.clock()
        calls: dict[str, int] = {}
        plan = self._message(query, started, calls)
        focus = query if plan is None else plan.focus
        run = _Run(focus, _NO_VECTOR, tenant, started, calls, allowed=allowed, message=plan)
        channels = self._channels(run)  # the route first when it chooses channels
        extra = () if plan is None else plan.extra
        pool = self.pool(focus, tenant, allowed, extra=extra, channels=channels, now=now)
        run.pool, run.qvec = pool, pool.qvec
        run.asks_past = query_time_focus(focus) == "past"
        prior = self.prior_ranking(pool)
        if not prior:
            return Retrieval(query, (), self._trace(run, [], 0, "empty"))
        if not self.profile.controller_enabled:
            top = prior[:k]
            nodes = _full_nodes(pool, [i for i, _ in top], run)
            ev = [Evidence(nodes[i], s / top[0][1], "anchor") for i, s in top if i in nodes]
            return Retrieval(query, tuple(ev), self._trace(run, top, 0, "controller_off"))
        first = prior if self.profile.anchors is None else prior[: self.profile.anchors]
        max_depth = 0
        try:
            if not run.routed:
                self._route(run)
            fixed = self.profile.fixed_depth  # 0 is a depth too (the no-expansion ablation)
            hops = run.need.get("multi_hop_need", 0.0)
            max_depth = fixed if fixed is not None else depth(hops, self.profile.limits.max_depth)
            reason = self._loop(run, first, max_depth)
        except _OutOfTime:
            reason = "time_limit"
        return Retrieval(query, self._top(run, prior, k), self._trace(run, first, max_depth, reason))

    def _top(self, run: _Run, prior: list[tuple[str, float]], k: int) -> tuple[Evidence, ...]:
        """The K best by final score (eq. 23-25, superseded demotion, hop decay). With ``k_fill``
        (dualmem): of every candidate System One scored, admitted or not, in any round, then unscored
        pool candidates by the prior (RRF of the pool's rankings), scored below them all. Without it
        (the paper): of the accumulated evidence, the beams each round admitted."""
        if not self.profile.k_fill:
            return tuple(_add_up(run, sorted(self._versions(run, run.evidence, k).values(), key=_best))[:k])
        scored = self._versions(run, {**run.runners_up, **run.evidence}, k)
        ranked = _add_up(run, sorted(scored.values(), key=_best))[:k]
        if len(ranked) >= k:
            return tuple(ranked)
        more = scoring.anchor_fill(ranked, [(i, s) for i, s in prior if i not in scored], k)
        assert run.pool is not None
        nodes = _full_nodes(run.pool, [i for i, _ in more], run)
        ranked += [
            Evidence(nodes[i], s, "anchor", None, 0, nodes[i].temporal_refs) for i, s in more if i in nodes
        ]
        return tuple(ranked)

    def _versions(self, run: _Run, scored: dict[str, Evidence], k: int) -> dict[str, Evidence]:
        """The current version of a fact first, or on a history query the previous one (``versions``)."""
        p = self.profile
        if not p.prefer_current or not scored:
            return scored
        slot = query_slot(run.query)
        rule = VersionRule(
            run.asks_past, p.superseded_factor, k, run.allowed, p.likely_update, slot, p.pair_cosine
        )
        return order_versions(scored, self.store, run.tenant, rule)

    def clear_cache(self) -> None:
        clear = getattr(self.embedder, "clear", None)
        if clear is not None:
            clear()

    def pool(
        self,
        query: str,
        tenant: Tenant,
        allowed: frozenset[str] | None = None,
        extra: Sequence[tuple[str, float]] = (),
        channels: Mapping[str, int] | None = None,
        now: dt.datetime | None = None,
    ) -> Pool:
        """The query's candidate pool (``dualmem.read.pool``) at the profile's depth and window;
        with ``allowed``, only those candidates (all of them when they are few: a narrow filter);
        ``extra``: more texts whose lists are fused in (a long message's, ``read.message``);
        ``channels``: the retrieval channels that run and how many candidates each may add (none by
        default: ``search`` asks the route); ``now``: what the query's relative time is grounded
        against (``PoolSettings.now``)."""
        chosen = tuple((c, n) for c, n in (channels or {}).items() if n > 0)
        settings = PoolSettings(self.profile.pool, self.profile.pool_window, chosen, now)
        pool = build_pool(self.store, self.embedder, query, tenant, settings, extra)
        if allowed is None:
            return pool
        missing = [i for i in sorted(allowed) if i not in pool.index]
        if len(allowed) <= 4 * settings.n and missing:
            nodes = self.store.get_nodes(missing, tenant)
            pool = extend_pool(self.store, tenant, pool, list(nodes.values()), settings)
        return restrict_pool(pool, allowed)

    def prior_ranking(self, pool: Pool) -> list[tuple[str, float]]:
        """The pool by its deterministic prior, best first: reciprocal-rank fusion (eq. 16) of the
        pool's rankings (vector, lexical as written and name-stripped, context); candidates in none
        of them (session neighbours, expansion, a filter's additions) follow in pool order."""
        if not pool.ids:
            return []
        scores = pool_prior(pool, self.profile.rrf_kappa)
        order = _best_first(scores)
        return list(zip(map(pool.ids.__getitem__, order.tolist()), scores[order].tolist(), strict=True))

    # -- steps -------------------------------------------------------------------------------
    def _message(self, query: str, started: float, calls: dict[str, int]) -> MessagePlan | None:
        """A long query's plan (``read.message``: one System-One request); ``None`` for a query of
        one clause, with the controller off, or when the request runs out of time (the message is
        then searched whole)."""
        if not self.profile.controller_enabled:
            return None
        run = _Run(query, np.zeros(1, dtype=np.float32), Tenant("-"), started, calls)
        try:
            return understand(query, lambda batch: self._ask(run, batch))
        except _OutOfTime:
            return None

    def _channels(self, run: _Run) -> dict[str, int]:
        """The retrieval channels of ``read.channels`` this query runs, and how many candidates each
        may add: with ``read.channel_route`` "fitted", the fitted route (``read.channel_route``);
        else a channel runs when the route's need for its view reaches ``theta_act``; the channels
        that run share ``read.channel_budget`` by need (eq. 13-14, ``route.allocate``).
        Routing comes first then (it reads only the query); without channels, or with the
        controller off, none run and routing waits for the loop."""
        p = self.profile
        if not p.channels or not p.controller_enabled:
            return {}
        try:
            self._route(run)
        except _OutOfTime:
            return {}
        if p.channel_route == "fitted":  # a channel the fitted route does not know: System One's need
            run.channel_need, run.channel_sizes = fitted_sizes(run.query, p, run.channel_need)
        else:
            run.channel_sizes = routed_sizes(run.channel_need, p)
        return run.channel_sizes

    def _route(self, run: _Run) -> None:
        res = self._ask(run, Batch.of(RoutingState(run.query), catalog.routing_questions(), "routing"))
        run.routed = True
        run.channel_need = {c: res.noul(c) for c in self.profile.channels}
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
        assert run.pool is not None
        nodes = _full_nodes(run.pool, [i for i, _ in anchors], run)
        top = anchors[0][1] or 1.0
        pairs = [(nodes[i], None, s / top) for i, s in anchors if i in nodes]
        run.now = max((n.at for n, _, _ in pairs if n.at is not None), default=None)
        beam = self._score(run, pairs, round_no=0, assessment=None)
        run.seeded = len(run.visited)
        depth_done = 0
        while True:
            limit = self._limit(run)
            if limit is not None:
                return limit
            assessment: Assessment | None = None
            if self.profile.fixed_depth is None:
                assessment = self._assess(run, depth_done, max_depth)
                p = self.profile
                reason = scoring.stop_reason(assessment, theta_suff=p.theta_suff, theta_cont=p.theta_cont)
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
        left = self.profile.limits.time_budget_s - (self.clock() - run.started)
        if left <= 0:
            raise _OutOfTime()
        run.calls[batch.purpose] = run.calls.get(batch.purpose, 0) + 1
        try:
            return self.meter.ask(batch, timeout=left).result
        except ControllerTimeout:
            raise _OutOfTime() from None

    def _limit(self, run: _Run) -> StopReason | None:
        lim = self.profile.limits
        if self.clock() - run.started >= lim.time_budget_s:
            return "time_limit"
        if sum(run.calls.values()) + 2 > lim.max_controller_calls:
            return "controller_limit"
        if len(run.visited) - run.seeded >= lim.max_visited:
            return "visited_limit"
        if run.edges_inspected >= lim.max_edges:
            return "edge_limit"
        return None

    def _note_assessment(self, run: _Run, a: Assessment) -> None:
        run.rounds.append(RoundTrace(len(run.rounds), a, ()))

    def _assess(self, run: _Run, depth_done: int, max_depth: int) -> Assessment:
        evidence = self._selected(run)
        source = self._features(run, [e.node for e in evidence])
        state = StoppingState(run.query, self._evidence_items(run, evidence, source), depth_done, max_depth)
        batch = Batch.of(state, catalog.stopping_questions(), "assessment", features=source)
        res = self._ask(run, batch)
        return Assessment(
            sufficient=res.noul("evidence_sufficient"),
            continue_useful=res.noul("continue_useful"),
            missing=res.noul("missing_evidence"),
            contradiction=res.noul("contradiction"),
        )

    def _selected(self, run: _Run) -> list[Evidence]:
        """The currently selected top-k evidence (what assessment and scoring are shown)."""
        return sorted(run.evidence.values(), key=lambda e: -e.score)[: self.profile.top_k]

    def _expand(self, run: _Run, beam: Sequence[Node]) -> list[tuple[Node, Edge | None, float]]:
        """Neighbours of the beam along the active views, within the per-view budgets.

        A beam node's strongest ``edges_per_node`` edges of the open views are inspected (every edge
        when ``None``; up to the edge limit in all); each neighbour gets an expansion
        prior and the best are picked within the round's room and the views' quotas and budgets
        (``scoring.expansion_prior``, ``scoring.pick_expansion``).
        """
        if not self.profile.expansion:
            return []
        lim = self.profile.limits
        room = scoring.expansion_room(
            max_visited=lim.max_visited, visited=len(run.visited) - run.seeded, beam=self.profile.beam,
            factor=self.profile.expansion_factor,
        )  # fmt: skip
        views = [g for g in run.active if run.budgets.get(g, 0) > 0]
        if room <= 0 or not views:
            return []
        top = max((e.score for e in run.evidence.values()), default=1.0) or 1.0
        options: list[scoring.ExpansionOption] = []
        per_node = self.profile.edges_per_node
        for node in beam:
            source = run.evidence.get(node.id)
            for edge in self.store.edges_of(node.id, views, limit=per_node):  # type: ignore[arg-type]
                if run.edges_inspected >= lim.max_edges:
                    break
                run.edges_inspected += 1
                other = edge.other(node.id)
                if other not in run.visited and (run.allowed is None or other in run.allowed):
                    prior, weight = scoring.expansion_prior(
                        source_score=source.score if source is not None else None,
                        top=top,
                        edge_weight=edge.weight,
                        need=run.need.get(edge.view, 0.0),
                    )
                    options.append(scoring.ExpansionOption(other, edge, prior, weight))
        picked, left = scoring.pick_expansion(options, room=room, budgets={g: run.budgets[g] for g in views})
        run.budgets.update(left)
        nodes = self.store.get_nodes([o.node_id for o in picked], run.tenant)
        if run.pool is not None and nodes:
            settings = PoolSettings(self.profile.pool, self.profile.pool_window)
            run.pool = extend_pool(self.store, run.tenant, run.pool, list(nodes.values()), settings)
        return [(nodes[o.node_id], o.edge, o.weight) for o in picked if o.node_id in nodes]

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
        evidence = self._selected(run)
        source = self._features(run, [*(e.node for e in evidence), *(n for n, _, _ in cands)])
        state = TraversalState(
            run.query,
            self._evidence_items(run, evidence, source),
            tuple(self._candidate(run, n, e, w, source) for n, e, w in cands),
            FEATURES if run.pool is not None else (),
        )
        asked = _asked(self.profile.lambdas)
        questions = _traversal_questions(len(cands), asked)
        res = self._ask(run, Batch.of(state, questions, "scoring", features=source))
        scored: list[tuple[float, ScoredCandidate, Node, Edge | None]] = []
        for i, ((node, edge, weight), cand) in enumerate(zip(cands, state.candidates, strict=True)):
            a, rel, nov, sup = (
                res.noul(f"candidate_{i}_{suffix}") if suffix in asked else 0.0 for _, suffix in _TERMS
            )
            j = scoring.Judgement(a, rel, nov, sup)
            s = self._final_score(run, node, edge, cand.similarity, j, weight, round_no)
            sc = ScoredCandidate(node.id, cand.view, cand.label, s, cand.similarity, a, rel, nov, sup, False)
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
        trace = tuple(replace(sc, admitted=True) if sc.node_id in ids else sc for _, sc, _, _ in scored)
        run.rounds.append(RoundTrace(round_no, assessment, trace))
        return [node for _, _, node, _ in admitted]

    def _final_score(
        self,
        run: _Run,
        node: Node,
        edge: Edge | None,
        z: float,
        j: scoring.Judgement,
        weight: float,
        round_no: int,
    ) -> float:
        """Eq. 23, eq. 24-25, then dualmem's hop decay (``scoring``); versions are ordered at the end
        (``versions.order_versions``)."""
        p = self.profile
        p_g = scoring.graph_need(edge.view if edge else "anchor", run.need, run.active)
        s = scoring.transition(z=z, j=j, p_g=p_g, pi_e=weight, lam=p.lambdas)
        s = scoring.recency_adjusted(
            s, run.recency, scoring.recency(run.now, node.at), weight=p.recency_weight
        )
        return scoring.hop_decayed(s, hops=round_no if edge is not None else 0, decay=p.hop_decay)

    def _features(self, run: _Run, nodes: Sequence[Node]) -> EmbeddingFeatures:
        if run.pool is not None:
            return PoolFeatures(run.pool, nodes)
        return EmbeddingFeatures.of(nodes, query=run.query, qvec=run.qvec)

    def _memory(self, run: _Run, node: Node) -> MemoryState:
        return MemoryState.of(node, temporal=run.temporal)

    def _evidence_items(
        self, run: _Run, evidence: Sequence[Evidence], source: EmbeddingFeatures
    ) -> tuple[EvidenceItem, ...]:
        return tuple(
            EvidenceItem(
                self._memory(run, e.node),
                source.cosine(QUERY, e.node.id),
                source.lexical(QUERY, e.node.id),
            )
            for e in evidence
        )

    def _candidate(
        self, run: _Run, node: Node, edge: Edge | None, weight: float, source: EmbeddingFeatures
    ) -> TraversalCandidate:
        return TraversalCandidate(
            memory=self._memory(run, node),
            view=edge.view if edge else "anchor",
            label=edge.label if edge else "rrf",
            source=edge.source if edge else None,
            target=edge.target if edge else node.id,
            edge_weight=weight,
            similarity=source.cosine(QUERY, node.id),
            lexical_overlap=source.lexical(QUERY, node.id),
            signals=run.pool.signals(node.id) if run.pool is not None else (),
        )

    def _trace(
        self, run: _Run, anchors: list[tuple[str, float]], max_depth: int, reason: StopReason
    ) -> Trace:
        return Trace(
            query=run.query if run.message is None else run.message.message,
            message=() if run.message is None else run.message.clauses,
            focus=None if run.message is None else run.query,
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
            channels=dict(run.channel_sizes),
        )

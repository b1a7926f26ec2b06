"""The candidate pool of a query and the features System One scores it by.

The pool is the vector top-N and the lexical top-N of the query (N = ``ReadProfile.pool``), the
context top-N (BM25 of the query over the nodes' write-time context fields: a node whose session
neighbours match, ``Store.context_search``) and their session neighbours (``window`` turns either
way, in write order, read from the stored context): the answer to a question often sits a turn or
two from what matches it. Query analysis (:mod:`dualmem.text.query`) runs
first: the memory's speakers that the query names are removed from the text that is embedded and
matched (a name otherwise dominates both and pulls in content-free turns of that speaker) and kept
as a feature.

Each candidate gets the features in ``FEATURES`` (all in [0, 1] or close):

==============  ===========================================================================
vec             cosine of the name-stripped query and the node
vec_rank        10 / (10 + rank) in the vector list (rank 4N when absent)
ctx_vec         cosine of the query and the node's stored context vector (its own ``vec`` without one)
nb_vec          the best ``vec`` among the node's neighbours that are in the pool
lex             BM25 of the query as written (speaker field included) / the best in the pool
lex_rank        10 / (10 + rank) in that list
lex_q           BM25 of the name-stripped query / the best
lex_q_rank      10 / (10 + rank) in that list
nb_lex          the best ``lex_q`` among the node's neighbours
ctx_lex         BM25 of the name-stripped query over the node's context field / the best
speaker         the node's speaker is a person the query names, or (speakers that are roles) the
                role it asks about: the assistant for "what did you suggest", the user for "where
                do I live" (``text.query.perspective``)
other_speaker   the query names persons (or a role) and the node's speaker is none of them
log_len         log(1 + words) / 5 (whitespace words: a Chinese message is one; counting its
                characters was tried and lost under cross-validation, ``research.cjk_loco``)
short           at most 8 words
time            the query's grounded time overlaps the node's day or its grounded references
neighbour       the node is in the pool only as a neighbour
question        the node's text is itself a question (it ends with "?" or "？"): asking is not answering
pref            the write path's preference type score of the node (eq. 7), when the query asks what
                someone would like (``text.query.asks_preference``); 0 otherwise
coherence       the best cosine of the node with a turn just before or after it in its session (when
                the pool holds it): how much its neighbours speak of the same thing, so that ``nb_*``
                and ``ctx_*`` can be weighed by it (a conversation's turns cohere; a day's notes
                rarely do)
time_rank       10 / (10 + rank) in the temporal channel's list (``read.channels``; rank 4N when
                absent or when the channel did not run)
entity_rank     10 / (10 + rank) in the entity channel's list (likewise)
entity_idf      the summed IDF of the query entities the node mentions / the best in the list
causal_rank     10 / (10 + rank) in the causal channel's list (likewise; ``read.causal``)
semantic_rank   10 / (10 + rank) in the semantic channel's list (likewise; ``read.semantic``)
semantic_cos    the node's best cosine with an anchor of the semantic channel, for its hits; 0 else
walk_rank       10 / (10 + rank) in the temporal channel's ordering walk (``read.walk``: an ordering
                question's event clauses searched one by one, then the memories just before / after
                their anchors in time; rank 4N when absent)
ppr_rank        10 / (10 + rank) in the entity channel's Personalized PageRank list (``read.ppr``:
                the memories two hops from the query through a top hit's entities; likewise)
==============  ===========================================================================

Everything here goes through the ``Store`` and ``Embedder`` protocols: the same code builds the
features at query time and for ``dualmem calibrate``. Query-time work: one query embedding, four
searches and three batched candidate reads (``Store.candidates``: the fields the features use and the
stored context, never a full node): the lexical hits (their speakers drive the query analysis), the
other hits, their neighbours. The pool's full nodes (``Pool.nodes``) are read when first asked for,
so a search reads full nodes only for what it returns or shows the controller.
"""

from __future__ import annotations

import datetime as dt
import math
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import chain, repeat
from operator import attrgetter, itemgetter
from typing import cast

import numpy as np
import numpy.typing as npt

from dualmem.control.states import QUERY, EmbeddingFeatures
from dualmem.embed.base import Embedder, embed_queries
from dualmem.plane.base import Candidate, NodeContext, SearchStore
from dualmem.read.channels import channel_hits
from dualmem.read.ppr import seed_memories
from dualmem.text.query import QueryAnalysis, analyze
from dualmem.types import Node, Tenant, Vector

__all__ = [
    "FEATURES",
    "POOL_VERSION",
    "Pool",
    "PoolFeatures",
    "PoolNodes",
    "PoolSettings",
    "analyze_query",
    "build_pool",
    "extend_pool",
    "pool_prior",
    "restrict_pool",
]

#: a text fused into the pool at a weight below 1 (``build_pool``'s ``more``) is embedded only when
#: it has at most this many words: a long message's whole text is matched by its words alone
LIGHT_WORDS = 40

#: bumped whenever the pool or a feature changes meaning (cached pools and fitted weights go stale);
#: a new column alone does not bump it (a scorer reads its columns by name: ``time_rank``,
#: ``entity_rank`` and ``entity_idf`` were added at 5, ``causal_rank``, ``semantic_rank``,
#: ``semantic_cos``, ``walk_rank`` and ``ppr_rank`` after it, and without ``read.channels`` the
#: pool and every older column are what they were)
POOL_VERSION = "5"

FEATURES: tuple[str, ...] = (
    "vec",
    "vec_rank",
    "ctx_vec",
    "nb_vec",
    "lex",
    "lex_rank",
    "lex_q",
    "lex_q_rank",
    "nb_lex",
    "ctx_lex",
    "speaker",
    "other_speaker",
    "log_len",
    "short",
    "time",
    "neighbour",
    "question",
    "pref",
    "coherence",
    "time_rank",
    "entity_rank",
    "entity_idf",
    "causal_rank",
    "semantic_rank",
    "semantic_cos",
    "walk_rank",
    "ppr_rank",
)
_COL = {name: i for i, name in enumerate(FEATURES)}
_NO_CONTEXT = NodeContext((), None)
_FIRST = itemgetter(0)
_NEIGHBOURS = attrgetter("neighbours")
_VECTOR = attrgetter("vector")


@dataclass(frozen=True, slots=True)
class PoolSettings:
    """How deep each search goes (``n``) and how many session neighbours either side (``window``)."""

    n: int = 50
    window: int = 2
    #: the retrieval channels that run (``read.channels``) and how many candidates each may add
    channels: tuple[tuple[str, int], ...] = ()
    #: what relative time in the query is grounded against ("last weekend" before it): the
    #: ``time`` feature's and the temporal channel's; ``None``: the temporal channel grounds against
    #: the memory's latest time, the ``time`` feature only absolute dates
    now: dt.datetime | None = None


@dataclass(frozen=True, slots=True)
class _Query:
    qvec: Vector
    analysis: QueryAnalysis
    ranks: tuple[dict[str, tuple[int, float]], ...]  # vector, lexical, stripped lexical, context lexical
    base_count: int
    absent: int
    emb: npt.NDArray[np.float32]  # the vectors of the nodes held (the candidates), in their order
    #: a long query's need vectors (``qvec`` first; ``build_pool``'s ``more``): ``vec`` is a
    #: candidate's best cosine with any of them; ``None`` for a query searched as one text
    qvecs: npt.NDArray[np.float32] | None = None
    #: each channel that ran (``read.channels``): its ranks, and the entity channel's summed IDF
    channels: Mapping[str, dict[str, tuple[int, float]]] = field(default_factory=dict)


class PoolNodes(Mapping[str, Node]):
    """The full nodes of a pool's candidates (keys: the pool's ids), read from the store when first
    asked for: one item read loads every candidate not held yet in one batch (a caller that wants one
    usually wants them all); ``load`` reads only the ids it is given."""

    def __init__(
        self, store: SearchStore, tenant: Tenant, ids: Iterable[str], held: Mapping[str, Node]
    ) -> None:
        self._store, self._tenant = store, tenant
        self._ids = dict.fromkeys(ids)
        self._held = dict(held)

    def __getitem__(self, key: str) -> Node:
        if key not in self._ids:
            raise KeyError(key)
        if key not in self._held:
            self.load(list(self._ids))
        return self._held[key]  # KeyError when the node went since the pool was built

    def __contains__(self, key: object) -> bool:
        return key in self._ids

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def load(self, ids: Sequence[str]) -> dict[str, Node]:
        """The nodes of ``ids`` that are candidates of the pool and still stored (one batched read of
        those not held yet)."""
        missing = [i for i in ids if i in self._ids and i not in self._held]
        if missing:
            self._held.update(self._store.get_nodes(missing, self._tenant))
        return {i: self._held[i] for i in ids if i in self._held}

    def restricted(self, ids: Sequence[str]) -> PoolNodes:
        """These nodes, only ``ids`` of them (what is held stays held)."""
        return PoolNodes(self._store, self._tenant, ids, {i: n for i, n in self._held.items() if i in ids})

    def extended(self, nodes: Sequence[Node]) -> PoolNodes:
        """These nodes and ``nodes`` (held from the start)."""
        held = {**self._held, **{n.id: n for n in nodes}}
        return PoolNodes(self._store, self._tenant, [*self._ids, *(n.id for n in nodes)], held)


@dataclass(frozen=True, slots=True)
class Pool:
    """A query's candidates (``ids``, in discovery order), what the features read of them
    (``rows``), their full nodes (``nodes``, read on first use) and feature rows."""

    query: str
    analysis: QueryAnalysis
    qvec: Vector
    ids: tuple[str, ...]
    nodes: Mapping[str, Node]
    features: npt.NDArray[np.float64]  # (len(ids), len(FEATURES))
    neighbours: Mapping[str, tuple[tuple[str, int], ...]]
    context: _Query | None = None  # what extend_pool needs to add candidates
    rows: Mapping[str, Candidate] = field(default_factory=dict)  # every candidate of ``ids``
    #: each candidate's row in ``features`` (built once per pool: every scoring state looks rows up)
    index: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", dict(zip(self.ids, range(len(self.ids)), strict=True)))

    def signals(self, node_id: str) -> tuple[float, ...]:
        """A candidate's feature row in ``FEATURES`` order (the signals of its scoring state), or
        ``()`` when ``node_id`` is not a candidate of the pool."""
        k = self.index.get(node_id)
        return () if k is None else tuple(self.features[k].tolist())

    def row(self, node_id: str) -> dict[str, float]:
        """One candidate's features by name."""
        i = self.ids.index(node_id)
        return {name: float(self.features[i, j]) for j, name in enumerate(FEATURES)}


class PoolFeatures(EmbeddingFeatures):
    """The FeatureSource of a pooled retrieval: pair signals over the pool's query vector and the
    state's memories (each pair computed once). The candidates' pool rows travel in the typed state
    (``TraversalCandidate.signals``, see ``signals``)."""

    def __init__(self, pool: Pool, nodes: Sequence[Node]) -> None:
        vectors: dict[str, Vector | None] = {n.id: n.embedding for n in nodes}
        texts = {n.id: n.content for n in nodes}
        vectors[QUERY], texts[QUERY] = pool.qvec, pool.query
        super().__init__(vectors, texts)
        # a state asks the same pair more than once (its items, then the decider): computed once
        self._cosines: dict[tuple[str, str], float] = {}
        self._lexicals: dict[tuple[str, str], float] = {}

    def cosine(self, a: str, b: str) -> float:
        found = self._cosines.get((a, b))
        if found is None:
            found = self._cosines[a, b] = super().cosine(a, b)
        return found

    def lexical(self, a: str, b: str) -> float:
        found = self._lexicals.get((a, b))
        if found is None:
            found = self._lexicals[a, b] = super().lexical(a, b)
        return found


def _ranks(hits: Sequence[tuple[str, float]]) -> dict[str, tuple[int, float]]:
    return {node_id: (rank, score) for rank, (node_id, score) in enumerate(hits)}


def analyze_query(
    store: SearchStore, query: str, tenant: Tenant, n: int, now: dt.datetime | None = None
) -> tuple[list[tuple[str, float]], dict[str, Candidate], QueryAnalysis]:
    """The lexical top-``n`` of ``query``, their candidate rows, and the query's analysis against
    the speakers of those hits (the memory's persons the query names are stripped from the text that
    is embedded; its time expressions grounded against ``now``)."""
    lex_hits = store.lexical.search("nodes", tenant, query, n)
    lex_rows = store.context.candidates([i for i, _ in lex_hits], tenant)
    speakers = {c.speaker for c in lex_rows.values() if c.speaker}
    return lex_hits, lex_rows, analyze(query, names=speakers, now=now)


def build_pool(
    store: SearchStore,
    embedder: Embedder,
    query: str,
    tenant: Tenant,
    settings: PoolSettings | None = None,
    more: Sequence[tuple[str, float]] = (),
) -> Pool:
    """Search, analyse, expand to neighbours and compute the feature matrix of ``query``'s pool.

    Neighbours and context come from the store's write-time context, read with each candidate's
    projection (``Store.candidates``, one batched read per round); no full node is read here.

    ``more``: more texts to search, with a weight each (a long message's whole text and need
    clauses, ``dualmem.read.message``): each gets its own vector and lexical lists (embedded in one
    call with ``query``), but a lighter text (weight below 1) of more than ``LIGHT_WORDS`` words (the
    whole of a long message) only its lexical list as written, so that it costs no long embedding; all fused
    with ``query``'s by weighted reciprocal-rank fusion, each fused list cut to ``n`` (the pool stays
    as large as one query's); a candidate's ``vec`` is its best cosine with ``query`` or a text of
    weight 1. Without ``more``, the pool of ``query`` alone.
    """
    settings = settings or PoolSettings()
    n = settings.n
    lex_hits, rows, analysis = analyze_query(store, query, tenant, n, settings.now)
    qvecs: npt.NDArray[np.float32] | None = None
    if more:
        speakers = {c.speaker for c in rows.values() if c.speaker}
        texts = [analyze(t, names=speakers).stripped for t, _ in more]
        embedded = [i for i, (t, w) in enumerate(more) if w >= 1.0 or len(t.split()) <= LIGHT_WORDS]
        vectors = embed_queries(embedder, [analysis.stripped, *(texts[i] for i in embedded)])
        qvec = vectors[0]
    else:
        qvec = embed_queries(embedder, [analysis.stripped])[0]
    vec_hits = store.vectors.search(tenant, qvec, n)
    stripped_hits = (
        lex_hits
        if analysis.stripped == query
        else store.lexical.search("nodes", tenant, analysis.stripped, n)
    )
    ctx_hits = store.lexical.search("context", tenant, analysis.stripped, n)
    if more:
        lists = (vec_hits, lex_hits, stripped_hits, ctx_hits)
        found = {i: vectors[j + 1] for j, i in enumerate(embedded)}
        vec_hits, lex_hits, stripped_hits, ctx_hits = _fused(store, tenant, n, more, texts, found, lists)
        strong = [j + 1 for j, i in enumerate(embedded) if more[i][1] >= 1.0]
        if strong:
            qvecs = vectors[[0, *strong]]
    base = list(dict.fromkeys(map(_FIRST, chain(vec_hits, lex_hits, stripped_hits, ctx_hits))))
    rows.update(store.context.candidates([i for i in base if i not in rows], tenant))
    contexts = _contexts(rows, base)
    near = _near(contexts, base, settings.window)
    # the neighbours of the base not in it, in order of first mention
    extra = [
        j
        for j in dict.fromkeys(map(_FIRST, chain.from_iterable(map(near.__getitem__, base))))
        if j not in near
    ]
    rows.update(store.context.candidates(extra, tenant))  # never in ``base``, so never read above
    contexts.update(_contexts(rows, extra))
    near.update(_near(contexts, extra, settings.window))
    seeds = seed_memories((vec_hits, stripped_hits)) if settings.channels else []
    channels, added = _channels(store, embedder, tenant, analysis, qvec, settings, rows, base, seeds=seeds)
    if added:
        fresh = [i for i in added if i not in near]
        contexts.update(_contexts(rows, fresh))
        near.update(_near(contexts, fresh, settings.window))
        extra = [i for i in extra if i not in set(added)]
    ids = tuple(filter(rows.__contains__, (*base, *added, *extra)))
    ranks = (_ranks(vec_hits), _ranks(lex_hits), _ranks(stripped_hits), _ranks(ctx_hits))
    emb = _matrix(rows.values(), qvec)
    q = _Query(qvec, analysis, ranks, len(base) + len(added), 4 * n, emb, qvecs, channels)
    features = _features(ids, rows, near, contexts, q)
    nodes = PoolNodes(store, tenant, ids, {})
    return Pool(query, analysis, qvec, ids, nodes, features, near, q, rows)


_Hits = list[tuple[str, float]]


def _channels(  # noqa: PLR0913, PLR0917 - private: what the channels read of the pool being built
    store: SearchStore,
    embedder: Embedder,
    tenant: Tenant,
    analysis: QueryAnalysis,
    qvec: Vector,
    settings: PoolSettings,
    rows: dict[str, Candidate],
    base: Sequence[str],
    *,
    seeds: Sequence[tuple[str, float]] = (),
) -> tuple[dict[str, dict[str, tuple[int, float]]], list[str]]:
    """The channels of ``settings`` (``read.channels``): each one's ranks, and the hits the base
    does not hold, in channel order (a hit that is also a session neighbour of the base is a
    channel candidate, not a neighbour; their neighbours are not added). Their rows are added to
    ``rows``; what a channel read beyond its hits is not: the pool's other features see only the
    pool. The entity channel also runs its Personalized PageRank from ``seeds`` (``read.ppr``)."""
    if not settings.channels:
        return {}, []
    speakers = {c.speaker for c in rows.values() if c.speaker}
    scratch: dict[str, Candidate] = dict(rows)
    results = channel_hits(
        store,
        tenant,
        analysis,
        qvec,
        dict(settings.channels),
        scratch,
        speakers,
        embed=lambda texts: embed_queries(embedder, texts),
        now=settings.now,
        seeds=seeds,
    )
    have = set(base)
    added: list[str] = []
    out: dict[str, dict[str, tuple[int, float]]] = {}
    for result in results:
        out[result.name] = _ranks(result.hits)
        for node_id, _ in result.hits:
            if node_id not in have and node_id in scratch:
                have.add(node_id)
                added.append(node_id)
                rows[node_id] = scratch[node_id]
    return out, added


def _fused(
    store: SearchStore,
    tenant: Tenant,
    n: int,
    extra: Sequence[tuple[str, float]],
    stripped: Sequence[str],
    vectors: Mapping[int, Vector],
    lists: tuple[_Hits, _Hits, _Hits, _Hits],
) -> tuple[_Hits, _Hits, _Hits, _Hits]:
    """The query's four lists (vector, lexical as written, name-stripped, context) each fused with
    the same list of every extra text (weighted reciprocal-rank fusion, ``kappa`` 60), cut to ``n``.
    A text without a vector (a long light one, see ``build_pool``) has only its lexical list as
    written. A fused hit's score is its best score over the lists, a lexical one as a share
    of its list's best (what the features read: ``_score_column`` divides by the fused list's best)."""
    per_text: list[tuple[_Hits, _Hits, _Hits, _Hits]] = []
    for i, ((text, _), plain) in enumerate(zip(extra, stripped, strict=True)):
        lex = store.lexical.search("nodes", tenant, text, n)
        vector = vectors.get(i)
        if vector is None:
            per_text.append(([], lex, lex, []))
            continue
        per_text.append(
            (
                store.vectors.search(tenant, vector, n),
                lex,
                lex if plain == text else store.lexical.search("nodes", tenant, plain, n),
                store.lexical.search("context", tenant, plain, n),
            )
        )
    weights = [1.0, *(w for _, w in extra)]
    out: list[_Hits] = []
    for kind in range(4):
        ranked = [lists[kind], *(t[kind] for t in per_text)]
        out.append(_rrf(ranked, weights, n, share=kind > 0))
    return out[0], out[1], out[2], out[3]


def _rrf(ranked: Sequence[_Hits], weights: Sequence[float], n: int, *, share: bool, kappa: int = 60) -> _Hits:
    fused: dict[str, float] = {}
    best: dict[str, float] = {}
    for hits, weight in zip(ranked, weights, strict=True):
        top = (max((s for _, s in hits), default=0.0) or 1.0) if share else 1.0
        for rank, (node_id, score) in enumerate(hits):
            fused[node_id] = fused.get(node_id, 0.0) + weight / (kappa + rank + 1)
            best[node_id] = max(best.get(node_id, -math.inf), score / top)
    order = sorted(fused, key=lambda i: -fused[i])[:n]  # stable: ties keep the order of first mention
    return [(i, best[i]) for i in order]


def _contexts(rows: Mapping[str, Candidate], ids: Sequence[str]) -> dict[str, NodeContext]:
    """The stored context of each of ``ids`` that is a candidate with one."""
    out: dict[str, NodeContext] = {}
    for i in ids:
        found = rows.get(i)
        if found is not None and found.context is not None:
            out[i] = found.context
    return out


def _near(
    contexts: Mapping[str, NodeContext], ids: Sequence[str], window: int
) -> dict[str, tuple[tuple[str, int], ...]]:
    """Each id's stored neighbours within ``window`` (``()`` for a node without context).

    The store keeps ``CONTEXT_WINDOW`` turns either side, so at the default window nothing is cut:
    one pass over every offset checks that (C-level iteration), and each node's stored pairs are
    kept as they are; only otherwise is each run filtered."""
    runs = list(map(_NEIGHBOURS, map(contexts.get, ids, repeat(_NO_CONTEXT))))
    offsets = map(itemgetter(1), chain.from_iterable(runs))
    if window >= max(map(abs, offsets), default=0):
        return dict(zip(ids, runs, strict=True))
    return {i: tuple([p for p in run if -window <= p[1] <= window]) for i, run in zip(ids, runs, strict=True)}


def extend_pool(
    store: SearchStore, tenant: Tenant, pool: Pool, new: Sequence[Node], settings: PoolSettings | None = None
) -> Pool:
    """``pool`` with ``new`` nodes added as candidates (reached over a graph edge, say): their
    features are computed as for any candidate; nodes already in the pool are left as they are."""
    have = set(pool.ids)
    add = [n for n in new if n.id not in have]
    if not add or pool.context is None:
        return pool
    settings = settings or PoolSettings()
    contexts = store.context.node_context([n.id for n in add], tenant)
    near = dict(pool.neighbours)
    near.update(_near(contexts, [n.id for n in add], settings.window))
    added = [Candidate.of(n, contexts.get(n.id)) for n in add]
    # a node read before (a candidate a filter left out) keeps its row, and its place in ``emb``
    fresh = [c for c in added if c.id not in pool.rows]
    rows = {**pool.rows, **{c.id: c for c in fresh}}
    nodes = _extended(pool.nodes, add)
    ids = (*pool.ids, *(n.id for n in add))
    q = replace(pool.context, emb=np.vstack([pool.context.emb, _matrix(fresh, pool.qvec)]))
    extra = _features([n.id for n in add], rows, near, contexts, replace(q, base_count=0))
    extra[:, _COL["neighbour"]] = 0.0  # reached by an edge, not only as a session neighbour
    features = np.vstack([pool.features, extra])
    return replace(pool, ids=ids, nodes=nodes, features=features, neighbours=near, context=q, rows=rows)


def pool_prior(pool: Pool, kappa: int = 60) -> npt.NDArray[np.float64]:
    """Each candidate's reciprocal-rank fusion (eq. 16) over the pool's rankings (vector, lexical as
    written, lexical name-stripped, context, and each channel that ran); 0 for a candidate in none
    of them."""
    out = np.zeros(len(pool.ids))
    if pool.context is None:
        return out
    index = pool.index
    for ranks in (*pool.context.ranks, *pool.context.channels.values()):
        for node_id, (rank, _) in ranks.items():
            row = index.get(node_id)
            if row is not None:
                out[row] += 1.0 / (kappa + rank + 1)
    return out


def restrict_pool(pool: Pool, allowed: frozenset[str]) -> Pool:
    """``pool`` with only the candidates in ``allowed`` (a search filter); features unchanged."""
    keep = [r for r, i in enumerate(pool.ids) if i in allowed]
    ids = tuple(pool.ids[r] for r in keep)
    nodes: Mapping[str, Node]
    if isinstance(pool.nodes, PoolNodes):
        nodes = pool.nodes.restricted(ids)
    else:
        nodes = {i: pool.nodes[i] for i in ids if i in pool.nodes}
    return replace(pool, ids=ids, nodes=nodes, features=pool.features[keep])


def _extended(nodes: Mapping[str, Node], add: Sequence[Node]) -> Mapping[str, Node]:
    if isinstance(nodes, PoolNodes):
        return nodes.extended(add)
    return {**nodes, **{n.id: n for n in add}}


def _features(
    ids: Sequence[str],
    nodes: Mapping[str, Candidate],
    near: Mapping[str, tuple[tuple[str, int], ...]],
    contexts: Mapping[str, NodeContext],
    q: _Query,
) -> npt.NDArray[np.float64]:
    """The feature matrix of ``ids``, column by column over the whole batch (the definitions are
    the module docstring's; ``tests/test_pool_features.py`` checks them against a per-candidate
    reference, ``tests/test_pool_exact.py`` bit for bit against the round-six implementation).

    Every value comes from the same operations as one candidate at a time would give (the same
    float32 dot per stored context vector, the same ``math.log1p``); only the iteration is batched:
    ``map`` and numpy over the candidates instead of a Python loop."""
    vec_r, lex_r, lexq_r, ctx_r = q.ranks
    qvec, analysis, absent = q.qvec, q.analysis, q.absent
    out = np.zeros((len(ids), len(FEATURES)))
    if not ids:
        return out
    row_of = dict(zip(ids, range(len(ids)), strict=True))
    # the cosine of every node held to the stripped query (one product over them all: a node's
    # value does not depend on which batch it was first scored in)
    held = dict(zip(nodes, range(len(nodes)), strict=True))
    sim = (q.emb @ qvec if q.qvecs is None else (q.emb @ q.qvecs.T).max(axis=1)).astype(np.float64)
    vec = sim[np.fromiter(map(held.__getitem__, ids), np.intp, len(ids))]
    out[:, _COL["vec"]] = vec
    out[:, _COL["ctx_vec"]] = vec
    _context_column(out[:, _COL["ctx_vec"]], contexts, row_of, qvec)
    _rank_column(out[:, _COL["vec_rank"]], vec_r, row_of, absent)
    _rank_column(out[:, _COL["lex_rank"]], lex_r, row_of, absent)
    _rank_column(out[:, _COL["lex_q_rank"]], lexq_r, row_of, absent)
    lexq = _score_column(out[:, _COL["lex_q"]], lexq_r, row_of)
    _score_column(out[:, _COL["lex"]], lex_r, row_of)
    _score_column(out[:, _COL["ctx_lex"]], ctx_r, row_of)
    _neighbour_columns(out, ids, near, (held, sim), lexq)
    _coherence_column(out[:, _COL["coherence"]], ids, near, held, q.emb)
    _node_columns(out, list(map(nodes.__getitem__, ids)), analysis)
    out[q.base_count :, _COL["neighbour"]] = 1.0
    _rank_column(out[:, _COL["time_rank"]], q.channels.get("temporal", {}), row_of, absent)
    _rank_column(out[:, _COL["entity_rank"]], q.channels.get("entity", {}), row_of, absent)
    _score_column(out[:, _COL["entity_idf"]], q.channels.get("entity", {}), row_of)
    _rank_column(out[:, _COL["causal_rank"]], q.channels.get("causal", {}), row_of, absent)
    _rank_column(out[:, _COL["semantic_rank"]], q.channels.get("semantic", {}), row_of, absent)
    for node_id, (_, cos) in q.channels.get("semantic", {}).items():
        if node_id in row_of:
            out[row_of[node_id], _COL["semantic_cos"]] = cos
    _rank_column(out[:, _COL["walk_rank"]], q.channels.get("walk", {}), row_of, absent)
    _rank_column(out[:, _COL["ppr_rank"]], q.channels.get("ppr", {}), row_of, absent)
    return out


def _context_column(
    col: npt.NDArray[np.float64],
    contexts: Mapping[str, NodeContext],
    row_of: Mapping[str, int],
    qvec: Vector,
) -> None:
    """``ctx_vec``: the query's cosine with each held node's stored context vector, one float32 dot
    per vector as ever: a stack of (1, d) @ (d, 1) products runs numpy's dot loop per row, which a
    matrix product (BLAS gemv, another summation order) would not."""
    found = list(map(row_of.get, contexts))
    vectors = list(map(_VECTOR, contexts.values()))
    if None in found or any(map(operator.is_, vectors, repeat(None))):
        kept = [(r, v) for r, v in zip(found, vectors, strict=True) if r is not None and v is not None]
        found, vectors = [r for r, _ in kept], [v for _, v in kept]
    rows = cast(list[int], found)
    if rows:
        stacked = np.concatenate(vectors).reshape(len(rows), 1, len(qvec))
        col[rows] = np.matmul(stacked, qvec[:, None])[:, 0, 0]


def _matrix(nodes: Iterable[Candidate], like: Vector) -> npt.NDArray[np.float32]:
    """The nodes' vectors as rows (zeros for a node without one)."""
    zero = np.zeros_like(like)
    rows = [zero if v is None else v for v in map(attrgetter("embedding"), nodes)]
    if not rows:
        return np.zeros((0, len(like)), dtype=like.dtype)
    return np.concatenate(rows, dtype=like.dtype).reshape(len(rows), len(like))


def _rank_column(
    col: npt.NDArray[np.float64],
    ranks: Mapping[str, tuple[int, float]],
    row_of: Mapping[str, int],
    absent: int,
) -> None:
    """``10 / (10 + rank)`` in a ranked list, ``rank = absent`` for the candidates not in it."""
    col[:] = 10.0 / (10.0 + absent)
    hits = [(row_of[i], r) for i, (r, _) in ranks.items() if i in row_of]
    if hits:
        rows, found = zip(*hits, strict=True)
        col[list(rows)] = 10.0 / (10.0 + np.asarray(found, dtype=np.float64))


def _score_column(
    col: npt.NDArray[np.float64], ranks: Mapping[str, tuple[int, float]], row_of: Mapping[str, int]
) -> dict[str, float]:
    """A list's score / the list's best (1 when the best is 0) for the candidates in it, 0 for
    the rest; returns the normalised score of every node of the list (pooled or not)."""
    top = max((s for _, s in ranks.values()), default=0.0) or 1.0
    scaled = {i: s / top for i, (_, s) in ranks.items()}
    for i, value in scaled.items():
        row = row_of.get(i)
        if row is not None:
            col[row] = value
    return scaled


def _neighbour_columns(
    out: npt.NDArray[np.float64],
    ids: Sequence[str],
    near: Mapping[str, tuple[tuple[str, int], ...]],
    sim: tuple[Mapping[str, int], npt.NDArray[np.float64]],
    lexq: Mapping[str, float],
) -> None:
    """``nb_vec`` (best ``vec`` of a neighbour we hold, 0 with none) and ``nb_lex`` (best ``lex_q``
    over all neighbours, 0 for an absent one): a max over each candidate's run of neighbours.

    ``sim``: where each held node is in the cosines, and the cosines. Every neighbour is looked up
    once, in a slot of one table: the held nodes' cosines, then the ``lexq`` nodes not held (no
    cosine), then a last slot for the rest (no cosine, no ``lex_q``)."""
    runs = list(map(near.get, ids, repeat(())))
    counts = np.fromiter(map(len, runs), np.intp, len(ids))
    has = counts > 0
    if not has.any():
        return
    held, cosines = sim
    slot = dict(held)
    for node_id in lexq:
        slot.setdefault(node_id, len(slot))
    size = len(slot) + 1
    js = map(_FIRST, chain.from_iterable(runs))
    where = np.fromiter(map(slot.get, js, repeat(size - 1)), np.intp, int(counts.sum()))
    lex = np.zeros(size)
    lex[np.fromiter(map(slot.__getitem__, lexq), np.intp, len(lexq))] = np.fromiter(
        lexq.values(), np.float64, len(lexq)
    )
    vec = np.full(size, np.nan)
    vec[: len(cosines)] = cosines
    starts = (np.cumsum(counts) - counts)[has]  # where each non-empty run begins
    out[has, _COL["nb_lex"]] = np.maximum.reduceat(lex[where], starts)
    best = np.fmax.reduceat(vec[where], starts)  # NaN (not held) loses to any value; all NaN: none held
    out[has, _COL["nb_vec"]] = np.where(np.isnan(best), 0.0, best)


def _coherence_column(
    col: npt.NDArray[np.float64],
    ids: Sequence[str],
    near: Mapping[str, tuple[tuple[str, int], ...]],
    held: Mapping[str, int],
    emb: npt.NDArray[np.float32],
) -> None:
    """``coherence``: each candidate's best cosine with a held turn at offset -1 or +1 (0 with none)."""
    rows: list[int] = []
    a: list[int] = []
    b: list[int] = []
    for r, node_id in enumerate(ids):
        for j, offset in near.get(node_id, ()):
            k = held.get(j)
            if k is not None and offset in (1, -1):
                rows.append(r)
                a.append(held[node_id])
                b.append(k)
    if rows:
        dots = np.einsum("ij,ij->i", emb[a], emb[b]).astype(np.float64)
        np.maximum.at(col, np.asarray(rows, dtype=np.intp), dots)


def _node_columns(out: npt.NDArray[np.float64], nodes: Sequence[Candidate], analysis: QueryAnalysis) -> None:
    """The columns of the node alone: speaker, length and time."""
    if analysis.about:  # else the query names no speaker nor role: both columns stay 0
        speakers = list(map(attrgetter("speaker"), nodes))
        named = {s: analysis.mentions(s) for s in set(speakers)}
        speaker = np.fromiter(map(named.__getitem__, speakers), np.float64, len(nodes))
        out[:, _COL["speaker"]] = speaker
        out[:, _COL["other_speaker"]] = 1.0 - speaker
    words = np.fromiter(map(len, map(str.split, map(attrgetter("content"), nodes))), np.intp, len(nodes))
    out[:, _COL["log_len"]] = _log_len(1 << max(8, int(words.max()).bit_length()))[words]
    out[:, _COL["short"]] = words <= 8
    out[:, _COL["question"]] = [_asks(n.content) for n in nodes]
    if analysis.preference:  # what the write path typed as a preference answers "what would I like"
        out[:, _COL["pref"]] = [0.0 if n.types is None else n.types.preference for n in nodes]
    if analysis.times:
        out[:, _COL["time"]] = [_time_match(n, analysis) for n in nodes]


@lru_cache(maxsize=8)
def _log_len(size: int) -> npt.NDArray[np.float64]:
    """``log1p(w) / 5`` for every word count ``w`` below ``size``, by ``math.log1p`` as one
    candidate at a time computes it (numpy's ``log1p`` may differ in the last bit): a table, so the
    column is one lookup."""
    table = np.array([math.log1p(w) / 5.0 for w in range(size)], dtype=np.float64)
    table.flags.writeable = False
    return table


def _asks(text: str) -> bool:
    """The text ends as a question (closing quotes, brackets and emphasis aside; "？" in CJK)."""
    return text.rstrip().rstrip("\"')]*_ \u201d\u2019\u300d\u300f").endswith(("?", "\uff1f"))


def _time_match(node: Candidate, analysis: QueryAnalysis) -> bool:
    if not analysis.times:
        return False
    if node.at is not None:
        day = node.at.date()
        if analysis.time_overlap(day, day):
            return True
    return any(analysis.time_overlap(ref.start, ref.end) for ref in node.temporal_refs)

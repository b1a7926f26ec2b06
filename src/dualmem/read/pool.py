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
speaker         the node's speaker is a person the query names
other_speaker   the query names persons and the node's speaker is none of them
log_len         log(1 + words) / 5
short           at most 8 words
time            the query's grounded time overlaps the node's day or its grounded references
neighbour       the node is in the pool only as a neighbour
==============  ===========================================================================

Everything here goes through the ``Store`` and ``Embedder`` protocols: the same code builds the
features at query time and for ``dualmem calibrate``. Query-time work: one query embedding, four
searches, two batched context reads and one batched node read (the candidates only).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from dualmem.control.states import QUERY, EmbeddingFeatures
from dualmem.embed.base import Embedder
from dualmem.plane.base import NodeContext, Store
from dualmem.text.query import QueryAnalysis, analyze
from dualmem.types import Node, Tenant, Vector

__all__ = [
    "FEATURES",
    "POOL_VERSION",
    "Pool",
    "PoolFeatures",
    "PoolSettings",
    "analyze_query",
    "build_pool",
    "extend_pool",
]

#: bumped whenever the pool or a feature changes meaning (cached pools and fitted weights go stale)
POOL_VERSION = "2"

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
)
_COL = {name: i for i, name in enumerate(FEATURES)}


@dataclass(frozen=True, slots=True)
class PoolSettings:
    """How deep each search goes (``n``) and how many session neighbours either side (``window``)."""

    n: int = 50
    window: int = 2


@dataclass(frozen=True, slots=True)
class _Query:
    qvec: Vector
    analysis: QueryAnalysis
    ranks: tuple[dict[str, tuple[int, float]], ...]  # vector, lexical, stripped lexical, context lexical
    base_count: int
    absent: int
    emb: npt.NDArray[np.float32]  # the vectors of the nodes held (the candidates), in their order


@dataclass(frozen=True, slots=True)
class Pool:
    """A query's candidates (``ids``, in discovery order), their nodes and feature rows."""

    query: str
    analysis: QueryAnalysis
    qvec: Vector
    ids: tuple[str, ...]
    nodes: Mapping[str, Node]
    features: npt.NDArray[np.float64]  # (len(ids), len(FEATURES))
    neighbours: Mapping[str, tuple[tuple[str, int], ...]]
    context: _Query | None = None  # what extend_pool needs to add candidates

    def row(self, node_id: str) -> dict[str, float]:
        """One candidate's features by name."""
        i = self.ids.index(node_id)
        return {name: float(self.features[i, j]) for j, name in enumerate(FEATURES)}


class PoolFeatures(EmbeddingFeatures):
    """The FeatureSource of a pooled retrieval: pair signals, plus each candidate's pool features
    (``candidate_row``) for an in-process learned scorer."""

    feature_names: tuple[str, ...] = FEATURES

    def __init__(self, pool: Pool, nodes: Sequence[Node]) -> None:
        vectors: dict[str, Vector | None] = {n.id: n.embedding for n in nodes}
        texts = {n.id: n.content for n in nodes}
        vectors[QUERY], texts[QUERY] = pool.qvec, pool.query
        super().__init__(vectors, texts)
        self._matrix = pool.features
        self._index = {i: k for k, i in enumerate(pool.ids)}
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

    def candidate_row(self, node_id: str) -> npt.NDArray[np.float64] | None:
        k = self._index.get(node_id)
        return None if k is None else self._matrix[k]


def _ranks(hits: Sequence[tuple[str, float]]) -> dict[str, tuple[int, float]]:
    return {node_id: (rank, score) for rank, (node_id, score) in enumerate(hits)}


def analyze_query(
    store: Store, query: str, tenant: Tenant, n: int
) -> tuple[list[tuple[str, float]], dict[str, Node], QueryAnalysis]:
    """The lexical top-``n`` of ``query``, their nodes, and the query's analysis against the
    speakers of those hits (the memory's persons the query names are stripped from the text that
    is embedded)."""
    lex_hits = store.lexical_search(tenant, query, n)
    lex_nodes = store.get_nodes([i for i, _ in lex_hits], tenant)
    speakers = {nd.speaker for nd in lex_nodes.values() if nd.speaker}
    return lex_hits, lex_nodes, analyze(query, names=speakers)


def build_pool(
    store: Store, embedder: Embedder, query: str, tenant: Tenant, settings: PoolSettings | None = None
) -> Pool:
    """Search, analyse, expand to neighbours and compute the feature matrix of ``query``'s pool.

    Neighbours and context come from the store's write-time context (``Store.node_context``, one
    batched read per round), so only the candidates' own nodes are read.
    """
    settings = settings or PoolSettings()
    n = settings.n
    lex_hits, lex_nodes, analysis = analyze_query(store, query, tenant, n)
    qvec = embedder.embed([analysis.stripped])[0]
    vec_hits = store.vector_search(tenant, qvec, n)
    stripped_hits = (
        lex_hits if analysis.stripped == query else store.lexical_search(tenant, analysis.stripped, n)
    )
    ctx_hits = store.context_search(tenant, analysis.stripped, n)
    base = list(dict.fromkeys(i for hits in (vec_hits, lex_hits, stripped_hits, ctx_hits) for i, _ in hits))
    contexts = store.node_context(base, tenant)
    near = _near(contexts, base, settings.window)
    extra = list(dict.fromkeys(j for i in base for j, _ in near[i] if j not in near))
    contexts.update(store.node_context(extra, tenant))
    near.update(_near(contexts, extra, settings.window))
    nodes = dict(lex_nodes)
    nodes.update(store.get_nodes([i for i in (*base, *extra) if i not in nodes], tenant))
    ids = tuple(i for i in (*base, *extra) if i in nodes)
    ranks = (_ranks(vec_hits), _ranks(lex_hits), _ranks(stripped_hits), _ranks(ctx_hits))
    q = _Query(qvec, analysis, ranks, len(base), 4 * n, _matrix(nodes.values(), qvec))
    features = _features(ids, nodes, near, contexts, q)
    return Pool(query, analysis, qvec, ids, nodes, features, near, q)


def _near(
    contexts: Mapping[str, NodeContext], ids: Sequence[str], window: int
) -> dict[str, tuple[tuple[str, int], ...]]:
    """Each id's stored neighbours within ``window`` (``()`` for a node without context)."""
    out: dict[str, tuple[tuple[str, int], ...]] = {}
    for i in ids:
        found = contexts.get(i)
        out[i] = () if found is None else tuple([p for p in found.neighbours if -window <= p[1] <= window])
    return out


def extend_pool(
    store: Store, tenant: Tenant, pool: Pool, new: Sequence[Node], settings: PoolSettings | None = None
) -> Pool:
    """``pool`` with ``new`` nodes added as candidates (reached over a graph edge, say): their
    features are computed as for any candidate; nodes already in the pool are left as they are."""
    have = set(pool.ids)
    add = [n for n in new if n.id not in have]
    if not add or pool.context is None:
        return pool
    settings = settings or PoolSettings()
    contexts = store.node_context([n.id for n in add], tenant)
    near = dict(pool.neighbours)
    near.update(_near(contexts, [n.id for n in add], settings.window))
    nodes = dict(pool.nodes)
    nodes.update({n.id: n for n in add})
    ids = (*pool.ids, *(n.id for n in add))
    q = replace(pool.context, emb=np.vstack([pool.context.emb, _matrix(add, pool.qvec)]))
    rows = _features([n.id for n in add], nodes, near, contexts, replace(q, base_count=0))
    rows[:, _COL["neighbour"]] = 0.0  # reached by an edge, not only as a session neighbour
    features = np.vstack([pool.features, rows])
    return replace(pool, ids=ids, nodes=nodes, features=features, neighbours=near, context=q)


def _features(
    ids: Sequence[str],
    nodes: Mapping[str, Node],
    near: Mapping[str, tuple[tuple[str, int], ...]],
    contexts: Mapping[str, NodeContext],
    q: _Query,
) -> npt.NDArray[np.float64]:
    """The feature matrix of ``ids``, column by column over the whole batch (the definitions are
    the module docstring's; ``tests/test_pool_features.py`` checks them against a per-candidate
    reference)."""
    vec_r, lex_r, lexq_r, ctx_r = q.ranks
    qvec, analysis, absent = q.qvec, q.analysis, q.absent
    out = np.zeros((len(ids), len(FEATURES)))
    if not ids:
        return out
    row_of = {node_id: row for row, node_id in enumerate(ids)}
    # the cosine of every node held to the stripped query (one product over them all: a node's
    # value does not depend on which batch it was first scored in)
    sim = dict(zip(nodes, (q.emb @ qvec).tolist(), strict=True))
    vec = np.fromiter((sim[i] for i in ids), np.float64, len(ids))
    out[:, _COL["vec"]] = vec
    out[:, _COL["ctx_vec"]] = vec
    for node_id, stored in contexts.items():
        row = row_of.get(node_id)
        if row is not None and stored.vector is not None:
            out[row, _COL["ctx_vec"]] = float(stored.vector @ qvec)
    _rank_column(out[:, _COL["vec_rank"]], vec_r, row_of, absent)
    _rank_column(out[:, _COL["lex_rank"]], lex_r, row_of, absent)
    _rank_column(out[:, _COL["lex_q_rank"]], lexq_r, row_of, absent)
    lexq = _score_column(out[:, _COL["lex_q"]], lexq_r, row_of)
    _score_column(out[:, _COL["lex"]], lex_r, row_of)
    _score_column(out[:, _COL["ctx_lex"]], ctx_r, row_of)
    _neighbour_columns(out, ids, near, sim, lexq)
    _node_columns(out, [nodes[i] for i in ids], analysis)
    out[q.base_count :, _COL["neighbour"]] = 1.0
    return out


def _matrix(nodes: Iterable[Node], like: Vector) -> npt.NDArray[np.float32]:
    """The nodes' vectors as rows (zeros for a node without one)."""
    rows = [n.embedding if n.embedding is not None else np.zeros_like(like) for n in nodes]
    return np.array(rows, dtype=like.dtype).reshape(len(rows), len(like))


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
    sim: Mapping[str, float],
    lexq: Mapping[str, float],
) -> None:
    """``nb_vec`` (best ``vec`` of a neighbour we hold, 0 with none) and ``nb_lex`` (best ``lex_q``
    over all neighbours, 0 for an absent one): a max over each candidate's run of neighbours."""
    counts = np.fromiter((len(near.get(i, ())) for i in ids), np.intp, len(ids))
    has = counts > 0
    if not has.any():
        return
    js = [j for i in ids for j, _ in near.get(i, ())]
    starts = (np.cumsum(counts) - counts)[has]  # where each non-empty run begins
    lex = np.fromiter((lexq.get(j, 0.0) for j in js), np.float64, len(js))
    out[has, _COL["nb_lex"]] = np.maximum.reduceat(lex, starts)
    vec = np.fromiter((sim.get(j, np.nan) for j in js), np.float64, len(js))
    best = np.fmax.reduceat(vec, starts)  # NaN (not held) loses to any value; all NaN: none held
    out[has, _COL["nb_vec"]] = np.where(np.isnan(best), 0.0, best)


def _node_columns(out: npt.NDArray[np.float64], nodes: Sequence[Node], analysis: QueryAnalysis) -> None:
    """The columns of the node alone: speaker, length and time."""
    named: dict[str | None, bool] = {}
    for node in nodes:
        if node.speaker not in named:
            named[node.speaker] = analysis.mentions(node.speaker)
    speaker = np.fromiter((named[n.speaker] for n in nodes), np.float64, len(nodes))
    out[:, _COL["speaker"]] = speaker
    if analysis.persons:
        out[:, _COL["other_speaker"]] = 1.0 - speaker
    words = [len(n.content.split()) for n in nodes]
    out[:, _COL["log_len"]] = [math.log1p(w) / 5.0 for w in words]
    out[:, _COL["short"]] = np.asarray(words) <= 8
    if analysis.times:
        out[:, _COL["time"]] = [_time_match(n, analysis) for n in nodes]


def _time_match(node: Node, analysis: QueryAnalysis) -> bool:
    if not analysis.times:
        return False
    if node.at is not None:
        day = node.at.date()
        if analysis.time_overlap(day, day):
            return True
    return any(analysis.time_overlap(ref.start, ref.end) for ref in node.temporal_refs)

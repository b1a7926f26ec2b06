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
from collections.abc import Mapping, Sequence
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
        self._rows = {i: pool.features[k] for k, i in enumerate(pool.ids)}

    def candidate_row(self, node_id: str) -> npt.NDArray[np.float64] | None:
        return self._rows.get(node_id)


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
    q = _Query(qvec, analysis, ranks, len(base), 4 * n)
    features = _features(ids, nodes, near, contexts, q)
    return Pool(query, analysis, qvec, ids, nodes, features, near, q)


def _near(
    contexts: Mapping[str, NodeContext], ids: Sequence[str], window: int
) -> dict[str, tuple[tuple[str, int], ...]]:
    """Each id's stored neighbours within ``window`` (``()`` for a node without context)."""
    out: dict[str, tuple[tuple[str, int], ...]] = {}
    for i in ids:
        found = contexts.get(i)
        out[i] = () if found is None else tuple(p for p in found.neighbours if abs(p[1]) <= window)
    return out


def extend_pool(
    store: Store, tenant: Tenant, pool: Pool, new: Sequence[Node], settings: PoolSettings | None = None
) -> Pool:
    """``pool`` with ``new`` nodes added as candidates (reached over a graph edge, say): their
    features are computed as for any candidate; nodes already in the pool are left as they are."""
    add = [n for n in new if n.id not in set(pool.ids)]
    if not add or pool.context is None:
        return pool
    settings = settings or PoolSettings()
    contexts = store.node_context([n.id for n in add], tenant)
    near = dict(pool.neighbours)
    near.update(_near(contexts, [n.id for n in add], settings.window))
    nodes = dict(pool.nodes)
    nodes.update({n.id: n for n in add})
    ids = (*pool.ids, *(n.id for n in add))
    rows = _features([n.id for n in add], nodes, near, contexts, replace(pool.context, base_count=0))
    rows[:, _COL["neighbour"]] = 0.0  # reached by an edge, not only as a session neighbour
    return replace(pool, ids=ids, nodes=nodes, features=np.vstack([pool.features, rows]), neighbours=near)


def _features(
    ids: Sequence[str],
    nodes: Mapping[str, Node],
    near: Mapping[str, tuple[tuple[str, int], ...]],
    contexts: Mapping[str, NodeContext],
    q: _Query,
) -> npt.NDArray[np.float64]:
    vec_r, lex_r, lexq_r, ctx_r = q.ranks
    qvec, analysis, absent = q.qvec, q.analysis, q.absent
    # similarity of every node we hold (the candidates) to the stripped query
    known = list(nodes)
    emb = np.stack([_vector(nodes[i], qvec) for i in known]) if known else np.zeros((0, len(qvec)))
    sim = dict(zip(known, (emb @ qvec).tolist(), strict=True))
    top = [max((s for _, s in r.values()), default=0.0) or 1.0 for r in (lex_r, lexq_r, ctx_r)]
    lexq = {i: s / top[1] for i, (_, s) in lexq_r.items()}
    out = np.zeros((len(ids), len(FEATURES)))
    for row, node_id in enumerate(ids):
        node = nodes[node_id]
        nbs = near.get(node_id, ())
        f = out[row]
        f[_COL["vec"]] = sim[node_id]
        f[_COL["vec_rank"]] = 10.0 / (10.0 + vec_r.get(node_id, (absent, 0.0))[0])
        stored = contexts.get(node_id)
        cvec = None if stored is None else stored.vector
        f[_COL["ctx_vec"]] = float(cvec @ qvec) if cvec is not None else sim[node_id]
        if nbs:
            f[_COL["nb_vec"]] = max((sim[j] for j, _ in nbs if j in sim), default=0.0)
            f[_COL["nb_lex"]] = max(lexq.get(j, 0.0) for j, _ in nbs)
        f[_COL["ctx_lex"]] = ctx_r[node_id][1] / top[2] if node_id in ctx_r else 0.0
        f[_COL["lex"]] = lex_r[node_id][1] / top[0] if node_id in lex_r else 0.0
        f[_COL["lex_rank"]] = 10.0 / (10.0 + lex_r.get(node_id, (absent, 0.0))[0])
        f[_COL["lex_q"]] = lexq.get(node_id, 0.0)
        f[_COL["lex_q_rank"]] = 10.0 / (10.0 + lexq_r.get(node_id, (absent, 0.0))[0])
        named = analysis.mentions(node.speaker)
        f[_COL["speaker"]] = float(named)
        f[_COL["other_speaker"]] = float(bool(analysis.persons) and not named)
        words = len(node.content.split())
        f[_COL["log_len"]] = math.log1p(words) / 5.0
        f[_COL["short"]] = float(words <= 8)
        f[_COL["time"]] = float(_time_match(node, analysis))
        f[_COL["neighbour"]] = float(row >= q.base_count)
    return out


def _vector(node: Node, like: Vector) -> Vector:
    return node.embedding if node.embedding is not None else np.zeros_like(like)


def _time_match(node: Node, analysis: QueryAnalysis) -> bool:
    if not analysis.times:
        return False
    if node.at is not None:
        day = node.at.date()
        if analysis.time_overlap(day, day):
            return True
    return any(analysis.time_overlap(ref.start, ref.end) for ref in node.temporal_refs)

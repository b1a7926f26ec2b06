"""The semantic retrieval channel: the neighbours of the query's best hits (pseudo-relevance feedback).

The query's own embedding finds the memories that say what it says; a second evidence memory often
says something *about the first* instead (the same event in other words, its sequel). The channel
takes the query's ``ANCHORS`` best vector hits and searches the vector index with each anchor's
embedding (``NEIGHBOURS`` x the channel's size deep): a memory close to several anchors, or to a
high one, ranks first (reciprocal-rank fusion of the anchors' lists, each weighted by 1 / (1 +
its anchor's rank)). The anchors themselves are left out (the query found them). A consolidation
summary is a node of the vector index, so where the write path stored summaries the channel reaches
them like any memory.

Each hit's score is its best cosine with an anchor (the pool's ``semantic_cos`` column); the
order is the fusion's.
"""

from __future__ import annotations

from collections.abc import MutableMapping

import numpy as np

from dualmem.plane.base import Candidate, SearchStore
from dualmem.types import Tenant, Vector

__all__ = ["ANCHORS", "NEIGHBOURS", "semantic_channel"]

#: the query's best vector hits the channel searches from
ANCHORS = 5
#: each anchor's search goes this many times the channel's size deep
NEIGHBOURS = 2
_KAPPA = 60

_Hits = list[tuple[str, float]]


def semantic_channel(
    store: SearchStore,
    tenant: Tenant,
    qvec: Vector,
    size: int,
    rows: MutableMapping[str, Candidate],
) -> _Hits:
    """The semantic channel's ranked hits (best first, at most ``size``), each with its best cosine
    with an anchor (see the module docstring). ``rows``: the candidate rows read so far (the
    channel reads the anchors and its hits into it)."""
    if size <= 0:
        return []
    anchors = [i for i, _ in store.vectors.search(tenant, qvec, ANCHORS)]
    missing = [i for i in anchors if i not in rows]
    if missing:
        rows.update(store.context.candidates(missing, tenant))
    vectors = [(i, v) for i in anchors if i in rows and (v := rows[i].embedding) is not None]
    if not vectors:
        return []
    skip = set(anchors)
    fused: dict[str, float] = {}
    for a_rank, (_, vector) in enumerate(vectors):
        weight = 1.0 / (1 + a_rank)
        hits = [
            h for h in store.vectors.search(tenant, vector, NEIGHBOURS * size + ANCHORS) if h[0] not in skip
        ]
        for rank, (node_id, _) in enumerate(hits):
            fused[node_id] = fused.get(node_id, 0.0) + weight / (_KAPPA + rank + 1)
    order = sorted(fused, key=lambda i: -fused[i])[:size]
    missing = [i for i in order if i not in rows]
    if missing:
        rows.update(store.context.candidates(missing, tenant))
    order = [i for i in order if i in rows]
    stacked = np.stack([v for _, v in vectors])
    out: _Hits = []
    for i in order:
        emb = rows[i].embedding
        out.append((i, 0.0 if emb is None else float(np.max(stacked @ emb))))
    return out

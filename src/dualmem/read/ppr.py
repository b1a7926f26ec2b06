"""Personalized PageRank over entity and memory nodes: the entity channel's two-hop bridges.

The entity channel (``read.channels``) reaches the memories that mention the query's own entities;
a multi-hop question's second piece of evidence often shares no word with the question but an
entity with the first ("What did Mira make at the class she started?": the class turn names
"pottery", the bowl turn names "pottery" and no class). HippoRAG 2 finds such bridges with a
Personalized PageRank over a bipartite graph of passages and the entities they mention, seeded on
the query's entities *and* the passages a dense search ranks first. This module does the same over
the user's entity index, restricted to the query's neighbourhood:

1. **Seeds**: the query's entities (``channels.query_entities``: never a speaker nor a person the
   query names) and the top ``SEEDS`` memories of the vector and name-stripped lexical lists
   (fused by reciprocal rank).
2. **Entities**: the query's and the seed memories' own (``store.links.entities_of``), never a
   speaker's name (nor one of its words), each weighted by its inverse document frequency over the
   user's memories; one linked by more than ``share`` of them (and more than ``floor``: the entity
   channel's ``ENTITY_SHARE`` and ``ENTITY_FLOOR``) is left out: it links everything.
3. **Graph**: those entities and the memories that mention them (``store.links.entity_search``, one
   probe per entity, at most ``PROBE`` deep); an edge from a memory to an entity it mentions weighs
   the entity's IDF, an edge from an entity to a memory is uniform.
4. **Walk**: ``ITERATIONS`` power iterations of ``r = (1 - d) p + d W r`` (``d`` = ``DAMPING``),
   ``p`` the seeds: ``ENTITY_MASS`` on the query's entities by IDF (when it has any), the rest on
   the seed memories by their fused rank; a memory without a kept entity returns its mass to ``p``.

The channel's list is the graph's memories *other than the seeds* by their walk score, best first:
the memories that share the most specific entities with the seeds and with the query, a bridge two
hops from the query (through a seed's entity) among them. The seeds are left out: they rank first
in any walk from them, and a list that began with them would repeat the fused vector and lexical
order (the scorer already has it) instead of saying "two hops" (measured: with the seeds in the
list the feature lowered the agent chats' multi-session questions by 0.040 R@10; without them no
category fell, docs/views.md). The pool adds the ones the indexes did not find as candidates and
``ppr_rank`` for every candidate.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, MutableMapping, Sequence

import numpy as np
import numpy.typing as npt

from dualmem.plane.base import Candidate, SearchStore
from dualmem.read.route import fused_scores
from dualmem.text.entities import normalize_entity
from dualmem.types import Tenant

__all__ = [
    "DAMPING",
    "ENTITY_MASS",
    "ITERATIONS",
    "PROBE",
    "SEEDS",
    "ppr_channel",
    "seed_memories",
    "walk",
]

#: how many of the fused vector and lexical hits seed the walk
SEEDS = 10
#: the share of the seed mass on the query's own entities (the rest on the seed memories)
ENTITY_MASS = 0.5
#: the walk's damping (HippoRAG's 0.5: half the mass returns to the seeds at each step)
DAMPING = 0.5
#: power iterations (the graph is a few hundred nodes: the walk has settled by then)
ITERATIONS = 20
#: at most this many memories are read per entity
PROBE = 200

_Hits = list[tuple[str, float]]


def seed_memories(lists: Sequence[Sequence[tuple[str, float]]], k: int = SEEDS) -> _Hits:
    """The top ``k`` of ``lists`` (ranked hits) by reciprocal-rank fusion (``kappa`` 60)."""
    fused = fused_scores([node_id for node_id, _ in hits] for hits in lists)
    order = sorted(fused, key=lambda i: -fused[i])[:k]
    return [(i, fused[i]) for i in order]


def walk(
    links: Mapping[str, Collection[str]],
    idf: Mapping[str, float],
    entity_seeds: Mapping[str, float],
    memory_seeds: Mapping[str, float],
    *,
    entity_mass: float = ENTITY_MASS,
    damping: float = DAMPING,
    iterations: int = ITERATIONS,
) -> dict[str, float]:
    """Each memory's Personalized PageRank score over the bipartite graph ``links`` (memory id ->
    the entities it mentions, each of weight ``idf``; an entity not in ``idf`` is no node),
    personalised on ``entity_seeds`` and ``memory_seeds`` (weights, normalised here)."""
    memories = list(dict.fromkeys([*memory_seeds, *links]))
    entities = sorted({e for m in memories for e in links.get(m, ()) if e in idf})
    m_of = {m: i for i, m in enumerate(memories)}
    e_of = {e: len(memories) + i for i, e in enumerate(entities)}
    size = len(memories) + len(entities)
    if not memories:
        return {}
    w = np.zeros((len(memories), len(entities)))
    for m, ents in links.items():
        for e in ents:
            if e in e_of:
                w[m_of[m], e_of[e] - len(memories)] = idf[e]
    p = _personalisation(m_of, e_of, entity_seeds, memory_seeds, entity_mass)
    if p.sum() <= 0:
        return {}
    out_m = w.sum(axis=1)  # a memory's edges by IDF
    out_e = (w > 0).sum(axis=0).astype(np.float64)  # an entity's memories, uniform
    to_e = np.divide(w, out_m[:, None], out=np.zeros_like(w), where=out_m[:, None] > 0)
    to_m = np.divide(
        (w > 0).T.astype(np.float64), out_e[:, None], out=np.zeros_like(w.T), where=out_e[:, None] > 0
    )
    dangling = np.concatenate([out_m <= 0, out_e <= 0])
    r = p.copy()
    n_m = len(memories)
    for _ in range(iterations):
        nxt = np.zeros(size)
        nxt[n_m:] = r[:n_m] @ to_e
        nxt[:n_m] = r[n_m:] @ to_m
        lost = r[dangling].sum()
        r = (1.0 - damping) * p + damping * (nxt + lost * p)
    return {m: float(r[m_of[m]]) for m in memories}


def _personalisation(
    m_of: Mapping[str, int],
    e_of: Mapping[str, int],
    entity_seeds: Mapping[str, float],
    memory_seeds: Mapping[str, float],
    entity_mass: float,
) -> npt.NDArray[np.float64]:
    """The walk's restart vector: ``entity_mass`` on the entity seeds (all of it without memory
    seeds, none without entity seeds), the rest on the memory seeds, each part by its weights."""
    p = np.zeros(len(m_of) + len(e_of))
    e_total = sum(v for e, v in entity_seeds.items() if e in e_of)
    m_total = sum(v for m, v in memory_seeds.items() if m in m_of)
    e_share = entity_mass if e_total > 0 and m_total > 0 else (1.0 if e_total > 0 else 0.0)
    if e_total > 0:
        for e, v in entity_seeds.items():
            if e in e_of:
                p[e_of[e]] += e_share * v / e_total
    if m_total > 0:
        for m, v in memory_seeds.items():
            if m in m_of:
                p[m_of[m]] += (1.0 - e_share) * v / m_total
    return p


def _skipped(speakers: Collection[str]) -> set[str]:
    skip = {normalize_entity(s) for s in speakers if s}
    for s in list(skip):
        skip.update(s.split())
    return skip


def ppr_channel(  # noqa: PLR0913 (keyword-only: the entity channel's cut of common entities)
    store: SearchStore,
    tenant: Tenant,
    entities: Sequence[str],
    seeds: Sequence[tuple[str, float]],
    size: int,
    rows: MutableMapping[str, Candidate],
    *,
    speakers: Collection[str] = (),
    share: float,
    floor: int,
) -> _Hits:
    """The PPR list (see the module docstring): ``entities``, the query's (speakers and the persons
    it names already left out); ``seeds``, the seed memories with their fused weight; at most
    ``size`` memories, never a seed; an entity on more than ``share`` of the user's memories
    (and more than ``floor``) is no node. Their rows are read into ``rows``."""
    skip = _skipped(speakers)
    seed_ids = [i for i, _ in seeds]
    links: dict[str, set[str]] = {i: set() for i in seed_ids}
    own: dict[str, tuple[str, ...]] = {}
    for node_id in seed_ids:
        own[node_id] = tuple(
            e
            for e in (" ".join(x.casefold().split()) for x in store.links.entities_of(node_id))
            if e not in skip
        )
    query = [
        k for k in dict.fromkeys(" ".join(e.casefold().split()) for e in entities) if k and k not in skip
    ]
    names = list(dict.fromkeys([*query, *(e for es in own.values() for e in es)]))
    if not names:
        return []
    total, counts = store.links.entity_counts(tenant, names)
    if total <= 0:
        return []
    cap = max(floor, share * total)
    idf = {e: math.log((1 + total) / counts[e]) for e in names if 0 < counts.get(e, 0) <= cap}
    for node_id, es in own.items():
        links[node_id].update(e for e in es if e in idf)
    for e in idf:
        for node_id, _ in store.links.entity_search(tenant, [e], PROBE):
            links.setdefault(node_id, set()).add(e)
    scores = walk(links, idf, {e: idf[e] for e in query if e in idf}, dict(seeds))
    seeded = set(seed_ids)
    order = sorted(scores, key=lambda i: (-scores[i], i))
    order = [i for i in order if scores[i] > 0 and i not in seeded][:size]
    missing = [i for i in order if i not in rows]
    if missing:
        rows.update(store.context.candidates(missing, tenant))
    return [(i, scores[i]) for i in order if i in rows]

"""Retrieval channels of the relation views: candidates the vector and lexical lists cannot find.

The pool (``read.pool``) searches the query's text; a channel searches what the text *points at*:

- ``temporal``: the query's time. A query whose time expression grounds to a window (against the
  caller's ``now`` when the search is given one, else the memory's latest time: "last weekend",
  "in May 2023", "yesterday") reaches the memories whose day
  lies inside the window, ranked by their cosine with the query; a query that asks about time
  without naming one ("when did", "how many days between", "the first time", "before I moved")
  reaches the memories that carry a grounded date (their own time expressions) among a deeper
  vector and lexical search (``DEEP`` x the channel's size each), ranked by reciprocal-rank fusion
  of the two: the dated turns an index ranks just below its cut. An ordering question ("first",
  "after", "before") is such a query; it also gets the ordering walk (``read.walk``): each event
  clause searched by itself, its best hit the anchor, and the memories just before / after the
  anchor in time (a second list, ``walk``, the pool's ``walk_rank``).
- ``entity``: the query's entities (``text.entities``, never a speaker of the memory nor a person
  the query names: those link everything), each weighted by its inverse document frequency over
  the user's memories (an entity on more than ``ENTITY_SHARE`` of them, and on more than
  ``ENTITY_FLOOR``, is dropped), reach the
  memories that mention them (``store.links.entity_search``, one probe per entity); a memory scores
  the summed weight of the query entities it mentions, ties by cosine with the query. Beside that
  list it gives a second, ``ppr``: a Personalized PageRank over the entity and memory nodes of the
  query's neighbourhood, seeded on the query's entities and the top vector and lexical hits
  (``read.ppr``): the memories that share a specific entity with a top hit (two hops from the
  query), which the query's own entities cannot reach.
- ``causal``: a query with cause language reaches the cue-bearing memories ("because", "so I",
  "that's why") around its anchors and below its indexes' cut (``read.causal``).
- ``semantic``: the vector neighbours of the query's best hits (``read.semantic``).

Each channel returns a ranked list of (node id, score) and the candidate rows it read; the pool adds
its hits as candidates with a per-channel rank feature (``time_rank``, ``entity_rank``,
``entity_idf``, ``ppr_rank``, ``causal_rank``, ``semantic_rank``, ``semantic_cos``, ``walk_rank``).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Collection, Mapping, MutableMapping, Sequence
from dataclasses import dataclass

import numpy as np

from dualmem.config import READ_CHANNELS, ReadProfile, checked_channels
from dualmem.plane.base import Candidate, SearchStore
from dualmem.read.causal import causal_channel
from dualmem.read.ppr import ppr_channel
from dualmem.read.route import active_views, allocate, fused_scores
from dualmem.read.semantic import semantic_channel
from dualmem.read.walk import Embed, ordering_walk
from dualmem.text.cues import mentions_time
from dualmem.text.entities import extract_entities, normalize_entity
from dualmem.text.query import QueryAnalysis
from dualmem.text.temporal import ground
from dualmem.types import TemporalRef, Tenant, Vector

__all__ = [
    "CHANNELS",
    "DEEP",
    "ENTITY_FLOOR",
    "ENTITY_SHARE",
    "ChannelResult",
    "channel_hits",
    "checked_channels",
    "entity_channel",
    "query_entities",
    "routed_sizes",
    "temporal_channel",
]

#: the channels a profile may run (``read.channels``), in the order the pool adds them
CHANNELS: tuple[str, ...] = READ_CHANNELS
#: a dated-memory search goes this many times the channel's size deep in each index
DEEP = 4
#: an entity linked by more than this share of the user's memories is left out (it links everything)
ENTITY_SHARE = 0.10
#: ... unless it links at most this many (a small memory)
ENTITY_FLOOR = 3
_FAR = dt.datetime(9999, 1, 1, tzinfo=dt.UTC)
_ORDER = re.compile(r"\b(?:first|last|before|after|earlier|later|then|next|previous|since|until)\b", re.I)

_Hits = list[tuple[str, float]]


@dataclass(frozen=True, slots=True)
class ChannelResult:
    """One channel's ranked hits (best first) and, for the entity channel, each hit's summed IDF."""

    name: str
    hits: _Hits
    weights: Mapping[str, float]


def routed_sizes(need: Mapping[str, float], profile: ReadProfile) -> dict[str, int]:
    """The channels of ``profile.channels`` the route runs and how many candidates each may add: a
    channel runs when the route's ``need`` of its view reaches ``theta_act``, and the channels that
    run share ``channel_budget`` by need (eq. 13-14, ``route.allocate``)."""
    needs = {c: need.get(c, 0.0) for c in profile.channels}
    active = active_views(needs, profile.theta_act)
    return allocate(
        needs, active, budget=profile.channel_budget, minimum=profile.min_per_view, gamma=profile.gamma
    )


def channel_hits(  # noqa: PLR0913 - the query, its rows, and the keyword-only embedder, now and seeds
    store: SearchStore,
    tenant: Tenant,
    analysis: QueryAnalysis,
    qvec: Vector,
    sizes: Mapping[str, int],
    rows: MutableMapping[str, Candidate],
    speakers: Collection[str] = (),
    *,
    embed: Embed | None = None,
    now: dt.datetime | None = None,
    seeds: Sequence[tuple[str, float]] = (),
) -> list[ChannelResult]:
    """The channels of ``sizes`` (name -> how many candidates it may add), in ``CHANNELS`` order;
    ``rows``: the candidate rows read so far (the channels read more into it). With ``embed`` (the
    query embedder), the temporal channel also walks from an ordering question's anchor events
    (``read.walk``: a second list, ``walk``, of the same size); ``now``: what the query's relative
    time is grounded against (the memory's latest time when ``None``). The entity channel gives two
    lists: its own (``entity``) and its Personalized PageRank from the query's entities and
    ``seeds``, the top vector and lexical hits with their fused weight (``ppr``, ``read.ppr``)."""
    out: list[ChannelResult] = []
    for name in CHANNELS:
        size = sizes.get(name, 0)
        if size <= 0:
            continue
        if name == "temporal":
            hits = temporal_channel(store, tenant, analysis, qvec, size, rows, now=now)
            out.append(ChannelResult(name, hits, {}))
            walked = ordering_walk(store, tenant, analysis.query, embed, size, rows) if embed else []
            if walked:
                out.append(ChannelResult("walk", walked, {}))
        elif name == "causal":
            out.append(ChannelResult(name, causal_channel(store, tenant, analysis, qvec, size, rows), {}))
        elif name == "semantic":
            out.append(ChannelResult(name, semantic_channel(store, tenant, qvec, size, rows), {}))
        else:
            hits, weights = entity_channel(store, tenant, analysis, qvec, size, rows, speakers)
            out.append(ChannelResult(name, hits, weights))
            entities = query_entities(analysis, speakers)
            bridges = ppr_channel(
                store,
                tenant,
                entities,
                seeds,
                size,
                rows,
                speakers=speakers,
                share=ENTITY_SHARE,
                floor=ENTITY_FLOOR,
            )
            out.append(ChannelResult("ppr", bridges, {}))
    return out


def _read(
    store: SearchStore, tenant: Tenant, ids: Sequence[str], rows: MutableMapping[str, Candidate]
) -> None:
    missing = [i for i in ids if i not in rows]
    if missing:
        rows.update(store.context.candidates(missing, tenant))


def _cosines(ids: Sequence[str], rows: Mapping[str, Candidate], qvec: Vector) -> dict[str, float]:
    out: dict[str, float] = {}
    for i in ids:
        found = rows.get(i)
        if found is not None and found.embedding is not None:
            out[i] = float(np.dot(found.embedding, qvec))
    return out


def latest(store: SearchStore, tenant: Tenant) -> dt.datetime | None:
    """The time of the user's latest timestamped memory (what "last weekend" is grounded against)."""
    found = store.links.time_search(tenant, _FAR, 1)
    if not found:
        return None
    return _FAR - dt.timedelta(seconds=found[0][1])


def temporal_channel(
    store: SearchStore,
    tenant: Tenant,
    analysis: QueryAnalysis,
    qvec: Vector,
    size: int,
    rows: MutableMapping[str, Candidate],
    *,
    now: dt.datetime | None = None,
) -> _Hits:
    """The temporal channel's ranked hits (see the module docstring); ``[]`` for a query about no time.
    ``now``: what relative time in the query is grounded against (the caller's present: "last
    weekend" before ``now``); the memory's latest time when ``None``."""
    query = analysis.query
    if not mentions_time(query) and _ORDER.search(query) is None:
        return []
    now = now if now is not None else latest(store, tenant)
    windows = ground(query, now) if now is not None else ()
    if windows:
        return _in_window(store, tenant, windows, qvec, size, rows)
    deep = DEEP * size
    vec = store.vectors.search(tenant, qvec, deep)
    lex = store.lexical.search("nodes", tenant, analysis.stripped, deep)
    ids = list(dict.fromkeys([i for i, _ in vec] + [i for i, _ in lex]))
    _read(store, tenant, ids, rows)
    dated = {i for i in ids if i in rows and rows[i].temporal_refs}
    fused = fused_scores([i for i, _ in hits if i in dated] for hits in (vec, lex))
    order = sorted(fused, key=lambda i: -fused[i])[:size]
    return [(i, fused[i]) for i in order]


def _in_window(
    store: SearchStore,
    tenant: Tenant,
    windows: Sequence[TemporalRef],
    qvec: Vector,
    size: int,
    rows: MutableMapping[str, Candidate],
) -> _Hits:
    """The memories whose day lies in one of ``windows``, best cosine first (at most ``size``)."""
    ids: list[str] = []
    for ref in windows:
        start = dt.datetime.combine(ref.start, dt.time(), tzinfo=dt.UTC)
        end = dt.datetime.combine(ref.end, dt.time(23, 59, 59), tzinfo=dt.UTC)
        middle = start + (end - start) / 2
        ids += [
            i
            for i, delta in store.links.time_search(tenant, middle, DEEP * size)
            if delta <= (end - middle).total_seconds()
        ]
    ids = list(dict.fromkeys(ids))
    _read(store, tenant, ids, rows)
    inside = [i for i in ids if i in rows and _inside(rows[i], windows)]
    cos = _cosines(inside, rows, qvec)
    order = sorted(inside, key=lambda i: -cos.get(i, -1.0))[:size]
    return [(i, cos.get(i, 0.0)) for i in order]


def _inside(row: Candidate, windows: Sequence[TemporalRef]) -> bool:
    if row.at is None:
        return False
    day = row.at.date()
    return any(ref.start <= day <= ref.end for ref in windows)


def query_entities(analysis: QueryAnalysis, speakers: Collection[str] = ()) -> tuple[str, ...]:
    """The query's entities without the persons it names and the memory's speakers (normalised)."""
    skip = {normalize_entity(s) for s in (*speakers, *analysis.persons) if s}
    for s in list(skip):
        skip.update(s.split())
    return tuple(e for e in extract_entities(analysis.stripped) if e and e not in skip)


def entity_channel(
    store: SearchStore,
    tenant: Tenant,
    analysis: QueryAnalysis,
    qvec: Vector,
    size: int,
    rows: MutableMapping[str, Candidate],
    speakers: Collection[str] = (),
) -> tuple[_Hits, dict[str, float]]:
    """The entity channel's ranked hits and each hit's summed IDF (see the module docstring)."""
    entities = query_entities(analysis, speakers)
    if not entities:
        return [], {}
    total, counts = store.links.entity_counts(tenant, entities)
    if total <= 0:
        return [], {}
    weight: dict[str, float] = {}
    for e in entities:
        df = counts.get(" ".join(e.casefold().split()), 0)
        if 0 < df <= max(ENTITY_FLOOR, ENTITY_SHARE * total):
            weight[e] = math.log((1 + total) / df)
    scores: dict[str, float] = {}
    for e, w in weight.items():
        for node_id, _ in store.links.entity_search(tenant, [e], DEEP * size):
            scores[node_id] = scores.get(node_id, 0.0) + w
    if not scores:
        return [], {}
    ids = sorted(scores, key=lambda i: -scores[i])[: DEEP * size]
    _read(store, tenant, ids, rows)
    ids = [i for i in ids if i in rows]
    cos = _cosines(ids, rows, qvec)
    order = sorted(ids, key=lambda i: (-scores[i], -cos.get(i, -1.0)))[:size]
    return [(i, scores[i]) for i in order], {i: scores[i] for i in order}

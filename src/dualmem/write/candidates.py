"""Candidate discovery (paper eq. 8): deterministic signals only, at most K_w candidates.

s_cand(v, u) fuses four signals: vector similarity, lexical (BM25) rank, shared entities and
temporal proximity. No controller call happens here.

Every probe is bounded, so a write costs O(log n)-ish whatever the memory's size: the
vector and lexical shortlists are top-``cand_pool`` index lookups (the lexical one through
``Store.lexical_probe``, which in a large SQLite memory ranks only the rows holding the node's rare
terms); an entity counts only while it is rare (linked to at most ``cand_entity_share`` of the
user's nodes, an O(1) lookup per entity), and the store reads at most a fixed number of links per
entity; time proximity walks the (user, time) index ``cand_pool`` deep each way. The speaker is a
field, never an entity.

Discovery depends on what is stored when it runs (BM25 statistics, shortlist depths, entity shares),
so it runs once per node, at write time, before the next node is stored. When the controller fails
and the node stays ``pending``, its candidates are recorded with it (:func:`candidate_records`, as
``candidates`` decisions, which go with the node or the candidate when either is forgotten) and
``repair`` asks the controller about exactly those (:func:`recorded_candidates`): a repaired memory
equals one built without the outage, however many nodes were written in between.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from dualmem.config import WriteProfile
from dualmem.plane.base import Decision, WriteStore
from dualmem.types import Node, Tenant

__all__ = [
    "CANDIDATES",
    "Candidate",
    "TextSignals",
    "candidate_records",
    "discover",
    "recorded_candidates",
    "text_signals",
    "written_candidates",
]

#: the decision purpose under which a pending node's write-time candidates are kept for repair
CANDIDATES = "candidates"
_COUNT = "candidates.count"


@dataclass(frozen=True, slots=True)
class Candidate:
    node: Node
    score: float  # fused s_cand
    similarity: float  # cosine to the new node
    shared_entities: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TextSignals:
    """The store's answers to the probes that do not need the node's vector (lexical, entity,
    time), as :func:`discover` fuses them; found by :func:`text_signals` while it is embedded."""

    lexical: tuple[tuple[str, float], ...]
    entities: tuple[tuple[str, int], ...]
    times: tuple[tuple[str, float], ...]


def text_signals(store: WriteStore, node: Node, *, profile: WriteProfile) -> TextSignals:
    """The lexical, entity and time probes of ``node`` (stored already; its vector not needed)."""
    tenant = Tenant(node.tenant.user, node.tenant.agent, node.tenant.run)
    pool = profile.cand_pool
    lexical = store.links.probe(tenant, node.content, pool)
    # the speaker is an entity of nearly every turn they say: as a signal it only adds noise and cost
    salient = _rare(store, tenant, node, profile.cand_entity_share)
    entities = store.links.entity_search(tenant, salient, pool) if salient else []
    times = store.links.time_search(tenant, node.at, pool) if node.at is not None else []
    return TextSignals(tuple(lexical), tuple(entities), tuple(times))


def discover(
    store: WriteStore,
    node: Node,
    *,
    profile: WriteProfile,
    exclude: Collection[str] = (),
    signals: TextSignals | None = None,
) -> list[Candidate]:
    """Top-K_w existing nodes for ``node`` (never itself, never ids in ``exclude``). ``signals``:
    its :func:`text_signals`, when they were found already (the same candidates either way)."""
    tenant = Tenant(node.tenant.user, node.tenant.agent, node.tenant.run)
    pool = profile.cand_pool
    skip = set(exclude) | {node.id}
    scores: dict[str, float] = {}

    def add(node_id: str, value: float) -> None:
        if node_id not in skip:
            scores[node_id] = scores.get(node_id, 0.0) + value

    sims: dict[str, float] = {}
    if node.embedding is not None:
        for node_id, sim in store.vectors.search(tenant, node.embedding, pool + len(skip)):
            sims[node_id] = sim
            add(node_id, profile.cand_vector * max(sim, 0.0))
    found = signals if signals is not None else text_signals(store, node, profile=profile)
    for rank, (node_id, _) in enumerate(found.lexical):
        add(node_id, profile.cand_lexical / (1.0 + rank) ** 0.5)
    for node_id, shared in found.entities:
        add(node_id, profile.cand_entity * min(shared, 3) / 3.0)
    for node_id, delta_s in found.times:
        add(node_id, profile.cand_time * math.exp(-delta_s / 86_400.0))
    if not scores:
        return []
    # stable: equal scores keep the order the signals found them in (store order), not random ids
    top = sorted(scores.items(), key=lambda kv: -kv[1])[: profile.k_candidates]
    nodes = store.get_nodes([node_id for node_id, _ in top], tenant)
    own = set(node.entities)
    out: list[Candidate] = []
    for node_id, score in top:
        other = nodes.get(node_id)
        if other is None:
            continue
        similarity = sims.get(node_id)
        if similarity is None:
            similarity = _cosine(node, other)
        common = tuple(sorted(own & set(other.entities)))
        out.append(Candidate(other, score, similarity, common))
    return out


def candidate_records(node: Node, candidates: Sequence[Candidate]) -> list[Decision]:
    """The candidates discovered for ``node`` as decision records: a count, then one per candidate
    (its fused score, in rank order), so that an empty list is recorded too."""
    out = [Decision(node.id, CANDIDATES, "candidates", _COUNT, float(len(candidates)))]
    out += [
        Decision(node.id, CANDIDATES, f"candidate_{i}", "candidate", float(c.score), other_id=c.node.id)
        for i, c in enumerate(candidates)
    ]
    return out


def recorded_candidates(store: WriteStore, node: Node) -> list[Candidate] | None:
    """The candidates recorded for ``node`` when it was written (those still stored, in rank order);
    ``None`` when none were recorded (a node written before records existed)."""
    records = [d for d in store.log.decisions_of(node.id) if d.purpose == CANDIDATES]
    if not any(d.key == _COUNT for d in records):
        return None
    ranked = [
        (int(d.name.rpartition("_")[2]), d.other_id, d.value)
        for d in records
        if d.key == "candidate" and d.other_id is not None
    ]
    return _stored(store, node, ranked)


def written_candidates(store: WriteStore, node: Node) -> list[Candidate] | None:
    """The candidates ``node`` was related to when it was written, in rank order (those still
    stored): its recorded ones (:func:`recorded_candidates`), else the pairs of its relation request
    (``pair_<rank>_...`` decisions name each candidate). ``None`` when neither is stored (relations
    off, or no candidate at write time).

    What a later step (a consolidation pass) needs of a node's neighbours is then what was found
    when it was written, not what a fresh :func:`discover` finds among everything stored since:
    the same whether the node came in one ``add`` or in an ``add_many``, and whenever the step runs.
    """
    recorded = recorded_candidates(store, node)
    if recorded is not None:
        return recorded
    ranks: dict[str, int] = {}
    for d in store.log.decisions_of(node.id):
        if d.purpose == "relations" and d.other_id is not None and d.name.startswith("pair_"):
            rank = d.name.split("_", 2)[1]
            if rank.isdigit():
                ranks.setdefault(d.other_id, int(rank))
    if not ranks:
        return None
    return _stored(store, node, [(rank, other, 0.0) for other, rank in ranks.items()])


def _stored(store: WriteStore, node: Node, rows: Sequence[tuple[int, str | None, float]]) -> list[Candidate]:
    """``(rank, other id, fused score)`` rows as candidates of ``node``, in rank order, skipping
    those no longer stored (forgotten since)."""
    ranked = sorted(rows, key=lambda row: row[0])
    tenant = Tenant(node.tenant.user, node.tenant.agent, node.tenant.run)
    nodes = store.get_nodes([other for _, other, _ in ranked if other is not None], tenant)
    own = set(node.entities)
    out: list[Candidate] = []
    for _, other_id, score in ranked:
        other = nodes.get(other_id) if other_id is not None else None
        if other is not None:
            common = tuple(sorted(own & set(other.entities)))
            out.append(Candidate(other, score, _cosine(node, other), common))
    return out


def _rare(store: WriteStore, tenant: Tenant, node: Node, share: float) -> list[str]:
    """The node's entities that may seed candidates: not the speaker, and in at most ``share`` of nodes."""
    speaker = node.speaker.strip().lower() if node.speaker else None
    salient = [e for e in node.entities if e != speaker]
    if not salient or share >= 1.0:
        return salient
    total, counts = store.links.entity_counts(tenant, salient)
    limit = share * total
    return [e for e in salient if counts.get(" ".join(e.casefold().split()), 0) <= limit]


def _cosine(a: Node, b: Node) -> float:
    if a.embedding is None or b.embedding is None:
        return 0.0
    return float(np.dot(a.embedding, b.embedding))

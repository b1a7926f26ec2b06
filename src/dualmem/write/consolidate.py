"""Periodic consolidation (paper §3.2 last paragraph, B.3): links, supersession, optional summaries.

One pass examines a bounded neighbourhood of a tenant's recent nodes and sends ONE batched request
with redundancy, contradiction, obsolescence and link_usefulness Nouls plus the representation
Choice per pair. It never replaces or deletes raw observations: it records its decisions and adds
useful links. An update supersedes the fact it replaces when it is written (the relation request's
``relation.supersedes``); only when the write path asks no relation questions does a pass mark
superseded facts (``valid_to`` + a ``superseded_by`` edge). A pass judges pairs by what their writes
found, whatever was written since: the same pass after one ``add`` or an ``add_many``. A caller-supplied
System-Two summarizer writes a derived node only for a merge/promote selected with probability
>= ``consolidation_gate`` while contradiction stays < ``contradiction_gate``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from dualmem.config import WriteProfile
from dualmem.control import catalog
from dualmem.control.meter import Meter
from dualmem.control.questions import Batch, BatchResult, Question
from dualmem.control.states import (
    ConsolidationPair,
    ConsolidationState,
    EmbeddingFeatures,
    MemoryState,
    RelationCandidate,
)
from dualmem.embed.base import Embedder
from dualmem.embed.windows import embed_texts
from dualmem.errors import NotFound
from dualmem.plane.base import Decision, WriteStore
from dualmem.text.entities import extract_entities
from dualmem.text.slots import may_replace, slot_of
from dualmem.types import Edge, JSONValue, Node, Tenant, Vector, fields_json, new_id, utcnow
from dualmem.write.candidates import Candidate, discover, written_candidates
from dualmem.write.relations import decisions_from, observed_before

__all__ = ["ConsolidationReport", "Consolidator", "Summarizer"]

#: tries of a pass's write transaction when a forget removed one of its memories in the middle of it
_COMMIT_TRIES = 3

#: (source nodes, selected representation "merge" | "promote") -> the derived node's text
Summarizer = Callable[[Sequence[Node], str], str]


@dataclass(frozen=True, slots=True)
class ConsolidationReport:
    user: str
    examined: int  # recent nodes looked at
    pairs: int
    calls: int
    links: int
    superseded: tuple[tuple[str, str], ...] = ()  # (old id, new id)
    derived: tuple[str, ...] = ()
    representations: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def to_json(self) -> dict[str, JSONValue]:
        return fields_json(
            self,
            superseded=[list(p) for p in self.superseded],
            derived=list(self.derived),
            representations=dict(self.representations),
            seconds=round(self.seconds, 4),
        )


@dataclass(eq=False)
class Consolidator:
    store: WriteStore
    embedder: Embedder
    meter: Meter
    profile: WriteProfile
    summarizer: Summarizer | None = field(default=None, kw_only=True)

    def run(self, tenant: Tenant, node_ids: Sequence[str] | None = None) -> ConsolidationReport:
        """One pass over ``node_ids`` (the writes of a period), or the tenant's most recent nodes."""
        started = time.perf_counter()
        if node_ids is None:
            window = self.store.recent_nodes(tenant, self.profile.consolidation_window)
        else:
            found = self.store.get_nodes(node_ids, tenant)
            window = [found[i] for i in node_ids if i in found]
        # what a pass judges depends on nothing written after its window (a later write may end one
        # of these facts): the same pass whether it ran after one add or after an add_many
        recent = [n for n in window if not n.derived]
        pairs = self._pairs(recent)
        if not pairs:
            return ConsolidationReport(
                tenant.user, len(recent), 0, 0, 0, seconds=time.perf_counter() - started
            )
        batch = _batch(pairs)
        decided = self.meter.ask(batch)
        res = decided.result
        out = _Outcome()
        labels: Counter[str] = Counter()
        gate = self.profile
        for i, (new, cand) in enumerate(pairs):
            old = cand.node
            contradiction = res.noul(f"pair_{i}_contradiction")
            obsolete = res.noul(f"pair_{i}_obsolescence")
            rep = res.choice(f"pair_{i}_representation")
            labels[rep.label] += 1
            if "semantic" in gate.views and res.noul(f"pair_{i}_link_usefulness") >= gate.theta_rel:
                out.edges.append(
                    Edge(new.id, old.id, "semantic", "related", res.noul(f"pair_{i}_link_usefulness"))
                )
            # an update supersedes when it is written (relation.supersedes); only without the write
            # path's relation requests does a pass mark it (the paper's B.3 place for it)
            superseding = (
                not gate.relations_enabled
                and _supersedes(gate.supersede_threshold, obsolete, contradiction)
                and may_replace(
                    slot_of(new.content, new.speaker), slot_of(old.content, old.speaker), new.content
                )
            )
            if superseding and all(o != old.id for o, _, _ in out.superseded):
                out.superseded.append((old.id, new.id, new.at or utcnow()))
                out.edges.append(
                    Edge(old.id, new.id, "temporal", "superseded_by", max(obsolete, contradiction))
                )
            if (
                self.summarizer is not None
                and rep.label in ("merge", "promote")
                and rep.probability >= gate.consolidation_gate
                and contradiction < gate.contradiction_gate
            ):
                node, node_chunks = self._derive([old, new], rep.label)
                out.derived.append(node)
                if node_chunks is not None:
                    out.chunks[node.id] = node_chunks
                out.edges += [Edge(node.id, src.id, "semantic", "derived_from", 1.0) for src in (old, new)]
            out.decisions += _pair_decisions(i, new, old, batch, res, decided.backend, decided.latency_ms)
        out = self._commit(tenant, {n.id for new, cand in pairs for n in (new, cand.node)}, out)
        return ConsolidationReport(
            user=tenant.user,
            examined=len(recent),
            pairs=len(pairs),
            calls=1,
            links=sum(1 for e in out.edges if e.label == "related"),
            superseded=tuple((old, new) for old, new, _ in out.superseded),
            derived=tuple(n.id for n in out.derived),
            representations=dict(labels),
            seconds=time.perf_counter() - started,
        )

    def _commit(self, tenant: Tenant, involved: set[str], out: _Outcome) -> _Outcome:
        """Store a pass's outcome in one transaction. Its pairs were read before System One answered,
        and a ``forget`` may have committed since (another thread or process): what names a memory
        no longer stored is left out and the rest is stored (a normal race, not a failure). A store
        whose transactions do not lock out a forget between the re-read and the writes (PostgreSQL,
        read committed) may still refuse the writes: the transaction is then tried again."""
        for attempt in range(_COMMIT_TRIES):
            try:
                return self._commit_once(tenant, involved, out)
            except NotFound:
                if attempt == _COMMIT_TRIES - 1:
                    raise
        raise AssertionError("unreachable")

    def _commit_once(self, tenant: Tenant, involved: set[str], out: _Outcome) -> _Outcome:
        with self.store.transaction():
            stored = self.store.get_nodes(list(involved), tenant)
            gone = involved - stored.keys()
            if gone:
                out = out.without(gone, stored.keys())
            if out.derived:
                self.store.put_nodes(out.derived)
                self.store.vectors.put_chunks(out.chunks)
            for old_id, _, end in out.superseded:  # its current row, not the one read before
                self.store.update_node(dataclasses.replace(stored[old_id], valid_to=end))
            self.store.put_edges(out.edges)
            self.store.log.put_decisions(out.decisions)
        return out

    def _pairs(self, recent: list[Node]) -> list[tuple[Node, Candidate]]:
        """Each recent node with its most similar earlier neighbours; unordered pairs judged once.

        The neighbours are the candidates the node's write found (:func:`written_candidates`), not
        a new search among everything stored since: a pass judges the same pairs whenever it runs
        (inline or in the background, while later writes go on) and however the nodes were written
        (``add`` or ``add_many``). A node without them (relations off) is searched afresh."""
        seen: set[frozenset[str]] = set()
        scored: list[tuple[float, Node, Candidate]] = []
        for node in recent:
            judged = {
                d.other_id for d in self.store.log.decisions_of(node.id) if d.purpose == "consolidation"
            }
            found = written_candidates(self.store, node)
            if found is None:
                found = discover(self.store, node, profile=self.profile)
            for cand in found[:3]:
                other = cand.node
                key = frozenset((node.id, other.id))
                if key in seen or other.id in judged or other.derived or not observed_before(other, node):
                    continue
                seen.add(key)
                scored.append((cand.similarity, node, cand))
        scored.sort(key=lambda t: -t[0])
        return [(n, c) for _, n, c in scored[: self.profile.consolidation_pairs]]

    def _derive(self, sources: list[Node], representation: str) -> tuple[Node, Vector | None]:
        """A derived summary node of ``sources`` and its chunk vectors (a long summary), if any."""
        assert self.summarizer is not None
        text = self.summarizer(sources, representation).strip()
        vectors = embed_texts(self.embedder, [text])
        newest = max(sources, key=lambda n: (n.at is not None, n.at, n.created_at))
        return Node(
            id=new_id(),
            tenant=newest.tenant,
            content=text,
            at=newest.at,
            source="consolidation",
            metadata={"representation": representation, "sources": [s.id for s in sources]},
            entities=extract_entities(text),
            embedding=vectors.rows[0],
            derived=True,
        ), vectors.chunks[0]


@dataclass(slots=True)
class _Outcome:
    """What one pass writes: edges, decisions, supersessions ``(old, new, valid_to)``, summaries."""

    edges: list[Edge] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    superseded: list[tuple[str, str, dt.datetime]] = field(default_factory=list)
    derived: list[Node] = field(default_factory=list)
    chunks: dict[str, Vector] = field(default_factory=dict)

    def without(self, gone: set[str], stored: Collection[str]) -> _Outcome:
        """This outcome less everything that names an id in ``gone`` (forgotten meanwhile)."""
        derived = [n for n in self.derived if gone.isdisjoint(_sources(n))]
        known = set(stored) | {n.id for n in derived}
        return _Outcome(
            edges=[e for e in self.edges if e.source in known and e.target in known],
            decisions=[d for d in self.decisions if gone.isdisjoint((d.node_id, d.other_id))],
            superseded=[s for s in self.superseded if gone.isdisjoint(s[:2])],
            derived=derived,
            chunks={k: v for k, v in self.chunks.items() if k in known},
        )


def _sources(node: Node) -> list[str]:
    """The ids a derived summary was made from (its ``metadata["sources"]``)."""
    sources = node.metadata.get("sources")
    return [str(i) for i in sources] if isinstance(sources, list) else []


def _supersedes(threshold: float | None, obsolete: float, contradiction: float) -> bool:
    """dualmem extension: an older fact is superseded when obsolescence or contradiction reaches the
    threshold (``None``: never, as in the paper)."""
    return threshold is not None and max(obsolete, contradiction) >= threshold


def _batch(pairs: Sequence[tuple[Node, Candidate]]) -> Batch:
    questions: dict[str, Question] = {}
    for i in range(len(pairs)):
        questions.update(catalog.consolidation_questions(i))
    nodes = {n.id: n for new, cand in pairs for n in (new, cand.node)}
    source = EmbeddingFeatures.of(list(nodes.values()))
    state = ConsolidationState(
        tuple(
            ConsolidationPair(
                MemoryState.of(new), RelationCandidate.of(new, cand.node, cand.shared_entities, source)
            )
            for new, cand in pairs
        )
    )
    return Batch.of(state, questions, "consolidation", features=source)


def _pair_decisions(
    i: int, new: Node, old: Node, batch: Batch, res: BatchResult, backend: str, latency_ms: float
) -> list[Decision]:
    mine = {name: q for name, q in batch.questions.items() if q.target == i}
    records = decisions_from(new.id, mine, "consolidation", res, backend=backend, latency_ms=latency_ms)
    return [dataclasses.replace(d, other_id=old.id) for d in records]

"""Periodic consolidation (paper §3.2 last paragraph, B.3): links, supersession, optional summaries.

One pass examines a bounded neighbourhood of a tenant's recent nodes and sends ONE batched request
with redundancy, contradiction, obsolescence and link_usefulness Nouls plus the representation
Choice per pair. It never replaces or deletes raw observations: it records its decisions, adds
useful links and marks superseded facts (``valid_to`` + a ``superseded_by`` edge). A caller-supplied
System-Two summarizer writes a derived node only for a merge/promote selected with probability
>= ``consolidation_gate`` while contradiction stays < ``contradiction_gate``.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Sequence
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
from dualmem.plane.base import Decision, Store
from dualmem.text.entities import extract_entities
from dualmem.types import Edge, JSONValue, Node, Tenant, Vector, new_id, utcnow
from dualmem.write.candidates import Candidate, discover
from dualmem.write.relations import decisions_from, observed_before

__all__ = ["ConsolidationReport", "Consolidator", "Summarizer"]

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
        return {
            "user": self.user,
            "examined": self.examined,
            "pairs": self.pairs,
            "calls": self.calls,
            "links": self.links,
            "superseded": [list(p) for p in self.superseded],
            "derived": list(self.derived),
            "representations": dict(self.representations),
            "seconds": round(self.seconds, 4),
        }


class Consolidator:
    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        meter: Meter,
        profile: WriteProfile,
        *,
        summarizer: Summarizer | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.meter = meter
        self.profile = profile
        self.summarizer = summarizer

    def run(self, tenant: Tenant, node_ids: Sequence[str] | None = None) -> ConsolidationReport:
        """One pass over ``node_ids`` (the writes of a period), or the tenant's most recent nodes."""
        started = time.perf_counter()
        if node_ids is None:
            window = self.store.recent_nodes(tenant, self.profile.consolidation_window)
        else:
            found = self.store.get_nodes(node_ids, tenant)
            window = [found[i] for i in node_ids if i in found]
        recent = [n for n in window if _live(n)]
        pairs = self._pairs(recent)
        if not pairs:
            return ConsolidationReport(
                tenant.user, len(recent), 0, 0, 0, seconds=time.perf_counter() - started
            )
        batch = _batch(pairs)
        decided = self.meter.ask(batch)
        res = decided.result
        edges: list[Edge] = []
        updates: dict[str, Node] = {}
        superseded: list[tuple[str, str]] = []
        derived: list[Node] = []
        chunks: dict[str, Vector] = {}
        labels: Counter[str] = Counter()
        decisions: list[Decision] = []
        gate = self.profile
        for i, (new, cand) in enumerate(pairs):
            old = cand.node
            contradiction = res.noul(f"pair_{i}_contradiction")
            obsolete = res.noul(f"pair_{i}_obsolescence")
            rep = res.choice(f"pair_{i}_representation")
            labels[rep.label] += 1
            if res.noul(f"pair_{i}_link_usefulness") >= gate.theta_rel:
                edges.append(
                    Edge(new.id, old.id, "semantic", "related", res.noul(f"pair_{i}_link_usefulness"))
                )
            if _supersedes(gate.supersede_threshold, obsolete, contradiction) and old.id not in updates:
                end = new.at or utcnow()
                updates[old.id] = dataclasses.replace(old, valid_to=end)
                edges.append(Edge(old.id, new.id, "temporal", "superseded_by", max(obsolete, contradiction)))
                superseded.append((old.id, new.id))
            if (
                self.summarizer is not None
                and rep.label in ("merge", "promote")
                and rep.probability >= gate.consolidation_gate
                and contradiction < gate.contradiction_gate
            ):
                node, node_chunks = self._derive([old, new], rep.label)
                derived.append(node)
                if node_chunks is not None:
                    chunks[node.id] = node_chunks
                edges += [Edge(node.id, src.id, "semantic", "derived_from", 1.0) for src in (old, new)]
            decisions += _pair_decisions(i, new, old, batch, res, decided.backend, decided.latency_ms)
        with self.store.transaction():
            if derived:
                self.store.put_nodes(derived)
                self.store.put_chunks(chunks)
            for node in updates.values():
                self.store.update_node(node)
            self.store.put_edges(edges)
            self.store.put_decisions(decisions)
        return ConsolidationReport(
            user=tenant.user,
            examined=len(recent),
            pairs=len(pairs),
            calls=1,
            links=sum(1 for e in edges if e.label == "related"),
            superseded=tuple(superseded),
            derived=tuple(n.id for n in derived),
            representations=dict(labels),
            seconds=time.perf_counter() - started,
        )

    def _pairs(self, recent: list[Node]) -> list[tuple[Node, Candidate]]:
        """Each recent node with its most similar earlier neighbours; unordered pairs judged once."""
        seen: set[frozenset[str]] = set()
        scored: list[tuple[float, Node, Candidate]] = []
        for node in recent:
            judged = {d.other_id for d in self.store.decisions_of(node.id) if d.purpose == "consolidation"}
            for cand in discover(self.store, node, profile=self.profile)[:3]:
                other = cand.node
                key = frozenset((node.id, other.id))
                if key in seen or other.id in judged or not _live(other) or not observed_before(other, node):
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


def _supersedes(threshold: float | None, obsolete: float, contradiction: float) -> bool:
    """dualmem extension: an older fact is superseded when obsolescence or contradiction reaches the
    threshold (``None``: never, as in the paper)."""
    return threshold is not None and max(obsolete, contradiction) >= threshold


def _live(node: Node) -> bool:
    return not node.derived and node.valid_to is None


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

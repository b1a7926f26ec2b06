"""The write path (paper eq. 10): observation -> type -> candidates -> relations -> memory.

Every valid observation becomes one canonical node; there is no store-or-discard decision. A
write costs at most one typing request and one relation request. When the controller fails the
node is still stored, with its deterministic edges, and marked ``pending`` for ``repair``; in a
batch of writes only the nodes whose own requests failed stay pending, the others are completed.

One write is one store transaction: the nodes, their idempotency keys, deterministic and inferred
edges, decisions and final status commit together or not at all (the controller is asked inside
it, so a slow remote controller holds the write lock that long; readers are never blocked). An
observation whose idempotency key is already stored is not written again: its stored id is returned.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from collections.abc import Generator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import cast

from dualmem.config import WriteProfile
from dualmem.control import catalog
from dualmem.control.meter import Decided, Meter
from dualmem.control.questions import Batch
from dualmem.control.states import TypingState
from dualmem.embed.base import Embedder
from dualmem.embed.windows import NodeVectors, embed_texts
from dualmem.errors import ControllerError
from dualmem.plane.base import Decision, StagedNodes, WriteStore
from dualmem.text.entities import EntityExtractor, create_extractor
from dualmem.text.slots import SLOT_KEY, slot_of
from dualmem.text.temporal import ground
from dualmem.types import Edge, Node, Observation, Tenant, TypeScores, new_id, utcnow
from dualmem.write.candidates import Candidate, candidate_records, discover, recorded_candidates, text_signals
from dualmem.write.relations import (
    decisions_from,
    deterministic_edges,
    in_views,
    inferred_edges,
    relation_batch,
    supersessions,
)

__all__ = ["OVERLAP_MIN_CPUS", "WriteReport", "Writer", "natural_key"]

#: the CPUs from which one ``add`` embeds its text on a worker thread by default (``Writer(overlap=)``)
OVERLAP_MIN_CPUS = 4


def _failure(typed: object, related: object) -> ControllerError | None:
    """The controller failure of one node's typing or relation request, if either failed."""
    for outcome in (typed, related):
        if isinstance(outcome, ControllerError):
            return outcome
    return None


def _slot_decision(node: Node) -> Decision:
    """The record of a new memory's slot (``dualmem.text.slots``): its label the slot, its value 1
    when an attribute was found; ``inspect`` and the inspector show it."""
    slot = slot_of(node.content, node.speaker)
    return Decision(node.id, "slot", "slot", SLOT_KEY, 1.0 if slot.known else 0.0, str(slot), "text")


def natural_key(obs: Observation, tenant: Tenant) -> str | None:
    """The idempotency key of a conversation turn: (agent, run, source, session, turn id) within a
    user; ``None`` for an observation without a turn id."""
    if obs.turn_id is None:
        return None
    return "turn:" + json.dumps([tenant.agent, tenant.run, obs.source, obs.session, obs.turn_id])


@dataclass(frozen=True, slots=True)
class WriteReport:
    ids: tuple[str, ...]  # one per observation, in order (a stored id for an already-stored key)
    pending: tuple[str, ...]  # nodes stored without their controller decisions
    edges: int
    error: str | None = None  # the controller failure that left nodes pending, if any
    existing: tuple[str, ...] = ()  # ids returned for keys already stored (nothing was written)


class Writer:
    """Turns observations into nodes and edges. Knows only the Store/Embedder/Meter protocols."""

    def __init__(
        self,
        store: WriteStore,
        embedder: Embedder,
        meter: Meter,
        profile: WriteProfile,
        *,
        extractor: EntityExtractor | None = None,
        overlap: bool | None = None,
    ) -> None:
        """``overlap``: embed a single observation on a worker thread while its write starts (see
        ``_write_chunk``); ``False`` embeds it first, as a chunk is; ``None``: on with at least
        :data:`OVERLAP_MIN_CPUS` CPUs (on two cores the model's two threads and the write contend:
        measured slower, ``docs/benchmarks.md``)."""
        self.overlap = overlap if overlap is not None else (os.cpu_count() or 1) >= OVERLAP_MIN_CPUS
        self.store = store
        self.embedder = embedder
        self.meter = meter
        self.profile = profile
        self.extractor = extractor if extractor is not None else create_extractor(profile.entities)

    # -- public ------------------------------------------------------------------------------
    def write(
        self, observations: Sequence[Observation], tenant: Tenant, keys: Sequence[str | None] | None = None
    ) -> WriteReport:
        """Store ``observations`` (in order) and relate them to the memory, in one transaction.

        ``keys`` (one per observation, ``None`` for none) are idempotency keys.
        """
        if not observations:
            return WriteReport((), (), 0)
        return self._write_chunk(observations, tenant, keys)

    def write_chunks(
        self,
        chunks: Sequence[Sequence[Observation]],
        tenant: Tenant,
        keys: Sequence[Sequence[str | None]] | None = None,
    ) -> Generator[WriteReport, None, None]:
        """``write`` each chunk in order (one transaction each), embedding the next chunk meanwhile.

        The embedder (onnxruntime) releases the GIL, so embedding chunk i+1 overlaps with relating
        chunk i. Chunks are still written strictly in order.
        """
        if not chunks:
            return
        if len(chunks) == 1:  # one chunk (a single add): no next chunk to embed meanwhile
            yield self._write_chunk(chunks[0], tenant, keys[0] if keys else None)
            return
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dualmem-embed") as pool:
            upcoming = pool.submit(self._embed, chunks[0])
            for i, chunk in enumerate(chunks):
                vectors = upcoming.result()
                if i + 1 < len(chunks):
                    upcoming = pool.submit(self._embed, chunks[i + 1])
                yield self._write(chunk, vectors, tenant, None if keys is None else keys[i])

    def _embed(self, observations: Sequence[Observation]) -> NodeVectors:
        return embed_texts(self.embedder, [o.content for o in observations])

    def _write_chunk(
        self, observations: Sequence[Observation], tenant: Tenant, keys: Sequence[str | None] | None
    ) -> WriteReport:
        """``_write`` one chunk. One observation into a store that stores a node in two halves
        (:class:`StagedNodes`) is embedded on a worker thread meanwhile (the model releases the GIL):
        its row is stored and its text probes and typing run before the vector is waited for."""
        if not self.overlap or len(observations) != 1 or not isinstance(self.store, StagedNodes):
            return self._write(observations, self._embed(observations), tenant, keys)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dualmem-embed") as pool:
            return self._write(observations, pool.submit(self._embed, observations), tenant, keys)

    def _write(
        self,
        observations: Sequence[Observation],
        vectors: NodeVectors | Future[NodeVectors],
        tenant: Tenant,
        keys: Sequence[str | None] | None,
    ) -> WriteReport:
        wanted = [None] * len(observations) if keys is None else list(keys)
        with self.store.transaction():
            asked = {k for k in wanted if k is not None}
            stored = self.store.log.find_keys(tenant.user, asked) if asked else {}
            ids: list[str] = []
            nodes: list[Node] = []
            fresh: dict[str, str] = {}
            rows: list[int] = []  # the observation (and vector row) of each node
            for i, obs in enumerate(observations):
                key = wanted[i]
                known = None if key is None else stored.get(key, fresh.get(key))
                if known is not None:
                    ids.append(known)
                    continue
                vector = vectors.rows[i] if isinstance(vectors, NodeVectors) else None
                nodes.append(self._node(obs, tenant, vector))
                rows.append(i)
                ids.append(nodes[-1].id)
                if key is not None:
                    fresh[key] = nodes[-1].id
            if isinstance(vectors, NodeVectors):
                found, typed = self._store_nodes(nodes, vectors, rows), None
            else:
                nodes, found, typed = self._store_staged(nodes, vectors, rows)
            self.store.log.put_keys(tenant.user, fresh)
            report = self._relate(nodes, found=found, typed=typed) if nodes else WriteReport((), (), 0)
        written = {n.id for n in nodes}
        existing = tuple(i for i in ids if i not in written)
        return dataclasses.replace(report, ids=tuple(ids), existing=existing)

    def repair(self, tenant: Tenant | None) -> WriteReport:
        """Re-run the controller decisions of every ``pending`` node (after an outage).

        Each node is related to the candidates discovered when it was written (recorded with it), so
        the result equals a build without the outage. A node without that record (written by an older
        version) has its candidates discovered again, among the nodes stored before it.
        """
        if next(iter(self.store.iter_nodes(tenant, status="pending")), None) is None:
            return WriteReport((), (), 0)  # nothing to do: no write lock taken
        with self.store.transaction():
            # listed again under the lock: another process may have repaired some meanwhile
            nodes = list(self.store.iter_nodes(tenant, status="pending"))
            if not nodes:
                return WriteReport((), (), 0)
            found = [recorded_candidates(self.store, node) for node in nodes]
            return self._relate(nodes, repairing=True, found=found)

    # -- steps -------------------------------------------------------------------------------
    def _store_nodes(self, nodes: list[Node], vectors: NodeVectors, rows: list[int]) -> list[list[Candidate]]:
        """Store each node, then find its candidates, before the next one is stored: the searches see
        exactly what one ``add`` per observation would see (the same edges either way)."""
        found: list[list[Candidate]] = []
        for node, row in zip(nodes, rows, strict=True):
            self.store.put_nodes([node])
            extra = vectors.chunks[row]
            if extra is not None:
                self.store.vectors.put_chunks({node.id: extra})
            found.append(discover(self.store, node, profile=self.profile))
        return found

    def _store_staged(
        self, nodes: list[Node], vectors: Future[NodeVectors], rows: list[int]
    ) -> tuple[list[Node], list[list[Candidate]], list[Decided | ControllerError | None] | None]:
        """``_store_nodes`` for one node while its vector is computed: the row first (FTS5, entities),
        then the text probes and the typing request, then (the vector joined) the rest of the node and
        the vector search. Stored, found and asked: what the sequential path stores, finds and asks."""
        if not nodes:
            vectors.result()  # the key was stored already: nothing to write, but an error still surfaces
            return nodes, [], None
        staged = cast(StagedNodes, self.store)
        (node,) = nodes
        staged.put_node_rows([node])
        signals = text_signals(self.store, node, profile=self.profile)
        typed = self._typing([node])
        got = vectors.result()  # the embedder's own error, raised here, rolls the write back
        (i,) = rows
        node = dataclasses.replace(node, embedding=got.rows[i])
        staged.put_node_vectors([node])
        extra = got.chunks[i]
        if extra is not None:
            self.store.vectors.put_chunks({node.id: extra})
        return [node], [discover(self.store, node, profile=self.profile, signals=signals)], typed

    def _node(self, obs: Observation, tenant: Tenant, vector: object) -> Node:
        return Node(
            id=new_id(),
            tenant=tenant,
            content=obs.content,
            at=obs.at,
            speaker=obs.speaker,
            source=obs.source,
            session=obs.session,
            turn_id=obs.turn_id,
            metadata=dict(obs.metadata),
            entities=self.extractor.extract(obs.content, speaker=obs.speaker),
            temporal_refs=ground(obs.content, obs.at),
            embedding=vector,  # type: ignore[arg-type]
            status="pending",
        )

    def _relate(
        self,
        nodes: list[Node],
        *,
        repairing: bool = False,
        found: Sequence[list[Candidate] | None] | None = None,
        typed: list[Decided | ControllerError | None] | None = None,
    ) -> WriteReport:
        """Edges, controller requests and decisions of ``nodes`` (stored); ``typed``: their typing
        answers when asked already."""
        batch_ids = [n.id for n in nodes]
        plans: list[tuple[Node, list[Candidate]]] = []
        edges: list[Edge] = []
        unrecorded: set[int] = set()  # nodes whose candidates are not recorded in the store yet
        for i, node in enumerate(nodes):
            cands = None if found is None else found[i]
            if cands is None:
                cands = discover(self.store, node, profile=self.profile, exclude=batch_ids[i:])
            if not repairing or found is None or found[i] is None:
                unrecorded.add(i)
            previous = None if repairing else self._previous(node)
            edges.extend(in_views(deterministic_edges(node, cands, previous), self.profile.views))
            plans.append((node, cands))
        self.store.put_edges(edges)  # in the caller's transaction, with the nodes
        if typed is None:
            typed = self._typing([n for n, _ in plans])
        related = self._relations(plans)
        failures = [_failure(t, r) for t, r in zip(typed, related, strict=True)]
        done = [i for i, f in enumerate(failures) if f is None]
        inferred, decisions, updated = self._apply(
            [plans[i] for i in done],
            [typed[i] for i in done],  # type: ignore[misc]
            [related[i] for i in done],  # type: ignore[misc]
        )
        self.store.put_edges(inferred)
        # a pending node keeps its write-time candidates: repair relates it to exactly those
        for i, f in enumerate(failures):
            if f is not None and i in unrecorded:
                decisions += candidate_records(*plans[i])
        self.store.log.put_decisions(decisions)
        for node in updated:
            self.store.update_node(node)
        pending = tuple(batch_ids[i] for i, f in enumerate(failures) if f is not None)
        error = next((f.one_line() for f in failures if f is not None), None)
        return WriteReport(tuple(batch_ids), pending, len(edges) + len(inferred), error)

    def _previous(self, node: Node) -> Node | None:
        """The node written just before ``node`` in its session, by any process (kept in the store)."""
        if node.session is None:
            return None
        key = "session-last:" + json.dumps(
            [node.tenant.user, node.tenant.agent, node.tenant.run, node.session]
        )
        prev_id = self.store.meta.get(key)
        self.store.meta.set(key, node.id)
        if not isinstance(prev_id, str):
            return None
        return self.store.get_node(prev_id)

    def _typing(self, nodes: list[Node]) -> list[Decided | ControllerError | None]:
        if not self.profile.typing_enabled:
            return [None] * len(nodes)
        questions = catalog.typing_questions()
        batches = [Batch.of(TypingState.of(n), questions, "typing") for n in nodes]
        return list(self.meter.ask_each(batches))

    def _relations(
        self, plans: list[tuple[Node, list[Candidate]]]
    ) -> list[tuple[Batch, Decided] | ControllerError | None]:
        out: list[tuple[Batch, Decided] | ControllerError | None] = [None] * len(plans)
        if not self.profile.relations_enabled:
            return out
        views = self.profile.views
        todo = [(i, relation_batch(node, cands, views)) for i, (node, cands) in enumerate(plans) if cands]
        decided = self.meter.ask_each([b for _, b in todo])
        for (i, batch), d in zip(todo, decided, strict=True):
            out[i] = d if isinstance(d, ControllerError) else (batch, d)
        return out

    def _apply(
        self,
        plans: list[tuple[Node, list[Candidate]]],
        typed: list[Decided | None],
        related: list[tuple[Batch, Decided] | None],
    ) -> tuple[list[Edge], list[Decision], list[Node]]:
        edges: list[Edge] = []
        decisions: list[Decision] = []
        updated: list[Node] = []
        ended: dict[str, dt.datetime] = {}  # superseded by a node of this write: old id -> valid_to
        for (node, cands), t, r in zip(plans, typed, related, strict=True):
            types = node.types
            if t is not None:
                res = t.result
                types = TypeScores(
                    episodic=res.noul("episodic"),
                    semantic=res.noul("semantic"),
                    procedural=res.noul("procedural"),
                    preference=res.noul("preference"),
                )
                decisions += decisions_from(
                    node.id,
                    catalog.typing_questions(),
                    "typing",
                    res,
                    backend=t.backend,
                    latency_ms=t.latency_ms,
                )
            if r is not None:
                batch, d = r
                found_edges = inferred_edges(node, cands, batch, d.result, self.profile.theta_rel)
                edges += in_views(found_edges, self.profile.views)
                replaced = supersessions(
                    node, cands, batch, d.result, self.profile.supersede_threshold, ended
                )
                ended.update((e.source, node.at or utcnow()) for e in replaced)
                edges += replaced
                decisions += decisions_from(
                    node.id,
                    batch.questions,
                    batch.purpose,
                    d.result,
                    backend=d.backend,
                    latency_ms=d.latency_ms,
                    others=[c.node.id for c in cands],
                )
            decisions.append(_slot_decision(node))
            updated.append(dataclasses.replace(node, types=types, status="complete"))
        return edges, decisions, self._end(updated, ended)

    def _end(self, updated: list[Node], ended: Mapping[str, dt.datetime]) -> list[Node]:
        """``updated`` with the superseded nodes' ``valid_to`` set (those of this write among them,
        the others read from the store)."""
        if not ended:
            return updated
        out = [dataclasses.replace(n, valid_to=ended[n.id]) if n.id in ended else n for n in updated]
        mine = {n.id for n in updated}
        rest = [i for i in ended if i not in mine]
        if rest:
            found = self.store.get_nodes(rest)
            out += [dataclasses.replace(found[i], valid_to=ended[i]) for i in rest if i in found]
        return out

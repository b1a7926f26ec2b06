"""The store protocols: the record store ``Memory`` asks for, its components, and the primitives a
backend writes.

:class:`MemoryStore` is what a ``Memory`` (its read and write paths, the server, the CLI) asks of a
store: 20 members, counted by ``tests/test_store_protocols.py``. The :class:`Store` core (``read_only``,
``close``, ``transaction``, ``snapshot``, the nodes and edges: 14) and six components, each a property
with a small contract, sharing the store's connection so that a component call inside
``transaction()`` is part of it:

=========================  ===========================================================================
component                  methods
=========================  ===========================================================================
``lexical``                ``lexindex.LexicalComponent``: ``search`` (BM25 of field ``"nodes"`` or
                           ``"context"``), ``count``, ``rule``; each backend's own index
``vectors``                :class:`VectorComponent`: ``search``, ``put_chunks``, ``get_chunks`` (exact,
                           above a size the ANN segments of ``plane/ann.py``)
``links``                  :class:`LinkComponent`: ``entity_search``, ``entity_counts``, ``entities_of``,
                           ``time_search``, ``probe`` (write-time candidate discovery), ``select``
                           (the nodes a ``Filter`` matches, answered by the store's index)
``context``                :class:`ContextComponent`: ``set_window``, ``node_context``, ``candidates``,
                           ``session_neighbours``
``log``                    :class:`LogComponent`: ``put_decisions``, ``decisions_of``, ``find_keys``,
                           ``put_keys``
``meta``                   :class:`MetaComponent`: ``get``, ``set``, ``bind_embedder``, ``stats``,
                           ``tenant_counts``, ``users``, ``check``
=========================  ===========================================================================

``SearchStore`` and ``WriteStore`` (what the read and the write path take) are ``MemoryStore``.

A backend writes the primitives of :class:`Backend`: the core (with ``delete_edges``) and the
capability protocols below, each a few methods of one concern; ``StoreBase``
(``plane/_lifecycle.py``) composes the ``vectors``, ``links``, ``context``, ``log`` and ``meta``
components of them (``plane/_components.py``), the ``lexical`` component is the backend's own:

=======================  =====================================================================
capability               methods
=======================  =====================================================================
:class:`Meta`            ``get_meta``, ``set_meta``, ``bind_embedder``
:class:`VectorIndex`     ``vector_search``, ``put_chunks``, ``get_chunks``
:class:`LexicalIndex`    ``lexical_search``, ``lexical_probe``
:class:`ContextWindow`   ``set_context_window``, ``context_search``, ``node_context``,
                         ``candidates``, ``session_neighbours``
:class:`LinkIndex`       ``entity_search``, ``entity_counts``, ``entities_of``, ``time_search``,
                         ``select_nodes``
:class:`DecisionLog`     ``put_decisions``, ``decisions_of``
:class:`WriteKeys`       ``find_keys``, ``put_keys``
:class:`TenantAdmin`     ``stats``, ``tenant_counts``, ``users``
:class:`Health`          ``check``
=======================  =====================================================================

Optional capabilities, asked for with ``isinstance`` on the protocol (each is ``runtime_checkable``),
never by backend class: :class:`Erasable` (``erase``: SQLite, PostgreSQL), :class:`ApproximateSearch`
(``use_ann``: SQLite, an approximate vector index above a size), :class:`LexicalIndexAdmin`
(``use_lexical_index``, ``build_lexical_index``, ``lexical_index_state``: SQLite's impact-ordered
lexical index of a large store), :class:`StagedNodes` (``put_node_rows``, ``put_node_vectors``:
SQLite, a node stored in two halves so that one ``add`` embeds its text while its row is written).
The three backends (``InMemoryStore``, ``SQLiteStore``, ``PostgresStore``) share their lifecycle
(``StoreBase``). Every implementation passes ``tests/contract/test_store_contract.py`` and
``tests/contract/test_store_components_contract.py``. Backend facts (SQL, files, caches) stay
inside the backend's modules.

Semantics every backend keeps:

- ``snapshot()``: a read-consistency block. Reads inside see one committed state (SQLite: a read
  transaction; PostgreSQL: a ``REPEATABLE READ, READ ONLY`` transaction). Multi-statement reads use it.
- ``put_edges`` / ``put_decisions`` refuse to link two users' nodes (``InvalidInput``); the schema
  enforces it as well where it can (a trigger or constraint).
- ``find_keys`` / ``put_keys``: idempotency keys of writes (a caller key, or a natural key built by the
  write path from tenant, source, session and turn id), removed with their node.
- ``check(repair=)``: a health report (:class:`dualmem.plane.check.CheckReport`).
- ``entity_search`` / ``time_search`` break ties by write order (the earlier-written node first),
  never by id (ids are random), so two builds of the same memory relate it the same way.
- ``delete_nodes`` erases: once the deleting transaction commits, the deleted text and embeddings are
  not in the store's files any more as far as the backend can ensure it (docs/storage.md).
- ``candidates``: a projected read of a query's pool candidates with their stored context.
- ``vector_search`` scores a node by its best vector: its embedding or one of its chunk vectors
  (``put_chunks``: the extra window vectors of a long text).
"""

from __future__ import annotations

import collections
import datetime as dt
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from dualmem.errors import InvalidInput
from dualmem.plane.lexindex import LexicalComponent
from dualmem.types import (
    Edge,
    JSONValue,
    Node,
    NodeStatus,
    TemporalRef,
    Tenant,
    TypeScores,
    Vector,
    View,
    from_iso,
    utcnow,
)

if TYPE_CHECKING:
    from dualmem.plane._select import Selection
    from dualmem.plane.check import CheckReport
    from dualmem.plane.erase import EraseReport

__all__ = [
    "DECISION_FIELDS",
    "ApproximateSearch",
    "Backend",
    "Candidate",
    "ContextComponent",
    "ContextWindow",
    "Decision",
    "DecisionLog",
    "Erasable",
    "Health",
    "LexicalIndex",
    "LexicalIndexAdmin",
    "LinkComponent",
    "LinkIndex",
    "LogComponent",
    "MemoryStore",
    "Meta",
    "MetaComponent",
    "NodeContext",
    "SearchStore",
    "StagedNodes",
    "Store",
    "StoreStats",
    "TenantAdmin",
    "VectorComponent",
    "VectorIndex",
    "WriteKeys",
    "WriteStore",
    "candidates_of",
    "refuse_known_or_repeated",
    "tenant_order",
]


@dataclass(frozen=True, slots=True)
class Decision:
    """One System-One decision recorded for a node (write traces, consolidation records)."""

    node_id: str
    purpose: str  # typing | relations | consolidation | repair
    name: str  # question id in its batch, e.g. pair_0_caused_by
    key: str  # stable decision key, e.g. caused_by
    value: float  # noul score, or the selected option's probability for a choice
    label: str | None = None  # selected option of a choice
    backend: str = ""
    latency_ms: float = 0.0
    other_id: str | None = None  # the other node of a pair decision
    created_at: dt.datetime = field(default_factory=utcnow)

    def to_json(self) -> dict[str, JSONValue]:
        """The decision as JSON values, keys ``DECISION_FIELDS`` in order (the time ISO 8601): the
        one serialiser; the JSONL export, the HTTP ``DecisionOut`` and the SQL rows derive from it."""
        return {
            "node_id": self.node_id,
            "purpose": self.purpose,
            "name": self.name,
            "key": self.key,
            "value": self.value,
            "label": self.label,
            "backend": self.backend,
            "latency_ms": self.latency_ms,
            "other_id": self.other_id,
            "created_at": self.created_at.isoformat(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decision:
        """The decision :meth:`to_json` wrote."""
        created = cast(dt.datetime, from_iso(data["created_at"]))
        return cls(
            data["node_id"], data["purpose"], data["name"], data["key"], data["value"], data["label"],
            data["backend"], data["latency_ms"], data["other_id"], created,
        )  # fmt: skip


#: a decision's fields as JSON and as stored, in order (``Decision.to_json``)
DECISION_FIELDS: tuple[str, ...] = (
    "node_id", "purpose", "name", "key", "value", "label", "backend", "latency_ms", "other_id", "created_at",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class NodeContext:
    """A node's stored neighbour context (``plane.context``): its session neighbours within the
    store's context window, as (id, offset), and the normalised mean of their embeddings (unit
    length; stored quantised, so within about 1% of the exact mean)."""

    neighbours: tuple[tuple[str, int], ...]
    vector: Vector | None


@dataclass(frozen=True, slots=True)
class Candidate:
    """What the read path's candidate pool needs of one node (``Store.candidates``): the stored
    node's id, tenant, text, speaker, times and embedding, and its stored context, each exactly what
    ``get_nodes`` and ``node_context`` give; the rest of the node is never decoded."""

    id: str
    tenant: Tenant
    content: str
    speaker: str | None
    at: dt.datetime | None
    temporal_refs: tuple[TemporalRef, ...]
    valid_to: dt.datetime | None
    embedding: Vector | None
    context: NodeContext | None  # ``None`` when the node has no session neighbours
    types: TypeScores | None = None  # the write path's type scores (eq. 7), when typed

    @classmethod
    def of(cls, node: Node, context: NodeContext | None) -> Candidate:
        return cls(
            node.id, node.tenant, node.content, node.speaker, node.at, node.temporal_refs, node.valid_to,
            node.embedding, context, node.types,
        )  # fmt: skip


def candidates_of(store: Backend, node_ids: Collection[str], tenant: Tenant) -> dict[str, Candidate]:
    """``Store.candidates`` composed of ``get_nodes`` and ``node_context`` (a store whose full reads
    are as cheap as a projection uses it)."""
    with store.snapshot():
        nodes = store.get_nodes(node_ids, tenant)
        contexts = store.node_context(list(nodes), tenant)
    return {node_id: Candidate.of(node, contexts.get(node_id)) for node_id, node in nodes.items()}


@dataclass(frozen=True, slots=True)
class StoreStats:
    nodes: int
    pending: int
    edges_by_view: dict[str, int]
    entities: int
    embedder: str | None
    dim: int | None
    #: ``superseded_by`` edges (an update's link to the version it replaced): stored in the temporal
    #: view's table, but bookkeeping of versions, not a temporal relation, so not in ``edges_by_view``
    supersessions: int = 0

    @classmethod
    def of(
        cls,
        nodes: int,
        pending: int,
        edges_by_view: Mapping[View, int],
        entities: int,
        bound: JSONValue,
        supersessions: int = 0,
    ) -> StoreStats:
        """The stats of counts and the store's ``embedder`` meta value (``bind_embedder``)."""
        info = bound if isinstance(bound, dict) else {}
        name, dim = info.get("name"), info.get("dim")
        return cls(
            nodes=int(nodes),
            pending=int(pending),
            edges_by_view={str(view): int(n) for view, n in edges_by_view.items()},
            entities=int(entities),
            embedder=name if isinstance(name, str) else None,
            dim=dim if isinstance(dim, int) else None,
            supersessions=int(supersessions),
        )


@runtime_checkable
class Store(Protocol):
    """The core of persistence for one memory: nodes, edges, transactions and snapshots.

    All reads are tenant-scoped with ``Tenant.covers`` semantics. ``read_only``: the store was
    opened for reading only (every write raises ``ReadOnlyStore``).
    """

    @property
    def read_only(self) -> bool: ...

    # -- lifecycle --------------------------------------------------------------------------
    def close(self) -> None: ...

    def transaction(self) -> AbstractContextManager[None]:
        """All writes inside commit together or not at all. Re-entrant (inner blocks join the outer)."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """Reads inside see one consistent committed state. Re-entrant; inside ``transaction`` a no-op."""
        ...

    # -- nodes ------------------------------------------------------------------------------
    def put_nodes(self, nodes: Sequence[Node]) -> None:
        """Insert new nodes (embedding required), their entity links, lexical and vector entries."""
        ...

    def update_node(self, node: Node) -> None:
        """Replace a stored node's mutable fields (types, status, validity, metadata, entities)."""
        ...

    def get_node(self, node_id: str, tenant: Tenant | None = None) -> Node | None:
        """The node, or ``None`` when absent or not visible to ``tenant``."""
        ...

    def get_nodes(self, node_ids: Collection[str], tenant: Tenant | None = None) -> dict[str, Node]: ...

    def delete_nodes(self, node_ids: Collection[str]) -> int:
        """Remove nodes with their edges, entity links, lexical and vector entries, decisions and
        write keys; the text and embeddings are erased from the store's files (module docstring)."""
        ...

    def iter_nodes(self, tenant: Tenant | None = None, *, status: NodeStatus | None = None) -> Iterator[Node]:
        """Nodes in (timestamp, created) order; ``tenant=None`` means every tenant (admin use)."""
        ...

    def recent_nodes(self, tenant: Tenant, k: int) -> list[Node]:
        """The ``k`` most recently written nodes of ``tenant``, newest first."""
        ...

    def count(self, tenant: Tenant | None = None) -> int: ...

    # -- edges ------------------------------------------------------------------------------
    def put_edges(self, edges: Sequence[Edge]) -> None:
        """Insert edges; an edge with the same (source, target, view, label) is replaced.

        ``NotFound`` for an unknown end; ``InvalidInput`` for an edge between two users' nodes.
        """
        ...

    def edges_of(
        self, node_id: str, views: Collection[View] | None = None, *, limit: int | None = None
    ) -> list[Edge]:
        """Edges touching ``node_id`` in either direction, optionally only in ``views``, in write order.

        With ``limit``, only the ``limit`` strongest of them: highest weight first, ties in write
        order (the read loop's bounded expansion reads a node's strongest edges only).
        """
        ...


@runtime_checkable
class Meta(Protocol):
    """Small JSON values kept with the store (settings, the bound embedder, queues)."""

    def get_meta(self, key: str) -> JSONValue: ...

    def set_meta(self, key: str, value: JSONValue) -> None: ...

    def bind_embedder(self, name: str, dim: int) -> None:
        """Record the embedder on first use; raise ``EmbedderMismatch`` if another one built the store.

        Writes only when nothing is bound yet: opening a bound store takes no write lock.
        """
        ...


@runtime_checkable
class VectorIndex(Protocol):
    """Exact (or, above a size, approximate) cosine search over node embeddings and chunk vectors."""

    def vector_search(self, tenant: Tenant, query: Vector, k: int) -> list[tuple[str, float]]:
        """Cosine top-k (embeddings are unit length): (node id, similarity), best first.

        A node is scored by its best vector, its ``embedding`` or one of its chunk vectors, and
        returned once.
        """
        ...

    def put_chunks(self, chunks: Mapping[str, Vector]) -> None:
        """Replace the chunk vectors of stored nodes: per node id an ``(m, dim)`` matrix of the
        extra window vectors of a long text (``embed/windows.py``); ``m == 0`` removes them.

        ``NotFound`` for an unknown node, ``EmbedderMismatch`` for another dimension. Removed with
        their node by ``delete_nodes`` (and erased like its embedding).
        """
        ...

    def get_chunks(self, node_ids: Collection[str], tenant: Tenant | None = None) -> dict[str, Vector]:
        """The chunk vectors of each of ``node_ids`` that has any (and that ``tenant`` covers)."""
        ...


@runtime_checkable
class LexicalIndex(Protocol):
    """BM25 over the nodes' text (the speaker and the content, stemmed as FTS5's ``porter``)."""

    def lexical_search(self, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        """BM25 top-k over node content: (node id, score where higher is better), best first.

        Any user text is accepted: it is tokenised, never passed raw to a query language.
        """
        ...

    def lexical_probe(self, tenant: Tenant, text: str, k: int) -> list[tuple[str, float]]:
        """The lexical shortlist of write-time candidate discovery: ``lexical_search``'s answer, or
        (in a store that bounds it) the same BM25 ranking over the rows that hold ``text``'s rare
        terms, so that one write's cost does not grow with the memory's size."""
        ...


@runtime_checkable
class ContextWindow(Protocol):
    """Each node's session neighbours and what is derived from them at write time (``plane.context``)."""

    def set_context_window(self, window: int) -> None:
        """The session window of the stored context; a change rebuilds every node's context."""
        ...

    def context_search(self, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        """BM25 top-k over the nodes' context fields (their session neighbours' text), best first."""
        ...

    def node_context(self, node_ids: Collection[str], tenant: Tenant) -> dict[str, NodeContext]:
        """The stored context of each node of ``node_ids`` visible to ``tenant`` that has neighbours."""
        ...

    def candidates(self, node_ids: Collection[str], tenant: Tenant) -> dict[str, Candidate]:
        """For each node of ``node_ids`` visible to ``tenant`` (in the order of ``node_ids``, unknown
        ids left out): its :class:`Candidate`, the fields ``get_nodes`` and ``node_context`` would give
        (the read path scores a query's few hundred candidates from these and reads full nodes only
        for what it returns or shows the controller)."""
        ...

    def session_neighbours(
        self, tenant: Tenant, node_ids: Collection[str], window: int
    ) -> dict[str, tuple[tuple[str, int], ...]]:
        """For each node with a session, the nodes of the same session up to ``window`` positions
        before and after it in write order, as (id, offset) with offset -window..-1, 1..window.

        Only nodes visible to ``tenant``; a node without a session (or unknown) maps to ``()``.
        """
        ...


@runtime_checkable
class LinkIndex(Protocol):
    """The lookups the write path relates a new node by: shared entities and nearby times."""

    def entity_search(self, tenant: Tenant, entities: Collection[str], k: int) -> list[tuple[str, int]]:
        """Nodes linked to any of ``entities``: (node id, number shared), most shared first."""
        ...

    def entity_counts(self, tenant: Tenant, entities: Collection[str]) -> tuple[int, dict[str, int]]:
        """(nodes of ``tenant.user``, per entity key how many of them link it); O(len(entities))."""
        ...

    def entities_of(self, node_id: str) -> tuple[str, ...]: ...

    def time_search(self, tenant: Tenant, at: dt.datetime, k: int) -> list[tuple[str, float]]:
        """Nodes with a timestamp nearest ``at``: (node id, |delta| in seconds), nearest first."""
        ...

    def select_nodes(self, tenant: Tenant, where: Selection) -> list[str]:
        """The ids of ``tenant``'s nodes that ``where`` matches (exactly ``where.matches``), in
        ``iter_nodes`` order, answered by the store's own index (``plane/_select.py``)."""
        ...


@runtime_checkable
class DecisionLog(Protocol):
    """System-One decisions recorded for nodes (write traces, consolidation records)."""

    def put_decisions(self, decisions: Sequence[Decision]) -> None: ...

    def decisions_of(self, node_id: str, *, key: str | None = None) -> list[Decision]:
        """The decisions recorded for ``node_id``, in the order written; with ``key``, only those
        of that decision key (``relation.supersedes``...)."""
        ...


@runtime_checkable
class WriteKeys(Protocol):
    """Idempotency keys of writes, removed with their node."""

    def find_keys(self, user: str, keys: Collection[str]) -> dict[str, str]:
        """The node id stored under each of ``keys`` of ``user`` (absent keys are left out)."""
        ...

    def put_keys(self, user: str, keys: Mapping[str, str]) -> None:
        """Record ``key -> node id`` for nodes of ``user``; ``InvalidInput`` if a key is taken."""
        ...


@runtime_checkable
class TenantAdmin(Protocol):
    """Counts over one tenant or every tenant (admin use)."""

    def stats(self, tenant: Tenant | None = None) -> StoreStats: ...

    def tenant_counts(self) -> list[tuple[Tenant, int]]:
        """Admin: every (user, agent, run) with stored nodes and its node count, sorted by user, then
        agent and run (``None`` first)."""
        ...

    def users(self) -> list[str]:
        """Every user id with stored nodes, sorted (admin use: migration)."""
        ...


@runtime_checkable
class Health(Protocol):
    def check(self, *, repair: bool = False) -> CheckReport:
        """What is damaged or inconsistent; with ``repair``, fix what the store can and re-check."""
        ...


@runtime_checkable
class Erasable(Protocol):
    def erase(self) -> EraseReport:
        """Make what was forgotten unrecoverable from the store's files (``dualmem erase``)."""
        ...


@runtime_checkable
class ApproximateSearch(Protocol):
    def use_ann(self, threshold: int, *, folder: str | Path | None = None) -> None:
        """Approximate vector search for users with at least ``threshold`` nodes (0: always exact)."""
        ...


@runtime_checkable
class LexicalIndexAdmin(Protocol):
    """A lexical index that a large store builds and keeps apart from its searches."""

    def use_lexical_index(self, threshold: int, **settings: int) -> None:
        """Rank from the index once the store holds ``threshold`` nodes (0: never); ``settings``
        tune its reads and upkeep (the backend's own)."""
        ...

    def build_lexical_index(self) -> int:
        """(Re)build the index; the postings written."""
        ...

    def lexical_index_state(self) -> dict[str, str]:
        """Each indexed field's state: ``"off"``, ``"none"``, ``"stale"``, ``"purged"`` or ``"fresh"``."""
        ...


@runtime_checkable
class StagedNodes(Protocol):
    """A store that can store a node in two halves inside one write (``SQLiteStore``): the row (its
    text, lexical and entity indexes) first, its vector (and the neighbour context it changes) later;
    the two halves together store what ``put_nodes`` stores. The write path embeds one ``add``'s text
    while the first half is written."""

    def put_node_rows(self, nodes: Sequence[Node]) -> None: ...

    def put_node_vectors(self, nodes: Sequence[Node]) -> None: ...


class Backend(Store, Meta, VectorIndex, LexicalIndex, ContextWindow, LinkIndex, DecisionLog, WriteKeys,
              TenantAdmin, Health, Protocol):  # fmt: skip
    """The primitives a backend writes (the core and the nine capabilities above); ``StoreBase``
    (``plane/_lifecycle.py``) composes a :class:`MemoryStore`'s components of them
    (``plane/_components.py``)."""

    def delete_edges(self, edges: Sequence[Edge]) -> None: ...


@runtime_checkable
class VectorComponent(Protocol):
    """A store's vector index (:class:`VectorIndex`): exact cosine search, above a size approximate
    (the ANN segments, ``plane/ann.py``), over node embeddings and chunk vectors."""

    def search(self, tenant: Tenant, query: Vector, k: int) -> list[tuple[str, float]]:
        """``VectorIndex.vector_search``."""
        ...

    def put_chunks(self, chunks: Mapping[str, Vector]) -> None:
        """``VectorIndex.put_chunks``."""
        ...

    def get_chunks(self, node_ids: Collection[str], tenant: Tenant | None = None) -> dict[str, Vector]:
        """``VectorIndex.get_chunks``."""
        ...


@runtime_checkable
class LinkComponent(Protocol):
    """What write-time candidate discovery looks a new node's relations up by (:class:`LinkIndex`
    and the bounded lexical probe)."""

    def entity_search(self, tenant: Tenant, entities: Collection[str], k: int) -> list[tuple[str, int]]:
        """``LinkIndex.entity_search``."""
        ...

    def entity_counts(self, tenant: Tenant, entities: Collection[str]) -> tuple[int, dict[str, int]]:
        """``LinkIndex.entity_counts``."""
        ...

    def entities_of(self, node_id: str) -> tuple[str, ...]:
        """``LinkIndex.entities_of``."""
        ...

    def time_search(self, tenant: Tenant, at: dt.datetime, k: int) -> list[tuple[str, float]]:
        """``LinkIndex.time_search``."""
        ...

    def probe(self, tenant: Tenant, text: str, k: int) -> list[tuple[str, float]]:
        """``LexicalIndex.lexical_probe``."""
        ...

    def select(self, tenant: Tenant, where: Selection) -> list[str]:
        """``LinkIndex.select_nodes``: the ids a filter (``dualmem.vocab.Filter``) matches."""
        ...


@runtime_checkable
class ContextComponent(Protocol):
    """Each node's session neighbours and the context derived from them (:class:`ContextWindow`; its
    BM25 is the lexical component's ``"context"`` field)."""

    def set_window(self, window: int) -> None:
        """``ContextWindow.set_context_window``."""
        ...

    def node_context(self, node_ids: Collection[str], tenant: Tenant) -> dict[str, NodeContext]:
        """``ContextWindow.node_context``."""
        ...

    def candidates(self, node_ids: Collection[str], tenant: Tenant) -> dict[str, Candidate]:
        """``ContextWindow.candidates``."""
        ...

    def session_neighbours(
        self, tenant: Tenant, node_ids: Collection[str], window: int
    ) -> dict[str, tuple[tuple[str, int], ...]]:
        """``ContextWindow.session_neighbours``."""
        ...


@runtime_checkable
class LogComponent(Protocol):
    """What a write recorded beside its nodes: System-One decisions and idempotency keys
    (:class:`DecisionLog`, :class:`WriteKeys`)."""

    def put_decisions(self, decisions: Sequence[Decision]) -> None: ...

    def decisions_of(self, node_id: str, *, key: str | None = None) -> list[Decision]:
        """The decisions recorded for ``node_id``, in the order written; with ``key``, only those
        of that decision key (``relation.supersedes``...)."""
        ...

    def find_keys(self, user: str, keys: Collection[str]) -> dict[str, str]:
        """``WriteKeys.find_keys``."""
        ...

    def put_keys(self, user: str, keys: Mapping[str, str]) -> None:
        """``WriteKeys.put_keys``."""
        ...


@runtime_checkable
class MetaComponent(Protocol):
    """What a store keeps about itself and its tenants: meta values, the bound embedder, counts and
    health (:class:`Meta`, :class:`TenantAdmin`, :class:`Health`)."""

    def get(self, key: str) -> JSONValue:
        """``Meta.get_meta``."""
        ...

    def set(self, key: str, value: JSONValue) -> None:
        """``Meta.set_meta``."""
        ...

    def bind_embedder(self, name: str, dim: int) -> None: ...

    def stats(self, tenant: Tenant | None = None) -> StoreStats: ...

    def tenant_counts(self) -> list[tuple[Tenant, int]]: ...

    def users(self) -> list[str]: ...

    def check(self, *, repair: bool = False) -> CheckReport: ...


@runtime_checkable
class MemoryStore(Store, Protocol):
    """The record store a ``Memory`` (its read and write paths, the server, the CLI) asks for: the
    core's nodes, edges, transactions and snapshots, and six components that share the store's
    connection, so that one call stays one transaction. Every backend implements it
    (``tests/test_plane_contracts.py`` counts its members: at most 20)."""

    @property
    def lexical(self) -> LexicalComponent:
        """BM25 over the nodes' text (field ``"nodes"``) and their neighbour context (``"context"``)."""
        ...

    @property
    def vectors(self) -> VectorComponent: ...

    @property
    def links(self) -> LinkComponent: ...

    @property
    def context(self) -> ContextComponent: ...

    @property
    def log(self) -> LogComponent: ...

    @property
    def meta(self) -> MetaComponent: ...


#: what the read path (``dualmem.read``) asks of a store; the write path's (``dualmem.write``)
SearchStore = MemoryStore
WriteStore = MemoryStore


def tenant_order(tenant: Tenant) -> tuple[str, bool, str, bool, str]:
    """The sort key of :meth:`Store.tenant_counts`: by user, then agent and run, ``None`` first."""
    return (
        tenant.user,
        tenant.agent is not None,
        tenant.agent or "",
        tenant.run is not None,
        tenant.run or "",
    )


def refuse_known_or_repeated(ids: Sequence[str], known: Collection[str]) -> None:
    """``InvalidInput`` naming the ids of a ``put_nodes`` batch that are ``known`` (already stored) or
    that the batch holds more than once; nothing when there are none."""
    counts = collections.Counter(ids)
    repeated = sorted(i for i, n in counts.items() if n > 1)
    if known or repeated:
        parts = [f"already stored: {sorted(known)[:5]}"] if known else []
        parts += [f"repeated in the batch: {repeated[:5]}"] if repeated else []
        raise InvalidInput(f"node ids {'; '.join(parts)}")

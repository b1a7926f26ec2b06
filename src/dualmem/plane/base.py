"""The Store protocol: canonical nodes, four relation views, entity links, vector and lexical indexes.

Every implementation passes ``tests/contract/test_store_contract.py``. Backend facts (SQL, files,
caches) stay inside the backend's module.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

from dualmem.types import Edge, JSONValue, Node, NodeStatus, Tenant, Vector, View, utcnow

__all__ = ["Decision", "Store", "StoreStats"]


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


@dataclass(frozen=True, slots=True)
class StoreStats:
    nodes: int
    pending: int
    edges_by_view: dict[str, int]
    entities: int
    embedder: str | None
    dim: int | None


class Store(Protocol):
    """Persistence for one memory. All reads are tenant-scoped with ``Tenant.covers`` semantics."""

    # -- lifecycle and metadata -------------------------------------------------------------
    def close(self) -> None: ...

    def transaction(self) -> AbstractContextManager[None]:
        """All writes inside commit together or not at all. Re-entrant (inner blocks join the outer)."""
        ...

    def bind_embedder(self, name: str, dim: int) -> None:
        """Record the embedder on first use; raise ``EmbedderMismatch`` if another one built the store."""
        ...

    def get_meta(self, key: str) -> JSONValue: ...

    def set_meta(self, key: str, value: JSONValue) -> None: ...

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
        """Remove nodes with their edges, entity links, lexical and vector entries and decisions."""
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
        """Insert edges; an edge with the same (source, target, view, label) is replaced."""
        ...

    def edges_of(self, node_id: str, views: Collection[View] | None = None) -> list[Edge]:
        """Edges touching ``node_id`` in either direction, optionally only in ``views``."""
        ...

    def delete_edges(self, edges: Sequence[Edge]) -> None: ...

    # -- indexes ----------------------------------------------------------------------------
    def vector_search(self, tenant: Tenant, query: Vector, k: int) -> list[tuple[str, float]]:
        """Exact cosine top-k (embeddings are unit length): (node id, similarity), best first."""
        ...

    def lexical_search(self, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        """BM25 top-k over node content: (node id, score where higher is better), best first.

        Any user text is accepted: it is tokenised, never passed raw to a query language.
        """
        ...

    def entity_search(self, tenant: Tenant, entities: Collection[str], k: int) -> list[tuple[str, int]]:
        """Nodes linked to any of ``entities``: (node id, number shared), most shared first."""
        ...

    def entity_counts(self, tenant: Tenant, entities: Collection[str]) -> tuple[int, dict[str, int]]:
        """(nodes of ``tenant.user``, per entity key how many of them link it); O(len(entities))."""
        ...

    def time_search(self, tenant: Tenant, at: dt.datetime, k: int) -> list[tuple[str, float]]:
        """Nodes with a timestamp nearest ``at``: (node id, |delta| in seconds), nearest first."""
        ...

    def entities_of(self, node_id: str) -> tuple[str, ...]: ...

    # -- decisions (traces) -----------------------------------------------------------------
    def put_decisions(self, decisions: Sequence[Decision]) -> None: ...

    def decisions_of(self, node_id: str) -> list[Decision]: ...

    def stats(self, tenant: Tenant | None = None) -> StoreStats: ...

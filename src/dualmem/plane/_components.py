"""A store's components (``MemoryStore.vectors``, ``links``, ``context``, ``log``, ``meta``) composed of
the backend's primitives (``base.Backend``).

Each component holds its store and calls the store's own methods, so it shares the store's
connection, lock and open transaction: a component call inside ``store.transaction()`` is part of
that transaction, and one outside it is one statement (or one snapshot) as the primitive is. The
lexical component is each backend's own (``lexindex.LexicalComponent``: FTS5 and the impact-ordered
index, PostgreSQL's postings, the in-memory token lists).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from dualmem.plane.base import Backend, Candidate, Decision, NodeContext, StoreStats
from dualmem.types import JSONValue, Tenant, Vector

if TYPE_CHECKING:
    from dualmem.plane._select import Selection
    from dualmem.plane.check import CheckReport

__all__ = ["Context", "Links", "Log", "Meta", "Vectors"]


class _Part:
    __slots__ = ("_store",)

    def __init__(self, store: Backend) -> None:
        self._store = store


class Vectors(_Part):
    """``base.VectorComponent``."""

    __slots__ = ()

    def search(self, tenant: Tenant, query: Vector, k: int) -> list[tuple[str, float]]:
        return self._store.vector_search(tenant, query, k)

    def put_chunks(self, chunks: Mapping[str, Vector]) -> None:
        self._store.put_chunks(chunks)

    def get_chunks(self, node_ids: Collection[str], tenant: Tenant | None = None) -> dict[str, Vector]:
        return self._store.get_chunks(node_ids, tenant)


class Links(_Part):
    """``base.LinkComponent``."""

    __slots__ = ()

    def entity_search(self, tenant: Tenant, entities: Collection[str], k: int) -> list[tuple[str, int]]:
        return self._store.entity_search(tenant, entities, k)

    def entity_counts(self, tenant: Tenant, entities: Collection[str]) -> tuple[int, dict[str, int]]:
        return self._store.entity_counts(tenant, entities)

    def entities_of(self, node_id: str) -> tuple[str, ...]:
        return self._store.entities_of(node_id)

    def time_search(self, tenant: Tenant, at: dt.datetime, k: int) -> list[tuple[str, float]]:
        return self._store.time_search(tenant, at, k)

    def probe(self, tenant: Tenant, text: str, k: int) -> list[tuple[str, float]]:
        return self._store.lexical_probe(tenant, text, k)

    def select(self, tenant: Tenant, where: Selection) -> list[str]:
        return self._store.select_nodes(tenant, where)


class Context(_Part):
    """``base.ContextComponent``."""

    __slots__ = ()

    def set_window(self, window: int) -> None:
        self._store.set_context_window(window)

    def node_context(self, node_ids: Collection[str], tenant: Tenant) -> dict[str, NodeContext]:
        return self._store.node_context(node_ids, tenant)

    def candidates(self, node_ids: Collection[str], tenant: Tenant) -> dict[str, Candidate]:
        return self._store.candidates(node_ids, tenant)

    def session_neighbours(
        self, tenant: Tenant, node_ids: Collection[str], window: int
    ) -> dict[str, tuple[tuple[str, int], ...]]:
        return self._store.session_neighbours(tenant, node_ids, window)


class Log(_Part):
    """``base.LogComponent``."""

    __slots__ = ()

    def put_decisions(self, decisions: Sequence[Decision]) -> None:
        self._store.put_decisions(decisions)

    def decisions_of(self, node_id: str, *, key: str | None = None) -> list[Decision]:
        return self._store.decisions_of(node_id, key=key)

    def find_keys(self, user: str, keys: Collection[str]) -> dict[str, str]:
        return self._store.find_keys(user, keys)

    def put_keys(self, user: str, keys: Mapping[str, str]) -> None:
        self._store.put_keys(user, keys)


class Meta(_Part):
    """``base.MetaComponent``."""

    __slots__ = ()

    def get(self, key: str) -> JSONValue:
        return self._store.get_meta(key)

    def set(self, key: str, value: JSONValue) -> None:
        self._store.set_meta(key, value)

    def bind_embedder(self, name: str, dim: int) -> None:
        self._store.bind_embedder(name, dim)

    def stats(self, tenant: Tenant | None = None) -> StoreStats:
        return self._store.stats(tenant)

    def tenant_counts(self) -> list[tuple[Tenant, int]]:
        return self._store.tenant_counts()

    def users(self) -> list[str]:
        return self._store.users()

    def check(self, *, repair: bool = False) -> CheckReport:
        return self._store.check(repair=repair)

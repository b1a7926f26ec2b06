"""The periodic-consolidation cadence: every N successful writes of a tenant, one pass over those N.

The write side owns when a pass is due; the facade only runs (or queues) the windows this returns.
What is waiting lives behind a two-method :class:`Backlog`, so a store can keep it across processes
(the default :class:`InMemoryBacklog` forgets it when the process exits).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from dualmem.errors import ConfigError
from dualmem.types import Tenant

__all__ = ["Backlog", "Cadence", "InMemoryBacklog"]


class Backlog(Protocol):
    """Node ids written since a tenant's last periodic pass, oldest first."""

    def load(self, tenant: Tenant) -> list[str]: ...

    def save(self, tenant: Tenant, node_ids: Sequence[str]) -> None: ...


class InMemoryBacklog:
    """A per-process backlog (lost when the process exits)."""

    def __init__(self) -> None:
        self._waiting: dict[Tenant, list[str]] = {}

    def load(self, tenant: Tenant) -> list[str]:
        return list(self._waiting.get(tenant, ()))

    def save(self, tenant: Tenant, node_ids: Sequence[str]) -> None:
        if node_ids:
            self._waiting[tenant] = list(node_ids)
        else:
            self._waiting.pop(tenant, None)


class Cadence:
    """Counts successful writes per tenant and hands back the windows that are due.

    ``every <= 0`` turns periodic passes off. Thread-safe: ``record`` may be called from any thread.
    """

    def __init__(self, every: int, *, backlog: Backlog | None = None) -> None:
        if not isinstance(every, int) or isinstance(every, bool):  # ``every`` may change later (a server)
            raise ConfigError(f"the consolidation cadence must be an integer, got {every!r}")
        self.every = every
        self.backlog: Backlog = backlog if backlog is not None else InMemoryBacklog()
        self._lock = threading.Lock()

    def record(self, tenant: Tenant, node_ids: Sequence[str]) -> list[tuple[str, ...]]:
        """Note ``node_ids`` as written by ``tenant``; return each full window of ``every`` ids now due."""
        return self.record_left(tenant, node_ids)[0]

    def record_left(self, tenant: Tenant, node_ids: Sequence[str]) -> tuple[list[tuple[str, ...]], int]:
        """:meth:`record`, and how many ids are left waiting after it."""
        if self.every <= 0 or not node_ids:
            return [], 0
        with self._lock:
            waiting = self.backlog.load(tenant) + list(node_ids)
            due: list[tuple[str, ...]] = []
            while len(waiting) >= self.every:
                due.append(tuple(waiting[: self.every]))
                waiting = waiting[self.every :]
            self.backlog.save(tenant, waiting)
        return due, len(waiting)

    def take(self, tenant: Tenant) -> tuple[str, ...]:
        """Every id ``tenant`` has waiting, now out of the backlog (a pass by time, over fewer than every)."""
        with self._lock:
            waiting = tuple(self.backlog.load(tenant))
            if waiting:
                self.backlog.save(tenant, [])
        return waiting

    def waiting(self, tenant: Tenant) -> tuple[str, ...]:
        """The ids written since ``tenant``'s last due window."""
        with self._lock:
            return tuple(self.backlog.load(tenant))

"""A tenant-bound handle on a :class:`~dualmem.memory.Memory`: ``mem.scope(user, agent=None, run=None)``.

Its methods are the memory's, minus the tenant keywords: every call is made for :attr:`Scope.tenant`
and can reach nothing outside it (another tenant's id is ``NotFound``). A scope holds no resources of
its own; closing the memory ends it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dualmem.types import JSONValue, Node, Observation, Tenant

if TYPE_CHECKING:
    from dualmem.memory import Answer, Inspection, Memory
    from dualmem.plane.jsonl import ImportReport
    from dualmem.read.trace import Retrieval
    from dualmem.text.timeparse import TimeInput
    from dualmem.write.consolidate import ConsolidationReport
    from dualmem.write.lifecycle import Filter
    from dualmem.write.pipeline import WriteReport

__all__ = ["Scope"]


class Scope:
    """The memory as one tenant sees it. Build it with :meth:`Memory.scope`."""

    __slots__ = ("_kw", "memory", "tenant")

    def __init__(self, memory: Memory, tenant: Tenant) -> None:
        self.memory = memory
        self.tenant = tenant
        self._kw: dict[str, Any] = {"user": tenant.user, "agent": tenant.agent, "run": tenant.run}

    def __repr__(self) -> str:
        t = self.tenant
        return f"Scope(user={t.user!r}, agent={t.agent!r}, run={t.run!r})"

    # -- write -------------------------------------------------------------------------------
    def add(  # noqa: PLR0913 - keyword-only: the observation's fields and its idempotency key
        self,
        text: str,
        *,
        speaker: str | None = None,
        at: TimeInput = None,
        source: str | None = None,
        session: str | None = None,
        turn_id: str | None = None,
        metadata: Mapping[str, JSONValue] | None = None,
        key: str | None = None,
    ) -> str:
        """Store one observation; returns its node id (the stored one for a known ``key``/turn)."""
        return self.memory.add(
            text,
            speaker=speaker,
            at=at,
            source=source,
            session=session,
            turn_id=turn_id,
            metadata=metadata,
            key=key,
            **self._kw,
        )

    def add_many(
        self,
        observations: Iterable[Observation | str | Mapping[str, Any]],
        *,
        chunk_size: int = 256,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> list[str]:
        """Store observations in order; one bad item stores nothing."""
        return self.memory.add_many(observations, chunk_size=chunk_size, on_progress=on_progress, **self._kw)

    def ingest(self, path: str | Path, *, on_progress: Callable[[int, int], None] | None = None) -> list[str]:
        """Store every turn of a conversation file (dualmem JSON or LoCoMo)."""
        return self.memory.ingest(path, on_progress=on_progress, **self._kw)

    def repair(self) -> WriteReport:
        """Complete the controller decisions of this tenant's pending nodes."""
        return self.memory.repair(**self._kw)

    # -- read --------------------------------------------------------------------------------
    def list_memories(
        self, *, where: Filter | None = None, limit: int | None = 100, offset: int = 0
    ) -> list[Node]:
        return self.memory.list_memories(where=where, limit=limit, offset=offset, **self._kw)

    def search(self, query: str, *, k: int = 10, where: Filter | None = None) -> Retrieval:
        return self.memory.search(query, k=k, where=where, **self._kw)

    def answer(self, query: str, *, k: int = 10, where: Filter | None = None) -> Answer:
        return self.memory.answer(query, k=k, where=where, **self._kw)

    def get(self, node_id: str) -> Node:
        return self.memory.get(node_id, **self._kw)

    def inspect(self, node_id: str) -> Inspection:
        return self.memory.inspect(node_id, **self._kw)

    def history(self, node_id: str) -> list[Node]:
        return self.memory.history(node_id, **self._kw)

    def count(self) -> int:
        return self.memory.count(**self._kw)

    def nodes(self) -> Iterator[Node]:
        return self.memory.nodes(**self._kw)

    def stats(self) -> dict[str, JSONValue]:
        return self.memory.stats(**self._kw)

    # -- lifecycle ---------------------------------------------------------------------------
    def update(self, node_id: str, text: str, *, at: TimeInput = None) -> str:
        return self.memory.update(node_id, text, at=at, **self._kw)

    def forget(self, node_id: str | None = None, *, where: Filter | None = None) -> int:
        """Remove a memory (with its versions, derived summaries and cached answers) or every match."""
        return self.memory.forget(node_id, where=where, **self._kw)

    def delete(self, node_id: str | None = None, *, where: Filter | None = None) -> int:
        """An alias of :meth:`forget`."""
        return self.forget(node_id, where=where)

    def would_forget(self, node_id: str | None = None, *, where: Filter | None = None) -> list[Node]:
        """What :meth:`forget` (or, with neither argument, :meth:`forget_all`) would remove now."""
        return self.memory.would_forget(node_id, where=where, **self._kw)

    def forget_all(self) -> int:
        return self.memory.forget_all(**self._kw)

    def consolidate(self) -> ConsolidationReport:
        return self.memory.consolidate(**self._kw)

    def export_jsonl(self, path: str | Path) -> int:
        return self.memory.export_jsonl(path, **self._kw)

    def import_jsonl(self, path: str | Path) -> ImportReport:
        return self.memory.import_jsonl(path, **self._kw)

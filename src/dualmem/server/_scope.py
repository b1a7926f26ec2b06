"""A private stand-in for the agreed ``Memory.scope(user, agent, run) -> Scope`` (issue 9).

Delete this module once ``Memory.scope`` exists on main: :func:`scope_of` then calls it directly.
Every by-id call checks ``Tenant.covers`` so another user's, agent's or run's node is ``NotFound``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from dualmem.errors import NotFound
from dualmem.memory import Answer, Inspection, Memory
from dualmem.plane.jsonl import ImportReport
from dualmem.read.trace import Retrieval
from dualmem.text.timeparse import TimeInput
from dualmem.types import JSONValue, Node, Observation, Tenant
from dualmem.write.consolidate import ConsolidationReport
from dualmem.write.lifecycle import Filter
from dualmem.write.pipeline import WriteReport

__all__ = ["TenantScope", "scope_of"]


class TenantScope:
    """The tenant-bound handle: ``Memory``'s methods minus the tenant keywords."""

    def __init__(self, memory: Memory, tenant: Tenant) -> None:
        self._memory = memory
        self.tenant = tenant

    def _kw(self) -> dict[str, str | None]:
        return {"user": self.tenant.user, "agent": self.tenant.agent, "run": self.tenant.run}

    def add(
        self,
        text: str,
        *,
        speaker: str | None = None,
        at: TimeInput = None,
        source: str | None = None,
        session: str | None = None,
        turn_id: str | None = None,
        metadata: Mapping[str, JSONValue] | None = None,
    ) -> str:
        return self._memory.add(
            text,
            **self._kw(),  # type: ignore[arg-type]
            speaker=speaker,
            at=at,
            source=source,
            session=session,
            turn_id=turn_id,
            metadata=metadata,
        )

    def add_many(
        self,
        observations: Iterable[Observation | str | Mapping[str, Any]],
        *,
        chunk_size: int = 256,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> list[str]:
        return self._memory.add_many(
            observations,
            **self._kw(),  # type: ignore[arg-type]
            chunk_size=chunk_size,
            on_progress=on_progress,
        )

    def search(self, query: str, *, k: int = 10) -> Retrieval:
        return self._memory.search(query, **self._kw(), k=k)  # type: ignore[arg-type]

    def answer(self, query: str, *, k: int = 10) -> Answer:
        return self._memory.answer(query, **self._kw(), k=k)  # type: ignore[arg-type]

    def get(self, id: str) -> Node:
        node = self._memory.get(id, user=self.tenant.user)
        if not self.tenant.covers(node.tenant):
            raise NotFound(f"no memory with id {id!r}")
        return node

    def inspect(self, id: str) -> Inspection:
        self.get(id)
        return self._memory.inspect(id, user=self.tenant.user)

    def update(self, id: str, text: str, *, at: TimeInput = None) -> str:
        self.get(id)
        return self._memory.update(id, text, user=self.tenant.user, at=at)

    def history(self, id: str) -> list[Node]:
        self.get(id)
        return [n for n in self._memory.history(id, user=self.tenant.user) if self.tenant.covers(n.tenant)]

    def forget(self, id: str | None = None, *, where: Filter | None = None) -> int:
        if id is not None:
            self.get(id)
        return self._memory.forget(id, **self._kw(), where=where)  # type: ignore[arg-type]

    def forget_all(self) -> int:
        return self._memory.forget_all(**self._kw())  # type: ignore[arg-type]

    def consolidate(self) -> ConsolidationReport:
        return self._memory.consolidate(**self._kw())  # type: ignore[arg-type]

    def export_jsonl(self, path: str | Path) -> int:
        return self._memory.export_jsonl(path, **self._kw())  # type: ignore[arg-type]

    def import_jsonl(self, path: str | Path) -> ImportReport:
        return self._memory.import_jsonl(path)

    def stats(self) -> dict[str, JSONValue]:
        return self._memory.stats(user=self.tenant.user)

    def count(self) -> int:
        return self._memory.count(**self._kw())  # type: ignore[arg-type]

    def nodes(self) -> Iterator[Node]:
        return self._memory.nodes(**self._kw())  # type: ignore[arg-type]

    def repair(self) -> WriteReport:
        return self._memory.repair(user=self.tenant.user)


def scope_of(memory: Memory, tenant: Tenant) -> TenantScope:
    return TenantScope(memory, tenant)

"""Copy a memory from one store to another (SQLite <-> PostgreSQL), tenant by tenant, resumably.

Each user is copied in chunks: a chunk's nodes and their decisions commit together on the target,
so a re-run skips what is already there; edges (an upsert) follow once the user's nodes are in;
then the user's counts are compared on both sides and the user is recorded as done in the target's
``meta`` (key ``migration``). An interrupted run is resumed by running it again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import cast

from dualmem.errors import StoreError
from dualmem.plane.base import MemoryStore
from dualmem.types import Edge, JSONValue, Node, Tenant

__all__ = ["MIGRATION_META", "MigrationReport", "UserReport", "migrate_store"]

MIGRATION_META = "migration"

_EdgeKey = tuple[str, str, str, str]


@dataclass(frozen=True, slots=True)
class UserReport:
    user: str
    nodes: int
    copied: int  # nodes written by this run (the rest were there already)
    edges: int
    decisions: int


@dataclass(frozen=True, slots=True)
class MigrationReport:
    users: tuple[UserReport, ...] = ()
    skipped: tuple[str, ...] = ()  # users a previous run finished
    embedder: str | None = None
    dim: int | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "users": len(self.users),
            "skipped_users": list(self.skipped),
            "nodes": sum(u.nodes for u in self.users),
            "copied_nodes": sum(u.copied for u in self.users),
            "edges": sum(u.edges for u in self.users),
            "decisions": sum(u.decisions for u in self.users),
            "embedder": self.embedder,
            "dim": self.dim,
        }


def _chunks(nodes: Iterator[Node], size: int) -> Iterator[list[Node]]:
    batch: list[Node] = []
    for node in nodes:
        batch.append(node)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _bind(source: MemoryStore, target: MemoryStore) -> tuple[str | None, int | None]:
    bound = source.meta.get("embedder")
    info = bound if isinstance(bound, dict) else {}
    name, dim = info.get("name"), info.get("dim")
    if isinstance(name, str) and isinstance(dim, int):
        target.meta.bind_embedder(name, dim)  # EmbedderMismatch when the target was built by another
        return name, dim
    return None, None


def _copy_nodes(source: MemoryStore, target: MemoryStore, user: str, chunk: int) -> tuple[int, int, int]:
    """(nodes seen, nodes copied, decisions copied) for ``user``."""
    seen = copied = decisions = 0
    for batch in _chunks(source.iter_nodes(Tenant(user)), chunk):
        seen += len(batch)
        there = target.get_nodes([n.id for n in batch])
        missing = [n for n in batch if n.id not in there]
        if not missing:
            continue
        mine = [d for n in missing for d in source.log.decisions_of(n.id)]
        with target.transaction():
            target.put_nodes(missing)
            target.vectors.put_chunks(source.vectors.get_chunks([n.id for n in missing]))
            target.log.put_decisions(mine)
        copied += len(missing)
        decisions += len(mine)
    return seen, copied, decisions


def _copy_edges(source: MemoryStore, target: MemoryStore, user: str, chunk: int) -> int:
    done: set[_EdgeKey] = set()
    pending: list[Edge] = []
    for node in source.iter_nodes(Tenant(user)):
        for edge in source.edges_of(node.id):
            key = (edge.source, edge.target, edge.view, edge.label)
            if key not in done:
                done.add(key)
                pending.append(edge)
        if len(pending) >= chunk:
            target.put_edges(pending)
            pending = []
    if pending:
        target.put_edges(pending)
    return len(done)


def _verify(source: MemoryStore, target: MemoryStore, user: str) -> None:
    tenant = Tenant(user)
    want, got = source.meta.stats(tenant), target.meta.stats(tenant)
    checks = {
        "nodes": (want.nodes, got.nodes),
        "pending": (want.pending, got.pending),
        "entities": (want.entities, got.entities),
        "supersessions": (want.supersessions, got.supersessions),
        **{
            f"{view} edges": (want.edges_by_view[view], got.edges_by_view[view])
            for view in want.edges_by_view
        },
    }
    wrong = {name: pair for name, pair in checks.items() if pair[0] != pair[1]}
    if wrong:
        detail = ", ".join(f"{name} {a} -> {b}" for name, (a, b) in wrong.items())
        raise StoreError(
            f"migration of user {user!r} does not verify: {detail}",
            hint="the target changed during the copy, or holds other data for this user",
        )


def migrate_store(
    source: MemoryStore,
    target: MemoryStore,
    *,
    chunk: int = 500,
    on_user: Callable[[UserReport], None] | None = None,
) -> MigrationReport:
    """Copy every user of ``source`` into ``target``; users finished by an earlier run are skipped."""
    name, dim = _bind(source, target)
    state = target.meta.get(MIGRATION_META)
    done = set(cast(list[str], state.get("done", []))) if isinstance(state, dict) else set()
    reports: list[UserReport] = []
    skipped: list[str] = []
    for user in source.meta.users():
        if user in done:
            skipped.append(user)
            continue
        seen, copied, decisions = _copy_nodes(source, target, user, chunk)
        edges = _copy_edges(source, target, user, chunk)
        _verify(source, target, user)
        done.add(user)
        target.meta.set(MIGRATION_META, {"done": list[JSONValue](sorted(done))})
        report = UserReport(user, seen, copied, edges, decisions)
        reports.append(report)
        if on_user is not None:
            on_user(report)
    return MigrationReport(tuple(reports), tuple(skipped), name, dim)

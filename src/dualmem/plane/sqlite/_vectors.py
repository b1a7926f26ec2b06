"""The SQLite store's per-user vector cache, kept up to date incrementally.

A user's vectors are read once (one statement, inside the caller's snapshot) into a
:class:`~dualmem.plane._vectors.UserVectors`; after that the cache follows the database by deltas:

- **own writes** are applied directly (appended rows, removed ids, replaced rows), inside the write
  transaction, after first catching up with what other connections committed (:meth:`VectorCache.sync`);
- **other connections' commits** (``PRAGMA data_version`` moved) are read as a delta: rows whose
  ``vectors.rowid`` is above the cache's high-water mark. Deletes and in-place updates cannot be
  seen that way, so schema v7 counts them per user (``vector_changes``, kept by triggers); when the
  count moved, that user's cache is reloaded whole;
- a **rollback** drops the caches the transaction touched (they may hold undone writes).

Every read of the cache happens inside a read or write transaction, so it matches one committed
state (or the open transaction's own state).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dualmem.errors import DatabaseCorrupt
from dualmem.plane._vectors import UserVectors
from dualmem.plane.sqlite import _sql as sql
from dualmem.types import Tenant

__all__ = ["V7", "VectorCache"]

#: schema v7: per-user count of deleted or rewritten vector rows (a cache's signal to reload)
V7: tuple[str, ...] = (
    "CREATE TABLE vector_changes (user_id TEXT PRIMARY KEY, changes INTEGER NOT NULL) WITHOUT ROWID",
    """CREATE TRIGGER vectors_changes_delete AFTER DELETE ON vectors BEGIN
        INSERT INTO vector_changes (user_id, changes) VALUES (old.user_id, 1)
            ON CONFLICT (user_id) DO UPDATE SET changes = changes + 1;
    END""",
    """CREATE TRIGGER vectors_changes_update AFTER UPDATE ON vectors BEGIN
        INSERT INTO vector_changes (user_id, changes) VALUES (old.user_id, 1)
            ON CONFLICT (user_id) DO UPDATE SET changes = changes + 1;
    END""",
)

_ROWS = (
    "SELECT v.rowid, v.node_id, v.dim, v.blob, n.agent_id, n.run_id FROM vectors v "
    "JOIN nodes n ON n.id = v.node_id WHERE v.user_id = ? AND v.rowid > ? ORDER BY v.rowid"
)


@dataclass(slots=True)
class _Entry:
    vectors: UserVectors
    version: int  # PRAGMA data_version when the entry last matched the database
    high: int  # the largest vectors.rowid held
    changes: int  # vector_changes.changes of the user when last matched


def _version(conn: sqlite3.Connection) -> int:
    conn.execute("SELECT 1 FROM meta LIMIT 1").fetchall()  # pins the read snapshot first
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


def _changes(conn: sqlite3.Connection, user: str) -> int:
    row = conn.execute("SELECT changes FROM vector_changes WHERE user_id = ?", (user,)).fetchone()
    return 0 if row is None else int(row[0])


def _high(conn: sqlite3.Connection, user: str) -> int:
    row = conn.execute("SELECT MAX(rowid) FROM vectors WHERE user_id = ?", (user,)).fetchone()
    return 0 if row[0] is None else int(row[0])


def _decode(
    user: str, rows: Sequence[tuple[object, ...]], dim: int | None
) -> tuple[list[str], list[Tenant], npt.NDArray[np.float32]]:
    """Rows of ``_ROWS`` as ids, tenants and a matrix (checked: one dimension, whole blobs)."""
    dim = int(rows[0][2]) if dim is None else dim  # type: ignore[call-overload]
    if any(row[2] != dim or len(row[3]) != 4 * dim for row in rows):  # type: ignore[arg-type]
        raise DatabaseCorrupt(f"user {user!r} has embeddings of several dimensions")
    blob = b"".join(row[3] for row in rows)  # type: ignore[misc]
    matrix: npt.NDArray[np.float32] = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), dim)
    with sql.decoding(f"read the vectors of {user!r}"):
        tenants = [Tenant(user, row[4], row[5]) for row in rows]  # type: ignore[arg-type]
    return [str(row[1]) for row in rows], tenants, matrix


class VectorCache:
    """Per-user vectors of one connection (use under the store's lock, inside a transaction)."""

    def __init__(self) -> None:
        self._users: dict[str, _Entry] = {}
        self._touched: set[str] = set()  # users whose entry the open write transaction changed
        self.loads = 0  # whole-user reads (for tests and benchmarks)
        self.deltas = 0  # catch-ups that read only rows above the high-water mark

    def __len__(self) -> int:
        return len(self._users)

    def clear(self) -> None:
        self._users.clear()
        self._touched.clear()

    def committed(self) -> None:
        """The outermost write transaction committed: what it did to the cache stands."""
        self._touched.clear()

    def rolled_back(self) -> None:
        """A write transaction (or savepoint) rolled back: drop what it touched."""
        for user in self._touched:
            self._users.pop(user, None)
        self._touched.clear()

    def get(self, conn: sqlite3.Connection, user: str, *, writing: bool) -> UserVectors | None:
        """``user``'s vectors as the connection's open transaction sees them (None: the user has none)."""
        version = _version(conn)
        entry = self._users.get(user)
        if entry is not None and entry.version != version:
            entry = self._catch_up(conn, user, entry, version)
        if entry is None:
            entry = self._load(conn, user, version)
        if writing:
            self._touched.add(user)
        return None if entry is None else entry.vectors

    def sync(self, conn: sqlite3.Connection, users: Collection[str]) -> None:
        """Before an own write: bring the cached ones of ``users`` up to the transaction's state."""
        cached = [user for user in users if user in self._users]
        if not cached:
            return
        version = _version(conn)
        for user in cached:
            self._touched.add(user)
            entry = self._users[user]
            if entry.version != version:
                self._catch_up(conn, user, entry, version)

    def appended(
        self, conn: sqlite3.Connection, ids: Sequence[str], tenants: Sequence[Tenant], rows: Sequence[object]
    ) -> None:
        """After an own insert (synced first): add the rows of the cached users."""
        for user in {tenant.user for tenant in tenants}:
            entry = self._users.get(user)
            if entry is None:
                continue
            mine = [i for i, tenant in enumerate(tenants) if tenant.user == user]
            matrix = np.stack([np.asarray(rows[i], dtype=np.float32) for i in mine])
            entry.vectors.append([ids[i] for i in mine], [tenants[i] for i in mine], matrix)
            self._settle(conn, user, entry)

    def removed(self, conn: sqlite3.Connection, ids: Collection[str]) -> None:
        """After an own delete (synced first): drop the rows of ``ids`` from every cached user."""
        gone = set(ids)
        for user, entry in self._users.items():
            if any(node_id in entry.vectors for node_id in gone):
                entry.vectors.remove(gone)
                self._settle(conn, user, entry)

    def replaced(
        self, conn: sqlite3.Connection, tenant: Tenant, node_id: str, row: npt.NDArray[np.float32]
    ) -> None:
        """After an own upsert of ``node_id``'s vector (synced first)."""
        user = tenant.user
        entry = self._users.get(user)
        if entry is None:
            return
        if node_id not in entry.vectors:
            entry.vectors.append([node_id], [tenant], row.reshape(1, -1))
        elif not entry.vectors.replace(node_id, row):
            self._users.pop(user)  # several rows for the id: simplest to reload
            return
        self._settle(conn, user, entry)

    def _settle(self, conn: sqlite3.Connection, user: str, entry: _Entry) -> None:
        """After an own write to ``user``'s rows: the entry matches the transaction's state again.

        The high-water mark is re-read (not just raised): after deleting the newest row, the next
        insert reuses its rowid, and a stale mark above it would hide that row from the delta.
        """
        entry.high = _high(conn, user)
        entry.changes = _changes(conn, user)
        self._touched.add(user)

    # -- loading -------------------------------------------------------------------------------
    def _load(self, conn: sqlite3.Connection, user: str, version: int) -> _Entry | None:
        self._users.pop(user, None)
        changes = _changes(conn, user)  # read before the rows, in the same snapshot
        rows = conn.execute(_ROWS, (user, 0)).fetchall()
        self.loads += 1
        if not rows:
            return None
        ids, tenants, matrix = _decode(user, rows, None)
        vectors = UserVectors(matrix.shape[1])
        vectors.append(ids, tenants, matrix)
        entry = _Entry(vectors, version, int(rows[-1][0]), changes)
        self._users[user] = entry
        return entry

    def _catch_up(self, conn: sqlite3.Connection, user: str, entry: _Entry, version: int) -> _Entry | None:
        if _changes(conn, user) != entry.changes:  # another connection deleted or rewrote rows
            return self._load(conn, user, version)
        rows = conn.execute(_ROWS, (user, entry.high)).fetchall()
        self.deltas += 1
        if rows:
            entry.vectors.append(*_decode(user, rows, entry.vectors.dim))
            entry.high = int(rows[-1][0])
        entry.version = version
        return entry

"""The SQLite store's chunk vectors: one ``chunk_vectors`` row per long node.

Schema version 5 (:data:`V5`) adds the table: the node's extra window vectors packed in one blob
(``parts`` x ``dim`` float32), the user for the per-user cache, removed with the node by the
foreign key (``delete_nodes`` erases them like any deleted row, see docs/storage.md).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping

from dualmem.plane import _chunks
from dualmem.plane.sqlite._sql import chunks as id_chunks
from dualmem.plane.sqlite._sql import marks
from dualmem.types import Tenant, Vector

__all__ = ["SCHEMA", "V5", "get", "load_user", "put", "tenants"]

#: the schema version that adds ``chunk_vectors`` (the lead may renumber it at merge)
SCHEMA = 5

V5: tuple[str, ...] = (
    """CREATE TABLE chunk_vectors (
        node_id TEXT PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
        user_id TEXT NOT NULL,
        dim INTEGER NOT NULL,
        parts INTEGER NOT NULL,
        blob BLOB NOT NULL
    )""",
    "CREATE INDEX chunk_vectors_user ON chunk_vectors (user_id)",
)


def tenants(conn: sqlite3.Connection, node_ids: Collection[str]) -> dict[str, Tenant]:
    """The tenant of each stored node among ``node_ids``."""
    out: dict[str, Tenant] = {}
    for part in id_chunks(node_ids):
        statement = f"SELECT id, user_id, agent_id, run_id FROM nodes WHERE id IN ({marks(len(part))})"
        out.update((row[0], Tenant(row[1], row[2], row[3])) for row in conn.execute(statement, part))
    return out


def put(conn: sqlite3.Connection, rows: Mapping[str, Vector], tenants: Mapping[str, Tenant]) -> None:
    """Replace the chunk rows of nodes (``tenants``: each node's); an empty matrix removes them."""
    gone = [(node_id,) for node_id, m in rows.items() if m.shape[0] == 0]
    kept = [
        (node_id, tenants[node_id].user, int(m.shape[1]), int(m.shape[0]), _chunks.to_blob(m))
        for node_id, m in rows.items()
        if m.shape[0] > 0
    ]
    conn.executemany("DELETE FROM chunk_vectors WHERE node_id = ?", gone)
    conn.executemany(
        "INSERT INTO chunk_vectors (node_id, user_id, dim, parts, blob) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (node_id) DO UPDATE SET user_id = excluded.user_id, dim = excluded.dim, "
        "parts = excluded.parts, blob = excluded.blob",
        kept,
    )


def get(
    conn: sqlite3.Connection, node_ids: Collection[str], where: str, params: list[object]
) -> dict[str, Vector]:
    """The chunk matrices of ``node_ids`` (nodes matching the tenant filter ``where`` only)."""
    out: dict[str, Vector] = {}
    for part in id_chunks(node_ids):
        statement = (
            "SELECT c.node_id, c.dim, c.parts, c.blob FROM chunk_vectors c JOIN nodes n ON n.id = c.node_id "
            f"WHERE c.node_id IN ({marks(len(part))}) AND {where}"
        )
        for node_id, dim, parts, blob in conn.execute(statement, [*part, *params]):
            out[node_id] = _chunks.from_blob(blob, int(dim), int(parts))
    return out


def load_user(conn: sqlite3.Connection, user: str) -> _chunks.UserChunks:
    """Every chunk row of ``user`` (one statement, inside the caller's snapshot), ready to search."""
    found = _chunks.UserChunks()
    rows = conn.execute(
        "SELECT c.node_id, c.dim, c.parts, c.blob, n.agent_id, n.run_id FROM chunk_vectors c "
        "JOIN nodes n ON n.id = c.node_id WHERE c.user_id = ? ORDER BY c.rowid",
        (user,),
    )
    for node_id, dim, parts, blob, agent, run in rows:
        found.put(node_id, Tenant(user, agent, run), _chunks.from_blob(blob, int(dim), int(parts)))
    return found

"""The SQLite store's neighbour context (schema v6; what it holds: ``plane._context``).

``node_context`` keeps one row per node that has session neighbours: the neighbours (compact text
since schema v11, ``_context.encode_neighbours``; JSON ``[[id, offset], ...]`` before), their text
and the int8 context vector. ``context_fts`` indexes the text for BM25 as an external-content FTS5
table, kept by triggers (the text is stored once). Rows cascade with their node; a forget rewrites
the neighbours' rows, and the transaction's FTS5 ``optimize`` clears the pages that held the
forgotten text (``_sqlite_tx``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence

from dualmem.plane.base import NodeContext
from dualmem.plane.context import ContextRow, decode_neighbours, decode_vectors, encode_neighbours
from dualmem.plane.sqlite import _sql as sql
from dualmem.types import Tenant

__all__ = ["STALE_KEY", "V6", "all_ids", "clear", "read", "write"]

#: meta key set by the migration: the store rebuilds every node's context on its next writable open
STALE_KEY = "context_stale"

_FTS_INSERT = "INSERT INTO context_fts (rowid, text) VALUES (new.seq, new.text);"
_FTS_DELETE = "INSERT INTO context_fts (context_fts, rowid, text) VALUES ('delete', old.seq, old.text);"

V6: tuple[str, ...] = (
    """CREATE TABLE node_context (
        seq INTEGER PRIMARY KEY REFERENCES nodes (seq) ON DELETE CASCADE,
        neighbours TEXT NOT NULL,
        text TEXT NOT NULL,
        vec BLOB
    )""",
    """CREATE VIRTUAL TABLE context_fts USING fts5 (
        text, content='node_context', content_rowid='seq',
        tokenize='porter unicode61 remove_diacritics 2'
    )""",
    f"CREATE TRIGGER node_context_insert AFTER INSERT ON node_context BEGIN {_FTS_INSERT} END",
    f"CREATE TRIGGER node_context_delete AFTER DELETE ON node_context BEGIN {_FTS_DELETE} END",
    f"CREATE TRIGGER node_context_update AFTER UPDATE ON node_context BEGIN {_FTS_DELETE} {_FTS_INSERT} END",
    # a database with nodes gets their context built on its next writable open (``SQLiteStore.open``)
    f"INSERT INTO meta (key, value) SELECT '{STALE_KEY}', 'true' WHERE EXISTS (SELECT 1 FROM nodes) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
)


def _seqs(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        marks = ",".join("?" * len(part))
        out.update(conn.execute(f"SELECT id, seq FROM nodes WHERE id IN ({marks})", part).fetchall())
    return out


def write(conn: sqlite3.Connection, rows: Sequence[ContextRow]) -> None:
    """Store each row's context (a row without neighbours removes the node's context)."""
    seqs = _seqs(conn, [row.node_id for row in rows])
    keep, drop = [], []
    for row in rows:
        seq = seqs.get(row.node_id)
        if seq is None:
            continue
        if not row.neighbours:
            drop.append((seq,))
            continue
        blob = None if row.vector is None else row.vector.tobytes()
        keep.append((seq, encode_neighbours(row.neighbours), row.text, blob))
    if drop:
        conn.executemany("DELETE FROM node_context WHERE seq = ?", drop)
    if keep:
        conn.executemany(
            "INSERT INTO node_context (seq, neighbours, text, vec) VALUES (?, ?, ?, ?) ON CONFLICT (seq) "
            "DO UPDATE SET neighbours = excluded.neighbours, text = excluded.text, vec = excluded.vec "
            "WHERE node_context.neighbours IS NOT excluded.neighbours OR node_context.text IS NOT "
            "excluded.text OR node_context.vec IS NOT excluded.vec",
            keep,
        )


def read(conn: sqlite3.Connection, ids: Collection[str]) -> dict[str, tuple[Tenant, NodeContext | None]]:
    """For each stored node of ``ids``: its tenant and its context (``None`` when it has none).

    The context vectors of a batch are normalised together (``decode_vectors``: the same values as
    one at a time)."""
    items = list(dict.fromkeys(ids))
    out: dict[str, tuple[Tenant, NodeContext | None]] = {}
    for start in range(0, len(items), 500):
        part = items[start : start + 500]
        marks = ",".join("?" * len(part))
        rows = conn.execute(
            "SELECT n.id, n.user_id, n.agent_id, n.run_id, c.neighbours, c.vec FROM nodes n "
            f"LEFT JOIN node_context c ON c.seq = n.seq WHERE n.id IN ({marks})",
            part,
        ).fetchall()
        vectors = decode_vectors([row[5] for row in rows if row[4] is not None])
        held = iter(vectors)
        for node_id, user, agent, run, pairs, _ in rows:
            found = None
            if pairs is not None:
                found = NodeContext(decode_neighbours(pairs), next(held))
            out[node_id] = (sql.tenant_of(user, agent, run), found)
    return out


def all_ids(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT id FROM nodes WHERE session IS NOT NULL ORDER BY seq")]


def clear(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM node_context")

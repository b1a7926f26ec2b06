"""The SQLite store's edges by integer node refs (schema v7: less disk per memory).

Edges were the largest table: two 26-character node ids per row, repeated in the unique index and
again in the target index (~240 bytes an edge, ~19 edges a memory). From v7 an edge names its nodes
by ``nodes.seq`` (``src``, ``dst``): the row, the unique ``(src, dst, view, label)`` index and the
``dst`` index hold small integers. Rowids (write order) are kept, so ``edges_of`` keeps its order;
``ON DELETE CASCADE`` on ``nodes (seq)`` removes a node's edges with it (a later node that reuses
the seq never inherits them). ``created_at`` is written by ``_codec.to_stamp`` (a UTC time as its
microseconds since the epoch: 16 bytes an edge instead of 32); rows written before hold ISO text, and
both read back as the same datetime.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping, Sequence

from dualmem.plane import codec
from dualmem.plane.sqlite import _sql as sql
from dualmem.types import VIEWS, Edge, View

__all__ = ["V7_EDGES", "delete", "edges_table", "of", "put", "users_and_seqs"]

_SAME_USER = (
    "(SELECT user_id FROM nodes WHERE seq = new.src) IS NOT (SELECT user_id FROM nodes WHERE seq = new.dst)"
)
_REFUSE = "BEGIN SELECT RAISE(ABORT, 'dualmem: an edge cannot link two users'' memories'); END"


def edges_table(name: str, ends: tuple[str, str], kind: str, ref: str) -> str:
    """The DDL of the edges table: its two ends (``ends``, of type ``kind``, referencing
    ``nodes (ref)``), the view, label, weight and times; one edge per (ends, view, label). Schema v1
    named the ends by node id, v7 by ``nodes.seq``."""
    a, b = ends
    return f"""CREATE TABLE {name} (
        {a} {kind} NOT NULL REFERENCES nodes ({ref}) ON DELETE CASCADE,
        {b} {kind} NOT NULL REFERENCES nodes ({ref}) ON DELETE CASCADE,
        view TEXT NOT NULL,
        label TEXT NOT NULL,
        weight REAL NOT NULL,
        created_at TEXT NOT NULL,
        valid_from TEXT,
        valid_to TEXT,
        UNIQUE ({a}, {b}, view, label)
    )"""


#: schema v7 (edges part): rebuild ``edges`` with integer node refs, rowids and order kept
V7_EDGES: tuple[str, ...] = (
    edges_table("edges_v7", ("src", "dst"), "INTEGER", "seq"),
    "INSERT INTO edges_v7 (rowid, src, dst, view, label, weight, created_at, valid_from, valid_to) "
    "SELECT e.rowid, a.seq, b.seq, e.view, e.label, e.weight, e.created_at, e.valid_from, e.valid_to "
    "FROM edges e JOIN nodes a ON a.id = e.source JOIN nodes b ON b.id = e.target ORDER BY e.rowid",
    "DROP TABLE edges",
    "ALTER TABLE edges_v7 RENAME TO edges",
    "CREATE INDEX edges_dst ON edges (dst)",
    f"CREATE TRIGGER edges_same_user_insert BEFORE INSERT ON edges WHEN {_SAME_USER} {_REFUSE}",
    f"CREATE TRIGGER edges_same_user_update BEFORE UPDATE OF src, dst ON edges WHEN {_SAME_USER} {_REFUSE}",
)

_SELECT = (
    "SELECT a.id, b.id, e.view, e.label, e.weight, e.created_at, e.valid_from, e.valid_to, e.rowid "
    "FROM edges e JOIN nodes a ON a.seq = e.src JOIN nodes b ON b.seq = e.dst"
)


def _seq(conn: sqlite3.Connection, node_id: str) -> int | None:
    row = conn.execute("SELECT seq FROM nodes WHERE id = ?", (node_id,)).fetchone()
    return None if row is None else int(row[0])


def users_and_seqs(conn: sqlite3.Connection, ids: Collection[str]) -> dict[str, tuple[str, int]]:
    """The user and row number (``seq``) of each stored node among ``ids``."""
    out: dict[str, tuple[str, int]] = {}
    for chunk in sql.chunks(ids):
        statement = f"SELECT id, user_id, seq FROM nodes WHERE id IN ({sql.marks(len(chunk))})"
        out.update((row[0], (row[1], int(row[2]))) for row in conn.execute(statement, chunk))
    return out


def put(conn: sqlite3.Connection, edges: Sequence[Edge], seqs: Mapping[str, int] | None = None) -> None:
    """Upsert ``edges`` (their nodes are known to exist and to share a user), in order. The nodes'
    row numbers (``seqs``, read here when not given) are read once for the batch, not looked up
    twice per edge; an edge of an unknown node is left out."""
    if not edges:
        return
    if seqs is None:
        ids = {node_id for e in edges for node_id in (e.source, e.target)}
        seqs = {node_id: seq for node_id, (_, seq) in users_and_seqs(conn, ids).items()}
    rows = [
        (seqs[e.source], seqs[e.target], e.view, e.label, float(e.weight), codec.to_stamp(e.created_at),
         codec.to_iso(e.valid_from), codec.to_iso(e.valid_to))
        for e in edges
        if e.source in seqs and e.target in seqs
    ]  # fmt: skip
    conn.executemany(
        "INSERT INTO edges (src, dst, view, label, weight, created_at, valid_from, valid_to) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (src, dst, view, label) DO UPDATE SET weight = excluded.weight, "
        "created_at = excluded.created_at, valid_from = excluded.valid_from, valid_to = excluded.valid_to",
        rows,
    )


def of(
    conn: sqlite3.Connection, node_id: str, views: Collection[View] | None, limit: int | None = None
) -> list[Edge]:
    """Every edge from or to ``node_id`` (of ``views``), in write order; with ``limit``, only the
    ``limit`` strongest (by weight, then write order), strongest first."""
    seq = _seq(conn, node_id)
    if seq is None:
        return []
    wanted = [v for v in VIEWS if views is None or v in views]
    if not wanted:
        return []
    only = "" if len(wanted) == len(VIEWS) else f" AND e.view IN ({sql.marks(len(wanted))})"
    args: list[object] = [seq, *(wanted if only else []), seq, seq, *(wanted if only else [])]
    order = "ORDER BY 9"
    if limit is not None:
        order, args = "ORDER BY 5 DESC, 9 LIMIT ?", [*args, max(0, limit)]
    rows = conn.execute(
        f"{_SELECT} WHERE e.src = ?{only} UNION ALL {_SELECT} WHERE e.dst = ? AND e.src != ?{only} {order}",
        args,
    ).fetchall()
    with sql.decoding(f"read the edges of {node_id}"):
        return [sql.to_edge(row) for row in rows]


def delete(conn: sqlite3.Connection, edges: Sequence[Edge]) -> None:
    conn.executemany(
        "DELETE FROM edges WHERE src = (SELECT seq FROM nodes WHERE id = ?) "
        "AND dst = (SELECT seq FROM nodes WHERE id = ?) AND view = ? AND label = ?",
        [(e.source, e.target, e.view, e.label) for e in edges],
    )

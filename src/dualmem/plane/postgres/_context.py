"""The PostgreSQL store's neighbour context (schema v3; what it holds: ``plane._context``).

``node_context`` keeps one row per node that has session neighbours (neighbours as JSON, the int8
context vector, the field's token count); ``ctx_postings`` and ``ctx_stats`` index the field for
BM25 exactly as ``postings`` and ``lex_stats`` index the nodes (the text itself is not stored).
Everything is keyed by ``user_id`` first, like every other tenant table.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, cast

import psycopg
from psycopg import sql as pgsql

from dualmem.plane import codec
from dualmem.plane.base import NodeContext
from dualmem.plane.context import ContextRow, decode_vector, neighbours_json, parse_neighbours
from dualmem.plane.postgres import _lexical as lexical
from dualmem.plane.postgres import _sql as sql
from dualmem.types import Tenant

__all__ = ["FIELD", "STALE_KEY", "V3", "drop", "read", "write"]

_Conn = psycopg.Connection[tuple[Any, ...]]
_K = 'text COLLATE "C"'

#: meta key set by the migration: the store rebuilds every node's context on its next open
STALE_KEY = "context_stale"

V3: tuple[str, ...] = (
    f"""CREATE TABLE node_context (
        user_id {_K} NOT NULL,
        node_id {_K} NOT NULL,
        agent_id {_K},
        run_id {_K},
        neighbours text NOT NULL,
        vec bytea,
        dl integer NOT NULL,
        PRIMARY KEY (user_id, node_id),
        FOREIGN KEY (user_id, node_id) REFERENCES nodes (user_id, id) ON DELETE CASCADE
    )""",
    lexical.postings_table("ctx_postings"),
    "CREATE INDEX ctx_postings_node ON ctx_postings (user_id, node_id)",
    f"CREATE TABLE ctx_stats (user_id {_K} PRIMARY KEY, docs bigint NOT NULL, tokens bigint NOT NULL)",
    f"INSERT INTO meta (key, value) SELECT '{STALE_KEY}', 'true' WHERE EXISTS (SELECT 1 FROM nodes) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
)


#: the context field of the lexical index (``_pg_lexical``)
FIELD: lexical.Field = ("ctx_postings", "ctx_stats")


def _add_stats(conn: _Conn, deltas: dict[str, tuple[int, int]]) -> None:
    lexical.add_stats(conn, deltas, FIELD[1])


def drop(conn: _Conn, keys: Collection[tuple[str, str]]) -> None:
    """Remove the context of the (user, node id) ``keys`` (encoded), its postings and statistics."""
    by_user: dict[str, list[str]] = {}
    for user, node_id in keys:
        by_user.setdefault(user, []).append(node_id)
    deltas: dict[str, tuple[int, int]] = {}
    for user in sorted(by_user):
        ids = by_user[user]
        gone = conn.execute(
            "DELETE FROM node_context WHERE user_id = %s AND node_id = ANY(%s) RETURNING dl", (user, ids)
        ).fetchall()
        if gone:
            deltas[user] = (-len(gone), -sum(int(row[0]) for row in gone))
            conn.execute("DELETE FROM ctx_postings WHERE user_id = %s AND node_id = ANY(%s)", (user, ids))
    _add_stats(conn, deltas)


def write(conn: _Conn, rows: Sequence[ContextRow]) -> None:
    """Replace the context of each row's node (a row without neighbours leaves none)."""
    drop(conn, [(cast(str, sql.enc(r.tenant.user)), cast(str, sql.enc(r.node_id))) for r in rows])
    kept = [r for r in rows if r.neighbours]
    if not kept:
        return
    seqs: dict[str, int] = dict(
        conn.execute(
            "SELECT id, seq FROM nodes WHERE id = ANY(%s)", ([sql.enc(r.node_id) for r in kept],)
        ).fetchall()
    )
    deltas: dict[str, tuple[int, int]] = {}
    docs = []
    records = []
    for r in kept:
        user, node_id = cast(str, sql.enc(r.tenant.user)), cast(str, sql.enc(r.node_id))
        agent, run = sql.enc(r.tenant.agent), sql.enc(r.tenant.run)
        length, terms = lexical.doc_terms(None, r.text)
        docs.append(((user, node_id, seqs[node_id], agent, run), length, terms))
        blob = None if r.vector is None else r.vector.tobytes()
        pairs = codec.dump_json(neighbours_json(r.neighbours))
        records.append((user, node_id, agent, run, sql.enc(pairs), blob, length))
        count, tokens = deltas.get(user, (0, 0))
        deltas[user] = (count + 1, tokens + length)
    lexical.write_postings(conn, FIELD[0], docs)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO node_context (user_id, node_id, agent_id, run_id, neighbours, vec, dl) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            records,
        )
    _add_stats(conn, deltas)


def read(conn: _Conn, ids: Collection[str], tenant: Tenant) -> dict[str, NodeContext]:
    where, params = sql.tenant_sql(tenant, "c")
    statement = pgsql.SQL(
        "SELECT c.node_id, c.neighbours, c.vec FROM node_context c WHERE c.node_id = ANY(%s) AND {}"
    ).format(where)
    rows = conn.execute(statement, [[sql.enc(i) for i in ids], *params]).fetchall()
    out: dict[str, NodeContext] = {}
    for node_id, pairs, blob in rows:
        vector = decode_vector(None if blob is None else bytes(blob))
        out[cast(str, sql.dec(node_id))] = NodeContext(
            parse_neighbours(codec.load_json(sql.dec(pairs))), vector
        )
    return out

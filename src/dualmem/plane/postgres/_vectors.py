"""The PostgreSQL store's vector search: exact for small tenants, pgvector's HNSW for large ones.

A tenant with fewer than ``exact_below`` nodes is searched exactly (a sequential scan of its rows);
a larger one through the HNSW (cosine) index with a relaxed-order iterative scan, so that the tenant
filter is applied while walking the index, and re-ranked exactly. Chunk vectors (the extra windows
of long texts) are always searched exactly; a node is scored by its best vector.

The interface: :func:`search` (the top-k of a query) and :func:`explain` (the plan of an index
search, for operators and tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import psycopg
from psycopg import sql as pgsql

from dualmem.plane import _chunks
from dualmem.plane.postgres import _sql as sql
from dualmem.types import Tenant, Vector

__all__ = ["Settings", "explain", "search"]

_Conn = psycopg.Connection[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class Settings:
    """``exact_below``: tenants smaller than this are searched exactly; ``ef_search``: the HNSW
    candidate list of an index search (pgvector's ``hnsw.ef_search``; at least 2k is used)."""

    exact_below: int
    ef_search: int


def tenant_size(conn: _Conn, tenant: Tenant) -> int:
    """The node count of ``tenant``'s user (its lexical statistics keep it)."""
    row = conn.execute("SELECT docs FROM lex_stats WHERE user_id = %s", (sql.enc(tenant.user),)).fetchone()
    return 0 if row is None else int(row[0])


def search(conn: _Conn, tenant: Tenant, query: Vector, k: int, settings: Settings) -> list[tuple[str, float]]:
    """Each node once, scored by its best vector (embedding or chunk): (node id, cosine), best first."""
    hits: list[tuple[str, float]] | None = None
    if tenant_size(conn, tenant) >= settings.exact_below:
        hits = _approximate(conn, tenant, query, k, settings.ef_search)
    if hits is None or len(hits) != k:
        hits = _exact(conn, tenant, query, k, "vectors")
    return _chunks.merge(hits, _exact(conn, tenant, query, k, "chunk_vectors"), k)


def explain(conn: _Conn, tenant: Tenant, query: Vector, k: int, settings: Settings) -> str:
    """The plan of the index (HNSW) search for ``tenant``."""
    return "\n".join(str(row[0]) for row in _ann(conn, tenant, query, k, settings.ef_search, explain=True))


def _exact(conn: _Conn, tenant: Tenant, query: Vector, k: int, table: str) -> list[tuple[str, float]]:
    """Every row of ``table`` of the tenant scored: each node once, with its best row, ties by write order."""
    where, params = sql.tenant_sql(tenant, "v")
    statement = pgsql.SQL(
        "WITH c AS MATERIALIZED "
        "(SELECT v.node_id, v.seq, v.embedding <#> %s AS d FROM {t} v WHERE {w}) "
        + (
            "SELECT node_id, -d FROM c ORDER BY d, seq LIMIT %s"
            if table == "vectors"  # one row a node
            else "SELECT node_id, -MIN(d), MIN(seq) AS s FROM c GROUP BY node_id ORDER BY MIN(d), s LIMIT %s"
        )
    ).format(t=pgsql.Identifier(table), w=where)
    rows = conn.execute(statement, [query, *params, k]).fetchall()
    return [(cast(str, sql.dec(row[0])), float(row[1])) for row in rows]


def _ann(
    conn: _Conn, tenant: Tenant, query: Vector, k: int, ef_search: int, *, explain: bool = False
) -> list[Any]:
    """HNSW with a relaxed-order iterative scan: the tenant filter is applied while walking the index.

    Only called for tenants of at least ``exact_below`` nodes, so the planner is told to walk the
    index rather than filter and sort (its estimates on freshly loaded tables are poor).
    """
    where, params = sql.tenant_sql(tenant, "v")
    statement = pgsql.SQL(
        "{}SELECT v.node_id, v.seq, -(v.embedding <#> %s) AS s FROM vectors v WHERE {} "
        "ORDER BY v.embedding <=> %s LIMIT %s"
    ).format(pgsql.SQL("EXPLAIN " if explain else ""), where)
    with conn.transaction():
        conn.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.ef_search', %s, true), set_config('enable_seqscan', 'off', true), "
            "set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true)",
            (str(min(1000, max(ef_search, 2 * k))),),
        )
        return conn.execute(statement, [query, *params, query, k]).fetchall()


def _approximate(
    conn: _Conn, tenant: Tenant, query: Vector, k: int, ef_search: int
) -> list[tuple[str, float]]:
    rows = _ann(conn, tenant, query, k, ef_search)
    rows.sort(key=lambda row: (-float(row[2]), int(row[1])))  # relaxed order: re-rank exactly
    return [(cast(str, sql.dec(row[0])), float(row[2])) for row in rows]

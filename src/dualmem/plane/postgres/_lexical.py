"""The PostgreSQL store's lexical index: BM25 with FTS5's formula over a postings table.

A node's text (its speaker, then its content) is indexed under the one index rule's terms
(``lexindex``: FTS5's split and ``porter`` stem) and ranked by its BM25, so the ranking agrees with
the SQLite store's.
Postings keep each term's positions (phrases are matched), and the statistics (documents and tokens)
are kept per user. Two fields use it: the nodes (``postings``, ``lex_stats``) and their neighbour
context (``ctx_postings``, ``ctx_stats``: ``_pg_context``).

The interface: :func:`doc_terms` (a text's postings), :func:`write_postings` and :func:`add_stats`
(index them), :func:`search` (the BM25 top-k of a query over one field).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, cast

import psycopg
from psycopg import sql

from dualmem.plane import codec, lexindex
from dualmem.plane.postgres._sql import dec, enc, tenant_sql
from dualmem.text.lexical import CJK_RANGES
from dualmem.types import Tenant

__all__ = [
    "NODES",
    "V5",
    "Field",
    "PgLexical",
    "add_stats",
    "bm25_query",
    "doc_terms",
    "postings_table",
    "query_terms",
    "search",
    "write_postings",
]

_Conn = psycopg.Connection[tuple[Any, ...]]

#: an indexed field: (its postings table, its statistics table)
Field = tuple[str, str]
NODES: Field = ("postings", "lex_stats")

_POSTING_COLS = "user_id, term, node_id, seq, agent_id, run_id, dl, tf, positions"
_K = 'text COLLATE "C"'


class PgLexical:
    """The PostgreSQL store's ``lexindex.LexicalComponent``: BM25 over its postings tables, each search on
    the store's connection of the open transaction (``connect``: the store's ``_conn``)."""

    def __init__(
        self, connect: Callable[[str], AbstractContextManager[_Conn]], fields: dict[str, Field]
    ) -> None:
        self._connect = connect
        self._fields = fields

    def search(self, field: str, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        label = "lexical search" if field == "nodes" else "context search"
        with self._connect(label) as conn:
            return search(conn, tenant, query, k, self._fields[field])

    def count(self, field: str, user: str) -> int:
        statement = sql.SQL("SELECT docs FROM {} WHERE user_id = %s").format(
            sql.Identifier(self._fields[field][1])
        )
        with self._connect("count the lexical index") as conn:
            row = conn.execute(statement, (enc(user),)).fetchone()
        return 0 if row is None else int(row[0])

    def rule(self) -> int:
        with self._connect("read the lexical index's rule") as conn:
            return rule_of(conn)


#: the meta key holding the index rule's version the postings were written by (absent: 1)
RULE_KEY = "lexical_rule"
#: a PostgreSQL regular expression matching a CJK character (``dualmem.text.lexical.has_cjk``)
CJK_PATTERN = "[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in CJK_RANGES) + "]"
#: schema v5: a database none of whose text the current rule indexes otherwise than rule 1 (every
#: new one, every English one) is marked as written by it; any other keeps rule 1 until ``reindex``
V5: tuple[str, ...] = (
    f"INSERT INTO meta (key, value) SELECT '{RULE_KEY}', '{lexindex.RULE_VERSION}' WHERE NOT EXISTS "
    f"(SELECT 1 FROM nodes WHERE content ~ '{CJK_PATTERN}' OR speaker ~ '{CJK_PATTERN}') "
    "ON CONFLICT (key) DO NOTHING",
)


def rule_of(conn: _Conn) -> int:
    """The rule version the postings were written by (no marker: 1)."""
    row = conn.execute("SELECT value FROM meta WHERE key = %s", (RULE_KEY,)).fetchone()
    return 1 if row is None else int(row[0])


def stale_nodes(conn: _Conn) -> list[str]:
    """The (encoded) ids of the nodes whose terms the current rule changes (their text has CJK)."""
    statement = "SELECT id FROM nodes WHERE content ~ %s OR speaker ~ %s ORDER BY seq"
    return [str(row[0]) for row in conn.execute(statement, (CJK_PATTERN, CJK_PATTERN))]


def mark_rule(conn: _Conn) -> None:
    """Record that the postings are the current rule's."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (RULE_KEY, str(lexindex.RULE_VERSION)),
    )


def postings_table(name: str) -> str:
    """The DDL of a postings table (schema v1 ``postings``, v3 ``ctx_postings``): one row per (user,
    stemmed term, node) with what BM25 and the tenant filter need (the node's order, length, agent
    and run), so that a search reads postings only."""
    return f"""CREATE TABLE {name} (
        user_id {_K} NOT NULL,
        term {_K} NOT NULL,
        node_id {_K} NOT NULL,
        seq bigint NOT NULL,
        agent_id {_K},
        run_id {_K},
        dl integer NOT NULL,
        tf integer NOT NULL,
        positions integer[] NOT NULL,
        PRIMARY KEY (user_id, term, node_id)
    )"""


def doc_terms(speaker: str | None, content: str) -> tuple[int, dict[str, list[int]]]:
    """The node's (token count, term -> positions) over speaker then content (``lexindex.doc_terms``:
    like FTS5's two columns, a phrase never spans the speaker and the content)."""
    return lexindex.doc_terms(speaker, content)


def query_terms(query: str) -> list[tuple[str, ...]]:
    """The query's OR-ed phrases, stemmed as the index is (``lexindex.phrases``)."""
    return lexindex.phrases(query, max_terms=codec.QUERY_MAX_TERMS)


def write_postings(
    conn: _Conn, table: str, docs: Iterable[tuple[tuple[Any, ...], int, dict[str, list[int]]]]
) -> None:
    """COPY the postings of ``docs`` into ``table``: per document its encoded (user, node id, seq,
    agent, run), its token count and its terms' positions (``doc_terms``)."""
    with conn.cursor() as cur, cur.copy(f"COPY {table} ({_POSTING_COLS}) FROM STDIN") as copy:
        for (user, node_id, seq, agent, run), length, terms in docs:
            for term, positions in terms.items():
                spots = "{" + ",".join(map(str, positions)) + "}"  # int[] in COPY's text form
                copy.write_row((user, term, node_id, seq, agent, run, length, len(positions), spots))


def add_stats(conn: _Conn, deltas: dict[str, tuple[int, int]], table: str = NODES[1]) -> None:
    """Add (documents, tokens) to each user's BM25 statistics; users in order (no deadlocks)."""
    statement = sql.SQL(
        "INSERT INTO {t} (user_id, docs, tokens) VALUES (%s, %s, %s) ON CONFLICT (user_id) "
        "DO UPDATE SET docs = {t}.docs + excluded.docs, tokens = {t}.tokens + excluded.tokens"
    ).format(t=sql.Identifier(table))
    for user in sorted(deltas):
        docs, tokens = deltas[user]
        conn.execute(statement, (user, docs, tokens))


def search(conn: _Conn, tenant: Tenant, query: str, k: int, field: Field = NODES) -> list[tuple[str, float]]:
    """BM25 top-k of ``query`` over ``field`` for ``tenant``: (node id, score), best first."""
    phrases = query_terms(query)
    if not phrases or k <= 0:
        return []
    statement, params = bm25_query(tenant, phrases, k, k1=lexindex.K1, b=lexindex.B, field=field)
    rows = conn.execute(statement, params).fetchall()
    return [(cast(str, dec(row[0])), float(row[1])) for row in rows]


_HIT_COLS = "node_id, seq, agent_id, run_id, dl, tf"


def _phrase_hits(
    index: int, phrase: tuple[str, ...], user: str, table: str = "postings"
) -> tuple[sql.Composed, list[Any]]:
    """(phrase, node, order, agent, run, length, frequency) for the nodes of ``user`` with ``phrase``."""
    if len(phrase) == 1:
        return (
            sql.SQL("SELECT {} AS q, {} FROM {} WHERE user_id = %s AND term = %s").format(
                sql.Literal(index), sql.SQL(_HIT_COLS), sql.Identifier(table)
            ),
            [user, phrase[0]],
        )
    joins = sql.SQL(" ").join(
        sql.SQL(
            "JOIN {t} {p} ON {p}.user_id = p0.user_id AND {p}.node_id = p0.node_id AND {p}.term = %s"
        ).format(t=sql.Identifier(table), p=sql.Identifier(f"p{i}"))
        for i in range(1, len(phrase))
    )
    follows = sql.SQL(" AND ").join(
        sql.SQL("x.pos + {} = ANY({}.positions)").format(sql.Literal(i), sql.Identifier(f"p{i}"))
        for i in range(1, len(phrase))
    )
    statement = sql.SQL(
        "SELECT {q} AS q, {cols} FROM (SELECT p0.node_id, p0.seq, p0.agent_id, p0.run_id, p0.dl, "
        "(SELECT count(*) FROM unnest(p0.positions) AS x(pos) WHERE {follows})::integer AS tf "
        "FROM {t} p0 {joins} WHERE p0.user_id = %s AND p0.term = %s) AS ph WHERE tf > 0"
    ).format(
        q=sql.Literal(index), cols=sql.SQL(_HIT_COLS), follows=follows, joins=joins, t=sql.Identifier(table)
    )
    return statement, [*phrase[1:], user, phrase[0]]


def bm25_query(
    tenant: Tenant,
    phrases: Sequence[tuple[str, ...]],
    k: int,
    *,
    k1: float,
    b: float,
    field: Field = NODES,
) -> tuple[sql.Composed, list[Any]]:
    """FTS5's ``bm25()`` over the postings of ``tenant.user`` (statistics per user), top ``k``.

    Document frequencies count every node of the user; the agent/run filter applies to the hits.
    ``field``: the (postings, statistics) tables of the indexed field (the nodes, or their context).
    """
    table, stats = field
    user = cast(str, enc(tenant.user))
    parts, params = [], []
    for i, phrase in enumerate(phrases):
        part, part_params = _phrase_hits(i, phrase, user, table)
        parts.append(part)
        params.extend(part_params)
    where, where_params = tenant_sql(Tenant(tenant.user, tenant.agent, tenant.run), "h")
    statement = sql.SQL(
        "WITH st AS (SELECT docs::float8 AS total, tokens::float8 / GREATEST(docs, 1) AS avgdl "
        "FROM {stats} WHERE user_id = %s), "
        "hits AS ({hits}), "
        "df AS (SELECT q, count(*)::float8 AS n FROM hits GROUP BY q), "
        "idf AS (SELECT q, ln((st.total - df.n + 0.5) / (df.n + 0.5)) AS w FROM df, st) "
        "SELECT h.node_id, sum(CASE WHEN idf.w > 0 THEN idf.w ELSE 1e-6 END * h.tf * {k1p} "
        "/ (h.tf + {k1} * (1 - {b} + {b} * h.dl / st.avgdl))) AS score "
        "FROM (SELECT %s AS user_id, * FROM hits) AS h JOIN idf USING (q) CROSS JOIN st WHERE {where} "
        "GROUP BY h.node_id, h.seq ORDER BY score DESC, h.seq LIMIT %s"
    ).format(
        stats=sql.Identifier(stats),
        hits=sql.SQL(" UNION ALL ").join(parts),
        k1p=sql.Literal(k1 + 1.0),
        k1=sql.Literal(k1),
        b=sql.Literal(b),
        where=where,
    )
    return statement, [user, *params, user, *where_params, k]

"""The server store: PostgreSQL >= 15 with pgvector, through psycopg 3 and a connection pool.

Vectors: an HNSW (cosine) index searched with pgvector's iterative scans, so that a tenant filter
still uses the index; tenants smaller than ``exact_below`` nodes are searched exactly. Lexical: BM25
with FTS5's formula over a postings table (terms stemmed as FTS5's ``porter`` tokenizer stems them),
statistics per user. Every key leads with the user id (see ``_pg_schema`` and ``docs/postgres.md``).

psycopg errors are translated at this backend's boundary (``_pg_sql.translated``) and nowhere else.
Install with ``pip install 'dualmem[postgres]'``.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast

import numpy as np
import psycopg
import psycopg_pool
from psycopg import sql as pgsql

from dualmem.errors import ConfigError, InvalidInput, NotFound
from dualmem.plane import _chunks, codec, context, lexindex
from dualmem.plane._lifecycle import StoreBase, check_decisions, check_dims, check_edges
from dualmem.plane._select import Selection, compile_selection, finish
from dualmem.plane.base import Decision, NodeContext, StoreStats, refuse_known_or_repeated, tenant_order
from dualmem.plane.check import RULE_NOTICE, CheckReport, Problem
from dualmem.plane.erase import EraseReport, erase_postgres
from dualmem.plane.postgres import _context as pgctx
from dualmem.plane.postgres import _lexical as lexical
from dualmem.plane.postgres import _sql as sql
from dualmem.plane.postgres import _vectors as vectors
from dualmem.plane.postgres._lexical import PgLexical
from dualmem.plane.postgres._schema import check_version, fix_dimension, migrate, vector_dim
from dualmem.types import VIEWS, Edge, JSONValue, Node, NodeStatus, Tenant, Vector, View

log = logging.getLogger("dualmem")


def _notice_rule(conn: _Conn, where: str) -> None:
    """A database whose postings predate the lexical rule (CJK text kept whole) says so at open."""
    if lexical.rule_of(conn) >= lexindex.RULE_VERSION:
        return
    stale = lexical.stale_nodes(conn)
    if stale:
        log.warning(
            "%s: %s", where.split("@")[-1], RULE_NOTICE.format(rule=lexindex.RULE_VERSION, count=len(stale))
        )


__all__ = ["DEFAULT_EF_SEARCH", "DEFAULT_EXACT_BELOW", "DEFAULT_SCHEMA", "PostgresStore"]

_Conn = psycopg.Connection[tuple[Any, ...]]

DEFAULT_SCHEMA = "dualmem"
#: tenants with fewer nodes than this are searched exactly (a sequential scan of their rows)
DEFAULT_EXACT_BELOW = 10_000
#: HNSW candidate list of an index search (pgvector's ``hnsw.ef_search``; at least 2k is used)
DEFAULT_EF_SEARCH = 100
_CHUNK = 1000


def _open_error(dsn: str, exc: psycopg.Error) -> ConfigError:
    safe = dsn.split("@", 1)[-1] if "@" in dsn else dsn  # never echo a password
    return ConfigError(
        f"cannot connect to PostgreSQL at {safe}: {str(exc).strip().splitlines()[0] if str(exc) else exc}",
        hint="check the URL (postgresql://user:password@host:port/database) and that the server is running",
    )


class PostgresStore(StoreBase):
    """A ``MemoryStore`` in a PostgreSQL schema. Open with :meth:`PostgresStore.open`; safe across threads."""

    def __init__(
        self,
        pool: psycopg_pool.ConnectionPool[_Conn],
        schema: str,
        *,
        exact_below: int,
        ef_search: int,
        read_only: bool = False,
    ) -> None:
        self._pool = pool
        self.schema = schema
        self.read_only = read_only
        self.exact_below = exact_below
        self.ef_search = ef_search
        self._local = threading.local()
        self._lexical = PgLexical(self._conn, {"nodes": lexical.NODES, "context": pgctx.FIELD})
        self._dim: int | None = None

    @classmethod
    def open(
        cls,
        dsn: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        timeout: float = 5.0,
        pool_size: int = 4,
        exact_below: int = DEFAULT_EXACT_BELOW,
        ef_search: int = DEFAULT_EF_SEARCH,
        read_only: bool = False,
    ) -> PostgresStore:
        """Connect, create ``schema`` and migrate it if needed, and open a pool of ``pool_size`` connections.

        ``timeout`` bounds the wait for a lock or a free connection (seconds). ``read_only=True``
        creates and migrates nothing (the schema must exist at this version) and runs every session
        with ``default_transaction_read_only``: writes raise ``ReadOnlyStore`` before reaching the
        server, and the server refuses any that would. It works for a role that may only read.
        """
        if not schema or not schema.strip():
            raise ConfigError("the PostgreSQL schema name is empty", hint="pass schema='dualmem'")
        try:
            with (
                psycopg.connect(dsn, autocommit=True, connect_timeout=max(1, round(timeout))) as conn,
                sql.translated("prepare the schema"),
            ):
                if read_only:
                    check_version(conn, schema)
                else:
                    migrate(conn, schema)
                    _notice_rule(conn, dsn)
                oid = int(
                    cast(tuple[int], conn.execute("SELECT 'public.vector'::regtype::oid").fetchone())[0]
                )
        except psycopg.OperationalError as exc:
            raise _open_error(dsn, exc) from exc
        except psycopg.ProgrammingError as exc:  # a malformed conninfo string
            raise _open_error(dsn, exc) from exc
        lock_ms = max(1, round(timeout * 1000))

        def configure(conn: _Conn) -> None:
            conn.execute(pgsql.SQL("SET search_path TO {}, public").format(pgsql.Identifier(schema)))
            conn.execute(pgsql.SQL("SET lock_timeout = {}").format(pgsql.Literal(f"{lock_ms}ms")))
            if read_only:
                conn.execute("SET default_transaction_read_only = on")
            sql.register_vector(conn, oid)

        pool: psycopg_pool.ConnectionPool[_Conn] = psycopg_pool.ConnectionPool(
            dsn,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={"autocommit": True},
            configure=configure,
            timeout=timeout,
            open=False,
            name=f"dualmem-{schema}",
        )
        with sql.translated("open the connection pool"):
            pool.open(wait=True, timeout=max(timeout, 5.0))
        store = cls(pool, schema, exact_below=exact_below, ef_search=ef_search, read_only=read_only)
        try:
            store._load_context_window(pgctx.STALE_KEY)
        except BaseException:
            pool.close()
            raise
        return store

    # -- connections ------------------------------------------------------------------------
    @contextmanager
    def _conn(self, what: str) -> Iterator[_Conn]:
        """The connection of the open transaction on this thread, else one from the pool."""
        pinned: _Conn | None = getattr(self._local, "conn", None)
        with sql.translated(what):
            if pinned is not None:
                yield pinned
                return
            with self._pool.connection() as conn:
                yield conn

    @contextmanager
    def _write(self, what: str) -> Iterator[_Conn]:
        with self.transaction(), self._conn(what) as conn:
            yield conn

    # -- lifecycle and metadata -------------------------------------------------------------
    def close(self) -> None:
        self._pool.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A transaction on one pooled connection, pinned to this thread; a SAVEPOINT when nested."""
        self._refuse_read_only("this memory was opened read-only")
        pinned: _Conn | None = getattr(self._local, "conn", None)
        with sql.translated("run a transaction"):
            if pinned is not None:
                with pinned.transaction():
                    yield
                return
            with self._pool.connection() as conn:
                self._local.conn = conn
                try:
                    with conn.transaction():
                        yield
                finally:
                    self._local.conn = None

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A ``REPEATABLE READ, READ ONLY`` transaction pinned to this thread (inside one: nothing)."""
        pinned: _Conn | None = getattr(self._local, "conn", None)
        if pinned is not None:
            yield
            return
        with sql.translated("read a snapshot"), self._pool.connection() as conn:
            self._local.conn = conn
            try:
                with conn.transaction():
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    yield
            finally:
                self._local.conn = None

    def _first_dimension(self, dim: int) -> None:
        with self._conn("bind the embedder") as conn:
            fix_dimension(conn, self.schema, dim)

    @staticmethod
    def _get_meta(conn: _Conn, key: str) -> JSONValue:
        row = conn.execute("SELECT value FROM meta WHERE key = %s", (sql.enc(key),)).fetchone()
        return None if row is None else codec.load_json(row[0])

    @staticmethod
    def _set_meta(conn: _Conn, key: str, value: JSONValue) -> None:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (sql.enc(key), codec.dump_json(value)),
        )

    def get_meta(self, key: str) -> JSONValue:
        with self._conn("read meta") as conn:
            return self._get_meta(conn, key)

    def set_meta(self, key: str, value: JSONValue) -> None:
        codec.dump_json(value)  # InvalidInput before touching the database
        with self._write("write meta") as conn:
            self._set_meta(conn, key, value)

    # -- nodes ------------------------------------------------------------------------------
    def _stored_dim(self, conn: _Conn) -> int | None:
        if self._dim is not None:
            return self._dim
        dim = vector_dim(conn)
        if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            self._dim = dim  # committed, and once fixed a dimension never changes: cache it
        return dim

    def _check_dims(self, conn: _Conn, vectors: Sequence[Vector]) -> None:
        """Refuse mixed dimensions; fix the column's dimension on the first write."""
        stored = self._stored_dim(conn)
        check_dims(vectors, stored)
        if stored is None and vectors:
            fix_dimension(conn, self.schema, int(vectors[0].shape[0]))

    @staticmethod
    def _users_of(conn: _Conn, ids: Collection[str]) -> dict[str, str]:
        """Node id -> user id for the stored ``ids`` (ids and users as stored, escaped)."""
        found: dict[str, str] = {}
        items = list(dict.fromkeys(ids))
        for start in range(0, len(items), _CHUNK):
            rows = conn.execute(
                "SELECT id, user_id FROM nodes WHERE id = ANY(%s)", (items[start : start + _CHUNK],)
            )
            found.update((row[0], row[1]) for row in rows)
        return found

    def _owners(self, node_ids: Collection[str]) -> dict[str, str]:
        with self._conn("read the nodes' users") as conn:
            found = self._users_of(conn, [cast(str, sql.enc(i)) for i in node_ids])
        return {cast(str, sql.dec(i)): cast(str, sql.dec(user)) for i, user in found.items()}

    @staticmethod
    def _index_text(
        conn: _Conn,
        nodes: Sequence[Node],
        seqs: Sequence[int],
        lexed: Sequence[tuple[int, dict[str, list[int]]]],
    ) -> None:
        """Postings and entity links of freshly written nodes (``seqs``: their row order)."""
        lexical.write_postings(
            conn,
            lexical.NODES[0],
            (
                (
                    (
                        sql.enc(n.tenant.user),
                        sql.enc(n.id),
                        seq,
                        sql.enc(n.tenant.agent),
                        sql.enc(n.tenant.run),
                    ),
                    *lex,
                )
                for n, seq, lex in zip(nodes, seqs, lexed, strict=True)
            ),
        )
        links = [
            (sql.enc(node.tenant.user), sql.enc(node.id), sql.enc(key))
            for node in nodes
            for key in dict.fromkeys(codec.entity_key(e) for e in node.entities)
            if key
        ]
        if links:
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO node_entities (user_id, node_id, name) VALUES (%s, %s, %s)", links
                )

    def put_nodes(self, nodes: Sequence[Node]) -> None:
        if not nodes:
            return
        vectors = [codec.as_vector(node) for node in nodes]
        lexed = [lexical.doc_terms(node.speaker, node.content) for node in nodes]
        rows = [sql.node_row(node, length) for node, (length, _) in zip(nodes, lexed, strict=True)]
        ids = [cast(str, sql.enc(node.id)) for node in nodes]
        deltas: dict[str, tuple[int, int]] = {}
        for row in rows:
            docs, tokens = deltas.get(row[1], (0, 0))
            deltas[row[1]] = (docs + 1, tokens + row[-1])
        with self._write("store nodes") as conn:
            self._check_dims(conn, vectors)
            known = self._users_of(conn, ids)
            refuse_known_or_repeated([node.id for node in nodes], set(known))
            with conn.cursor() as cur:
                cur.executemany(sql.INSERT_NODE + " RETURNING seq", rows, returning=True)
                seqs = []
                while True:
                    seqs.append(int(cast(tuple[int], cur.fetchone())[0]))
                    if not cur.nextset():
                        break
                cur.executemany(
                    "INSERT INTO vectors (user_id, node_id, seq, agent_id, run_id, embedding) "
                    "VALUES (%s, %s, %s, %s, %s, %s)",
                    [(r[1], r[0], seq, r[2], r[3], v) for r, seq, v in zip(rows, seqs, vectors, strict=True)],
                )
            self._index_text(conn, nodes, seqs, lexed)
            lexical.add_stats(conn, deltas)
            self._refresh_context(conn, context.affected(self, nodes, self._context_window))

    def update_node(self, node: Node) -> None:
        length, terms = lexical.doc_terms(node.speaker, node.content)
        row = sql.node_row(node, length)
        vector = None if node.embedding is None else codec.as_vector(node)
        with self._write("update a node") as conn:
            old = conn.execute(
                "SELECT user_id, agent_id, run_id, lex_len, seq FROM nodes WHERE id = %s FOR NO KEY UPDATE",
                (row[0],),
            ).fetchone()
            if old is None:
                raise NotFound(f"no node {node.id}")
            if Tenant(sql.dec(old[0]) or "", sql.dec(old[1]), sql.dec(old[2])) != node.tenant:
                raise InvalidInput(f"node {node.id}: the tenant of a stored node cannot change")
            before = list(self.get_nodes([node.id]).values())
            key = (row[1], row[0])
            conn.execute(sql.UPDATE_NODE, sql.update_args(row))
            conn.execute("DELETE FROM node_entities WHERE user_id = %s AND node_id = %s", key)
            conn.execute("DELETE FROM postings WHERE user_id = %s AND node_id = %s", key)
            self._index_text(conn, [node], [int(old[4])], [(length, terms)])
            if length != int(old[3]):  # most updates keep the text: no lock on the user's statistics row
                lexical.add_stats(conn, {row[1]: (0, length - int(old[3]))})
            if vector is not None:
                self._check_dims(conn, [vector])
                conn.execute(
                    "UPDATE vectors SET embedding = %s WHERE user_id = %s AND node_id = %s", (vector, *key)
                )
            touched = context.affected(self, [*before, node], self._context_window)
            self._refresh_context(conn, touched | {node.id})

    def get_node(self, node_id: str, tenant: Tenant | None = None) -> Node | None:
        return self.get_nodes([node_id], tenant).get(node_id)

    def get_nodes(self, node_ids: Collection[str], tenant: Tenant | None = None) -> dict[str, Node]:
        wanted = [cast(str, sql.enc(i)) for i in dict.fromkeys(node_ids)]
        where, params = sql.tenant_sql(tenant)
        statement = pgsql.SQL("SELECT {} FROM {} WHERE n.id = ANY(%s) AND {}").format(
            pgsql.SQL(sql.NODE_COLS), pgsql.SQL(sql.NODE_FROM), where
        )
        found: dict[str, Node] = {}
        with self._conn("read nodes") as conn:
            for start in range(0, len(wanted), _CHUNK):
                for row in conn.execute(statement, [wanted[start : start + _CHUNK], *params]):
                    node = sql.to_node(row)
                    found[node.id] = node
        return {node_id: found[node_id] for node_id in dict.fromkeys(node_ids) if node_id in found}

    def delete_nodes(self, node_ids: Collection[str]) -> int:
        ids = [cast(str, sql.enc(i)) for i in dict.fromkeys(node_ids)]
        if not ids:
            return 0
        removed = 0
        with self._write("delete nodes") as conn:
            doomed = self.get_nodes(node_ids)
            touched = context.affected(self, doomed.values(), self._context_window) - set(node_ids)
            pgctx.drop(
                conn, [(cast(str, sql.enc(n.tenant.user)), cast(str, sql.enc(n.id))) for n in doomed.values()]
            )
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                gone = conn.execute(
                    "DELETE FROM nodes WHERE id = ANY(%s) RETURNING user_id, id, lex_len", (chunk,)
                ).fetchall()  # cascades to vectors, edges, entity links and the nodes' decisions
                removed += len(gone)
                deltas: dict[str, tuple[int, int]] = {}
                for user, _, length in gone:
                    docs, tokens = deltas.get(user, (0, 0))
                    deltas[user] = (docs - 1, tokens - int(length))
                for user in sorted(deltas):
                    mine = [node_id for u, node_id, _ in gone if u == user]
                    conn.execute(
                        "DELETE FROM postings WHERE user_id = %s AND node_id = ANY(%s)", (user, mine)
                    )
                    conn.execute(
                        "DELETE FROM decisions WHERE user_id = %s AND other_id = ANY(%s)", (user, mine)
                    )
                lexical.add_stats(conn, deltas)
            self._refresh_context(conn, touched)
        return removed

    def _ids(self, statement: pgsql.Composed, params: Sequence[Any], what: str) -> list[str]:
        with self._conn(what) as conn:
            return [cast(str, sql.dec(row[0])) for row in conn.execute(statement, params)]

    def iter_nodes(self, tenant: Tenant | None = None, *, status: NodeStatus | None = None) -> Iterator[Node]:
        where, params = sql.tenant_sql(tenant)
        if status is not None:
            where = pgsql.SQL("{} AND n.status = %s").format(where)
            params.append(status)
        ids = self._ids(
            pgsql.SQL(
                "SELECT n.id FROM nodes n WHERE {} "
                "ORDER BY COALESCE(n.at_ts, n.created_ts), n.created_ts, n.seq"
            ).format(where),
            params,
            "list nodes",
        )
        for start in range(0, len(ids), _CHUNK):
            yield from self.get_nodes(ids[start : start + _CHUNK], tenant).values()

    def recent_nodes(self, tenant: Tenant, k: int) -> list[Node]:
        where, params = sql.tenant_sql(tenant)
        ids = self._ids(
            pgsql.SQL("SELECT n.id FROM nodes n WHERE {} ORDER BY n.seq DESC LIMIT %s").format(where),
            [*params, max(k, 0)],
            "list recent nodes",
        )
        found = self.get_nodes(ids, tenant)
        return [found[i] for i in ids if i in found]

    def tenant_counts(self) -> list[tuple[Tenant, int]]:
        with self._conn("count tenants") as conn:
            rows = conn.execute(
                "SELECT user_id, agent_id, run_id, count(*) FROM nodes GROUP BY user_id, agent_id, run_id"
            ).fetchall()
        found = [(Tenant(cast(str, sql.dec(u)), sql.dec(a), sql.dec(r)), int(c)) for u, a, r, c in rows]
        return sorted(found, key=lambda tc: tenant_order(tc[0]))

    def users(self) -> list[str]:
        """Every user id with stored nodes, sorted (admin use: migration)."""
        with self._conn("list users") as conn:
            rows = conn.execute("SELECT user_id FROM lex_stats WHERE docs > 0 ORDER BY user_id").fetchall()
        return sorted(cast(str, sql.dec(row[0])) for row in rows)

    def count(self, tenant: Tenant | None = None) -> int:
        where, params = sql.tenant_sql(tenant)
        with self._conn("count nodes") as conn:
            row = conn.execute(pgsql.SQL("SELECT count(*) FROM nodes n WHERE {}").format(where), params)
            return int(cast(tuple[int], row.fetchone())[0])

    # -- edges ------------------------------------------------------------------------------
    def put_edges(self, edges: Sequence[Edge]) -> None:
        if not edges:
            return
        with self._write("store edges") as conn:
            users = self._owners({e.source for e in edges} | {e.target for e in edges})
            check_edges(edges, users)
            with conn.cursor() as cur:
                cur.executemany(sql.UPSERT_EDGE, [sql.edge_row(users[e.source], e) for e in edges])

    def edges_of(
        self, node_id: str, views: Collection[View] | None = None, *, limit: int | None = None
    ) -> list[Edge]:
        key = sql.enc(node_id)
        wanted = [v for v in VIEWS if views is None or v in views]
        if not wanted:
            return []
        with self._conn("read edges") as conn:
            if limit is None:
                rows = conn.execute(sql.EDGES_OF, (key, key, key, wanted)).fetchall()
            else:
                rows = conn.execute(sql.EDGES_OF_STRONGEST, (key, key, key, wanted, max(0, limit))).fetchall()
        return [sql.to_edge(row) for row in rows]

    def delete_edges(self, edges: Sequence[Edge]) -> None:
        if not edges:
            return
        with self._write("delete edges") as conn, conn.cursor() as cur:
            cur.executemany(
                "DELETE FROM edges WHERE user_id = (SELECT user_id FROM nodes WHERE id = %s) "
                "AND source = %s AND target = %s AND view = %s AND label = %s",
                [
                    (sql.enc(e.source), sql.enc(e.source), sql.enc(e.target), e.view, sql.enc(e.label))
                    for e in edges
                ],
            )

    # -- indexes ----------------------------------------------------------------------------
    @property
    def _vectors(self) -> vectors.Settings:
        return vectors.Settings(self.exact_below, self.ef_search)

    def explain_vector_search(self, tenant: Tenant, query: Vector, k: int) -> str:
        """The plan of the index (HNSW) search for ``tenant``, for operators and tests."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        with self._conn("explain a vector search") as conn:
            return vectors.explain(conn, tenant, q, k, self._vectors)

    def vector_search(self, tenant: Tenant, query: Vector, k: int) -> list[tuple[str, float]]:
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        with self._conn("vector search") as conn:
            dim = self._stored_dim(conn)
            if dim is None:
                return []
            if q.shape[0] != dim:
                raise InvalidInput(f"query vector has dimension {q.shape[0]}, the store holds {dim}")
            if not bool(np.all(np.isfinite(q))):
                raise InvalidInput("query vector has NaN or infinite values")
            if k <= 0:
                return []
            return vectors.search(conn, tenant, q, k, self._vectors)

    # -- chunk vectors ----------------------------------------------------------------------
    def put_chunks(self, chunks: Mapping[str, Vector]) -> None:
        if not chunks:
            return
        with self._write("store chunk vectors") as conn:
            dim = self._stored_dim(conn)
            rows = {node_id: _chunks.as_chunks(node_id, m, dim) for node_id, m in chunks.items()}
            ids = {cast(str, sql.enc(node_id)): m for node_id, m in rows.items()}
            users = self._users_of(conn, ids)
            missing = ids.keys() - users.keys()
            if missing:
                raise NotFound(f"chunk vectors for unknown nodes: {sorted(missing)[:5]}")
            with conn.cursor() as cur:
                cur.executemany(
                    "DELETE FROM chunk_vectors WHERE user_id = %s AND node_id = %s",
                    [(users[i], i) for i in ids],
                )
                cur.executemany(
                    "INSERT INTO chunk_vectors (user_id, node_id, part, seq, agent_id, run_id, embedding) "
                    "SELECT n.user_id, n.id, %s, n.seq, n.agent_id, n.run_id, %s FROM nodes n "
                    "WHERE n.user_id = %s AND n.id = %s",
                    [(part, m[part], users[i], i) for i, m in ids.items() for part in range(m.shape[0])],
                )

    def get_chunks(self, node_ids: Collection[str], tenant: Tenant | None = None) -> dict[str, Vector]:
        wanted = [cast(str, sql.enc(i)) for i in dict.fromkeys(node_ids)]
        where, params = sql.tenant_sql(tenant)
        statement = pgsql.SQL(
            "SELECT c.node_id, c.embedding FROM chunk_vectors c JOIN nodes n "
            "ON n.user_id = c.user_id AND n.id = c.node_id WHERE n.id = ANY(%s) AND {} "
            "ORDER BY c.node_id, c.part"
        ).format(where)
        parts: dict[str, list[Vector]] = {}
        with self._conn("read chunk vectors") as conn:
            for start in range(0, len(wanted), _CHUNK):
                for row in conn.execute(statement, [wanted[start : start + _CHUNK], *params]):
                    parts.setdefault(cast(str, sql.dec(row[0])), []).append(
                        np.asarray(row[1], dtype=np.float32)
                    )
        return {node_id: np.stack(rows) for node_id, rows in parts.items()}

    @property
    def lexical(self) -> PgLexical:
        """The store's lexical index (``lexindex.LexicalComponent``: BM25 over its postings)."""
        return self._lexical

    def lexical_probe(self, tenant: Tenant, text: str, k: int) -> list[tuple[str, float]]:
        """Write-time candidates' lexical shortlist: this store's ``lexical_search`` (not bounded here)."""
        return self.lexical_search(tenant, text, k)

    def entity_search(self, tenant: Tenant, entities: Collection[str], k: int) -> list[tuple[str, int]]:
        keys = [sql.enc(key) for key in dict.fromkeys(codec.entity_key(e) for e in entities) if key]
        if not keys or k <= 0:
            return []
        where, params = sql.tenant_sql(tenant)
        statement = pgsql.SQL(
            "SELECT ne.node_id, count(*) AS shared FROM node_entities ne "
            "JOIN nodes n ON n.user_id = ne.user_id AND n.id = ne.node_id "
            "WHERE ne.user_id = %s AND ne.name = ANY(%s) AND {} "
            "GROUP BY ne.node_id ORDER BY shared DESC, min(n.seq) LIMIT %s"
        ).format(where)  # ties: the earlier-written node first (the Store contract)
        with self._conn("entity search") as conn:
            rows = conn.execute(statement, [sql.enc(tenant.user), keys, *params, k]).fetchall()
        return [(cast(str, sql.dec(row[0])), int(row[1])) for row in rows]

    def entity_counts(self, tenant: Tenant, entities: Collection[str]) -> tuple[int, dict[str, int]]:
        keys = [key for key in dict.fromkeys(codec.entity_key(e) for e in entities) if key]
        with self._conn("count entities") as conn:
            total = vectors.tenant_size(conn, tenant)
            if not keys:
                return total, {}
            rows = conn.execute(
                "SELECT name, count(*) FROM node_entities "
                "WHERE user_id = %s AND name = ANY(%s) GROUP BY name",
                (sql.enc(tenant.user), [sql.enc(k) for k in keys]),
            ).fetchall()
        return total, {cast(str, sql.dec(name)): int(n) for name, n in rows}

    def time_search(self, tenant: Tenant, at: dt.datetime, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        when = codec.epoch(at)
        where, params = sql.tenant_sql(tenant)
        base = "SELECT n.id, n.at_ts, n.seq FROM nodes n WHERE {} AND n.at_ts IS NOT NULL AND n.at_ts "
        after = pgsql.SQL(base + ">= %s ORDER BY n.at_ts, n.seq LIMIT %s").format(where)
        before = pgsql.SQL(base + "< %s ORDER BY n.at_ts DESC, n.seq LIMIT %s").format(where)
        with self.snapshot(), self._conn("time search") as conn:
            found = [(row[0], row[1] - when, row[2]) for row in conn.execute(after, [*params, when, k])]
            found += [(row[0], when - row[1], row[2]) for row in conn.execute(before, [*params, when, k])]
        found.sort(key=lambda item: (item[1], item[2]))  # ties: the earlier-written node first
        return [(cast(str, sql.dec(node_id)), float(delta)) for node_id, delta, _ in found[:k]]

    def select_nodes(self, tenant: Tenant, where: Selection) -> list[str]:
        tenant_where, params = sql.tenant_sql(tenant)
        q = compile_selection(where, "postgres", sql.enc)
        statement = pgsql.SQL(
            "SELECT n.id, {} FROM nodes n WHERE {} AND {} "
            "ORDER BY COALESCE(n.at_ts, n.created_ts), n.created_ts, n.seq"
        ).format(pgsql.SQL(q.sure()), tenant_where, pgsql.SQL(q.where()))
        with self.snapshot(), self._conn("select nodes") as conn:
            rows = [
                (cast(str, sql.dec(node_id)), sure)
                for node_id, sure in conn.execute(statement, [*q.exact_params, *params, *q.candidate_params])
            ]
            return finish(rows, where, lambda ids: self.get_nodes(ids, tenant))

    def _session_neighbours(
        self, tenant: Tenant, node_ids: list[str], window: int
    ) -> Mapping[str, tuple[tuple[str, int], ...]]:
        where, params = sql.tenant_sql(tenant)
        # positions within each touched session (write order), then the pairs within the window
        statement = pgsql.SQL(
            "WITH s AS (SELECT DISTINCT n.user_id, n.session FROM nodes n "
            "WHERE n.id = ANY(%s) AND n.session IS NOT NULL AND {w}), "
            "r AS (SELECT n.id, n.user_id, n.session, "
            "ROW_NUMBER() OVER (PARTITION BY n.user_id, n.session ORDER BY n.seq) AS pos "
            "FROM nodes n JOIN s ON n.user_id = s.user_id AND n.session = s.session WHERE {w}) "
            "SELECT a.id, b.id, b.pos - a.pos FROM r a JOIN r b ON a.user_id = b.user_id "
            "AND a.session = b.session AND b.pos BETWEEN a.pos - %s AND a.pos + %s AND b.id <> a.id "
            "WHERE a.id = ANY(%s)"
        ).format(w=where)
        ids = [sql.enc(i) for i in node_ids]
        found: dict[str, list[tuple[int, str]]] = {}
        with self._conn("read session neighbours") as conn:
            for a, b, offset in conn.execute(statement, [ids, *params, *params, window, window, ids]):
                found.setdefault(cast(str, sql.dec(a)), []).append((int(offset), cast(str, sql.dec(b))))
        return {a: tuple((b, offset) for offset, b in sorted(pairs)) for a, pairs in found.items()}

    # -- neighbour context --------------------------------------------------------------------
    def _refresh_context(self, conn: _Conn, node_ids: Collection[str]) -> None:
        if node_ids:
            pgctx.write(conn, context.derive(self, node_ids, self._context_window))

    def rebuild_context(self) -> int:
        """Recompute every node's context from the nodes (the repair of a derived index)."""
        with self._write("rebuild the context") as conn:
            return self._rebuild_context(conn)

    def reindex_lexical(self) -> int:
        """Index again, by the current rule, every node whose terms it changes (and every context),
        then mark the postings as written by it; the nodes indexed again (0: already current)."""
        with self._write("reindex the lexical index") as conn:
            if lexical.rule_of(conn) >= lexindex.RULE_VERSION:
                return 0
            ids = [cast(str, sql.dec(i)) for i in lexical.stale_nodes(conn)]
            nodes = self.get_nodes(ids)
            deltas: dict[str, tuple[int, int]] = {}
            for node in nodes.values():
                length, terms = lexical.doc_terms(node.speaker, node.content)
                key = (sql.enc(node.tenant.user), sql.enc(node.id))
                old = conn.execute(
                    "SELECT seq, lex_len FROM nodes WHERE user_id = %s AND id = %s FOR NO KEY UPDATE", key
                ).fetchone()
                seq, before = int(cast(tuple[int, int], old)[0]), int(cast(tuple[int, int], old)[1])
                conn.execute("UPDATE nodes SET lex_len = %s WHERE user_id = %s AND id = %s", (length, *key))
                conn.execute("DELETE FROM node_entities WHERE user_id = %s AND node_id = %s", key)
                conn.execute("DELETE FROM postings WHERE user_id = %s AND node_id = %s", key)
                self._index_text(conn, [node], [seq], [(length, terms)])
                user = cast(str, key[0])
                docs, tokens = deltas.get(user, (0, 0))
                deltas[user] = (docs, tokens + length - before)
            lexical.add_stats(conn, {u: d for u, d in deltas.items() if d != (0, 0)})
            if ids:
                self._rebuild_context(conn)
            lexical.mark_rule(conn)
        return len(ids)

    def _rebuild_context(self, conn: _Conn) -> int:
        conn.execute("DELETE FROM node_context")
        conn.execute("DELETE FROM ctx_postings")
        conn.execute("DELETE FROM ctx_stats")
        ids = [
            cast(str, sql.dec(row[0]))
            for row in conn.execute("SELECT id FROM nodes WHERE session IS NOT NULL ORDER BY seq")
        ]
        for start in range(0, len(ids), 2000):
            self._refresh_context(conn, ids[start : start + 2000])
        conn.execute("DELETE FROM meta WHERE key = %s", (pgctx.STALE_KEY,))
        return len(ids)

    def context_search(self, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        return self._lexical.search("context", tenant, query, k)

    def node_context(self, node_ids: Collection[str], tenant: Tenant) -> dict[str, NodeContext]:
        if not node_ids:
            return {}
        with self._conn("read context") as conn:
            return pgctx.read(conn, node_ids, tenant)

    def entities_of(self, node_id: str) -> tuple[str, ...]:
        with self._conn("read entities") as conn:
            row = conn.execute("SELECT entities FROM nodes WHERE id = %s", (sql.enc(node_id),)).fetchone()
        return () if row is None else tuple(cast(list[str], codec.load_json(row[0])))

    # -- decisions --------------------------------------------------------------------------
    def put_decisions(self, decisions: Sequence[Decision]) -> None:
        if not decisions:
            return
        with self._write("store decisions") as conn:
            ids = {d.node_id for d in decisions} | {d.other_id for d in decisions if d.other_id is not None}
            users = self._owners(ids)
            check_decisions(decisions, users)
            rows = [sql.decision_row(users[d.node_id], d) for d in decisions]
            with conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO decisions (user_id, {sql.DEC_COLS}) VALUES ({', '.join(['%s'] * 11)})", rows
                )

    def decisions_of(self, node_id: str, *, key: str | None = None) -> list[Decision]:
        node = sql.enc(node_id)
        only, params = ("", (node, node)) if key is None else (" AND key = %s", (node, node, key))
        with self._conn("read decisions") as conn:
            rows = conn.execute(
                f"SELECT {sql.DEC_COLS} FROM decisions "
                "WHERE user_id = (SELECT user_id FROM nodes WHERE id = %s) AND node_id = %s"
                f"{only} ORDER BY seq",
                params,
            ).fetchall()
        return [sql.to_decision(row) for row in rows]

    def stats(self, tenant: Tenant | None = None) -> StoreStats:
        where, params = sql.tenant_sql(tenant)
        with self._conn("read stats") as conn:
            nodes, pending = cast(
                tuple[int, int],
                conn.execute(
                    pgsql.SQL(
                        "SELECT count(*), count(*) FILTER (WHERE n.status = 'pending') FROM nodes n WHERE {}"
                    ).format(where),
                    params,
                ).fetchone(),
            )
            by_view = dict.fromkeys(VIEWS, 0)
            supersessions = 0
            for view, versions, count in conn.execute(
                pgsql.SQL(
                    "SELECT e.view, e.label = 'superseded_by', count(*) FROM edges e JOIN nodes n "
                    "ON n.user_id = e.user_id AND n.id = e.source WHERE {} GROUP BY 1, 2"
                ).format(where),
                params,
            ):
                if versions:
                    supersessions += int(count)
                else:
                    by_view[view] = int(count)
            entities = cast(
                tuple[int],
                conn.execute(
                    pgsql.SQL(
                        "SELECT count(DISTINCT (ne.user_id, ne.name)) FROM node_entities ne "
                        "JOIN nodes n ON n.user_id = ne.user_id AND n.id = ne.node_id WHERE {}"
                    ).format(where),
                    params,
                ).fetchone(),
            )[0]
            bound = self._get_meta(conn, "embedder")
        return StoreStats.of(nodes, pending, by_view, entities, bound, supersessions)

    # -- idempotency keys -------------------------------------------------------------------
    def find_keys(self, user: str, keys: Collection[str]) -> dict[str, str]:
        if not keys:
            return {}
        with self._conn("read write keys") as conn:
            rows = conn.execute(
                "SELECT key, node_id FROM write_keys WHERE user_id = %s AND key = ANY(%s)",
                (sql.enc(user), [sql.enc(k) for k in keys]),
            ).fetchall()
        return {cast(str, sql.dec(row[0])): cast(str, sql.dec(row[1])) for row in rows}

    def _insert_keys(self, user: str, keys: Mapping[str, str]) -> None:
        with self._conn("store write keys") as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO write_keys (user_id, key, node_id) VALUES (%s, %s, %s)",
                [(sql.enc(user), sql.enc(k), sql.enc(i)) for k, i in keys.items()],
            )

    # -- health -----------------------------------------------------------------------------
    def erase(self) -> EraseReport:
        """Rewrite this schema's tables, the planner's samples and the WAL so that forgotten memories
        leave the server's files (:func:`dualmem.plane.erase.erase_postgres`; ``dualmem erase``).
        Takes an exclusive lock on each table while it is rewritten: run it in a quiet moment."""
        self._refuse_read_only("erase rewrites the tables")
        with self._conn("erase forgotten memories") as conn:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                raise ConfigError("erase cannot run inside a transaction", hint="call it outside one")
            return erase_postgres(conn, self.schema)

    def _repair(self, report: CheckReport) -> CheckReport:
        """Foreign keys keep every link whole: a repair rebuilds the derived neighbour context and
        indexes again what an older lexical rule indexed."""
        done = tuple(kind for kind in ("lexical_rule", "context") if kind in report.kinds())
        if not done:
            return report
        if "lexical_rule" in done:
            self.reindex_lexical()
        if "context" in done:
            self.rebuild_context()
        return self._rechecked(report, done)

    def _check(self) -> CheckReport:
        """Pending nodes, nodes without a vector, chunk vectors of another size and a stale context."""
        with self.snapshot(), self._conn("check the database") as conn:
            pending = conn.execute("SELECT count(*) FROM nodes WHERE status = 'pending'").fetchone()
            dim = self._stored_dim(conn)
            bad_chunks = conn.execute(
                "SELECT count(DISTINCT node_id) FROM chunk_vectors WHERE vector_dims(embedding) != %s",
                (dim if dim is not None else -1,),
            ).fetchone()
            bare = conn.execute(
                "SELECT count(*) FROM nodes n WHERE NOT EXISTS "
                "(SELECT 1 FROM vectors v WHERE v.user_id = n.user_id AND v.node_id = n.id)"
            ).fetchone()
            ids = [
                cast(str, sql.dec(row[0]))
                for row in conn.execute("SELECT id FROM nodes WHERE session IS NOT NULL ORDER BY seq")
            ]
            bad = context.stale(self, ids, self._context_window)
            stale = [] if lexical.rule_of(conn) >= lexindex.RULE_VERSION else lexical.stale_nodes(conn)
        notice = RULE_NOTICE.format(rule=lexindex.RULE_VERSION, count=len(stale))
        return CheckReport.of(
            [
                Problem("pending_nodes", int(cast(tuple[int], pending)[0]), repairable=False),
                Problem("nodes_without_vector", int(cast(tuple[int], bare)[0]), repairable=False),
                Problem("context", len(bad), tuple(bad[:5])),
                Problem("chunks_bad_size", int(cast(tuple[int], bad_chunks)[0]), repairable=False),
                Problem("lexical_rule", len(stale), (notice,) if stale else ()),
            ]
        )

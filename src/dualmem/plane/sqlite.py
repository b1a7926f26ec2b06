"""The embedded default store: one SQLite file (WAL, FTS5 bm25, float32 vector blobs + numpy top-k).

sqlite3 errors are translated at this backend's boundary (``_sqlite_sql.translated``) and nowhere
else: a held lock -> ``DatabaseLocked``, a damaged or foreign file -> ``DatabaseCorrupt``, a write
to a read-only file -> ``ReadOnlyStore``, anything else -> ``StoreError``. Rows that do not decode
are damage too (``DatabaseCorrupt``).

Reads that take several statements run inside one read transaction (:meth:`SQLiteStore.snapshot`),
so a commit by another process between them is either wholly visible or not at all. A transaction
that deleted rows (a forget) also clears the FTS5 index pages that held them (``optimize``) before
it commits, and checkpoints and truncates the WAL after: see docs/storage.md for what that erases.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import cast

import numpy as np

from dualmem.errors import (
    DatabaseCorrupt,
    EmbedderMismatch,
    InvalidInput,
    NotFound,
    ReadOnlyStore,
)
from dualmem.plane import _chunks, ann
from dualmem.plane import _codec as codec
from dualmem.plane import _sqlite_chunks as chunk_sql
from dualmem.plane import _sqlite_scale as scale
from dualmem.plane import _sqlite_sql as sql
from dualmem.plane import check as checks
from dualmem.plane._sqlite_conn import Synchronous, connect
from dualmem.plane._sqlite_schema import SCHEMA_VERSION, check_version, migrate
from dualmem.plane._sqlite_tx import Transactions
from dualmem.plane._vectors import UserVectors
from dualmem.plane.base import Decision, StoreStats
from dualmem.text.lexical import content_tokens, fts_or
from dualmem.types import VIEWS, Edge, JSONValue, Node, NodeStatus, Tenant, Vector, View

__all__ = ["SQLiteStore"]


class SQLiteStore:
    """A ``Store`` in one SQLite file. Open with :meth:`SQLiteStore.open`; safe to share across threads."""

    def __init__(
        self, conn: sqlite3.Connection, path: str, *, read_only: bool = False, schema: int = SCHEMA_VERSION
    ) -> None:
        self._conn = conn
        #: an older file opened read-only (never migrated) may predate the chunk table (v5)
        self._has_chunks = schema >= chunk_sql.SCHEMA
        self.path = path
        self.read_only = read_only
        self._vectors: dict[str, UserVectors] = {}
        self._chunks: dict[str, _chunks.UserChunks] = {}  # per user, loaded on first search
        self._tx = Transactions(conn, path, read_only=read_only, on_rollback=self._forget_caches)
        self._lock = self._tx.lock
        self._data_version = -1
        self._ann: ann.AnnIndex | None = None
        self._ann_threshold = 0

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        timeout: float = 5.0,
        read_only: bool = False,
        synchronous: Synchronous = "normal",
    ) -> SQLiteStore:
        """Open (creating and migrating if needed) the database at ``path`` (``":memory:"`` works).

        ``read_only=True`` opens an existing file without ever writing it (``mode=ro``; as immutable
        when its folder cannot be written, e.g. a read-only mount); writes raise ``ReadOnlyStore``.
        ``synchronous="full"`` syncs every commit to disk (see ``_sqlite_conn``): slower writes, no
        commit lost on power loss; the default ``"normal"`` loses nothing when a process is killed.
        """
        target = str(path)
        conn = connect(target, timeout=timeout, read_only=read_only, synchronous=synchronous)
        try:
            with sql.translated(f"open {target}"):
                schema = check_version(conn) if read_only else migrate(conn)
        except BaseException:
            conn.close()
            raise
        return cls(conn, target, read_only=read_only, schema=schema)

    def _forget_caches(self) -> None:
        """After a rollback: cached vectors and the loaded approximate index may hold undone writes."""
        self._vectors.clear()
        self._chunks.clear()
        if self._ann is not None:
            self._ann.drop()

    def use_ann(self, threshold: int) -> None:
        """Approximate vector search for users with at least ``threshold`` nodes (0: always exact).

        Only when the ``scale`` extra (usearch) is installed; otherwise search stays exact.
        """
        with self._lock:
            self._ann_threshold = threshold
            self._ann = ann.AnnIndex(self.path) if threshold > 0 and ann.available() else None

    # -- lifecycle and metadata -------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._tx.close()
            self._vectors.clear()
            if self._ann is not None:
                self._ann.drop()
            self._conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def transaction(self) -> AbstractContextManager[None]:
        """``BEGIN IMMEDIATE`` at the outermost level, a SAVEPOINT inside; any exception rolls back.

        An outermost transaction that deleted text also runs FTS5 ``optimize`` before it commits
        (the index pages holding deleted terms are rewritten) and truncates the WAL after.
        """
        return self._tx.write()

    def snapshot(self) -> AbstractContextManager[None]:
        """Reads inside see one consistent state of the database (a read transaction). Re-entrant;
        inside a write transaction it adds nothing (the transaction already is one)."""
        return self._tx.read()

    def bind_embedder(self, name: str, dim: int) -> None:
        """Check first; write (``BEGIN IMMEDIATE``) only for a store no embedder has bound yet."""
        with self._lock:
            bound = self.get_meta("embedder")
            if bound is not None:
                codec.check_embedder(bound, name, dim)
                return
            if self.read_only:  # nothing was ever embedded into it: any embedder reads it
                return
            with self.transaction():
                bound = self.get_meta("embedder")
                if bound is None:
                    self.set_meta("embedder", {"name": name, "dim": int(dim)})
                    return
                codec.check_embedder(bound, name, dim)

    def get_meta(self, key: str) -> JSONValue:
        with self._lock, sql.translated("read meta"):
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        with sql.decoding(f"read meta {key!r}"):
            return None if row is None else codec.load_json(row[0])

    def set_meta(self, key: str, value: JSONValue) -> None:
        text = codec.dump_json(value)
        with self._lock, self.transaction(), sql.translated("write meta"):
            self._conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, text),
            )

    # -- nodes ------------------------------------------------------------------------------
    def _stored_dim(self) -> int | None:
        bound = self.get_meta("embedder")
        if isinstance(bound, dict) and isinstance(bound.get("dim"), int):
            return cast(int, bound["dim"])
        row = self._conn.execute("SELECT dim FROM vectors LIMIT 1").fetchone()
        return None if row is None else int(row[0])

    def _check_dims(self, vectors: Sequence[Vector]) -> None:
        dims = {int(v.shape[0]) for v in vectors}
        stored = self._stored_dim()
        if stored is not None:
            dims.add(stored)
        if len(dims) > 1:
            raise EmbedderMismatch(
                f"embeddings of dimensions {sorted(dims)} cannot share one store",
                hint=f"use the embedder that built this store (dim {stored})",
            )

    def _link_entities(self, nodes: Sequence[Node]) -> None:
        pairs = [
            (node.id, node.tenant.user, key)
            for node in nodes
            for key in dict.fromkeys(codec.entity_key(e) for e in node.entities)
            if key
        ]
        if not pairs:
            return
        self._conn.executemany(
            "INSERT INTO entities (user_id, name) VALUES (?, ?) ON CONFLICT (user_id, name) DO NOTHING",
            [(user, key) for _, user, key in pairs],
        )
        self._conn.executemany(
            "INSERT INTO node_entities (node_id, entity_id) "
            "SELECT ?, id FROM entities WHERE user_id = ? AND name = ?",
            pairs,
        )

    def _prune_entities(self) -> None:
        self._conn.execute(
            "DELETE FROM entities WHERE NOT EXISTS "
            "(SELECT 1 FROM node_entities ne WHERE ne.entity_id = entities.id)"
        )

    def put_nodes(self, nodes: Sequence[Node]) -> None:
        if not nodes:
            return
        rows = [sql.node_row(node) for node in nodes]
        vectors = [codec.as_vector(node) for node in nodes]
        with self._lock:
            with self.transaction(), sql.translated("store nodes"):
                self._check_dims(vectors)
                known = self._existing([node.id for node in nodes])
                if known or len({node.id for node in nodes}) != len(nodes):
                    raise InvalidInput(f"node ids already stored or repeated: {sorted(known)[:5]}")
                self._conn.executemany(f"INSERT INTO nodes VALUES (NULL, {sql.marks(21)})", rows)
                self._conn.executemany(
                    "INSERT INTO vectors (node_id, user_id, dim, blob) VALUES (?, ?, ?, ?)",
                    [
                        (n.id, n.tenant.user, v.shape[0], v.tobytes())
                        for n, v in zip(nodes, vectors, strict=True)
                    ],
                )
                self._link_entities(nodes)
            self._cache_append(nodes, vectors)

    def _existing(self, ids: Collection[str]) -> set[str]:
        return set(self._users(ids))

    def _users(self, ids: Collection[str]) -> dict[str, str]:
        """The user of each stored node among ``ids``."""
        found: dict[str, str] = {}
        for chunk in sql.chunks(ids):
            statement = f"SELECT id, user_id FROM nodes WHERE id IN ({sql.marks(len(chunk))})"
            found.update((row[0], row[1]) for row in self._conn.execute(statement, chunk))
        return found

    def update_node(self, node: Node) -> None:
        row = sql.node_row(node)
        vector = None if node.embedding is None else codec.as_vector(node)
        with self._lock, self.transaction(), sql.translated("update a node"):
            old = self._conn.execute(
                "SELECT user_id, agent_id, run_id, content, speaker FROM nodes WHERE id = ?", (node.id,)
            ).fetchone()
            if old is None:
                raise NotFound(f"no node {node.id}")
            if Tenant(*old[:3]) != node.tenant:
                raise InvalidInput(f"node {node.id}: the tenant of a stored node cannot change")
            if (old[3], old[4]) != (node.content, node.speaker):
                self._tx.erase = True  # the old text's FTS5 terms must not outlive it
            self._conn.execute(
                "UPDATE nodes SET content = ?, at = ?, at_ts = ?, speaker = ?, source = ?, session = ?, "
                "turn_id = ?, metadata = ?, entities = ?, temporal_refs = ?, types = ?, status = ?, "
                "valid_from = ?, valid_to = ?, derived = ? WHERE id = ?",
                (*row[4:15], *row[17:], node.id),
            )
            self._conn.execute("DELETE FROM node_entities WHERE node_id = ?", (node.id,))
            self._link_entities([node])
            self._prune_entities()
            if vector is not None:
                self._check_dims([vector])
                self._conn.execute(
                    "INSERT INTO vectors (node_id, user_id, dim, blob) VALUES (?, ?, ?, ?) ON CONFLICT "
                    "(node_id) DO UPDATE SET dim = excluded.dim, blob = excluded.blob",
                    (node.id, node.tenant.user, vector.shape[0], vector.tobytes()),
                )
                self._vectors.pop(node.tenant.user, None)

    def get_node(self, node_id: str, tenant: Tenant | None = None) -> Node | None:
        with self._lock, sql.translated("read a node"):
            row = self._conn.execute(
                f"SELECT {sql.NODE_COLS} FROM {sql.NODE_FROM} WHERE n.id = ?", (node_id,)
            )
            found = row.fetchone()
        with sql.decoding(f"read node {node_id}"):
            node = None if found is None else sql.to_node(found)
        if node is None or (tenant is not None and not tenant.covers(node.tenant)):
            return None
        return node

    def get_nodes(self, node_ids: Collection[str], tenant: Tenant | None = None) -> dict[str, Node]:
        found: dict[str, Node] = {}
        rows: list[tuple[object, ...]] = []
        with self._lock, self.snapshot(), sql.translated("read nodes"):
            for chunk in sql.chunks(node_ids):
                statement = (
                    f"SELECT {sql.NODE_COLS} FROM {sql.NODE_FROM} WHERE n.id IN ({sql.marks(len(chunk))})"
                )
                rows.extend(self._conn.execute(statement, chunk))
        with sql.decoding("read nodes"):
            for row in rows:
                node = sql.to_node(row)
                if tenant is None or tenant.covers(node.tenant):
                    found[node.id] = node
        return {node_id: found[node_id] for node_id in dict.fromkeys(node_ids) if node_id in found}

    def delete_nodes(self, node_ids: Collection[str]) -> int:
        removed = 0
        with self._lock, self.transaction(), sql.translated("delete nodes"):
            for chunk in sql.chunks(node_ids):
                marks = sql.marks(len(chunk))
                if self._ann is not None:
                    self._ann.forget(self._conn, chunk)
                scale.forget_decisions(self._conn, chunk)
                cur = self._conn.execute(f"DELETE FROM nodes WHERE id IN ({marks})", chunk)
                removed += max(cur.rowcount, 0)
            if removed:
                self._tx.erase = True
                self._prune_entities()
                gone = set(node_ids)
                for vectors in self._vectors.values():
                    vectors.remove(gone)
                for found in self._chunks.values():
                    found.remove(gone)
        return removed

    def iter_nodes(self, tenant: Tenant | None = None, *, status: NodeStatus | None = None) -> Iterator[Node]:
        where, params = sql.tenant_sql(tenant)
        if status is not None:
            where += " AND n.status = ?"
            params.append(status)
        with self._lock, sql.translated("list nodes"):
            ids = [
                row[0]
                for row in self._conn.execute(
                    f"SELECT n.id FROM nodes n WHERE {where} "
                    "ORDER BY COALESCE(n.at_ts, n.created_ts), n.created_ts, n.seq",
                    params,
                )
            ]
        for start in range(0, len(ids), sql.CHUNK):
            batch = self.get_nodes(ids[start : start + sql.CHUNK], tenant)
            yield from batch.values()

    def recent_nodes(self, tenant: Tenant, k: int) -> list[Node]:
        where, params = sql.tenant_sql(tenant)
        with self._lock, self.snapshot(), sql.translated("list recent nodes"):
            ids = [
                row[0]
                for row in self._conn.execute(
                    f"SELECT n.id FROM nodes n WHERE {where} ORDER BY n.seq DESC LIMIT ?",
                    [*params, max(k, 0)],
                )
            ]
            found = self.get_nodes(ids, tenant)
        return [found[i] for i in ids if i in found]

    def count(self, tenant: Tenant | None = None) -> int:
        where, params = sql.tenant_sql(tenant)
        with self._lock, sql.translated("count nodes"):
            return int(
                self._conn.execute(f"SELECT COUNT(*) FROM nodes n WHERE {where}", params).fetchone()[0]
            )

    # -- edges ------------------------------------------------------------------------------
    def put_edges(self, edges: Sequence[Edge]) -> None:
        if not edges:
            return
        rows = [
            (e.source, e.target, e.view, e.label, float(e.weight), e.created_at.isoformat(),
             codec.to_iso(e.valid_from), codec.to_iso(e.valid_to))
            for e in edges
        ]  # fmt: skip
        with self._lock, self.transaction(), sql.translated("store edges"):
            users = self._users({e.source for e in edges} | {e.target for e in edges})
            missing = ({e.source for e in edges} | {e.target for e in edges}) - users.keys()
            if missing:
                raise NotFound(f"edges refer to unknown nodes: {sorted(missing)[:5]}")
            crossing = [e for e in edges if users[e.source] != users[e.target]]
            if crossing:
                raise InvalidInput(
                    f"an edge cannot link two users' memories: {crossing[0].source} -> {crossing[0].target}"
                )
            self._conn.executemany(
                f"INSERT INTO edges ({sql.EDGE_COLS}) VALUES ({sql.marks(8)}) "
                "ON CONFLICT (source, target, view, label) DO UPDATE SET weight = excluded.weight, "
                "created_at = excluded.created_at, valid_from = excluded.valid_from, "
                "valid_to = excluded.valid_to",
                rows,
            )

    def edges_of(self, node_id: str, views: Collection[View] | None = None) -> list[Edge]:
        with self._lock, sql.translated("read edges"):
            rows = self._conn.execute(
                f"SELECT {sql.EDGE_COLS} FROM edges WHERE source = ? OR target = ? ORDER BY rowid",
                (node_id, node_id),
            ).fetchall()
        wanted = set(VIEWS if views is None else views)
        with sql.decoding(f"read the edges of {node_id}"):
            return [sql.to_edge(row) for row in rows if row[2] in wanted]

    def delete_edges(self, edges: Sequence[Edge]) -> None:
        with self._lock, self.transaction(), sql.translated("delete edges"):
            self._conn.executemany(
                "DELETE FROM edges WHERE source = ? AND target = ? AND view = ? AND label = ?",
                [(e.source, e.target, e.view, e.label) for e in edges],
            )

    # -- indexes ----------------------------------------------------------------------------
    def _fresh(self) -> None:
        """Drop caches when another connection committed since we last looked (call in a snapshot)."""
        self._conn.execute("SELECT 1 FROM meta LIMIT 1").fetchall()  # pins the snapshot first
        version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        if version != self._data_version:
            self._vectors.clear()
            self._chunks.clear()
            self._data_version = version

    def _user_vectors(self, user: str) -> UserVectors | None:
        cached = self._vectors.get(user)
        if cached is not None:
            return cached
        # one statement (a join inside the caller's snapshot): vectors and their nodes always agree
        rows = self._conn.execute(
            "SELECT v.node_id, v.dim, v.blob, n.agent_id, n.run_id FROM vectors v "
            "JOIN nodes n ON n.id = v.node_id WHERE v.user_id = ? ORDER BY v.rowid",
            (user,),
        ).fetchall()
        if not rows:
            return None
        dim = int(rows[0][1])
        if any(int(row[1]) != dim or len(row[2]) != 4 * dim for row in rows):
            raise DatabaseCorrupt(f"user {user!r} has embeddings of several dimensions")
        matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype=np.float32).reshape(len(rows), dim)
        vectors = UserVectors(dim)
        with sql.decoding(f"read the vectors of {user!r}"):
            vectors.append([row[0] for row in rows], [Tenant(user, row[3], row[4]) for row in rows], matrix)
        self._vectors[user] = vectors
        return vectors

    def _cache_append(self, nodes: Sequence[Node], vectors: Sequence[Vector]) -> None:
        for user in {node.tenant.user for node in nodes}:
            cached = self._vectors.get(user)
            if cached is None:
                continue
            mine = [i for i, node in enumerate(nodes) if node.tenant.user == user]
            cached.append(
                [nodes[i].id for i in mine],
                [nodes[i].tenant for i in mine],
                np.stack([vectors[i] for i in mine]),
            )

    def vector_search(self, tenant: Tenant, query: Vector, k: int) -> list[tuple[str, float]]:
        """Each node once, scored by its best vector: its embedding or one of its chunk vectors."""
        with self._lock:
            hits = self._node_search(tenant, query, k)
            with self.snapshot(), sql.translated("chunk vector search"):
                self._fresh()
                found = self._user_chunks(tenant.user)
            return _chunks.merge(hits, found.search(tenant, query, k), k)

    def _node_search(self, tenant: Tenant, query: Vector, k: int) -> list[tuple[str, float]]:
        if self._ann is not None and not self._conn.in_transaction:
            # the index builds segments only outside a transaction, from committed rows
            with sql.translated("vector search"):
                if scale.user_total(self._conn, tenant.user) >= self._ann_threshold:
                    return self._ann.search(self._conn, tenant, query, k)
        with self.snapshot(), sql.translated("vector search"):
            self._fresh()
            if self._ann is not None and scale.user_total(self._conn, tenant.user) >= self._ann_threshold:
                return self._ann.search(self._conn, tenant, query, k)
            vectors = self._user_vectors(tenant.user)
            return [] if vectors is None else vectors.search(tenant, query, k)

    def _user_chunks(self, user: str) -> _chunks.UserChunks:
        """The user's chunk vectors (exact search, also above the ANN threshold); cached, also when none."""
        cached = self._chunks.get(user)
        if cached is None and not self._has_chunks:
            cached = self._chunks[user] = _chunks.UserChunks()
        if cached is None:
            with sql.decoding(f"read the chunk vectors of {user!r}"):
                cached = self._chunks[user] = chunk_sql.load_user(self._conn, user)
        return cached

    # -- chunk vectors ----------------------------------------------------------------------
    def put_chunks(self, chunks: Mapping[str, Vector]) -> None:
        if not chunks:
            return
        with self._lock, self.transaction(), sql.translated("store chunk vectors"):
            dim = self._stored_dim()
            rows = {node_id: _chunks.as_chunks(node_id, m, dim) for node_id, m in chunks.items()}
            tenants = chunk_sql.tenants(self._conn, rows)
            missing = rows.keys() - tenants.keys()
            if missing:
                raise NotFound(f"chunk vectors for unknown nodes: {sorted(missing)[:5]}")
            chunk_sql.put(self._conn, rows, tenants)
            for node_id, m in rows.items():
                cached = self._chunks.get(tenants[node_id].user)
                if cached is not None:
                    cached.put(node_id, tenants[node_id], m)

    def get_chunks(self, node_ids: Collection[str], tenant: Tenant | None = None) -> dict[str, Vector]:
        if not self._has_chunks:
            return {}
        where, params = sql.tenant_sql(tenant)
        with self._lock, sql.translated("read chunk vectors"), sql.decoding("read chunk vectors"):
            return chunk_sql.get(self._conn, node_ids, where, params)

    def lexical_search(self, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        terms = list(dict.fromkeys(content_tokens(query)))[: codec.QUERY_MAX_TERMS]
        if not terms or k <= 0:
            return []
        with self._lock, sql.translated("select query terms"):
            terms = scale.select_terms(
                self._conn,
                terms,
                max_terms=codec.QUERY_OR_TERMS,
                common_share=codec.QUERY_COMMON_SHARE,
                min_docs=codec.QUERY_MIN_DOCS,
            )
        expression = fts_or(terms)
        where, params = sql.tenant_sql(tenant)
        statement = (
            "SELECT n.id, -bm25(nodes_fts) AS score FROM nodes_fts CROSS JOIN nodes n "
            f"ON n.seq = nodes_fts.rowid WHERE nodes_fts MATCH ? AND {where} "
            "ORDER BY score DESC, n.seq LIMIT ?"
        )
        with self._lock, sql.translated("lexical search"):
            rows = self._conn.execute(statement, [expression, *params, k]).fetchall()
        return [(row[0], float(row[1])) for row in rows]

    def entity_search(self, tenant: Tenant, entities: Collection[str], k: int) -> list[tuple[str, int]]:
        keys = [key for key in dict.fromkeys(codec.entity_key(e) for e in entities) if key]
        if not keys or k <= 0:
            return []
        with self._lock, sql.translated("entity search"):
            return scale.entity_search(self._conn, tenant, keys, k, sql.tenant_sql(tenant))

    def entity_counts(self, tenant: Tenant, entities: Collection[str]) -> tuple[int, dict[str, int]]:
        keys = [key for key in dict.fromkeys(codec.entity_key(e) for e in entities) if key]
        with self._lock, sql.translated("count entities"):
            total = scale.user_total(self._conn, tenant.user)
            return total, scale.entity_counts(self._conn, tenant.user, keys)

    def time_search(self, tenant: Tenant, at: dt.datetime, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        when = codec.epoch(at)
        where, params = sql.tenant_sql(tenant)
        base = f"SELECT n.id, n.at_ts, n.seq FROM nodes n WHERE {where} AND n.at_ts IS NOT NULL AND n.at_ts "
        with self._lock, self.snapshot(), sql.translated("time search"):
            after = self._conn.execute(base + ">= ? ORDER BY n.at_ts, n.seq LIMIT ?", [*params, when, k])
            found = [(row[0], row[1] - when, row[2]) for row in after]
            before = self._conn.execute(base + "< ? ORDER BY n.at_ts DESC, n.seq LIMIT ?", [*params, when, k])
            found += [(row[0], when - row[1], row[2]) for row in before]
        found.sort(key=lambda item: (item[1], item[2]))  # ties: the earlier-written node first
        return [(node_id, delta) for node_id, delta, _ in found[:k]]

    def session_neighbours(
        self, tenant: Tenant, node_ids: Collection[str], window: int
    ) -> dict[str, tuple[tuple[str, int], ...]]:
        out: dict[str, tuple[tuple[str, int], ...]] = dict.fromkeys(node_ids, ())
        if window <= 0 or not out:
            return out
        where, params = sql.tenant_sql(tenant)
        found: dict[str, list[tuple[int, str]]] = {}
        with self._lock, sql.translated("read session neighbours"):
            for chunk in sql.chunks(list(out)):
                marks = sql.marks(len(chunk))
                # positions within each session touched (write order), then the pairs within the window
                statement = (
                    "WITH s AS (SELECT DISTINCT n.user_id, n.session FROM nodes n "
                    f"WHERE n.id IN ({marks}) AND n.session IS NOT NULL AND {where}), "
                    "r AS (SELECT n.id, n.session, ROW_NUMBER() OVER (PARTITION BY n.session ORDER BY n.seq) "
                    "AS pos FROM nodes n JOIN s ON n.user_id = s.user_id AND n.session = s.session "
                    f"WHERE {where}) "
                    "SELECT a.id, b.id, b.pos - a.pos FROM r a JOIN r b ON a.session = b.session "
                    f"AND b.pos BETWEEN a.pos - ? AND a.pos + ? AND b.id != a.id WHERE a.id IN ({marks})"
                )
                args = [*chunk, *params, *params, window, window, *chunk]
                for a, b, offset in self._conn.execute(statement, args):
                    found.setdefault(a, []).append((int(offset), b))
        for a, pairs in found.items():
            out[a] = tuple((b, offset) for offset, b in sorted(pairs))
        return out

    def entities_of(self, node_id: str) -> tuple[str, ...]:
        with self._lock, sql.translated("read entities"):
            row = self._conn.execute("SELECT entities FROM nodes WHERE id = ?", (node_id,)).fetchone()
        with sql.decoding(f"read the entities of {node_id}"):
            return () if row is None else tuple(cast(list[str], codec.load_json(row[0])))

    # -- decisions --------------------------------------------------------------------------
    def put_decisions(self, decisions: Sequence[Decision]) -> None:
        if not decisions:
            return
        with self._lock, self.transaction(), sql.translated("store decisions"):
            ids = {d.node_id for d in decisions}
            users = self._users(ids | {d.other_id for d in decisions if d.other_id is not None})
            missing = ids - users.keys()
            if missing:
                raise NotFound(f"decisions refer to unknown nodes: {sorted(missing)[:5]}")
            for d in decisions:
                if d.other_id in users and users[d.other_id] != users[d.node_id]:
                    raise InvalidInput(f"a decision cannot link two users' memories: {d.node_id}")
            scale.put_decisions(self._conn, decisions)

    def decisions_of(self, node_id: str) -> list[Decision]:
        with self._lock, sql.translated("read decisions"), sql.decoding(f"read the decisions of {node_id}"):
            return scale.get_decisions(self._conn, node_id)

    def stats(self, tenant: Tenant | None = None) -> StoreStats:
        where, params = sql.tenant_sql(tenant)
        with self._lock, self.snapshot(), sql.translated("read stats"):
            nodes, pending = self._conn.execute(
                f"SELECT COUNT(*), COALESCE(SUM(n.status = 'pending'), 0) FROM nodes n WHERE {where}", params
            ).fetchone()
            by_view = dict.fromkeys(VIEWS, 0)
            for view, count in self._conn.execute(
                f"SELECT e.view, COUNT(*) FROM edges e JOIN nodes n ON n.id = e.source WHERE {where} "
                "GROUP BY e.view",
                params,
            ):
                by_view[view] = int(count)
            entities = self._conn.execute(
                "SELECT COUNT(DISTINCT ne.entity_id) FROM node_entities ne "
                f"JOIN nodes n ON n.id = ne.node_id WHERE {where}",
                params,
            ).fetchone()[0]
            bound = self.get_meta("embedder")
        info = bound if isinstance(bound, dict) else {}
        name, dim = info.get("name"), info.get("dim")
        return StoreStats(
            nodes=int(nodes),
            pending=int(pending),
            edges_by_view=cast(dict[str, int], by_view),
            entities=int(entities),
            embedder=name if isinstance(name, str) else None,
            dim=dim if isinstance(dim, int) else None,
        )

    def users(self) -> list[str]:
        """Every user id with stored nodes, sorted (admin use: migration)."""
        with self._lock, sql.translated("list users"):
            rows = self._conn.execute("SELECT DISTINCT user_id FROM nodes ORDER BY user_id").fetchall()
        return [row[0] for row in rows]

    def integrity_check(self) -> None:
        """Run SQLite's ``quick_check``; raise ``DatabaseCorrupt`` when it reports damage."""
        with self._lock, sql.translated("check the database"):
            rows = [row[0] for row in self._conn.execute("PRAGMA quick_check")]
        if rows != ["ok"]:
            raise DatabaseCorrupt(f"the database is damaged: {'; '.join(rows[:3])}")

    # -- idempotency keys -------------------------------------------------------------------
    def find_keys(self, user: str, keys: Collection[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        with self._lock, self.snapshot(), sql.translated("read write keys"):
            for chunk in sql.chunks(keys):
                marks = sql.marks(len(chunk))
                statement = f"SELECT key, node_id FROM write_keys WHERE user_id = ? AND key IN ({marks})"
                found.update((row[0], row[1]) for row in self._conn.execute(statement, [user, *chunk]))
        return found

    def put_keys(self, user: str, keys: Mapping[str, str]) -> None:
        if not keys:
            return
        with self._lock, self.transaction(), sql.translated("store write keys"):
            users = self._users(set(keys.values()))
            wrong = [node_id for node_id in keys.values() if users.get(node_id) != user]
            if wrong:
                raise NotFound(f"write keys refer to nodes {user!r} does not have: {sorted(wrong)[:5]}")
            taken = self.find_keys(user, keys)
            if taken:
                raise InvalidInput(f"write keys already used: {sorted(taken)[:5]}")
            self._conn.executemany(
                "INSERT INTO write_keys (user_id, key, node_id) VALUES (?, ?, ?)",
                [(user, key, node_id) for key, node_id in keys.items()],
            )

    # -- health -----------------------------------------------------------------------------
    def check(self, *, repair: bool = False) -> checks.CheckReport:
        """Integrity of the file, the FTS5 index, vectors and links (see ``plane.check``)."""
        with self._lock:
            if repair and self.read_only:
                raise ReadOnlyStore("cannot repair a memory opened read-only", hint="open it writable")
            report = checks.sqlite_check(self._conn, repair=False)
            if not repair or report.healthy:
                return report
            with self.transaction(), sql.translated("repair the database"):
                repaired = checks.sqlite_repair(self._conn, report)
            self._vectors.clear()
            self._chunks.clear()
            after = checks.sqlite_check(self._conn, repair=False)
            return checks.CheckReport(
                after.healthy, after.problems, repaired=repaired, before=report.problems
            )

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
import logging
import sqlite3
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from dualmem.errors import ConfigError, DatabaseCorrupt, InvalidInput, NotFound
from dualmem.plane import _chunks, ann, codec, context, lexindex
from dualmem.plane import check as checks
from dualmem.plane._lifecycle import StoreBase, bound_dim, check_decisions, check_dims, check_edges
from dualmem.plane._select import Selection, compile_selection, finish
from dualmem.plane.base import (
    Candidate,
    Decision,
    NodeContext,
    StoreStats,
    refuse_known_or_repeated,
    tenant_order,
)
from dualmem.plane.erase import EraseReport
from dualmem.plane.sqlite import _check as sqlite_checks
from dualmem.plane.sqlite import _chunks as chunk_sql
from dualmem.plane.sqlite import _context as ctx
from dualmem.plane.sqlite import _edges as edge_sql
from dualmem.plane.sqlite import _impact as impact
from dualmem.plane.sqlite import _rule as lexical
from dualmem.plane.sqlite import _scale as scale
from dualmem.plane.sqlite import _sql as sql
from dualmem.plane.sqlite._ann import Approximate
from dualmem.plane.sqlite._conn import MMAP_SIZE, Synchronous, connect
from dualmem.plane.sqlite._lexical import Lexical
from dualmem.plane.sqlite._nodes import NodeCache, read_candidates
from dualmem.plane.sqlite._schema import SCHEMA_VERSION, check_version, migrate
from dualmem.plane.sqlite._tx import Transactions
from dualmem.plane.sqlite._vectors import VectorCache
from dualmem.plane.sqlite._wal import BACKSTOP_PAGES, Checkpointer
from dualmem.types import VIEWS, Edge, JSONValue, Node, NodeStatus, Tenant, Vector, View

log = logging.getLogger("dualmem")
__all__ = ["SQLiteStore"]

#: decoded contexts ``node_context`` keeps before it starts over (one call's ids are always kept)
CONTEXT_CACHE_MAX = 50_000


class SQLiteStore(StoreBase):
    """A ``MemoryStore`` in one SQLite file. Open with :meth:`SQLiteStore.open`; safe to share across
    threads. Its lexical search (FTS5 and the impact-ordered index) is ``_sqlite_lexical.Lexical``,
    its approximate vector search ``_sqlite_ann.Approximate``."""

    def __init__(
        self, conn: sqlite3.Connection, path: str, *, read_only: bool = False, schema: int = SCHEMA_VERSION
    ) -> None:
        self._conn = conn
        #: an older file opened read-only (never migrated) may predate the chunk table (v5)
        self._has_chunks = schema >= chunk_sql.SCHEMA
        self.path = path
        self.read_only = read_only
        self._cache = VectorCache()
        self._chunks: dict[str, _chunks.UserChunks] = {}  # per user, loaded on first search
        self._tx = Transactions(
            conn,
            path,
            read_only=read_only,
            on_rollback=self._forget_caches,
            on_commit=self._committed,
            on_erase=lambda: impact.purge(conn),
        )
        self._lock = self._tx.lock
        self._approximate = Approximate(path)
        self._lexical = Lexical(conn, self._tx)
        self._nodes = NodeCache()
        self._contexts: dict[str, tuple[Tenant, NodeContext | None]] = {}  # cleared as ``_nodes``
        self._data_version = -1  # PRAGMA data_version the node and context caches match
        self._fresh_in = -1  # the write transaction (``Transactions.serial``) whose start ``_fresh`` checked
        #: passive WAL checkpoints on a background thread (a writable file; see ``_sqlite_wal``)
        self._checkpointer: Checkpointer | None = None

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        timeout: float = 5.0,
        read_only: bool = False,
        synchronous: Synchronous = "normal",
        mmap_size: int = MMAP_SIZE,
    ) -> SQLiteStore:
        """Open (creating and migrating if needed) the database at ``path`` (``":memory:"`` works).

        ``read_only=True`` opens an existing file without ever writing it (``mode=ro``; as immutable
        when its folder cannot be written, e.g. a read-only mount); writes raise ``ReadOnlyStore``.
        ``synchronous="full"`` syncs every commit to disk (see ``_sqlite_conn``): slower writes, no
        commit lost on power loss; the default ``"normal"`` loses nothing when a process is killed.
        ``mmap_size``: bytes of the file read through a memory map (``0``: none; see ``_sqlite_conn``).
        """
        target = str(path)
        conn = connect(
            target, timeout=timeout, read_only=read_only, synchronous=synchronous, mmap_size=mmap_size
        )
        try:
            with sql.translated(f"open {target}"):
                schema = check_version(conn) if read_only else migrate(conn)
        except BaseException:
            conn.close()
            raise
        store = cls(conn, target, read_only=read_only, schema=schema)
        try:
            store._load_context_window(ctx.STALE_KEY)
            store._notice_rule()
            if not read_only and target != ":memory:":  # commits no longer pay for the checkpoint
                with sql.translated(f"open {target}"):
                    conn.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")
                store._checkpointer = Checkpointer(target, synchronous=synchronous, timeout=timeout)
                store._tx.checkpoints_paused = store._checkpointer.paused
        except BaseException:
            conn.close()
            raise
        return store

    def _notice_rule(self) -> None:
        """A file whose lexical index predates the rule (CJK text kept whole) says so once, at open."""
        with self._lock, sql.translated("read the lexical index's rule"):
            if lexical.rule_of(self._conn) >= lexindex.RULE_VERSION:
                return
            nodes, context = lexical.stale_rows(self._conn)
        log.warning(
            "%s: %s",
            self.path,
            checks.RULE_NOTICE.format(rule=lexindex.RULE_VERSION, count=len(nodes) + len(context)),
        )

    @property
    def _ann(self) -> ann.AnnIndex | None:
        """The loaded approximate index (``None``: exact search only)."""
        return self._approximate.index

    def _committed(self) -> None:
        """After the outermost commit: the vector cache keeps what it did; the approximate index
        erases what it deleted and extends its segments (``_sqlite_ann``); every few commits the
        background checkpointer copies the WAL into the file."""
        self._cache.committed()
        if self._checkpointer is not None:
            self._checkpointer.committed()
        self._approximate.committed(self._conn)

    def _forget_caches(self) -> None:
        """After a rollback: cached vectors and the loaded approximate index may hold undone writes."""
        self._cache.rolled_back()
        self._nodes.clear()
        self._contexts.clear()
        self._chunks.clear()
        self._lexical.forget_terms()
        self._approximate.rolled_back()

    def use_ann(self, threshold: int, *, folder: str | Path | None = None) -> None:
        """Approximate vector search for users with at least ``threshold`` nodes (0: always exact).

        Only when the ``scale`` extra (usearch) is installed; otherwise search stays exact. The index
        lives in ``folder`` (default: ``<file>.ann`` beside the database; in memory for ``:memory:``).
        """
        with self._lock:
            self._approximate.use(threshold, folder=folder)

    # -- lifecycle and metadata -------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            if self._checkpointer is not None:
                self._checkpointer.close()
            self._tx.close()
            self._cache.clear()
            self._approximate.close()
            self._conn.close()

    def _guard(self) -> AbstractContextManager[object]:
        return self._lock

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
        dim = bound_dim(self.get_meta("embedder"))
        if dim is not None:
            return dim
        row = self._conn.execute("SELECT dim FROM vectors LIMIT 1").fetchone()
        return None if row is None else int(row[0])

    def _check_dims(self, vectors: Sequence[Vector]) -> None:
        check_dims(vectors, self._stored_dim())

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
        """Delete the entities no node names any more, and rebuild the entities' indexes if any went.

        ``secure_delete`` zeroes a deleted index cell where it lies, but not the copies a rebalance
        left in the unallocated gap of a page still in use (``rebuildPage`` rewrites a page's cells
        without clearing what the old ones left): a forgotten name could stay there (issue 49; the
        unique ``(user_id, name)`` index takes names in random order, so its pages are rebuilt
        often). ``REINDEX`` writes the index anew from the live names and frees every old page, which
        ``secure_delete`` zeroes (``tests/test_forget_index_pages.py``; cost in docs/storage.md)."""
        gone = self._conn.execute(
            "DELETE FROM entities WHERE NOT EXISTS "
            "(SELECT 1 FROM node_entities ne WHERE ne.entity_id = entities.id)"
        ).rowcount
        if gone > 0:
            self._conn.execute("REINDEX entities")

    def put_nodes(self, nodes: Sequence[Node]) -> None:
        if not nodes:
            return
        vectors = [codec.as_vector(node) for node in nodes]
        with self._lock, self.transaction(), sql.translated("store nodes"):
            self._check_dims(vectors)
            self._insert_rows(nodes)
            self._insert_vectors(nodes, vectors)

    def put_node_rows(self, nodes: Sequence[Node]) -> None:
        """The first half of ``put_nodes`` (inside the caller's write): each node's row, its FTS5 row
        and entity links, not its vector (``node.embedding`` is ignored) nor anyone's context. Until
        :meth:`put_node_vectors` completes them the nodes are found by lexical, entity and time search
        only; the caller's transaction must do both halves or roll back."""
        if not nodes:
            return
        with self._lock:
            if not self._tx.writing:
                raise InvalidInput(
                    "put_node_rows stores half a node", hint="call it inside store.transaction()"
                )
            with self.transaction(), sql.translated("store nodes"):
                self._insert_rows(nodes)

    def put_node_vectors(self, nodes: Sequence[Node]) -> None:
        """The second half of ``put_nodes`` for nodes stored by :meth:`put_node_rows` in this write:
        their vectors, and the neighbour context of every node whose window they change."""
        if not nodes:
            return
        vectors = [codec.as_vector(node) for node in nodes]
        with self._lock, self.transaction(), sql.translated("store node vectors"):
            self._check_dims(vectors)
            stored = self._users([node.id for node in nodes])
            if any(stored.get(n.id) != n.tenant.user for n in nodes):
                raise InvalidInput("put_node_vectors: a node whose row was not stored by put_node_rows")
            self._nodes.drop([node.id for node in nodes])  # a read in between decoded it without its vector
            self._insert_vectors(nodes, vectors)

    def _insert_rows(self, nodes: Sequence[Node]) -> None:
        known = self._existing([node.id for node in nodes])
        refuse_known_or_repeated([node.id for node in nodes], known)
        self._conn.executemany(
            f"INSERT INTO nodes VALUES (NULL, {sql.marks(len(codec.NODE_WRITE_COLUMNS))})",
            [sql.node_row(node) for node in nodes],
        )
        self._link_entities(nodes)

    def _insert_vectors(self, nodes: Sequence[Node], vectors: Sequence[Vector]) -> None:
        self._cache.sync(self._conn, {node.tenant.user for node in nodes})
        self._conn.executemany(
            "INSERT INTO vectors (node_id, user_id, dim, blob) VALUES (?, ?, ?, ?)",
            [(n.id, n.tenant.user, v.shape[0], v.tobytes()) for n, v in zip(nodes, vectors, strict=True)],
        )
        self._cache.appended(self._conn, [n.id for n in nodes], [n.tenant for n in nodes], vectors)
        self._refresh_context(context.affected(self, nodes, self._context_window))

    def _existing(self, ids: Collection[str]) -> set[str]:
        return set(self._users(ids))

    def _owners(self, node_ids: Collection[str]) -> dict[str, str]:
        with sql.translated("read the nodes' users"):
            return self._users(node_ids)

    def _users(self, ids: Collection[str]) -> dict[str, str]:
        """The user of each stored node among ``ids``."""
        found: dict[str, str] = {}
        for chunk in sql.chunks(ids):
            statement = f"SELECT id, user_id FROM nodes WHERE id IN ({sql.marks(len(chunk))})"
            found.update((row[0], row[1]) for row in self._conn.execute(statement, chunk))
        return found

    def update_node(self, node: Node) -> None:
        """Only what changed is rewritten: the text (and its FTS5 row) when the content or speaker
        changed, the entity links when the entities did, the vector when it differs, and the context
        of the node's session neighbours when its text, vector or session changed. Completing a
        node after its controller decisions (types and status only) is one narrow UPDATE."""
        row = sql.node_row(node)
        vector = None if node.embedding is None else codec.as_vector(node)
        with self._lock, self.transaction(), sql.translated("update a node"):
            before = self.get_nodes([node.id]).get(node.id)
            if before is None:
                raise NotFound(f"no node {node.id}")
            if before.tenant != node.tenant:
                raise InvalidInput(f"node {node.id}: the tenant of a stored node cannot change")
            text = (before.content, before.speaker) != (node.content, node.speaker)
            if text:
                self._tx.erase = True  # the old text's FTS5 terms must not outlive it
                self._lexical.forget_terms()  # the old text's terms are held by one row fewer
                self._conn.execute(
                    f"UPDATE nodes SET {_TEXT_SET}, {_FIELDS_SET} WHERE id = ?",
                    _args(row, (*_TEXT_COLUMNS, *_FIELD_COLUMNS)),
                )
            elif _only_completed(sql.node_row(before), row):  # an add's last step: no index but status
                self._conn.execute(f"UPDATE nodes SET {_COMPLETED_SET} WHERE id = ?", _args(row, _COMPLETED))
            else:  # the FTS5 trigger fires on ``UPDATE OF content, speaker`` only
                self._conn.execute(f"UPDATE nodes SET {_FIELDS_SET} WHERE id = ?", _args(row, _FIELD_COLUMNS))
            if before.entities != node.entities:
                self._relink_entities(node)
            moved = vector is not None and not _same_vector(before.embedding, vector)
            if moved:
                assert vector is not None
                self._put_vector(node, vector)
            self._nodes.drop([node.id])
            if text or moved or before.session != node.session:
                window = self._context_window
                touched = context.affected(self, [before, node], window)
                self._refresh_context(touched | {node.id})

    def _relink_entities(self, node: Node) -> None:
        """Replace ``node``'s entity links; drop the entities no node links any more."""
        old = [
            r[0]
            for r in self._conn.execute("SELECT entity_id FROM node_entities WHERE node_id = ?", (node.id,))
        ]
        self._conn.execute("DELETE FROM node_entities WHERE node_id = ?", (node.id,))
        self._link_entities([node])
        gone = 0
        for chunk in sql.chunks(old):
            gone += self._conn.execute(
                f"DELETE FROM entities WHERE id IN ({sql.marks(len(chunk))}) AND nodes <= 0", chunk
            ).rowcount
        if gone > 0:
            self._conn.execute("REINDEX entities")  # see _prune_entities

    def _put_vector(self, node: Node, vector: Vector) -> None:
        """Store ``node``'s vector in an update (a no-op when it is the stored one)."""
        self._check_dims([vector])
        blob = vector.tobytes()
        held = self._conn.execute("SELECT blob FROM vectors WHERE node_id = ?", (node.id,)).fetchone()
        if held is not None and held[0] == blob:
            return
        self._cache.sync(self._conn, [node.tenant.user])
        self._conn.execute(
            "INSERT INTO vectors (node_id, user_id, dim, blob) VALUES (?, ?, ?, ?) ON CONFLICT "
            "(node_id) DO UPDATE SET dim = excluded.dim, blob = excluded.blob",
            (node.id, node.tenant.user, vector.shape[0], blob),
        )
        self._cache.replaced(self._conn, node.tenant, node.id, vector)

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
        """Decoded nodes are cached (``NodeCache``) until a write changes them or another
        connection commits; a cached node's embedding is read-only."""
        found: dict[str, Node] = {}
        rows: list[tuple[object, ...]] = []
        with self._lock, self.snapshot(), sql.translated("read nodes"):
            self._fresh()
            wanted = list(dict.fromkeys(node_ids))
            found.update(self._nodes.get_many(wanted))
            for chunk in sql.chunks([i for i in wanted if i not in found]):
                statement = (
                    f"SELECT {sql.NODE_COLS} FROM {sql.NODE_FROM} WHERE n.id IN ({sql.marks(len(chunk))})"
                )
                rows.extend(self._conn.execute(statement, chunk))
            with sql.decoding("read nodes"):
                decoded = [sql.to_node(row) for row in rows]
            self._nodes.put_many(decoded)
        found.update((node.id, node) for node in decoded)
        return {
            i: found[i] for i in wanted if i in found and (tenant is None or tenant.covers(found[i].tenant))
        }

    def delete_nodes(self, node_ids: Collection[str]) -> int:
        removed = 0
        with self._lock, self.transaction(), sql.translated("delete nodes"):
            self._cache.sync(self._conn, set(self._users(node_ids).values()))
            gone_nodes = self.get_nodes(node_ids).values()
            touched = context.affected(self, gone_nodes, self._context_window) - set(node_ids)
            for chunk in sql.chunks(node_ids):
                marks = sql.marks(len(chunk))
                self._approximate.deleting(self._conn, chunk)
                scale.forget_decisions(self._conn, chunk)
                cur = self._conn.execute(f"DELETE FROM nodes WHERE id IN ({marks})", chunk)
                removed += max(cur.rowcount, 0)
            self._nodes.drop(node_ids)
            for node_id in node_ids:
                self._contexts.pop(node_id, None)
            if removed:
                self._tx.erase = True
                self._lexical.forget_terms()
                self._refresh_context(touched)
                self._prune_entities()
                self._cache.removed(self._conn, node_ids)
                gone = set(node_ids)
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
        with self._lock, self.transaction(), sql.translated("store edges"):
            found = edge_sql.users_and_seqs(self._conn, {e.source for e in edges} | {e.target for e in edges})
            check_edges(edges, {node_id: user for node_id, (user, _) in found.items()})
            edge_sql.put(self._conn, edges, {node_id: seq for node_id, (_, seq) in found.items()})

    def edges_of(
        self, node_id: str, views: Collection[View] | None = None, *, limit: int | None = None
    ) -> list[Edge]:
        with self._lock, self.snapshot(), sql.translated("read edges"):
            return edge_sql.of(self._conn, node_id, views, limit)

    def delete_edges(self, edges: Sequence[Edge]) -> None:
        with self._lock, self.transaction(), sql.translated("delete edges"):
            edge_sql.delete(self._conn, edges)

    # -- indexes ----------------------------------------------------------------------------
    def _fresh(self) -> None:
        """Drop the decoded-node and context caches when another connection committed since we last
        looked (call in a snapshot); the vector cache follows such commits by itself (``VectorCache``).

        Inside a write transaction this connection holds the write lock: no other connection can
        commit until it ends, so one check per write transaction is enough."""
        if self._tx.writing and self._fresh_in == self._tx.serial:
            return
        self._conn.execute("SELECT 1 FROM meta LIMIT 1").fetchall()  # pins the snapshot first
        version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        if version != self._data_version:
            self._nodes.clear()
            self._contexts.clear()
            self._chunks.clear()
            self._lexical.forget_terms()  # another connection may have deleted rows
            self._data_version = version
        if self._tx.writing:
            self._fresh_in = self._tx.serial

    def vector_search(self, tenant: Tenant, query: Vector, k: int) -> list[tuple[str, float]]:
        """Each node once, scored by its best vector: its embedding or one of its chunk vectors."""
        with self._lock:
            hits = self._node_search(tenant, query, k)
            with self.snapshot(), sql.translated("chunk vector search"):
                self._fresh()
                found = self._user_chunks(tenant.user)
            return _chunks.merge(hits, found.search(tenant, query, k), k)

    def _node_search(self, tenant: Tenant, query: Vector, k: int) -> list[tuple[str, float]]:
        if not self._conn.in_transaction:
            # the index builds segments only outside a transaction, from committed rows
            with sql.translated("vector search"):
                found = self._approximate.search(self._conn, tenant, query, k)
            if found is not None:
                return found
        with self.snapshot(), sql.translated("vector search"):
            found = self._approximate.search(self._conn, tenant, query, k)
            if found is not None:
                return found
            vectors = self._cache.get(self._conn, tenant.user, writing=self._tx.writing)
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

    def use_lexical_index(self, threshold: int, **settings: int) -> None:
        """Rank lexical and context searches by the impact-ordered index (``_sqlite_impact``) once the
        store holds ``threshold`` nodes (0: always FTS5), reading at most ``budget`` postings a query;
        a search builds a missing or stale index itself while the store holds at most ``auto_build``
        nodes (0, the default: never; ``build_lexical_index`` does); above it a search does one bounded
        step of the index's upkeep, ``step`` rows at most (0: none; ``_sqlite_impact_merge``). The
        ``settings`` (``budget``, ``auto_build``, ``step``) default as in ``_sqlite_lexical``."""
        self._lexical.configure(threshold, **settings)

    def build_lexical_index(self) -> int:
        """(Re)build the impact-ordered index of both FTS5 tables; the postings written."""
        return self._lexical.build()

    def lexical_index_state(self) -> dict[str, str]:
        """Each FTS5 table's impact-ordered index: ``"off"`` (the store is below the threshold),
        ``"none"``, ``"stale"``, ``"purged"`` or ``"fresh"`` (see ``_sqlite_impact.state``)."""
        return self._lexical.state()

    @property
    def lexical(self) -> Lexical:
        """The store's lexical index (``lexindex.LexicalComponent``: FTS5 and the impact-ordered index)."""
        return self._lexical

    def lexical_probe(self, tenant: Tenant, text: str, k: int) -> list[tuple[str, float]]:
        """``lexical_search`` bounded for write-time candidates: below ``scale.PROBE_FROM`` indexed
        rows it is ``lexical_search``; from there only the text's rare terms count (see
        ``_sqlite_scale.lexical_probe``), so one add reads a bounded number of index rows."""
        if k <= 0:
            return []
        terms = lexindex.query_terms(text, max_terms=codec.QUERY_MAX_TERMS)
        if not terms:
            return []
        with self._lock, self.snapshot(), sql.translated("lexical probe"):
            self._fresh()
            found = self._lexical.probe(tenant, terms, k)
        return self.lexical_search(tenant, text, k) if found is None else found

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

    def select_nodes(self, tenant: Tenant, where: Selection) -> list[str]:
        tenant_where, params = sql.tenant_sql(tenant)
        q = compile_selection(where, "sqlite")
        statement = (
            f"SELECT n.id, {q.sure()} FROM nodes n WHERE {tenant_where} AND {q.where()} "
            "ORDER BY COALESCE(n.at_ts, n.created_ts), n.created_ts, n.seq"
        )
        with self._lock, self.snapshot(), sql.translated("select nodes"):
            rows = self._conn.execute(statement, [*q.exact_params, *params, *q.candidate_params]).fetchall()
            return finish(rows, where, lambda ids: self.get_nodes(ids, tenant))

    def _session_neighbours(
        self, tenant: Tenant, node_ids: list[str], window: int
    ) -> Mapping[str, tuple[tuple[str, int], ...]]:
        with self._lock, self.snapshot(), sql.translated("read session neighbours"):
            return scale.session_neighbours(self._conn, tenant, node_ids, window)

    # -- neighbour context --------------------------------------------------------------------
    def _refresh_context(self, node_ids: Collection[str]) -> None:
        """Recompute and store the context of ``node_ids`` (inside the caller's write)."""
        if node_ids:
            ctx.write(self._conn, context.derive(self, node_ids, self._context_window))
            for node_id in node_ids:
                self._contexts.pop(node_id, None)
            self._nodes.drop_candidates(node_ids)

    def rebuild_context(self) -> int:
        """Recompute every node's context from the nodes (the repair of a derived index)."""
        with self._lock, self.transaction(), sql.translated("rebuild the context"):
            ctx.clear(self._conn)
            ids = ctx.all_ids(self._conn)
            for start in range(0, len(ids), 2000):
                self._refresh_context(ids[start : start + 2000])
            self._conn.execute("DELETE FROM meta WHERE key = ?", (ctx.STALE_KEY,))
            self._tx.erase = True
        return len(ids)

    def context_search(self, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        return self._lexical.search("context", tenant, query, k)

    def node_context(self, node_ids: Collection[str], tenant: Tenant) -> dict[str, NodeContext]:
        """Read through a cache that each context write updates (and another connection's commit,
        or a rollback, empties)."""
        with self._lock, self.snapshot(), sql.translated("read context"), sql.decoding("read context"):
            self._fresh()
            cache, wanted = self._contexts, list(node_ids)
            if len(cache) > CONTEXT_CACHE_MAX:
                cache.clear()  # before ``missing`` is known: never drop what this call returns
            missing = [i for i in wanted if i not in cache]
            if missing:
                cache.update(ctx.read(self._conn, missing))
            hits = [(i, cache.get(i)) for i in wanted]
            return {i: hit[1] for i, hit in hits if hit and hit[1] and tenant.covers(hit[0])}

    def candidates(self, node_ids: Collection[str], tenant: Tenant) -> dict[str, Candidate]:
        """One projected read (``_sqlite_nodes.read_candidates``) of the ids not cached; cached
        candidates go with their node (``NodeCache``) and whenever their context is rewritten."""
        with self._lock, self.snapshot(), sql.translated("read candidates"), sql.decoding("read candidates"):
            self._fresh()
            wanted = list(dict.fromkeys(node_ids))
            found = self._nodes.candidates(wanted)
            missing = [i for i in wanted if i not in found]
            if missing:
                read = read_candidates(self._conn, missing)
                self._nodes.put_candidates(read)
                found.update((c.id, c) for c in read)
        return {i: found[i] for i in wanted if i in found and tenant.covers(found[i].tenant)}

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
            ids = {d.node_id for d in decisions} | {d.other_id for d in decisions if d.other_id is not None}
            check_decisions(decisions, self._users(ids))
            scale.put_decisions(self._conn, decisions)

    def decisions_of(self, node_id: str, *, key: str | None = None) -> list[Decision]:
        with self._lock, sql.translated("read decisions"), sql.decoding(f"read the decisions of {node_id}"):
            return scale.get_decisions(self._conn, node_id, key=key)

    def stats(self, tenant: Tenant | None = None) -> StoreStats:
        where, params = sql.tenant_sql(tenant)
        with self._lock, self.snapshot(), sql.translated("read stats"):
            nodes, pending = self._conn.execute(
                f"SELECT COUNT(*), COALESCE(SUM(n.status = 'pending'), 0) FROM nodes n WHERE {where}", params
            ).fetchone()
            by_view = dict.fromkeys(VIEWS, 0)
            supersessions = 0
            for view, versions, count in self._conn.execute(
                "SELECT e.view, e.label = 'superseded_by', COUNT(*) FROM edges e "
                f"JOIN nodes n ON n.seq = e.src WHERE {where} GROUP BY 1, 2",
                params,
            ):
                if versions:
                    supersessions += int(count)
                else:
                    by_view[view] = int(count)
            entities = self._conn.execute(*_entity_count(tenant)).fetchone()[0]
            bound = self.get_meta("embedder")
        return StoreStats.of(nodes, pending, by_view, entities, bound, supersessions)

    def tenant_counts(self) -> list[tuple[Tenant, int]]:
        with self._lock, self.snapshot(), sql.translated("count tenants"):
            rows = self._conn.execute(
                "SELECT user_id, agent_id, run_id, COUNT(*) FROM nodes GROUP BY user_id, agent_id, run_id"
            ).fetchall()
        return sorted(((Tenant(u, a, r), int(c)) for u, a, r, c in rows), key=lambda tc: tenant_order(tc[0]))

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

    def _insert_keys(self, user: str, keys: Mapping[str, str]) -> None:
        with sql.translated("store write keys"):
            self._conn.executemany(
                "INSERT INTO write_keys (user_id, key, node_id) VALUES (?, ?, ?)",
                [(user, key, node_id) for key, node_id in keys.items()],
            )

    # -- health -----------------------------------------------------------------------------
    def erase(self) -> EraseReport:
        """Forget erases as it commits (docs/storage.md); this truncates a WAL that other processes'
        readers kept from being truncated then (``dualmem erase``)."""
        started = time.perf_counter()
        self._refuse_read_only("erase truncates the WAL")
        if self.path == ":memory:":
            return EraseReport("sqlite", (), (), time.perf_counter() - started)
        with self._lock, sql.translated("erase forgotten memories"):
            if self._tx.conn.in_transaction:
                raise ConfigError("erase cannot run inside a transaction", hint="call it outside one")
            with self._tx.checkpoints_paused():
                busy = int(self._tx.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0])
        kept = "readers in other processes kept the WAL from being truncated: run erase again after them"
        problems = (kept,) if busy else ()
        return EraseReport(
            "sqlite", ("PRAGMA wal_checkpoint(TRUNCATE)",), problems, time.perf_counter() - started
        )

    def _repair(self, report: checks.CheckReport) -> checks.CheckReport:
        """What the file's own tables allow (``check.sqlite_repair``), the derived neighbour context
        rebuilt, and last the impact-ordered index where the store uses it and it is not fresh."""
        if report.healthy:
            built = self._lexical.build_stale()
            return replace(report, repaired=built, before=report.problems) if built else report
        with self.transaction(), sql.translated("repair the database"):
            repaired = sqlite_checks.sqlite_repair(self._conn, report)
        self._cache.clear()
        self._nodes.clear()
        self._contexts.clear()
        self._chunks.clear()
        self._lexical.forget_terms()
        if "context" in report.kinds() or "integrity" in repaired:
            self.rebuild_context()
            repaired = (*repaired, "context")
        after = self._check()
        repaired = (*repaired, *self._lexical.build_stale())
        return checks.CheckReport(
            after.healthy, after.problems, repaired=tuple(dict.fromkeys(repaired)), before=report.problems
        )

    def _check(self) -> checks.CheckReport:
        """Integrity of the file, the FTS5 index, vectors, links and the derived neighbour context."""
        self._nodes.clear()  # a check reads what is stored, not what was cached
        self._contexts.clear()
        report = sqlite_checks.sqlite_check(self._conn, repair=False)
        if "integrity" in report.kinds():
            return report
        with sql.translated("check the context"), self.snapshot():
            ids = ctx.all_ids(self._conn)
            bad = context.stale(self, ids, self._context_window)
        return checks.CheckReport.of([*report.problems, checks.Problem("context", len(bad), tuple(bad[:5]))])


def _entity_count(tenant: Tenant | None) -> tuple[str, list[Any]]:
    """``stats``' count of the distinct entities linked to the tenant's nodes. A user's (or every
    user's) count starts from the entities, each one probe of its links (an entity row belongs to
    one user and links only that user's nodes): ~20 ms at 1M nodes, where starting from the nodes
    read every link (~1.4 s). An agent or run narrows by node, so it joins from the nodes."""
    if tenant is None:
        return (
            "SELECT COUNT(*) FROM entities e WHERE EXISTS (SELECT 1 FROM node_entities ne "
            "JOIN nodes n ON n.id = ne.node_id WHERE ne.entity_id = e.id)",
            [],
        )
    if tenant.agent is None and tenant.run is None:
        return (
            "SELECT COUNT(*) FROM entities e WHERE e.user_id = ? AND EXISTS (SELECT 1 FROM node_entities "
            "ne JOIN nodes n ON n.id = ne.node_id WHERE ne.entity_id = e.id AND n.user_id = ?)",
            [tenant.user, tenant.user],
        )
    where, params = sql.tenant_sql(tenant)
    return (
        "SELECT COUNT(DISTINCT ne.entity_id) FROM node_entities ne "
        f"JOIN nodes n ON n.id = ne.node_id WHERE {where}",
        params,
    )


#: the columns ``update_node`` rewrites: the text (with its FTS5 row) only when it changed, the other
#: fields always (never the keys or the creation time), and only these two to complete a node
_TEXT_COLUMNS = ("content", "speaker")
_FIELD_COLUMNS = tuple(
    c
    for c in codec.NODE_WRITE_COLUMNS
    if c not in (*_TEXT_COLUMNS, "id", "user_id", "agent_id", "run_id", "created_at", "created_ts")
)
_COMPLETED = ("types", "status")
_TEXT_SET = ", ".join(f"{c} = ?" for c in _TEXT_COLUMNS)
_FIELDS_SET = ", ".join(f"{c} = ?" for c in _FIELD_COLUMNS)
_COMPLETED_SET = ", ".join(f"{c} = ?" for c in _COMPLETED)


def _args(row: tuple[object, ...], columns: Sequence[str]) -> tuple[object, ...]:
    """The values of ``columns`` in a ``node_row``, then the id (an ``UPDATE ... WHERE id = ?``)."""
    by_column = dict(zip(codec.NODE_WRITE_COLUMNS, row, strict=True))
    return (*(by_column[c] for c in columns), by_column["id"])


def _only_completed(before: tuple[object, ...], after: tuple[object, ...]) -> bool:
    """Two ``node_row``s that differ in nothing ``_FIELDS_SET`` writes but the types and the status:
    the narrow ``UPDATE`` of those two stores the same row without rewriting the (user, time) and
    (user, session) index entries."""
    kept = [c for c in _FIELD_COLUMNS if c not in _COMPLETED]
    return _args(before, kept) == _args(after, kept)


def _same_vector(held: Vector | None, vector: Vector) -> bool:
    return held is not None and held.shape == vector.shape and held.tobytes() == vector.tobytes()

"""A pure-Python ``Store`` for fast tests: dicts, a numpy matrix per user, BM25 like FTS5's.

Same semantics as ``SQLiteStore`` (the contract suite runs on both); its lexical index is the one
rule and BM25 of ``lexindex`` over token lists held in memory.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import threading
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import cast

import numpy as np

from dualmem.errors import InvalidInput, NotFound
from dualmem.plane import _chunks, codec, context, lexindex
from dualmem.plane._lifecycle import StoreBase, bound_dim, check_decisions, check_dims, check_edges
from dualmem.plane._select import Selection
from dualmem.plane._vectors import UserVectors
from dualmem.plane.base import Decision, NodeContext, StoreStats, refuse_known_or_repeated, tenant_order
from dualmem.plane.check import CheckReport, Problem
from dualmem.types import VIEWS, Edge, JSONValue, Node, NodeStatus, Tenant, Vector, View

__all__ = ["InMemoryStore"]

_EdgeKey = tuple[str, str, str, str]


def _edge_key(edge: Edge) -> _EdgeKey:
    return (edge.source, edge.target, edge.view, edge.label)


def _phrase_count(doc: Sequence[str], counts: Counter[str], phrase: tuple[str, ...]) -> int:
    if len(phrase) == 1:
        return counts.get(phrase[0], 0)
    width = len(phrase)
    return sum(1 for i in range(len(doc) - width + 1) if tuple(doc[i : i + width]) == phrase)


def _bm25(
    docs: Sequence[tuple[Node, list[str], Counter[str]]],
    phrases: Sequence[tuple[str, ...]],
    tenant: Tenant,
    k: int,
) -> list[tuple[str, float]]:
    """FTS5's bm25 over ``docs`` (statistics over all of them), top ``k`` of those ``tenant`` covers."""
    if not phrases or k <= 0 or not docs:
        return []
    total = len(docs)
    avgdl = sum(len(toks) for _, toks, _ in docs) / total
    hits = [[_phrase_count(toks, counts, p) for p in phrases] for _, toks, counts in docs]
    idf = [lexindex.idf(total, sum(1 for row in hits if row[j] > 0)) for j in range(len(phrases))]
    scored: list[tuple[float, int, str]] = []
    for i, ((node, toks, _), row) in enumerate(zip(docs, hits, strict=True)):
        if not any(row) or not tenant.covers(node.tenant):
            continue
        score = sum(w * lexindex.weight(tf, len(toks), avgdl) for w, tf in zip(idf, row, strict=True) if tf)
        scored.append((-score, i, node.id))
    scored.sort()
    return [(node_id, -neg) for neg, _, node_id in scored[:k]]


class MemoryLexical:
    """The in-memory store's ``lexindex.LexicalComponent``: the rule's terms of each row, held by the
    store (cached per node), ranked by ``lexindex``'s BM25."""

    def __init__(self, store: InMemoryStore) -> None:
        self._store = store

    def search(self, field: str, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        docs = self._store._lexical_docs(field, tenant.user)
        return _bm25(docs, lexindex.phrases(query, max_terms=codec.QUERY_MAX_TERMS), tenant, k)

    def count(self, field: str, user: str) -> int:
        return sum(1 for node, _, _ in self._store._lexical_docs(field, user) if node.tenant.user == user)

    def rule(self) -> int:
        return lexindex.RULE_VERSION


class InMemoryStore(StoreBase):
    """A ``MemoryStore`` held in process memory. Nothing persists; transactions roll back by snapshot."""

    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        self._edges: dict[_EdgeKey, Edge] = {}
        self._decisions: list[Decision] = []
        self._meta: dict[str, str] = {}
        self._keys: dict[tuple[str, str], str] = {}
        self._lock = threading.RLock()
        self._depth = 0
        self._vectors: dict[str, UserVectors] = {}
        self._chunk_rows: dict[str, Vector] = {}  # node id -> its chunk vectors
        self._chunks: dict[str, _chunks.UserChunks] = {}  # per user, built on first search
        self._tokens: dict[str, tuple[str, list[str], Counter[str]]] = {}
        # neighbour context is derived on demand from the nodes (cached per user until a write)
        self._context_window = context.CONTEXT_WINDOW
        self._contexts: dict[str, dict[str, context.ContextRow]] = {}

    # -- lifecycle and metadata -------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._vectors.clear()
            self._chunks.clear()
            self._tokens.clear()

    def _guard(self) -> AbstractContextManager[object]:
        return self._lock

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock:
            snapshot = (
                dict(self._nodes), dict(self._edges), list(self._decisions), dict(self._meta),
                dict(self._keys), dict(self._chunk_rows),
            )  # fmt: skip
            self._depth += 1
            try:
                yield
            except BaseException:
                self._nodes, self._edges, self._decisions, self._meta, self._keys, self._chunk_rows = snapshot
                self._vectors.clear()
                self._contexts.clear()
                self._chunks.clear()
                raise
            finally:
                self._depth -= 1

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        with self._lock:
            yield

    def get_meta(self, key: str) -> JSONValue:
        with self._lock:
            return codec.load_json(self._meta.get(key))

    def set_meta(self, key: str, value: JSONValue) -> None:
        text = codec.dump_json(value)
        with self._lock:
            self._meta[key] = text

    # -- nodes ------------------------------------------------------------------------------
    def _stored_dim(self) -> int | None:
        dim = bound_dim(self.get_meta("embedder"))
        if dim is not None:
            return dim
        for node in self._nodes.values():
            if node.embedding is not None:
                return int(node.embedding.shape[0])
        return None

    def _check_dims(self, vectors: Sequence[Vector]) -> None:
        check_dims(vectors, self._stored_dim())

    def _owners(self, node_ids: Collection[str]) -> dict[str, str]:
        return {i: self._nodes[i].tenant.user for i in node_ids if i in self._nodes}

    @staticmethod
    def _canonical(node: Node, vector: Vector | None) -> Node:
        """The node as a database would give it back: JSON metadata, float32 embedding, a copy."""
        metadata = json.loads(codec.dump_json(dict(codec.check_metadata(node))))
        return dataclasses.replace(
            node,
            metadata=metadata,
            entities=tuple(node.entities),
            temporal_refs=tuple(node.temporal_refs),
            embedding=None if vector is None else vector.copy(),
        )

    @staticmethod
    def _out(node: Node) -> Node:
        if node.embedding is None:
            return node
        return dataclasses.replace(node, embedding=node.embedding.copy())

    def put_nodes(self, nodes: Sequence[Node]) -> None:
        if not nodes:
            return
        vectors = [codec.as_vector(node) for node in nodes]
        stored = [self._canonical(node, vec) for node, vec in zip(nodes, vectors, strict=True)]
        with self._lock:
            known = {node.id for node in nodes if node.id in self._nodes}
            refuse_known_or_repeated([node.id for node in nodes], known)
            self._check_dims(vectors)
            self._contexts.clear()
            for node in stored:
                self._nodes[node.id] = node
            for user in {node.tenant.user for node in stored}:
                cached = self._vectors.get(user)
                mine = [n for n in stored if n.tenant.user == user]
                if cached is not None:
                    rows = np.stack([cast(Vector, n.embedding) for n in mine])
                    cached.append([n.id for n in mine], [n.tenant for n in mine], rows)

    def update_node(self, node: Node) -> None:
        vector = None if node.embedding is None else codec.as_vector(node)
        with self._lock:
            old = self._nodes.get(node.id)
            if old is None:
                raise NotFound(f"no node {node.id}")
            if old.tenant != node.tenant:
                raise InvalidInput(f"node {node.id}: the tenant of a stored node cannot change")
            if vector is not None:
                self._check_dims([vector])
                cached = self._vectors.get(node.tenant.user)
                if cached is not None and not cached.replace(node.id, vector):
                    self._vectors.pop(node.tenant.user, None)
            new = self._canonical(node, vector if vector is not None else old.embedding)
            self._nodes[node.id] = dataclasses.replace(new, created_at=old.created_at)
            self._contexts.clear()

    def get_node(self, node_id: str, tenant: Tenant | None = None) -> Node | None:
        with self._lock:
            node = self._nodes.get(node_id)
        if node is None or (tenant is not None and not tenant.covers(node.tenant)):
            return None
        return self._out(node)

    def get_nodes(self, node_ids: Collection[str], tenant: Tenant | None = None) -> dict[str, Node]:
        found: dict[str, Node] = {}
        for node_id in dict.fromkeys(node_ids):
            node = self.get_node(node_id, tenant)
            if node is not None:
                found[node_id] = node
        return found

    def delete_nodes(self, node_ids: Collection[str]) -> int:
        with self._lock:
            gone = {node_id for node_id in node_ids if node_id in self._nodes}
            if not gone:
                return 0
            for node_id in gone:
                del self._nodes[node_id]
            self._contexts.clear()
            self._edges = {
                key: e for key, e in self._edges.items() if e.source not in gone and e.target not in gone
            }
            self._decisions = [d for d in self._decisions if d.node_id not in gone and d.other_id not in gone]
            self._keys = {key: node_id for key, node_id in self._keys.items() if node_id not in gone}
            for node_id in gone:
                self._chunk_rows.pop(node_id, None)
            for vectors in self._vectors.values():
                vectors.remove(gone)
            for found in self._chunks.values():
                found.remove(gone)
            return len(gone)

    def _covered(self, tenant: Tenant | None) -> list[Node]:
        with self._lock:
            nodes = list(self._nodes.values())
        return [n for n in nodes if tenant is None or tenant.covers(n.tenant)]

    def iter_nodes(self, tenant: Tenant | None = None, *, status: NodeStatus | None = None) -> Iterator[Node]:
        nodes = [n for n in self._covered(tenant) if status is None or n.status == status]
        order = sorted(
            range(len(nodes)),
            key=lambda i: (
                codec.epoch(nodes[i].at or nodes[i].created_at),
                codec.epoch(nodes[i].created_at),
                i,
            ),
        )
        for i in order:
            yield self._out(nodes[i])

    def recent_nodes(self, tenant: Tenant, k: int) -> list[Node]:
        nodes = self._covered(tenant)  # insertion order
        return [self._out(n) for n in reversed(nodes[-k:])] if k > 0 else []

    def count(self, tenant: Tenant | None = None) -> int:
        return len(self._covered(tenant))

    def tenant_counts(self) -> list[tuple[Tenant, int]]:
        counts = Counter(n.tenant for n in self._covered(None))
        return sorted(counts.items(), key=lambda tc: tenant_order(tc[0]))

    # -- edges ------------------------------------------------------------------------------
    def put_edges(self, edges: Sequence[Edge]) -> None:
        with self._lock:
            check_edges(edges, self._owners({e.source for e in edges} | {e.target for e in edges}))
            for edge in edges:
                self._edges[_edge_key(edge)] = edge

    def edges_of(
        self, node_id: str, views: Collection[View] | None = None, *, limit: int | None = None
    ) -> list[Edge]:
        wanted = set(VIEWS if views is None else views)
        with self._lock:
            found = [e for e in self._edges.values() if node_id in (e.source, e.target) and e.view in wanted]
        if limit is None:
            return found
        order = sorted(range(len(found)), key=lambda i: (-found[i].weight, i))  # stable: write order
        return [found[i] for i in order[: max(0, limit)]]

    def delete_edges(self, edges: Sequence[Edge]) -> None:
        with self._lock:
            for edge in edges:
                self._edges.pop(_edge_key(edge), None)

    # -- indexes ----------------------------------------------------------------------------
    def vector_search(self, tenant: Tenant, query: Vector, k: int) -> list[tuple[str, float]]:
        with self._lock:
            vectors = self._vectors.get(tenant.user)
            if vectors is None:
                mine = [
                    n
                    for n in self._nodes.values()
                    if n.tenant.user == tenant.user and n.embedding is not None
                ]
                if not mine:
                    return []
                rows = np.stack([cast(Vector, n.embedding) for n in mine])
                vectors = UserVectors(int(rows.shape[1]))
                vectors.append([n.id for n in mine], [n.tenant for n in mine], rows)
                self._vectors[tenant.user] = vectors
            hits = vectors.search(tenant, query, k)
            return _chunks.merge(hits, self._user_chunks(tenant.user).search(tenant, query, k), k)

    def _user_chunks(self, user: str) -> _chunks.UserChunks:
        found = self._chunks.get(user)
        if found is None:
            found = self._chunks[user] = _chunks.UserChunks()
            for node_id, rows in self._chunk_rows.items():
                node = self._nodes[node_id]
                if node.tenant.user == user:
                    found.put(node_id, node.tenant, rows)
        return found

    def put_chunks(self, chunks: Mapping[str, Vector]) -> None:
        with self._lock:
            dim = self._stored_dim()
            rows = {node_id: _chunks.as_chunks(node_id, m, dim) for node_id, m in chunks.items()}
            missing = rows.keys() - self._nodes.keys()
            if missing:
                raise NotFound(f"chunk vectors for unknown nodes: {sorted(missing)[:5]}")
            for node_id, m in rows.items():
                node = self._nodes[node_id]
                if m.shape[0] == 0:
                    self._chunk_rows.pop(node_id, None)
                else:
                    self._chunk_rows[node_id] = m.copy()
                cached = self._chunks.get(node.tenant.user)
                if cached is not None:
                    cached.put(node_id, node.tenant, m)

    def get_chunks(self, node_ids: Collection[str], tenant: Tenant | None = None) -> dict[str, Vector]:
        with self._lock:
            return {
                node_id: self._chunk_rows[node_id].copy()
                for node_id in dict.fromkeys(node_ids)
                if node_id in self._chunk_rows
                and (tenant is None or tenant.covers(self._nodes[node_id].tenant))
            }

    def _doc(self, node: Node) -> tuple[list[str], Counter[str]]:
        # like the SQLite store's FTS5 table, the speaker is indexed alongside the content
        text = f"{node.speaker or ''}\n{node.content}"
        cached = self._tokens.get(node.id)
        if cached is None or cached[0] != text:
            toks = lexindex.terms(text)
            cached = self._tokens[node.id] = (text, toks, Counter(toks))
        return cached[1], cached[2]

    @property
    def lexical(self) -> MemoryLexical:
        """The store's lexical index (``lexindex.LexicalComponent`` over token lists held here)."""
        return MemoryLexical(self)

    def lexical_search(self, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        """BM25 with FTS5's formula, statistics over every stored node (as FTS5 computes them)."""
        return self.lexical.search("nodes", tenant, query, k)

    def _lexical_docs(self, field: str, user: str | None) -> list[tuple[Node, list[str], Counter[str]]]:
        """The rows of ``field`` BM25 ranks: every node (FTS5's statistics are the whole table's), or
        ``user``'s nodes that have a neighbour context."""
        with self._lock:
            if field == "nodes":
                return [(node, *self._doc(node)) for node in self._nodes.values()]
            docs = []
            for node_id, row in self._user_contexts(user or "").items():
                toks = lexindex.terms(row.text)
                docs.append((self._nodes[node_id], toks, Counter(toks)))
            return docs

    def lexical_probe(self, tenant: Tenant, text: str, k: int) -> list[tuple[str, float]]:
        """Write-time candidates' lexical shortlist: this store's ``lexical_search`` (not bounded here)."""
        return self.lexical_search(tenant, text, k)

    # -- neighbour context (derived on demand: the same rows the SQLite store keeps) --------------
    def _user_contexts(self, user: str) -> dict[str, context.ContextRow]:
        cached = self._contexts.get(user)
        if cached is None:
            ids = [n.id for n in self._nodes.values() if n.tenant.user == user and n.session is not None]
            rows = context.derive(self, ids, self._context_window)
            cached = self._contexts[user] = {row.node_id: row for row in rows if row.neighbours}
        return cached

    def set_context_window(self, window: int) -> None:
        with self._lock:
            self._context_window = window
            self._contexts.clear()

    def context_search(self, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        """BM25 over the context fields; statistics over the user's nodes that have a context."""
        return self.lexical.search("context", tenant, query, k)

    def node_context(self, node_ids: Collection[str], tenant: Tenant) -> dict[str, NodeContext]:
        with self._lock:
            out: dict[str, NodeContext] = {}
            for node_id in dict.fromkeys(node_ids):
                node = self._nodes.get(node_id)
                if node is None or not tenant.covers(node.tenant):
                    continue
                row = self._user_contexts(node.tenant.user).get(node_id)
                if row is not None:
                    vector = None if row.vector is None else context.as_unit(row.vector)
                    out[node_id] = NodeContext(row.neighbours, vector)
            return out

    def entity_search(self, tenant: Tenant, entities: Collection[str], k: int) -> list[tuple[str, int]]:
        keys = {codec.entity_key(e) for e in entities} - {""}
        if not keys or k <= 0:
            return []
        found = []
        for node in self._covered(tenant):  # in write order: a stable sort keeps ties that way
            shared = len(keys & {codec.entity_key(e) for e in node.entities})
            if shared:
                found.append((node.id, shared))
        found.sort(key=lambda item: -item[1])
        return found[:k]

    def entity_counts(self, tenant: Tenant, entities: Collection[str]) -> tuple[int, dict[str, int]]:
        keys = {codec.entity_key(e) for e in entities} - {""}
        user = Tenant(tenant.user)
        counts: dict[str, int] = {}
        total = 0
        for node in self._covered(user):
            total += 1
            for key in keys & {codec.entity_key(e) for e in node.entities}:
                counts[key] = counts.get(key, 0) + 1
        return total, counts

    def time_search(self, tenant: Tenant, at: dt.datetime, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        when = codec.epoch(at)
        found = [(n.id, abs(codec.epoch(n.at) - when)) for n in self._covered(tenant) if n.at is not None]
        found.sort(key=lambda item: item[1])  # stable: ties stay in write order
        return found[:k]

    def select_nodes(self, tenant: Tenant, where: Selection) -> list[str]:
        # no index to ask: the nodes held, checked in place (no copies), in ``iter_nodes`` order
        nodes = [n for n in self._covered(tenant) if where.matches(n)]
        order = sorted(
            range(len(nodes)),
            key=lambda i: (
                codec.epoch(nodes[i].at or nodes[i].created_at),
                codec.epoch(nodes[i].created_at),
                i,
            ),
        )
        return [nodes[i].id for i in order]

    def _session_neighbours(
        self, tenant: Tenant, node_ids: list[str], window: int
    ) -> Mapping[str, tuple[tuple[str, int], ...]]:
        out: dict[str, tuple[tuple[str, int], ...]] = {}
        by_session: dict[str, list[str]] = {}
        for n in self._covered(tenant):  # insertion order = write order
            if n.session is not None:
                by_session.setdefault(n.session, []).append(n.id)
        where = {i: (s, pos) for s, ids in by_session.items() for pos, i in enumerate(ids)}
        for node_id in node_ids:
            if node_id not in where:
                continue
            session, pos = where[node_id]
            ids = by_session[session]
            out[node_id] = tuple(
                (ids[j], j - pos)
                for j in range(max(0, pos - window), min(len(ids), pos + window + 1))
                if j != pos
            )
        return out

    def entities_of(self, node_id: str) -> tuple[str, ...]:
        with self._lock:
            node = self._nodes.get(node_id)
        return () if node is None else node.entities

    # -- decisions --------------------------------------------------------------------------
    def put_decisions(self, decisions: Sequence[Decision]) -> None:
        with self._lock:
            ids = {d.node_id for d in decisions} | {d.other_id for d in decisions if d.other_id is not None}
            check_decisions(decisions, self._owners(ids))
            self._decisions.extend(decisions)

    def decisions_of(self, node_id: str, *, key: str | None = None) -> list[Decision]:
        with self._lock:
            return [d for d in self._decisions if d.node_id == node_id and (key is None or d.key == key)]

    def stats(self, tenant: Tenant | None = None) -> StoreStats:
        nodes = self._covered(tenant)
        ids = {n.id for n in nodes}
        by_view = dict.fromkeys(VIEWS, 0)
        supersessions = 0
        with self._lock:
            for edge in self._edges.values():
                if edge.source in ids and edge.label == "superseded_by":
                    supersessions += 1
                elif edge.source in ids:
                    by_view[edge.view] += 1
        entities = {(n.tenant.user, codec.entity_key(e)) for n in nodes for e in n.entities}
        entities = {item for item in entities if item[1]}
        pending = sum(1 for n in nodes if n.status == "pending")
        meta = self.get_meta("embedder")
        return StoreStats.of(len(nodes), pending, by_view, len(entities), meta, supersessions)

    def users(self) -> list[str]:
        return sorted({n.tenant.user for n in self._covered(None)})

    # -- idempotency keys -------------------------------------------------------------------
    def find_keys(self, user: str, keys: Collection[str]) -> dict[str, str]:
        with self._lock:
            return {key: self._keys[(user, key)] for key in keys if (user, key) in self._keys}

    def _insert_keys(self, user: str, keys: Mapping[str, str]) -> None:
        for key, node_id in keys.items():
            self._keys[(user, key)] = node_id

    # -- health -----------------------------------------------------------------------------
    def _repair(self, report: CheckReport) -> CheckReport:
        """Links and vectors agree with the nodes; a repair drops links to missing nodes."""
        if report.healthy:
            return report
        self._edges = {
            k: e for k, e in self._edges.items() if e.source in self._nodes and e.target in self._nodes
        }
        self._decisions = [d for d in self._decisions if d.node_id in self._nodes]
        self._chunk_rows = {i: m for i, m in self._chunk_rows.items() if i in self._nodes}
        self._chunks.clear()
        return self._rechecked(report, ("orphan_edges",))

    def _check(self) -> CheckReport:
        nodes = self._nodes
        dims = {int(n.embedding.shape[0]) for n in nodes.values() if n.embedding is not None}
        orphans = [
            f"{e.source} -> {e.target}"
            for e in self._edges.values()
            if not {e.source, e.target} <= nodes.keys()
        ]
        return CheckReport.of(
            [
                Problem(
                    "nodes_without_vector",
                    sum(1 for n in nodes.values() if n.embedding is None),
                    repairable=False,
                ),
                Problem("vectors_bad_size", len(dims) - 1 if dims else 0, repairable=False),
                Problem("orphan_edges", len(orphans), tuple(orphans[:5])),
                Problem("orphan_decisions", sum(1 for d in self._decisions if d.node_id not in nodes)),
                Problem("chunks_without_node", len(self._chunk_rows.keys() - nodes.keys())),
                Problem(
                    "pending_nodes", sum(1 for n in nodes.values() if n.status == "pending"), repairable=False
                ),
            ]
        )

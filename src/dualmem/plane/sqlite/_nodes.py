"""A bounded cache of decoded nodes for the SQLite store (decoding a row costs far more than reading it),
and the projected read of a query's pool candidates (``read_candidates``).

The store drops an entry whenever a write changes that node, everything on a rollback and whenever
another connection has committed (``PRAGMA data_version``), so a cached node is always the stored
one. Cached embeddings are read-only arrays: callers share them. Cached candidates (``Candidate``:
a node's projection with its stored context) are dropped with their node, and also whenever the
node's context is rewritten (``drop_candidates``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sqlite3
from collections import OrderedDict
from collections.abc import Collection, Iterator, Sequence
from typing import Any

import numpy as np

from dualmem.plane import codec
from dualmem.plane.base import Candidate, NodeContext
from dualmem.plane.context import (
    Neighbours,
    decode_neighbours,
    decode_vectors,
    encode_neighbours,
    parse_neighbours,
)
from dualmem.plane.sqlite import _sql as sql
from dualmem.types import Node, Vector

__all__ = ["CANDIDATE_COLS", "NodeCache", "read_candidates", "v11"]

#: decoded nodes kept (least recently used out first): a few MB at MiniLM's 384 dimensions
CAPACITY = 20_000

#: what a pool candidate reads: the node's projection, its vector and its stored context (one lookup
#: of ``nodes.id`` a node, where ``get_nodes`` and ``node_context`` take one each)
CANDIDATE_COLS = (
    "n.id, n.user_id, n.agent_id, n.run_id, n.content, n.speaker, n.at, n.temporal_refs, n.valid_to, "
    "v.blob, c.neighbours, c.vec, n.types"
)
#: a node's vector is looked up by rowid first: the store writes a node and its vector in one order, so
#: ``vectors.rowid = nodes.seq`` for every node of every file measured (one B-tree descent, where the
#: ``node_id`` key takes two: ~2 of 12 ms of SQL a 100k search); checked by ``node_id``, and a node
#: whose vector sits elsewhere (a rewritten vector, an imported file) is read by ``node_id`` apart
_CANDIDATE_FROM = (
    "nodes n LEFT JOIN vectors v ON v.rowid = n.seq AND v.node_id = n.id "
    "LEFT JOIN node_context c ON c.seq = n.seq"
)


def read_candidates(conn: sqlite3.Connection, ids: Sequence[str]) -> list[Candidate]:
    """The candidates of the stored nodes of ``ids`` (any tenant's; the caller filters). Each field is
    decoded as ``sql.to_node`` and ``_sqlite_context.read`` decode it, so a candidate holds exactly
    the values of ``get_nodes`` and ``node_context``; a batch's context vectors are normalised as one
    matrix (``decode_vectors``: the same values as one at a time). The embedding is a read-only view
    of the stored bytes (``get_nodes`` copies it, then marks it read-only: the same values)."""
    rows: list[tuple[Any, ...]] = []
    for chunk in sql.chunks(list(ids)):
        statement = f"SELECT {CANDIDATE_COLS} FROM {_CANDIDATE_FROM} WHERE n.id IN ({sql.marks(len(chunk))})"
        rows.extend(conn.execute(statement, chunk))
    _other_vectors(conn, rows)
    vectors = iter(decode_vectors([row[11] for row in rows if row[10] is not None]))
    return _build(rows, vectors)


def _other_vectors(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Fill in the vector of each row whose vector is not at its node's ``seq`` (by ``node_id``)."""
    lost = [i for i, row in enumerate(rows) if row[9] is None]
    if not lost:
        return
    found: dict[str, bytes] = {}
    for chunk in sql.chunks([rows[i][0] for i in lost]):
        marks = sql.marks(len(chunk))
        found.update(conn.execute(f"SELECT node_id, blob FROM vectors WHERE node_id IN ({marks})", chunk))
    for i in lost:
        row = rows[i]
        rows[i] = (*row[:9], found.get(row[0]), *row[10:])


_F32 = np.dtype(np.float32)
_from_iso = dt.datetime.fromisoformat
_object_new = object.__new__
# the slots' setters of the two frozen dataclasses a candidate read builds (``_build``)
_SET_C = tuple(getattr(Candidate, f.name).__set__ for f in dataclasses.fields(Candidate))
_SET_X = tuple(getattr(NodeContext, f.name).__set__ for f in dataclasses.fields(NodeContext))


def _build(rows: Sequence[tuple[Any, ...]], vectors: Iterator[Vector | None]) -> list[Candidate]:
    """The ``Candidate`` of each row (``CANDIDATE_COLS``), built through its slots: a frozen
    dataclass's ``__init__`` sets each field by ``object.__setattr__`` (2.5 us a candidate against 1.1
    here; neither class has a ``__post_init__``), so the value is the one ``Candidate(...)`` gives
    (``tests/test_candidate_read.py`` compares them field by field)."""
    out: list[Candidate] = []
    s0, s1, s2, s3, s4, s5, s6, s7, s8, s9 = _SET_C
    tenant_of, refs_of, new, context = sql.tenant_of, codec.refs_from_json, _object_new, _new_context
    types_of = codec.types_from_json
    for node_id, user, agent, run, content, speaker, at, refs, valid_to, blob, pairs, _, types in rows:
        found = new(Candidate)
        s0(found, node_id)
        s1(found, tenant_of(user, agent, run))
        s2(found, content)
        s3(found, speaker)
        s4(found, None if at is None else _from_iso(at))
        s5(found, () if refs == "[]" else refs_of(refs))
        s6(found, None if valid_to is None else _from_iso(valid_to))
        s7(found, None if blob is None else np.frombuffer(blob, _F32))
        s8(found, None if pairs is None else context(decode_neighbours(pairs), next(vectors)))
        s9(found, None if types is None else types_of(types))
        out.append(found)
    return out


def _new_context(neighbours: Neighbours, vector: Vector | None) -> NodeContext:
    """``NodeContext(neighbours, vector)``, built through its slots as ``_build`` builds a candidate."""
    out = _object_new(NodeContext)
    _SET_X[0](out, neighbours)
    _SET_X[1](out, vector)
    return out


def v11(conn: sqlite3.Connection) -> None:
    """Migration 11: every stored neighbour list rewritten from JSON to the compact text
    (``_context.encode_neighbours``: the same pairs, no JSON parse on read), ``_V11_ROWS`` rows at a
    time. The FTS5 update trigger is set aside meanwhile (the text is unchanged; it would re-index
    every row) and put back as it was. A row whose JSON does not parse is left for ``check``."""
    found = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'node_context_update'"
    ).fetchone()
    if found is not None:
        conn.execute("DROP TRIGGER node_context_update")
    last = -1
    while True:
        rows = conn.execute(
            "SELECT seq, neighbours FROM node_context WHERE seq > ? ORDER BY seq LIMIT ?", (last, _V11_ROWS)
        ).fetchall()
        if not rows:
            break
        conn.executemany("UPDATE node_context SET neighbours = ? WHERE seq = ?", _compact(rows))
        last = rows[-1][0]
    if found is not None:
        conn.execute(found[0])


_V11_ROWS = 20_000


def _compact(rows: Sequence[tuple[int, str]]) -> list[tuple[str, int]]:
    out = []
    for seq, text in rows:
        try:
            pairs = parse_neighbours(json.loads(text)) if text[:1] == "[" else None
        except ValueError:
            continue
        if pairs:
            out.append((encode_neighbours(pairs), seq))
    return out


class NodeCache:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._items: OrderedDict[str, Node] = OrderedDict()
        self._candidates: OrderedDict[str, Candidate] = OrderedDict()

    def get_many(self, ids: Sequence[str]) -> dict[str, Node]:
        out: dict[str, Node] = {}
        for node_id in ids:
            node = self._items.get(node_id)
            if node is not None:
                self._items.move_to_end(node_id)
                out[node_id] = node
        return out

    def put_many(self, nodes: Sequence[Node]) -> None:
        for node in nodes:
            if node.embedding is not None:
                node.embedding.flags.writeable = False
            self._items[node.id] = node
        while len(self._items) > self._capacity:
            self._items.popitem(last=False)

    def candidates(self, ids: Sequence[str]) -> dict[str, Candidate]:
        """The cached candidates of ``ids`` (a hit moves to the end of the eviction order)."""
        out: dict[str, Candidate] = {}
        items = self._candidates
        for node_id in ids:
            found = items.get(node_id)
            if found is not None:
                items.move_to_end(node_id)
                out[node_id] = found
        return out

    def put_candidates(self, candidates: Collection[Candidate]) -> None:
        items = self._candidates
        for found in candidates:
            items[found.id] = found
        while len(items) > self._capacity:
            items.popitem(last=False)

    def drop_candidates(self, ids: Collection[str]) -> None:
        for node_id in ids:
            self._candidates.pop(node_id, None)

    def drop(self, ids: Collection[str]) -> None:
        for node_id in ids:
            self._items.pop(node_id, None)
            self._candidates.pop(node_id, None)

    def clear(self) -> None:
        self._items.clear()
        self._candidates.clear()

"""A bounded cache of decoded nodes for the SQLite store (decoding a row costs far more than reading it),
and the projected read of a query's pool candidates (``read_candidates``).

The store drops an entry whenever a write changes that node, everything on a rollback and whenever
another connection has committed (``PRAGMA data_version``), so a cached node is always the stored
one. Cached embeddings are read-only arrays: callers share them. Cached candidates (``Candidate``:
a node's projection with its stored context) are dropped with their node, and also whenever the
node's context is rewritten (``drop_candidates``).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections import OrderedDict
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from dualmem.plane import _codec as codec
from dualmem.plane import _sqlite_sql as sql
from dualmem.plane._context import decode_vectors, parse_neighbours
from dualmem.plane.base import Candidate, NodeContext
from dualmem.types import Node

__all__ = ["CANDIDATE_COLS", "NodeCache", "read_candidates"]

#: decoded nodes kept (least recently used out first): a few MB at MiniLM's 384 dimensions
CAPACITY = 20_000

#: what a pool candidate reads: the node's projection, its vector and its stored context (one lookup
#: of ``nodes.id`` a node, where ``get_nodes`` and ``node_context`` take one each)
CANDIDATE_COLS = (
    "n.id, n.user_id, n.agent_id, n.run_id, n.content, n.speaker, n.at, n.temporal_refs, n.valid_to, "
    "v.blob, c.neighbours, c.vec"
)
_CANDIDATE_FROM = "nodes n LEFT JOIN vectors v ON v.node_id = n.id LEFT JOIN node_context c ON c.seq = n.seq"


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
    held = [row for row in rows if row[10] is not None]
    vectors = decode_vectors([row[11] for row in held])
    contexts = iter(
        [NodeContext(parse_neighbours(p), v) for p, v in zip(_neighbours(held), vectors, strict=True)]
    )
    return [_candidate(row, None if row[10] is None else next(contexts)) for row in rows]


def _neighbours(rows: Sequence[tuple[Any, ...]]) -> list[Any]:
    """The parsed neighbour lists of ``rows`` (JSON texts), in one parse: joined as one JSON array,
    which holds exactly one value a row whenever it holds as many values as rows (an empty or blank
    text makes the join invalid); otherwise each text alone (where the faulty one raises)."""
    texts = [row[10] for row in rows]
    if texts:
        try:
            found = json.loads("[" + ",".join(texts) + "]")
        except ValueError:
            found = None
        if isinstance(found, list) and len(found) == len(texts):
            return found
    return [json.loads(text) for text in texts]


_F32 = np.dtype(np.float32)
_from_iso = dt.datetime.fromisoformat


def _candidate(row: tuple[Any, ...], context: NodeContext | None) -> Candidate:
    node_id, user, agent, run, content, speaker, at, refs, valid_to, blob, _, _ = row
    return Candidate(
        node_id, sql.tenant_of(user, agent, run), content, speaker,
        None if at is None else _from_iso(at),
        () if refs == "[]" else codec.refs_from_json(refs),
        None if valid_to is None else _from_iso(valid_to),
        None if blob is None else np.frombuffer(blob, _F32),
        context,
    )  # fmt: skip


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

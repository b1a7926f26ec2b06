"""Write-time neighbour context of nodes, shared by the store backends.

A node's context is derived from the nodes of its session that sit up to ``window`` positions
before and after it in write order (``Store.session_neighbours`` read with the node's own tenant,
so a context never holds text its readers could not see):

- a **context field**: the neighbours' contents, in session order, indexed for BM25 apart from the
  node's own text (``Store.context_search``);
- a **context vector**: the normalised mean of the neighbours' embeddings, stored as int8 (the
  direction is what a cosine needs: 384 bytes at MiniLM's dimension, renormalised when read).

Context is derived: a store recomputes it for every node whose window a write changes (a new turn
changes the context of the turns before it; a forget or an edit changes its neighbours'), and
``check(repair=True)`` rebuilds it. The canonical node stays one verbatim observation.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

import numpy as np
import numpy.typing as npt

from dualmem.errors import DatabaseCorrupt
from dualmem.plane.base import NodeContext
from dualmem.types import Node, Tenant

__all__ = [
    "CONTEXT_WINDOW",
    "ContextRow",
    "Neighbours",
    "affected",
    "as_unit",
    "decode_neighbours",
    "decode_vector",
    "decode_vectors",
    "derive",
    "encode_neighbours",
    "encode_vector",
    "neighbours_json",
    "parse_neighbours",
    "stale",
]

#: session turns either side that form a node's stored context (``ReadProfile.pool_window``'s default)
CONTEXT_WINDOW = 2

Neighbours = tuple[tuple[str, int], ...]


class _Reads(Protocol):
    def get_nodes(self, node_ids: Collection[str], tenant: Tenant | None = None) -> dict[str, Node]: ...

    def node_context(self, node_ids: Collection[str], tenant: Tenant) -> dict[str, NodeContext]: ...

    def session_neighbours(
        self, tenant: Tenant, node_ids: Collection[str], window: int
    ) -> dict[str, Neighbours]: ...


@dataclass(frozen=True, slots=True)
class ContextRow:
    """The context of one node; ``neighbours == ()`` means it has none (no row is kept)."""

    node_id: str
    tenant: Tenant
    neighbours: Neighbours
    text: str
    vector: npt.NDArray[np.int8] | None


def encode_vector(vectors: Sequence[npt.NDArray[np.float32]]) -> npt.NDArray[np.int8] | None:
    """The mean of ``vectors`` quantised to int8 (largest component ±127); ``None`` if none or zero."""
    if not vectors:
        return None
    mean = np.mean(np.stack(vectors).astype(np.float32), axis=0)
    top = float(np.max(np.abs(mean)))
    if not np.isfinite(top) or top == 0.0:
        return None
    quantised: npt.NDArray[np.int8] = np.rint(mean * (127.0 / top)).astype(np.int8)
    return quantised


def as_unit(vector: npt.NDArray[np.int8]) -> npt.NDArray[np.float32]:
    out = vector.astype(np.float32)
    return out / np.float32(np.linalg.norm(out))


def decode_vector(blob: bytes | None) -> npt.NDArray[np.float32] | None:
    """A stored context vector as a unit-length float32 array."""
    if not blob:
        return None
    return as_unit(np.frombuffer(blob, dtype=np.int8))


def decode_vectors(blobs: Sequence[bytes | None]) -> list[npt.NDArray[np.float32] | None]:
    """``decode_vector`` of each blob, the blobs of one length normalised as one matrix: the squared
    norms are summed exactly in integers (int8 components), so each row is what ``decode_vector`` gives
    whenever its float32 sum is exact (below 2**24: any dimension up to 1,040)."""
    out: list[npt.NDArray[np.float32] | None] = [None] * len(blobs)
    by_size: dict[int, list[int]] = {}
    for i, blob in enumerate(blobs):
        if blob:
            by_size.setdefault(len(blob), []).append(i)
    for size, rows in by_size.items():
        ints = np.frombuffer(b"".join(cast(bytes, blobs[i]) for i in rows), dtype=np.int8).reshape(-1, size)
        wide = ints.astype(np.int64)
        norms = np.sqrt(np.einsum("ij,ij->i", wide, wide).astype(np.float32))
        unit = ints.astype(np.float32) / norms[:, None]
        for k, i in enumerate(rows):
            out[i] = unit[k]
    return out


def neighbours_json(pairs: Neighbours) -> list[list[str | int]]:
    return [[node_id, offset] for node_id, offset in pairs]


def parse_neighbours(value: object) -> Neighbours:
    if not isinstance(value, list):
        raise ValueError("context neighbours are not a list")
    out = []
    for item in value:  # one pass (the read path parses a pool's worth of these per search)
        if type(item) is not list or len(item) != 2 or type(item[0]) is not str:
            raise ValueError("a context neighbour is not [id, offset]")
        out.append((item[0], int(item[1])))
    return tuple(out)


#: what separates the fields of a compact neighbour list (``encode_neighbours``)
SEP = "\x1f"


def encode_neighbours(pairs: Neighbours) -> str:
    """The SQLite store's text of a neighbour list (schema v11): ``offset SEP id SEP offset SEP id ...``
    (an offset first, so it never starts with ``[``); a list with an id that holds ``SEP`` is written
    as the JSON ``[[id, offset], ...]`` of schema v6 instead, which ``decode_neighbours`` also reads."""
    if any(SEP in node_id for node_id, _ in pairs):
        return json.dumps(neighbours_json(pairs), ensure_ascii=False)
    return SEP.join([f"{offset}{SEP}{node_id}" for node_id, offset in pairs])


def decode_neighbours(text: str) -> Neighbours:
    """The neighbour list of a stored text, compact (``encode_neighbours``) or JSON (a text that
    starts with ``[``); ``ValueError`` for anything else (a stored list is never empty)."""
    if text[:1] == "[":
        return parse_neighbours(json.loads(text))
    parts = text.split(SEP)
    if len(parts) % 2:  # also the empty text
        raise ValueError("context neighbours are not offset/id pairs")
    pairs = iter(parts)
    return tuple(
        [(node_id, int(offset)) for offset, node_id in zip(pairs, pairs, strict=False)]
    )  # even: checked


def affected(store: _Reads, nodes: Iterable[Node], window: int) -> set[str]:
    """``nodes`` and every node whose context window holds one of them (same user and session)."""
    by_user: dict[str, list[str]] = {}
    for node in nodes:
        if node.session is not None:
            by_user.setdefault(node.tenant.user, []).append(node.id)
    out = {node_id for ids in by_user.values() for node_id in ids}
    for user, ids in by_user.items():
        near = store.session_neighbours(Tenant(user), ids, window)
        out.update(j for pairs in near.values() for j, _ in pairs)
    return out


def derive(store: _Reads, node_ids: Collection[str], window: int) -> list[ContextRow]:
    """The current context of each stored node of ``node_ids`` (unknown ids are left out)."""
    nodes = store.get_nodes(node_ids)
    by_tenant: dict[Tenant, list[str]] = {}
    for node in nodes.values():
        by_tenant.setdefault(node.tenant, []).append(node.id)
    near: dict[str, Neighbours] = {}
    for tenant, ids in by_tenant.items():
        near.update(store.session_neighbours(tenant, ids, window))
    wanted = {j for pairs in near.values() for j, _ in pairs} - nodes.keys()
    known: Mapping[str, Node] = {**nodes, **store.get_nodes(wanted)}
    rows = []
    for node_id, node in nodes.items():
        pairs = tuple((j, off) for j, off in near.get(node_id, ()) if j in known)
        text = "\n".join(known[j].content for j, _ in pairs)
        vectors = [v for j, _ in pairs if (v := known[j].embedding) is not None]
        rows.append(ContextRow(node_id, node.tenant, pairs, text, encode_vector(vectors)))
    return rows


def stale(store: _Reads, node_ids: Sequence[str], window: int) -> list[str]:
    """The nodes of ``node_ids`` whose stored context differs from a fresh derivation (``check``)."""
    out: list[str] = []
    for start in range(0, len(node_ids), 2000):
        rows = derive(store, node_ids[start : start + 2000], window)
        by_user: dict[str, list[ContextRow]] = {}
        for row in rows:
            by_user.setdefault(row.tenant.user, []).append(row)
        for user, mine in by_user.items():
            stored, damaged = _stored(store, [r.node_id for r in mine], Tenant(user))
            out += [r.node_id for r in mine if r.node_id in damaged or not _same(r, stored.get(r.node_id))]
    return out


def _stored(store: _Reads, ids: list[str], tenant: Tenant) -> tuple[Mapping[str, NodeContext], set[str]]:
    """The stored context of ``ids``, and those whose stored row does not decode: a damaged row is a
    stale one (``check`` reports it, a repair rebuilds it), read one by one once the batch fails."""
    try:
        return store.node_context(ids, tenant), set()
    except DatabaseCorrupt:
        found: dict[str, NodeContext] = {}
        damaged: set[str] = set()
        for node_id in ids:
            try:
                found.update(store.node_context([node_id], tenant))
            except DatabaseCorrupt:
                damaged.add(node_id)
        return found, damaged


def _same(row: ContextRow, stored: NodeContext | None) -> bool:
    if stored is None or not row.neighbours:
        return stored is None and not row.neighbours
    if stored.neighbours != row.neighbours or (stored.vector is None) != (row.vector is None):
        return False
    if stored.vector is None or row.vector is None:
        return True
    if stored.vector.shape != row.vector.shape:  # a damaged blob of another length
        return False
    return bool(np.allclose(stored.vector, as_unit(row.vector), atol=1e-4))

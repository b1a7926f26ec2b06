"""Chunk vectors: the extra window vectors of long nodes, shared by the store backends.

A long node (longer than the embedder's window, see ``embed/windows.py``) keeps its own
``embedding`` plus an ``(m, dim)`` matrix of chunk vectors. Vector search scores a node as its best
vector: the stores search the node vectors as before and the chunk vectors here, and
:func:`merge` keeps each node once, with its best cosine. Short nodes have no chunk rows, so a
memory of short turns pays nothing for this.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dualmem.errors import EmbedderMismatch, InvalidInput
from dualmem.plane._vectors import UserVectors
from dualmem.types import Tenant, Vector

__all__ = ["UserChunks", "as_chunks", "from_blob", "merge", "to_blob"]


def as_chunks(node_id: str, matrix: Vector, dim: int | None) -> Vector:
    """``matrix`` as a C-contiguous ``(m, dim)`` float32 array; ``InvalidInput`` when it is not one.

    ``m == 0`` is allowed (it removes a node's chunks); ``dim`` is the store's (``None``: not bound).
    """
    rows = np.ascontiguousarray(matrix, dtype=np.float32)
    if rows.ndim != 2 or (rows.shape[0] > 0 and rows.shape[1] == 0):
        raise InvalidInput(f"node {node_id}: chunk vectors must be an (m, dim) matrix, got {rows.shape}")
    if dim is not None and rows.shape[0] > 0 and rows.shape[1] != dim:
        raise EmbedderMismatch(
            f"node {node_id}: chunk vectors of dimension {rows.shape[1]}, the store holds {dim}",
            hint=f"use the embedder that built this store (dim {dim})",
        )
    if not bool(np.all(np.isfinite(rows))):
        raise InvalidInput(f"node {node_id}: chunk vectors have NaN or infinite values")
    return rows


def to_blob(rows: Vector) -> bytes:
    return np.ascontiguousarray(rows, dtype="<f4").tobytes()


def from_blob(blob: bytes, dim: int, parts: int) -> Vector:
    """The ``(parts, dim)`` matrix packed in ``blob``; ``ValueError`` when the sizes disagree."""
    if dim <= 0 or parts <= 0 or len(blob) != 4 * dim * parts:
        raise ValueError(f"a chunk blob of {len(blob)} bytes is not {parts} x {dim} float32")
    return np.frombuffer(blob, dtype="<f4").reshape(parts, dim).astype(np.float32)


class UserChunks:
    """One user's chunk vectors (rows of several nodes), searched with the best row per node."""

    def __init__(self) -> None:
        self._rows: UserVectors | None = None
        self._parts: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._parts)

    def put(self, node_id: str, tenant: Tenant, rows: Vector) -> None:
        """Replace the node's chunk rows (an empty matrix removes them)."""
        if node_id in self._parts:
            self.remove({node_id})
        if rows.shape[0] == 0:
            return
        if self._rows is None:
            self._rows = UserVectors(int(rows.shape[1]))
        self._rows.append([node_id] * rows.shape[0], [tenant] * rows.shape[0], rows)
        self._parts[node_id] = int(rows.shape[0])

    def remove(self, ids: set[str]) -> None:
        gone = ids & self._parts.keys()
        if not gone or self._rows is None:
            return
        self._rows.remove(gone)
        for node_id in gone:
            del self._parts[node_id]

    def search(self, tenant: Tenant, query: Vector, k: int) -> list[tuple[str, float]]:
        """The ``k`` nodes with the best chunk cosine, each once (its best row), best first."""
        if self._rows is None or not self._parts or k <= 0:
            return []
        total = len(self._rows)
        # the top (k + rows - nodes) rows always hold the best row of each of the top-k nodes
        wanted = min(total, k + total - len(self._parts))
        out: list[tuple[str, float]] = []
        seen: set[str] = set()
        for node_id, score in self._rows.search(tenant, query, wanted):
            if node_id not in seen:
                seen.add(node_id)
                out.append((node_id, score))
                if len(out) == k:
                    break
        return out


def merge(
    nodes: Sequence[tuple[str, float]], chunks: Sequence[tuple[str, float]], k: int
) -> list[tuple[str, float]]:
    """Node hits and chunk hits as one list: each node once with its best score, best first, top ``k``.

    Exact when both inputs are exact top-k lists: a node of the true top-k by best score is in the
    top-k of whichever side gave its best score. Ties keep the node side's order first.
    """
    if not chunks:
        return list(nodes[:k])
    best: dict[str, float] = {}
    for node_id, score in (*nodes, *chunks):
        if node_id not in best or score > best[node_id]:
            best[node_id] = score
    order = {node_id: i for i, node_id in enumerate(best)}
    ranked = sorted(best.items(), key=lambda item: (-item[1], order[item[0]]))
    return ranked[:k]

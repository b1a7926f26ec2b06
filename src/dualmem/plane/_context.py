"""Write-time neighbour context of nodes, shared by the store backends (issue 10).

A node's context is derived from the nodes of its session that sit up to ``window`` positions
before and after it in write order (``Store.session_neighbours`` read with the node's own tenant,
so a context never holds text its readers could not see):

- a **context field**: the neighbours' contents, in session order, indexed for BM25 apart from the
  node's own text (``Store.context_search``);
- a **context vector**: the normalised mean of the neighbours' embeddings, stored as float16.

Context is derived: a store recomputes it for every node whose window a write changes (a new turn
changes the context of the turns before it; a forget or an edit changes its neighbours'), and
``check(repair=True)`` rebuilds it. The canonical node stays one verbatim observation.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from dualmem.types import Node, Tenant

__all__ = [
    "CONTEXT_WINDOW",
    "ContextRow",
    "Neighbours",
    "affected",
    "decode_vector",
    "derive",
    "encode_vector",
    "neighbours_json",
    "parse_neighbours",
]

#: session turns either side that form a node's stored context (``ReadProfile.pool_window``'s default)
CONTEXT_WINDOW = 2

Neighbours = tuple[tuple[str, int], ...]


class _Reads(Protocol):
    def get_nodes(self, node_ids: Collection[str], tenant: Tenant | None = None) -> dict[str, Node]: ...

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
    vector: npt.NDArray[np.float16] | None


def encode_vector(vectors: Sequence[npt.NDArray[np.float32]]) -> npt.NDArray[np.float16] | None:
    """The normalised mean of ``vectors`` as float16 (``None`` when there is none or it is zero)."""
    if not vectors:
        return None
    mean = np.mean(np.stack(vectors).astype(np.float32), axis=0)
    norm = float(np.linalg.norm(mean))
    return None if norm == 0.0 else (mean / norm).astype(np.float16)


def decode_vector(blob: bytes | None) -> npt.NDArray[np.float32] | None:
    if not blob:
        return None
    return np.frombuffer(blob, dtype=np.float16).astype(np.float32)


def neighbours_json(pairs: Neighbours) -> list[list[str | int]]:
    return [[node_id, offset] for node_id, offset in pairs]


def parse_neighbours(value: object) -> Neighbours:
    if not isinstance(value, list):
        raise ValueError("context neighbours are not a list")
    out: list[tuple[str, int]] = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            raise ValueError("a context neighbour is not [id, offset]")
        out.append((item[0], int(item[1])))
    return tuple(out)


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

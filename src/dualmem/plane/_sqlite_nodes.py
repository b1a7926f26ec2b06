"""A bounded cache of decoded nodes for the SQLite store (decoding a row costs far more than reading it).

The store drops an entry whenever a write changes that node, everything on a rollback and whenever
another connection has committed (``PRAGMA data_version``), so a cached node is always the stored
one. Cached embeddings are read-only arrays: callers share them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Sequence

from dualmem.types import Node

__all__ = ["NodeCache"]

#: decoded nodes kept (least recently used out first): a few MB at MiniLM's 384 dimensions
CAPACITY = 20_000


class NodeCache:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._items: OrderedDict[str, Node] = OrderedDict()

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

    def drop(self, ids: Collection[str]) -> None:
        for node_id in ids:
            self._items.pop(node_id, None)

    def clear(self) -> None:
        self._items.clear()

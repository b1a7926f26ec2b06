"""Re-embedding: make every stored vector what the write path makes today (``embed/windows.py``).

A database written before the speaker left the embedded text holds "Speaker: content" vectors and
no chunk vectors for long nodes. :func:`reembed` embeds each node's content again (with its
chunks), in batches of one transaction each, so an interrupted run can simply be run again. Nothing
but vectors changes.
``dualmem check --repair --reembed`` runs it over every tenant.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dualmem.embed.base import Embedder
from dualmem.embed.windows import embed_texts
from dualmem.plane.base import WriteStore
from dualmem.types import Node, Tenant

__all__ = ["reembed"]


def reembed(store: WriteStore, embedder: Embedder, tenant: Tenant | None = None, *, batch: int = 256) -> int:
    """Re-embed the nodes of ``tenant`` (``None``: every tenant); the number of nodes re-embedded."""
    store.meta.bind_embedder(embedder.name, embedder.dim)  # EmbedderMismatch for another model
    done = 0
    pending: list[Node] = []
    for node in store.iter_nodes(tenant):
        pending.append(node)
        if len(pending) >= batch:
            done += _batch(store, embedder, pending)
            pending = []
    if pending:
        done += _batch(store, embedder, pending)
    return done


def _batch(store: WriteStore, embedder: Embedder, nodes: list[Node]) -> int:
    vectors = embed_texts(embedder, [n.content for n in nodes])
    empty = np.zeros((0, embedder.dim), dtype=np.float32)
    with store.transaction():
        for i, node in enumerate(nodes):
            store.update_node(dataclasses.replace(node, embedding=vectors.rows[i]))
        chunks = {}
        for node, extra in zip(nodes, vectors.chunks, strict=True):
            chunks[node.id] = empty if extra is None else extra
        store.vectors.put_chunks(chunks)
    return len(nodes)

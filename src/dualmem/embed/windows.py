"""What is embedded for a node, in one place (write path, consolidation, re-embedding).

A node's vector is of its content only. The speaker is a field (the FTS5 ``speaker`` column, the
pool's speaker features), never part of the vector: a name in the embedded text dominates the
query vector and pulls in short, content-free turns of that speaker.

**Long texts** (longer than the embedder's window: MiniLM reads 256 tokens) get extra vectors, one
per overlapping window of :data:`CHUNK_TOKENS` tokens every :data:`CHUNK_STRIDE` tokens after the
first window, so that a fact at the end of a long message has a vector of its own; a node scores as
its best vector (``Store.vector_search``). The node's own ``embedding`` stays what the embedder gives
for the whole text (its first window), so a short text is one vector, exactly as before. Only an
embedder that splits texts (:class:`Windowed`, e.g. MiniLM) makes chunks; the others have no window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from dualmem.embed.base import Embedder, Matrix

__all__ = [
    "CHUNK_STRIDE",
    "CHUNK_TOKENS",
    "NodeVectors",
    "WindowEmbedder",
    "Windowed",
    "embed_texts",
    "embed_with_windows",
    "embedding_text",
]

#: tokens per extra window of a long text, and the step between window starts (50 tokens overlap)
CHUNK_TOKENS = 200
CHUNK_STRIDE = 150


def embedding_text(content: str) -> str:
    """The text embedded for a node whose content is ``content``: the content itself."""
    return content


@runtime_checkable
class Windowed(Protocol):
    """An embedder with a token window: it can say which extra windows a text needs."""

    def windows(self, texts: Sequence[str], *, size: int, stride: int) -> list[list[str]]:
        """For each text, the texts of its windows after the first (none when it fits one window):
        ``size`` tokens each, starting every ``stride`` tokens, the last one ending at the text's end."""
        ...


@dataclass(frozen=True, slots=True)
class NodeVectors:
    """What the embedder gives for node texts: one row each, plus each long text's chunk vectors."""

    rows: Matrix  # (n, dim): the vector of each text (its first window)
    chunks: tuple[Matrix | None, ...]  # per text: (m, dim) extra window vectors, or None

    def __len__(self) -> int:
        return len(self.chunks)


@runtime_checkable
class WindowEmbedder(Protocol):
    """An embedder that embeds texts and their extra windows itself, in one pass (MiniLM: one
    tokenisation per text, every row of the call in one sorted, de-duplicated run)."""

    def embed_windows(self, texts: Sequence[str], *, size: int, stride: int) -> NodeVectors:
        """The same rows as ``embed(texts)`` and ``embed`` of each text's ``windows``."""
        ...


def embed_texts(embedder: Embedder, contents: Sequence[str]) -> NodeVectors:
    """Embed node contents and the extra windows of long ones in ONE call (sorted by length inside)."""
    texts = [embedding_text(c) for c in contents]
    if isinstance(embedder, WindowEmbedder):
        return embedder.embed_windows(texts, size=CHUNK_TOKENS, stride=CHUNK_STRIDE)
    return embed_with_windows(embedder, texts, size=CHUNK_TOKENS, stride=CHUNK_STRIDE)


def embed_with_windows(embedder: Embedder, texts: Sequence[str], *, size: int, stride: int) -> NodeVectors:
    """The rows of ``texts`` and of their ``windows`` through ``embedder.embed`` (one call): the path of
    an embedder without ``embed_windows``; no chunks for one without ``windows``."""
    if isinstance(embedder, Windowed):
        extra = embedder.windows(texts, size=size, stride=stride)
    else:
        extra = [[] for _ in texts]
    flat = [*texts, *(w for ws in extra for w in ws)]
    rows = embedder.embed(flat) if flat else np.zeros((0, embedder.dim), dtype=np.float32)
    chunks: list[Matrix | None] = []
    at = len(texts)
    for ws in extra:
        chunks.append(rows[at : at + len(ws)].copy() if ws else None)
        at += len(ws)
    return NodeVectors(rows[: len(texts)], tuple(chunks))

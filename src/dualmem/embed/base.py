"""The Embedder protocol: texts in, L2-normalised float32 rows out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "Matrix", "QueryEmbedder", "embed_queries", "normalize"]

Matrix = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """One required method. ``name`` identifies the model (a store refuses another one)."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Matrix:
        """A ``(len(texts), dim)`` float32 matrix, each row of unit length (zero rows stay zero)."""
        ...


@runtime_checkable
class QueryEmbedder(Protocol):
    """An embedder that embeds a search query unlike a stored text (e5's ``query: `` / ``passage: ``).

    ``embed`` is for stored texts (what the write path calls); ``embed_queries`` for what is searched
    with. An embedder without it (MiniLM, hashing, OpenAI) embeds both alike.
    """

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Like ``embed``, for search queries."""
        ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> Matrix:
    """The vectors of search queries: ``embedder.embed_queries`` where it has one, else ``embed``."""
    if isinstance(embedder, QueryEmbedder):
        return embedder.embed_queries(texts)
    return embedder.embed(texts)


def normalize(matrix: npt.NDArray[np.floating]) -> Matrix:
    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: Matrix = (out / norms).astype(np.float32, copy=False)
    return result

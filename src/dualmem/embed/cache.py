"""An LRU cache in front of any embedder, keyed by the exact text."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from dualmem.embed.base import Embedder, Matrix, QueryEmbedder
from dualmem.embed.windows import NodeVectors, Windowed, WindowEmbedder, embed_with_windows
from dualmem.errors import ConfigError, EmbedderError

__all__ = ["CachedEmbedder"]

#: the key prefix of a query's row (a stored text's row has none; no text starts with a NUL and this)
_QUERY = "\x00query\x00"


class CachedEmbedder:
    """Wraps ``inner``; same ``name`` and ``dim``. Misses of one call are embedded in one batch."""

    @property
    def dim(self) -> int:
        """The inner embedder's dimension, read when needed (a remote one may not know it yet)."""
        return self.inner.dim

    @dim.setter
    def dim(self, value: int) -> None:
        self.inner.dim = value

    def __init__(self, inner: Embedder, *, size: int = 4096) -> None:
        if size < 1:
            raise ConfigError(f"cache size must be >= 1, got {size}", hint="use e.g. 4096")
        self.inner = inner
        self.name: str = inner.name
        self.size = size
        self._rows: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, size={self.size})"

    def __len__(self) -> int:
        return len(self._rows)

    def embed(self, texts: Sequence[str]) -> Matrix:
        return self._through(texts, "", self.inner.embed)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Search queries: the inner embedder's ``embed_queries`` (cached apart from stored texts'
        rows) where it has one, else the same rows as :meth:`embed`."""
        if isinstance(self.inner, QueryEmbedder):
            return self._through(texts, _QUERY, self.inner.embed_queries)
        return self.embed(texts)

    def _through(self, texts: Sequence[str], prefix: str, embed: Callable[[Sequence[str]], Matrix]) -> Matrix:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for row, text in enumerate(texts):
                cached = self._rows.get(prefix + text)
                if cached is None:
                    missing.setdefault(text, []).append(row)
                else:
                    self._rows.move_to_end(prefix + text)
                    out[row] = cached
            self.hits += len(texts) - sum(map(len, missing.values()))
            self.misses += len(missing)
        if missing:
            fresh = embed(list(missing))
            if fresh.shape != (len(missing), self.dim):
                raise EmbedderError(
                    f"{self.name} returned shape {fresh.shape} for {len(missing)} texts of dim {self.dim}"
                )
            with self._lock:
                for vector, (text, rows) in zip(fresh, missing.items(), strict=True):
                    out[rows] = vector
                    self._store(prefix + text, vector)
        return out

    def windows(self, texts: Sequence[str], *, size: int, stride: int) -> list[list[str]]:
        """The inner embedder's extra windows of each text (none when it has no window)."""
        if isinstance(self.inner, Windowed):
            return self.inner.windows(texts, size=size, stride=stride)
        return [[] for _ in texts]

    def embed_windows(self, texts: Sequence[str], *, size: int, stride: int) -> NodeVectors:
        """The inner embedder's own one-pass ``embed_windows`` when it has one (rows not cached: a
        write's texts are new); else the rows of the texts and their windows through the cache."""
        if isinstance(self.inner, WindowEmbedder):
            return self.inner.embed_windows(texts, size=size, stride=stride)
        return embed_with_windows(self, texts, size=size, stride=stride)

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()

    def _store(self, text: str, vector: npt.NDArray[np.float32]) -> None:
        self._rows[text] = np.array(vector, dtype=np.float32)
        self._rows.move_to_end(text)
        while len(self._rows) > self.size:
            self._rows.popitem(last=False)

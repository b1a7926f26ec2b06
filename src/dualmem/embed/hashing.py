"""A deterministic feature-hashing embedder: offline, instant, for tests and tiny deployments.

The words of :func:`dualmem.text.lexical.tokenize` (lower case, inner apostrophes kept, a
possessive ``'s`` dropped), as unigrams and bigrams, are hashed (blake2b, so the same on every run
and machine, unlike Python's salted ``hash``) into ``dim`` signed buckets; rows are L2-normalised.
Texts that share words get a clearly higher cosine than unrelated texts. It is not a semantic model.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence

import numpy as np

from dualmem.embed.base import Matrix, normalize
from dualmem.errors import ConfigError
from dualmem.text.lexical import tokenize

__all__ = ["HashingEmbedder"]

_BIGRAM_WEIGHT = 0.5


def _bucket(feature: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return (value >> 1) % dim, (1.0 if value & 1 else -1.0)


class HashingEmbedder:
    """Signed feature hashing of word unigrams (weight 1) and bigrams (weight 0.5)."""

    def __init__(self, dim: int = 256) -> None:
        if dim < 2:
            raise ConfigError(f"hashing dim must be >= 2, got {dim}", hint="use e.g. 256")
        self.dim = dim
        self.name = f"hashing-{dim}"

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self.dim})"

    def embed(self, texts: Sequence[str]) -> Matrix:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = tokenize(text)
            features = [(word, 1.0) for word in words]
            features += [(f"{a} {b}", _BIGRAM_WEIGHT) for a, b in itertools.pairwise(words)]
            for feature, weight in features:
                index, sign = _bucket(feature, self.dim)
                out[row, index] += sign * weight
        return normalize(out)

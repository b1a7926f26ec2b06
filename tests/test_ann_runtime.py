"""usearch's native library and onnxruntime in one process (issue 13: open + first search).

Loaded first, usearch's library (with its own static C++ runtime) makes the first ONNX session
crash the process (segfault) unless the system's shared C++ runtime was loaded globally before it
(Linux) or onnxruntime was imported first. The first costs ~2 ms; the second ~60 ms that a process on
the hashing embedder never needed. Each check runs in a fresh interpreter: the load order is
per process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dualmem.plane import ann

pytestmark = pytest.mark.skipif(not ann.available(), reason="the scale extra (usearch) is not installed")

_SCRIPT = """
import datetime as dt, os, sys, tempfile
import numpy as np
from dualmem.plane import SQLiteStore
from dualmem.types import Node, Tenant
rows = np.random.default_rng(0).normal(size=(1200, 16)).astype(np.float32)
rows /= np.linalg.norm(rows, axis=1, keepdims=True)
u, at = Tenant("u"), dt.datetime(2023, 1, 1, tzinfo=dt.UTC)
with tempfile.TemporaryDirectory() as d, SQLiteStore.open(os.path.join(d, "m.db")) as store:
    nodes = [Node(id=f"n{i}", tenant=u, content=f"m {i}", at=at, embedding=r) for i, r in enumerate(rows)]
    store.put_nodes(nodes)
    store.use_ann(1000)
    assert store.vector_search(u, rows[7], 3)[0][0] == "n7"
    print("usearch", "usearch.compiled" in sys.modules, "onnxruntime", "onnxruntime" in sys.modules)
from dualmem.embed import MiniLMEmbedder
print("embedded", MiniLMEmbedder().embed(["hello world"]).shape)
"""


def _run() -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120)


def test_an_onnx_session_after_an_ann_search_works_in_the_same_process() -> None:
    """A search through a built segment, then a MiniLM session in the same process: no crash."""
    out = _run()
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines()[-1] == "embedded (1, 384)"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the shared C++ runtime is loaded on Linux")
def test_an_ann_search_does_not_import_onnxruntime_on_linux() -> None:
    """The vector index alone does not pay onnxruntime's import (~60 ms of a first search)."""
    out = _run()
    assert out.returncode == 0, out.stderr[-2000:]
    assert "usearch True onnxruntime False" in out.stdout.splitlines()

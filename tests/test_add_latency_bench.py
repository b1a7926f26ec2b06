"""bench/add_latency.py end to end at a tiny size, with and without ``--write-only``."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from bench_scripts import load_bench
from dualmem.embed import create_embedder


def _bench() -> ModuleType:
    return load_bench("add_latency.py")


def test_precomputed_vectors_are_the_embedders_own() -> None:
    bench = _bench()
    inner = create_embedder("hashing")
    ready = bench.Precomputed(inner, ["a garden", "the bike broke"])
    assert (ready.name, ready.dim) == (inner.name, inner.dim)
    got = ready.embed(["the bike broke", "never seen", "a garden"])
    want = np.stack([inner.embed([t])[0] for t in ("the bike broke", "never seen", "a garden")])
    assert got.dtype == np.float32
    assert np.array_equal(got, want)


@pytest.mark.parametrize("write_only", [False, True])
def test_add_latency_reports_every_figure(
    locomo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], write_only: bool
) -> None:
    bench = _bench()
    argv = [
        "--data", str(locomo_dir), "--sizes", "60", "--write-max", "60", "--embedder", "hashing",
        "--adds", "3", "--warmup", "1", "--counted", "1", "--cache", str(tmp_path / "cache"),
        "--tmp", str(tmp_path),
    ] + ["--write-only"] * write_only  # fmt: skip
    assert bench.main(argv) == 0
    (size,) = json.loads(capsys.readouterr().out)["sizes"]
    assert size["n"] == 60
    assert size["write_only"] is write_only
    assert size["add"]["p50_ms"] > 0
    assert size["add_cpu_ms_mean"] > 0
    assert size["statements_per_add"] > 0

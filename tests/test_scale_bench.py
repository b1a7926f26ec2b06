"""bench/scale.py end to end at a tiny size: every figure present, built files kept and reused."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from bench_scripts import load_bench


def _scale() -> ModuleType:
    return load_bench("scale.py")


def test_scale_bench_sizes_and_users(
    locomo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scale = _scale()
    argv = [
        "--data", str(locomo_dir), "--sizes", "120", "300", "--write-max", "0", "--embedder", "hashing",
        "--queries", "3", "--adds", "1", "--users", "3", "--per-user", "40", "--ann-threshold", "100",
        "--cache", str(tmp_path / "cache"), "--keep", str(tmp_path / "db"), "--out", str(tmp_path / "out"),
    ]  # fmt: skip
    assert scale.main(argv) == 0
    report = json.loads((tmp_path / "out.json").read_text())
    assert (tmp_path / "out.png").is_file()
    sizes = report["sizes"]
    assert [r["n"] for r in sizes] == [120, 300]
    for r in [*sizes, report["tenants"]]:
        for key in (
            "add",
            "search",
            "search_second_pass",
            "store_vector",
            "store_lexical",
            "store_context",
            "numpy_topk",
            "bare_fts5",
        ):
            assert r[key]["p50_ms"] >= 0
        assert 0.0 <= r["ann_recall_at_10"] <= r["ann_recall_at_10_ties"] <= 1.0
        assert r["disk_bytes_per_memory"] > 0
        split = r["search_stages"]
        assert split["lexical_search_cpu_p50_ms"] > 0
        assert split["total_cpu_p50_ms"] > 0
        assert set(split) >= {f"{name}_cpu_p50_ms" for name in ("context_search", "get_nodes", "other")}
        assert r["store_open_first_vector_ms"] > 0
    assert sizes[1]["ann_used"] is (sizes[1]["ann_threshold"] == 100 and scale.ann_available())
    assert report["tenants"]["users"] == 3
    assert "build_s" in sizes[0]
    # a second run reuses the kept files (no build time) and still measures
    capsys.readouterr()
    assert scale.main([*argv[:3], "120", *argv[5:]]) == 0
    again = json.loads((tmp_path / "out.json").read_text())["sizes"][0]
    assert "build_s" not in again
    assert again["search"]["p50_ms"] >= 0

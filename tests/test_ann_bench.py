"""bench/ann_recall.py end to end on a small file: recall strict and with ties, latency beside numpy,
build figures, the index built in a temporary folder (the database's own ``.ann`` untouched)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from types import ModuleType

import pytest

from bench_scripts import load_bench
from dualmem.conversations import load_conversations
from dualmem.embed import create_embedder
from dualmem.plane import SQLiteStore, ann
from dualmem.types import Node, Tenant

pytestmark = pytest.mark.skipif(not ann.available(), reason="the scale extra (usearch) is not installed")


def _bench() -> ModuleType:
    return load_bench("ann_recall.py")


def test_ann_recall_bench(locomo_dir: Path, tmp_path: Path) -> None:
    turns = [o.content for c in load_conversations(locomo_dir) for o in c.observations][:1500]
    vectors = create_embedder("hashing").embed(turns)
    path = tmp_path / "m.db"
    t0 = dt.datetime(2023, 1, 1, tzinfo=dt.UTC)
    with SQLiteStore.open(path) as store:
        store.put_nodes(
            [
                Node(id=f"n{i:05d}", tenant=Tenant("bench-user"), content=t, at=t0, embedding=vectors[i])
                for i, t in enumerate(turns)
            ]
        )
    before = (ann.DTYPE, ann.CONNECTIVITY, ann.EXPANSION_ADD, ann.EXPANSION_SEARCH)
    argv = [
        "--db", str(path), "--embedder", "hashing", "--source", "locomo", "--data", str(locomo_dir),
        "--queries", "20", "--ef", "32", "256", "--connectivity", "8", "--out", str(tmp_path / "r.json"),
    ]  # fmt: skip
    assert _bench().main(argv) == 0
    assert before == (ann.DTYPE, ann.CONNECTIVITY, ann.EXPANSION_ADD, ann.EXPANSION_SEARCH)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["rows"] == 1500
    assert report["segments"] == [[1, 1500, 1500, 0]]
    assert report["settings"]["connectivity"] == 8
    assert report["index_bytes"] > 0
    assert report["exact_matrix_loads"] == 0
    assert report["numpy_p50_ms"] >= 0
    assert [r["ef"] for r in report["by_ef"]] == [32, 256]
    for row in report["by_ef"]:
        assert 0.0 <= row["recall_at_10"] <= row["recall_at_10_ties"] <= 1.0
        assert row["ann_p50_ms"] > 0
    assert report["by_ef"][1]["recall_at_10_ties"] >= 0.95
    assert not Path(f"{path}.ann").exists()  # built in a temporary folder, removed after

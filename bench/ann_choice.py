"""Why USearch: build time, query p50, recall@10 and file size of the candidate ANN libraries, same vectors.

Compares ``usearch`` (f16 and f32) and ``hnswlib`` (and ``faiss`` when installed) with the same HNSW
settings (M 16, ef_construction 128, ef_search 128) against exact numpy top-10, on a ``.npy`` file of
unit vectors (``bench/scale.py`` caches MiniLM embeddings of its synthetic corpus under /tmp/scale-cache).

    nice -n 10 python bench/ann_choice.py --vectors /tmp/scale-cache/emb-minilm-0-10000.npy
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def _p50(fn: Callable[[int], Any], n: int) -> float:
    samples = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(samples), 3)


def _usearch(data: np.ndarray, queries: np.ndarray, dtype: str, folder: Path) -> dict[str, Any]:
    from usearch.index import Index

    index = Index(ndim=data.shape[1], metric="ip", dtype=dtype, connectivity=16, expansion_add=128,
                  expansion_search=128)  # fmt: skip
    start = time.perf_counter()
    index.add(np.arange(len(data), dtype=np.uint64), data)
    build = time.perf_counter() - start
    file = folder / f"u-{dtype}.usearch"
    index.save(str(file))
    view = Index.restore(str(file), view=True)
    found = [set(np.asarray(view.search(q, 10).keys).tolist()) for q in queries]
    p50 = _p50(lambda i: view.search(queries[i], 10), len(queries))
    size = round(file.stat().st_size / 2**20, 1)
    return {
        "build_s": round(build, 2),
        "query_p50_ms": p50,
        "file_mb": size,
        "found": found,
        "mmap_view": True,
    }


def _hnswlib(data: np.ndarray, queries: np.ndarray, folder: Path) -> dict[str, Any]:
    import hnswlib

    index = hnswlib.Index(space="ip", dim=data.shape[1])
    index.init_index(max_elements=len(data), ef_construction=128, M=16)
    start = time.perf_counter()
    index.add_items(data, np.arange(len(data)))
    build = time.perf_counter() - start
    index.set_ef(128)
    file = folder / "h.bin"
    index.save_index(str(file))
    found = [set(index.knn_query(q, 10)[0][0].tolist()) for q in queries]
    p50 = _p50(lambda i: index.knn_query(queries[i], 10), len(queries))
    size = round(file.stat().st_size / 2**20, 1)
    return {
        "build_s": round(build, 2),
        "query_p50_ms": p50,
        "file_mb": size,
        "found": found,
        "mmap_view": False,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    data = np.load(args.vectors).astype(np.float32)
    rng = np.random.default_rng(args.seed)
    picks = rng.choice(len(data), size=args.queries, replace=False)
    queries = data[picks] + rng.normal(scale=0.02, size=(args.queries, data.shape[1])).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    exact = [set(np.argsort(-(data @ q))[:10].tolist()) for q in queries]
    numpy_p50 = _p50(lambda i: np.argpartition(-(data @ queries[i]), 10)[:10], args.queries)
    report: dict[str, Any] = {"n": len(data), "dim": int(data.shape[1]), "numpy_exact_p50_ms": numpy_p50}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        runs: dict[str, dict[str, Any]] = {}
        if importlib.util.find_spec("usearch"):
            runs["usearch-f16"] = _usearch(data, queries, "f16", folder)
            runs["usearch-f32"] = _usearch(data, queries, "f32", folder)
        if importlib.util.find_spec("hnswlib"):
            runs["hnswlib"] = _hnswlib(data, queries, folder)
    for name, run in runs.items():
        found = run.pop("found")
        run["recall_at_10"] = round(
            sum(len(a & b) for a, b in zip(found, exact, strict=True)) / (10 * len(exact)), 4
        )
        report[name] = run
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

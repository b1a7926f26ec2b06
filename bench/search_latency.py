"""Search latency of the SQLite store on synthetic data: vector, lexical and fused (RRF) top-k.

Builds ``--n`` nodes of one user (random unit vectors of ``--dim``, Zipf-distributed synthetic words)
in a temporary SQLite file, then times ``--queries`` searches of each kind. JSON on stdout.

    python bench/search_latency.py --n 100000
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dualmem.plane import SQLiteStore
from dualmem.types import Node, Tenant

TENANT = Tenant("bench-user")
T0 = dt.datetime(2023, 1, 1, tzinfo=dt.UTC)
RRF_KAPPA = 60


def vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    """Pronounceable synthetic words (consonant-vowel syllables), distinct."""
    consonants, vowels = list("bcdfghjklmnprstvz"), list("aeiou")
    words: dict[str, None] = {}
    while len(words) < size:
        syllables = int(rng.integers(2, 4))
        word = "".join(str(rng.choice(consonants)) + str(rng.choice(vowels)) for _ in range(syllables))
        words[word] = None
    return list(words)


def zipf_words(rng: np.random.Generator, vocab: list[str], count: int) -> list[str]:
    ranks = np.arange(1, len(vocab) + 1)
    weights = 1.0 / ranks
    picks = rng.choice(len(vocab), size=count, p=weights / weights.sum())
    return [vocab[i] for i in picks]


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.standard_normal((n, dim), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def build(store: SQLiteStore, args: argparse.Namespace, rng: np.random.Generator, vocab: list[str]) -> float:
    """Insert ``args.n`` nodes in batches; returns nodes per second."""
    store.bind_embedder("bench-random", args.dim)
    start = time.perf_counter()
    for offset in range(0, args.n, args.batch):
        size = min(args.batch, args.n - offset)
        vectors = unit_rows(rng, size, args.dim)
        lengths = rng.integers(6, 30, size=size)
        words = zipf_words(rng, vocab, int(lengths.sum()))
        cuts = np.concatenate([[0], np.cumsum(lengths)])
        nodes = [
            Node(
                id=f"n{offset + i:08d}",
                tenant=TENANT,
                content=" ".join(words[cuts[i] : cuts[i + 1]]),
                at=T0 + dt.timedelta(minutes=offset + i),
                embedding=vectors[i],
            )
            for i in range(size)
        ]
        store.put_nodes(nodes)
    return float(args.n / (time.perf_counter() - start))


def rrf(rankings: list[list[tuple[str, float]]], k: int) -> list[tuple[str, float]]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, (node_id, _) in enumerate(ranking):
            scores[node_id] = scores.get(node_id, 0.0) + 1.0 / (RRF_KAPPA + rank + 1)
    return sorted(scores.items(), key=lambda item: -item[1])[:k]


def timed(fn: Callable[[int], object], count: int) -> dict[str, float]:
    samples = []
    for i in range(count):
        start = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return {
        "p50_ms": round(statistics.median(samples), 3),
        "p95_ms": round(samples[int(0.95 * (len(samples) - 1))], 3),
        "mean_ms": round(statistics.fmean(samples), 3),
    }


def run(args: argparse.Namespace, path: Path) -> dict[str, object]:
    rng = np.random.default_rng(args.seed)
    vocab = vocabulary(rng, args.vocab)
    with SQLiteStore.open(path) as store:
        inserts_per_s = build(store, args, rng, vocab)
    with SQLiteStore.open(path) as store:  # a fresh process view: cold caches
        queries = unit_rows(rng, args.queries, args.dim)
        texts = [" ".join(zipf_words(rng, vocab[50:], args.query_words)) for _ in range(args.queries)]
        start = time.perf_counter()
        store.vector_search(TENANT, queries[0], args.k)
        cold_ms = (time.perf_counter() - start) * 1000
        pool = max(args.k, args.pool)
        results = {
            "vector_search": timed(lambda i: store.vector_search(TENANT, queries[i], args.k), args.queries),
            "lexical_search": timed(lambda i: store.lexical_search(TENANT, texts[i], args.k), args.queries),
            "fused_rrf": timed(
                lambda i: rrf(
                    [
                        store.vector_search(TENANT, queries[i], pool),
                        store.lexical_search(TENANT, texts[i], pool),
                    ],
                    args.k,
                ),
                args.queries,
            ),
        }
    return {
        "n": args.n,
        "dim": args.dim,
        "queries": args.queries,
        "k": args.k,
        "fusion_pool": pool,
        "insert_nodes_per_s": round(inserts_per_s, 1),
        "vector_cold_load_ms": round(cold_ms, 1),
        "file_mb": round(path.stat().st_size / 2**20, 1),
        **results,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="number of nodes")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--pool", type=int, default=50, help="per-channel depth before RRF")
    parser.add_argument("--batch", type=int, default=1000, help="nodes per put_nodes call")
    parser.add_argument("--vocab", type=int, default=20_000)
    parser.add_argument("--query-words", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dualmem-bench-") as folder:
        report = run(args, Path(folder) / "bench.db")
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

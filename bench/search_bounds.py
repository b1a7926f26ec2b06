"""What the FTS5 posting budget costs and changes at scale (issue 13): stage CPU and top-k agreement.

Opens a built ``bench/scale.py`` file read-only and, for each ``--postings`` budget (the store's
``QUERY_POSTINGS``), runs the same synthetic queries through the store's lexical and context top-50
(the read path's pool depth) and through ``Memory.search`` (top-10), with the decoded-node and context
caches emptied before each query (at 100k a query's candidates are almost never cached). Reported per
budget: CPU ms p50 of each store search and of ``Memory.search`` (and its stage split: lexical,
context, vector, node reads, context reads), the overlap of each top-k with the unbounded run's
(``--postings`` 0 stands for no budget: every term the share rule keeps), and for the store searches
the score recall (``score_recall``: the share of the top-k that the unbounded query scores at least
as high as its own k-th hit; the synthetic text recombines a few thousand turns, so many rows tie).
``--store-only`` skips ``Memory.search`` (at 1M its exact vector search would dominate the run).

    nice -n 10 python bench/search_bounds.py --db /tmp/scale3-cache/db/bulk-hashing-0-100000.db \
        --postings 0 5000 10000 20000 40000 --queries 40
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dualmem import Memory
from dualmem.plane import SQLiteStore
from dualmem.plane import _codec as codec
from dualmem.text.lexical import fts_or
from dualmem.types import Tenant
from scale import USER, Corpus

_STAGES = ("lexical_search", "context_search", "vector_search", "get_nodes", "node_context")
UNBOUNDED = 10**12


class Stages:
    """CPU time spent inside the store's read methods (wrapped on the class, restored by ``close``)."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self._saved = {name: getattr(SQLiteStore, name) for name in _STAGES}
        for name, fn in self._saved.items():
            setattr(SQLiteStore, name, self._wrap(name, fn))

    def _wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[name] += time.process_time() - start

        return inner

    def close(self) -> None:
        for name, fn in self._saved.items():
            setattr(SQLiteStore, name, fn)


def _cpu(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.process_time()
    out = fn()
    return (time.process_time() - start) * 1000, out


def _overlap(a: list[str], b: list[str]) -> float:
    return len(set(a) & set(b)) / len(b) if b else 1.0


def full_scores(store: SQLiteStore, table: str, query: str, ids: list[str]) -> list[float]:
    """The unbounded query's BM25 (``-bm25``) of each of ``ids`` over FTS5 ``table`` (0 for a row that
    holds none of its terms): FTS5's idf and mean length are the whole table's, so a rowid-restricted
    statement gives each row the score the unbounded search gives it."""
    saved = codec.QUERY_POSTINGS
    codec.QUERY_POSTINGS = UNBOUNDED
    try:
        words = store._query_terms(table, query)
    finally:
        codec.QUERY_POSTINGS = saved
    if not ids or not words:
        return [0.0] * len(ids)
    conn = store._conn
    seqs = dict(conn.execute(f"SELECT id, seq FROM nodes WHERE id IN ({','.join('?' * len(ids))})", ids))
    marks = ",".join("?" * len(seqs))
    rows = conn.execute(
        f"SELECT rowid, -bm25({table}) FROM {table} WHERE {table} MATCH ? AND rowid IN ({marks})",
        [fts_or(words), *seqs.values()],
    )
    by_seq = {int(seq): float(score) for seq, score in rows}
    return [by_seq.get(int(seqs[i]), 0.0) for i in ids]


def score_recall(store: SQLiteStore, table: str, query: str, got: list[str], ref: list[str], k: int) -> float:
    """The share of ``got[:k]`` that the unbounded query scores at least as high as its own k-th hit
    (ties count: a bounded search that returns another of equally scored rows loses nothing)."""
    if not ref:
        return 1.0
    floor = full_scores(store, table, query, ref[:k])[-1]
    mine = full_scores(store, table, query, got[:k])
    return sum(score >= floor - 1e-9 for score in mine) / min(k, len(ref))


def run_budget(mem: Memory, queries: list[str], budget: int, *, searches: bool) -> dict[str, Any]:
    codec.QUERY_POSTINGS = budget or UNBOUNDED
    store, tenant = mem.store, Tenant(USER)
    assert isinstance(store, SQLiteStore)
    out: dict[str, Any] = {"lexical": [], "context": [], "search": [], "ms": defaultdict(list)}

    def cold() -> None:
        store._nodes.clear()
        store._contexts.clear()

    for query in queries:
        ms, hits = _cpu(lambda q=query: store.lexical_search(tenant, q, 50))
        out["ms"]["lexical_top50"].append(ms)
        out["lexical"].append([i for i, _ in hits])  # type: ignore[attr-defined]
        ms, hits = _cpu(lambda q=query: store.context_search(tenant, q, 50))
        out["ms"]["context_top50"].append(ms)
        out["context"].append([i for i, _ in hits])  # type: ignore[attr-defined]
    stages = Stages()
    try:
        for query in queries if searches else ():
            cold()
            before = dict(stages.spent)
            ms, found = _cpu(lambda q=query: mem.search(q, user=USER, k=10))
            out["ms"]["search"].append(ms)
            out["search"].append(found.ids)  # type: ignore[attr-defined]
            for name in _STAGES:
                out["ms"][f"search.{name}"].append(1000 * (stages.spent[name] - before.get(name, 0.0)))
    finally:
        stages.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--postings", type=int, nargs="+", default=[0, 5000, 10_000, 20_000, 40_000])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--ann-threshold", type=int, default=None)
    parser.add_argument(
        "--store-only", action="store_true", help="only the store's lexical and context searches (1M)"
    )
    args = parser.parse_args(argv)
    corpus = Corpus(args.data, args.seed)
    queries = [corpus.query() for _ in range(args.queries)]
    default = codec.QUERY_POSTINGS
    report: dict[str, Any] = {"db": str(args.db), "queries": len(queries), "default_postings": default}
    with Memory.open(
        args.db, embedder=args.embedder, answerer=None, profile="builtin", read_only=True
    ) as mem:
        threshold = mem.profile.ann_threshold if args.ann_threshold is None else args.ann_threshold
        mem.store.use_ann(threshold)  # type: ignore[attr-defined]
        for query in [] if args.store_only else queries[:3]:  # warm the process (model, the index)
            mem.search(query, user=USER, k=10)
        searches = not args.store_only
        runs = {budget: run_budget(mem, queries, budget, searches=searches) for budget in [0, *args.postings]}
        codec.QUERY_POSTINGS = default
        assert isinstance(mem.store, SQLiteStore)
        report["budgets"] = _rows(args, runs, mem.store, queries)
    print(json.dumps(report, indent=2))
    return 0


def _rows(
    args: argparse.Namespace, runs: dict[int, dict[str, Any]], store: SQLiteStore, queries: list[str]
) -> list[dict[str, Any]]:
    reference = runs[0]
    rows = []
    for budget in dict.fromkeys([0, *args.postings]):  # the unbounded reference first
        run = runs[budget]
        row: dict[str, Any] = {"postings": budget or "unbounded"}
        row.update({f"{k}_cpu_p50_ms": round(statistics.median(v), 2) for k, v in run["ms"].items()})
        lists = (("lexical", 10), ("lexical", 50), ("context", 10), ("context", 50), ("search", 10))
        for key, depth in lists[:4] if args.store_only else lists:
            pairs = zip(run[key], reference[key], strict=True)
            row[f"{key}_overlap@{depth}"] = round(
                statistics.mean(_overlap(a[:depth], b[:depth]) for a, b in pairs), 4
            )
            if key != "search":
                table = "nodes_fts" if key == "lexical" else "context_fts"
                recalls = [
                    score_recall(store, table, q, a, b, depth)
                    for q, a, b in zip(queries, run[key], reference[key], strict=True)
                ]
                row[f"{key}_score_recall@{depth}"] = round(statistics.mean(recalls), 4)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


if __name__ == "__main__":
    raise SystemExit(main())

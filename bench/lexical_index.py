"""The impact-ordered lexical index against exact FTS5 at scale (issue 13): CPU and top-k agreement.

Opens a built ``bench/scale.py`` file (a COPY: ``--build`` writes the index into it) and runs the same
synthetic queries, for the store's lexical and context top-50 (the read path's pool depth), three ways
in the same process, alternating per query:

- ``exact``: FTS5's plain ranking of every query term (``MATCH ... ORDER BY bm25``, the tenant's rows);
- ``fts5``: the store's FTS5 path without the index (main's: the posting budget of ``_sqlite_terms``);
- ``index``: the store's impact-ordered index (``_sqlite_impact``), for each ``--budgets`` value.

Reported: CPU ms p50 of each, overlap@10/@50 of each with ``exact``, and score recall@10/@50 (the
share of a top-k whose exact score is at least the exact k-th score less 1e-3: the synthetic text
recombines a few thousand turns, so many rows tie). The index scores with the searching user's own
statistics, FTS5 with the whole table's: on a shared file (``--user`` of a users file) ``exact`` is
FTS5's ranking, not the tenant's. ``--search`` also runs ``Memory.search`` (top-10, hashing embedder)
with and without the index and reports its overlap and CPU.

    cp /tmp/scale3-cache/db/bulk-hashing-0-100000.db /tmp/lex5-cache/db/
    nice -n 10 python bench/lexical_index.py --db /tmp/lex5-cache/db/bulk-hashing-0-100000.db --build \
        --queries 40 --search
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dualmem import Memory
from dualmem.plane import SQLiteStore
from dualmem.plane import _codec as codec
from dualmem.plane import _sqlite_impact as impact
from dualmem.plane import _sqlite_sql as sql
from dualmem.text.lexical import content_tokens, fts_or
from dualmem.types import Tenant
from scale import USER, Corpus

_TABLES = {"lexical": "nodes_fts", "context": "context_fts"}


def _cpu(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    out = fn()
    return (time.process_time() - start) * 1000, out


def exact(store: SQLiteStore, table: str, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
    """FTS5's plain BM25 ranking of every query term among the tenant's rows."""
    words = list(dict.fromkeys(content_tokens(query)))[:32]
    if not words:
        return []
    clause, params = sql.tenant_sql(tenant)
    statement = (
        f"SELECT n.id, -bm25({table}) AS score FROM {table} CROSS JOIN nodes n ON n.seq = {table}.rowid "
        f"WHERE {table} MATCH ? AND {clause} ORDER BY score DESC, n.seq LIMIT ?"
    )
    return [(r[0], float(r[1])) for r in store._conn.execute(statement, [fts_or(words), *params, k])]


def _exact_scores(store: SQLiteStore, table: str, query: str, ids: list[str]) -> list[float]:
    words = list(dict.fromkeys(content_tokens(query)))[:32]
    if not ids or not words:
        return [0.0] * len(ids)
    seqs = dict(store._conn.execute(f"SELECT id, seq FROM nodes WHERE id IN ({sql.marks(len(ids))})", ids))
    out = []
    for node_id in ids:  # one rowid a statement: FTS5 answers ``rowid = ?`` by a seek
        row = store._conn.execute(
            f"SELECT -bm25({table}) FROM {table} WHERE {table} MATCH ? AND rowid = ?",
            [fts_or(words), seqs[node_id]],
        ).fetchone()
        out.append(0.0 if row is None else float(row[0]))
    return out


def _agreement(
    store: SQLiteStore, table: str, query: str, got: list[tuple[str, float]], ref: list[tuple[str, float]]
) -> dict[str, float]:
    out: dict[str, float] = {}
    for depth in (10, 50):
        mine, want = [i for i, _ in got[:depth]], [i for i, _ in ref[:depth]]
        out[f"overlap@{depth}"] = len(set(mine) & set(want)) / len(want) if want else 1.0
        if not want:
            out[f"score_recall@{depth}"] = 1.0
            continue
        floor = ref[: len(want)][-1][1]
        scores = _exact_scores(store, table, query, mine)
        out[f"score_recall@{depth}"] = sum(s >= floor - 1e-3 for s in scores) / len(want)
    return out


def run_store(store: SQLiteStore, tenant: Tenant, queries: list[str], budgets: list[int]) -> dict[str, Any]:
    runs: dict[str, dict[str, list[float]]] = {}

    def note(name: str, values: dict[str, float]) -> None:
        for key, value in values.items():
            runs.setdefault(name, {}).setdefault(key, []).append(value)

    for query in queries:
        for kind, table in _TABLES.items():
            search = store.lexical_search if kind == "lexical" else store.context_search
            ms, ref = _cpu(lambda t=table, q=query: exact(store, t, tenant, q, 50))
            note(f"{kind}.exact", {"cpu_ms": ms})
            store.use_lexical_index(0)
            ms, got = _cpu(lambda s=search, q=query: s(tenant, q, 50))
            note(f"{kind}.fts5", {"cpu_ms": ms, **_agreement(store, table, query, got, ref)})
            for budget in budgets:
                store.use_lexical_index(1, budget=budget)
                ms, got = _cpu(lambda s=search, q=query: s(tenant, q, 50))
                note(f"{kind}.index@{budget}", {"cpu_ms": ms, **_agreement(store, table, query, got, ref)})
    return {
        name: {
            key: round(statistics.median(v) if key == "cpu_ms" else statistics.mean(v), 4)
            for key, v in row.items()
        }
        for name, row in runs.items()
    }


def run_search(mem: Memory, user: str, queries: list[str], budget: int) -> dict[str, Any]:
    """``Memory.search`` top-10 three ways: FTS5 as main ranks it (``fts5``), FTS5 with every query
    term and no budget (``exact``: ``QUERY_COMMON_SHARE`` 1, ``QUERY_POSTINGS`` unbounded) and the
    index; caches emptied before each."""
    store = mem.store
    assert isinstance(store, SQLiteStore)
    modes = ("fts5", "exact", "index")
    ms: dict[str, list[float]] = {name: [] for name in modes}
    overlap: dict[str, list[float]] = defaultdict(list)
    for key in ("index_vs_fts5", "index_vs_exact", "fts5_vs_exact"):
        overlap[key] = []
    saved = codec.QUERY_COMMON_SHARE, codec.QUERY_POSTINGS
    for query in queries:
        found = {}
        for name in modes:
            store.use_lexical_index(1 if name == "index" else 0, budget=budget)
            if name == "exact":
                codec.QUERY_COMMON_SHARE, codec.QUERY_POSTINGS = 1.0, 10**12
            store._nodes.clear()
            store._contexts.clear()
            cpu, hits = _cpu(lambda q=query: mem.search(q, user=user, k=10))
            codec.QUERY_COMMON_SHARE, codec.QUERY_POSTINGS = saved
            ms[name].append(cpu)
            found[name] = hits.ids
        texts = {i: n.content for i, n in store.get_nodes({i for ids in found.values() for i in ids}).items()}
        for key in ("index_vs_fts5", "index_vs_exact", "fts5_vs_exact"):
            mine, ref = key.split("_vs_")
            overlap[key].append(len(set(found[mine]) & set(found[ref])) / max(1, len(found[ref])))
            same = Counter(texts[i] for i in found[mine]) & Counter(texts[i] for i in found[ref])
            overlap[f"{key}_by_text"].append(sum(same.values()) / max(1, len(found[ref])))
    return {
        "search_cpu_p50_ms": {k: round(statistics.median(v), 2) for k, v in ms.items()},
        "search_overlap@10": {k: round(statistics.mean(v), 4) for k, v in overlap.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    parser.add_argument("--user", default=USER)
    parser.add_argument("--budgets", type=int, nargs="+", default=[impact.BUDGET])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument(
        "--rescore", type=int, default=impact.RESCORE, help="rows rescored per k when the budget cuts a query"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--build", action="store_true", help="(re)build the index into --db first (a copy!)")
    parser.add_argument("--search", action="store_true", help="also Memory.search with and without it")
    args = parser.parse_args(argv)
    impact.RESCORE = args.rescore
    corpus = Corpus(args.data, args.seed)
    queries = [corpus.query() for _ in range(args.queries)]
    report: dict[str, Any] = {
        "db": str(args.db), "user": args.user, "queries": len(queries), "rescore": args.rescore,
    }  # fmt: skip
    if args.build:
        with SQLiteStore.open(args.db) as store:
            start = time.perf_counter()
            report["build_postings"] = store.build_lexical_index()
            report["build_s"] = round(time.perf_counter() - start, 1)
        print(json.dumps(report), file=sys.stderr, flush=True)
    with SQLiteStore.open(args.db, read_only=True) as store:
        report["lex_blocks_bytes"] = _index_bytes(store)
        report["store"] = run_store(store, Tenant(args.user), queries, args.budgets)
    if args.search:
        with Memory.open(
            args.db, embedder="hashing", answerer=None, profile="builtin", read_only=True
        ) as mem:
            mem.store.use_ann(mem.profile.ann_threshold)  # type: ignore[attr-defined]
            for query in queries[:3]:
                mem.search(query, user=args.user, k=10)
            report.update(run_search(mem, args.user, queries, args.budgets[0]))
    print(json.dumps(report, indent=2))
    return 0


def _index_bytes(store: SQLiteStore) -> int | None:
    """Pages of the index's tables and indexes (dbstat, when this SQLite has it)."""
    try:
        row = store._conn.execute("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE 'lex_%'").fetchone()
    except sqlite3.Error:
        return None
    return None if row is None or row[0] is None else int(row[0])


if __name__ == "__main__":
    raise SystemExit(main())

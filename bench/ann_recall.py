"""Approximate vector search against exact numpy on a built database (issue 13): recall, latency, build.

For one user of an existing SQLite file (e.g. one of ``bench/scale.py --keep``'s), in one run:

- **exact**: the user's whole matrix read once, top-10 by numpy (the yardstick, timed per query as
  ``bench/scale.py`` times it: ``argpartition`` of ``matrix @ q``);
- **the index**: built by the store's own path (``SQLiteStore.use_ann`` + a first vector search) into
  ``--folder`` (default: a temporary folder, so the database's own ``.ann`` is left alone;
  ``--in-place`` uses or builds ``<db>.ann``), with the build settings given (``--dtype``,
  ``--connectivity``, ``--expansion-add``); build wall and CPU seconds, size on disk;
- **per search beam** (``--ef``): the store's ``vector_search`` top-10 for every query (memory-mapped
  segments, candidates rescored exactly), its p50 latency beside numpy's, and recall@10 strict (the
  exact top-10's ids) and counting ties (a hit scoring within 1e-6 of the exact 10th best counts, as
  ann-benchmarks counts distance ties).

Queries: ``--source corpus`` draws ``bench/scale.py``'s synthetic questions (LoCoMo questions with
names swapped), ``--source locomo`` the LoCoMo questions as they are. Searches run on one thread;
builds use the store's build threads.

    nice -n 10 python bench/ann_recall.py --db /tmp/scale3-cache/db/bulk-minilm-0-100000.db \\
        --embedder minilm --queries 300 --source corpus --ef 128 256 384
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dualmem.conversations import load_conversations
from dualmem.embed import create_embedder
from dualmem.plane import SQLiteStore, ann
from dualmem.types import Tenant
from scale import USER, Corpus

TIE = 1e-6


def user_matrix(path: Path, user: str) -> tuple[list[str], npt.NDArray[np.float32]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT node_id, blob FROM vectors WHERE user_id = ? ORDER BY rowid", (user,)
        ).fetchall()
    finally:
        conn.close()
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    return [r[0] for r in rows], matrix


def queries(args: argparse.Namespace) -> list[str]:
    if args.source == "corpus":
        corpus = Corpus(args.data, args.seed)
        return [corpus.query() for _ in range(args.queries)]
    convs = load_conversations(args.data)
    return [qa.question for c in convs for qa in c.questions][: args.queries]


def p50(samples: list[float]) -> float:
    return round(statistics.median(samples), 3)


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return round(int(fh.read().split()[1]) * resource.getpagesize() / 2**20, 1)


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*") if p.is_file())


def exact_top(
    matrix: npt.NDArray[np.float32], qvecs: npt.NDArray[np.float32]
) -> list[tuple[set[int], float]]:
    """Per query: the rows of the exact top-10 (stable order on ties) and the 10th best score."""
    out = []
    for q in qvecs:
        scores = matrix @ q
        top = np.argsort(-scores, kind="stable")[:10]
        out.append(({int(i) for i in top}, float(scores[top[-1]])))
    return out


def search_all(
    store: SQLiteStore, args: argparse.Namespace, ef: int, folder: Path, qvecs: npt.NDArray[np.float32]
) -> tuple[dict[str, object], list[list[str]]]:
    """The store's top-10 for every query with search beam ``ef``, and its latency."""
    ann.EXPANSION_SEARCH = ef
    store.use_ann(args.threshold, folder=folder)  # a fresh index object: segments reopened with ``ef``
    tenant = Tenant(args.user)
    store.vector_search(tenant, qvecs[0], 10)
    ms: list[float] = []
    cpu: list[float] = []
    hits: list[list[str]] = []
    for q in qvecs:
        start, start_cpu = time.perf_counter(), time.process_time()
        found = store.vector_search(tenant, q, 10)
        ms.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
        hits.append([node_id for node_id, _ in found])
    return {"ef": ef, "ann_p50_ms": p50(ms), "ann_cpu_p50_ms": p50(cpu)}, hits


def recall(
    hits: list[list[str]], ids: list[str], matrix: npt.NDArray[np.float32], qvecs: npt.NDArray[np.float32]
) -> dict[str, float]:
    """Recall@10 against the exact top-10: strict (its ids) and counting ties (within ``TIE`` of the
    exact 10th best score, scored on the same matrix)."""
    row_of = {node_id: i for i, node_id in enumerate(ids)}
    strict = tied = 0
    for found, q, (want, tenth) in zip(hits, qvecs, exact_top(matrix, qvecs), strict=True):
        rows = [row_of[node_id] for node_id in found]
        strict += len(want & set(rows))
        tied += sum(float(matrix[r] @ q) >= tenth - TIE for r in rows)
    n = 10 * len(qvecs)
    return {"recall_at_10": round(strict / n, 4), "recall_at_10_ties": round(tied / n, 4)}


def numpy_p50(matrix: npt.NDArray[np.float32], qvecs: npt.NDArray[np.float32]) -> dict[str, float]:
    ms, cpu = [], []
    for q in qvecs:
        start, start_cpu = time.perf_counter(), time.process_time()
        np.argpartition(-(matrix @ q), 10)[:10]
        ms.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return {"numpy_p50_ms": p50(ms), "numpy_cpu_p50_ms": p50(cpu)}


def open_first(args: argparse.Namespace, folder: Path, q: npt.NDArray[np.float32]) -> dict[str, object]:
    """Store open + the first vector search, as the store does it: on a folder without an index this
    builds it (timed, sized); otherwise it opens the segments (memory-mapped)."""
    ann.DTYPE, ann.CONNECTIVITY, ann.EXPANSION_ADD = args.dtype, args.connectivity, args.expansion_add
    start, start_cpu = time.perf_counter(), time.process_time()
    with SQLiteStore.open(args.db, read_only=True) as store:
        store.use_ann(args.threshold, folder=folder)
        store.vector_search(Tenant(args.user), q, 10)
        assert store._ann is not None
        segments = store._ann.segments(args.user)
    return {
        "open_first_search_s": round(time.perf_counter() - start, 2),
        "open_first_search_cpu_s": round(time.process_time() - start_cpu, 2),
        "build_threads": [ann._build_threads(size) for _, _, size, _ in segments],
        "settings": ann._settings(),
        "segments": segments,
        "index_bytes": folder_bytes(folder),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--user", default=USER)
    parser.add_argument("--embedder", default="minilm", help="the embedder the file was built with")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--source", choices=("corpus", "locomo"), default="corpus")
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    parser.add_argument("--seed", type=int, default=11, help="the corpus queries' seed")
    parser.add_argument("--ef", type=int, nargs="+", default=[ann.EXPANSION_SEARCH], help="search beams")
    parser.add_argument("--dtype", default=ann.DTYPE)
    parser.add_argument("--connectivity", type=int, default=ann.CONNECTIVITY)
    parser.add_argument("--expansion-add", type=int, default=ann.EXPANSION_ADD)
    parser.add_argument("--threshold", type=int, default=1, help="ANN from this many nodes (1: always)")
    parser.add_argument("--folder", type=Path, default=None, help="build the index here (default: temporary)")
    parser.add_argument("--in-place", action="store_true", help="use (or build) the database's own .ann")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args(argv)
    if not ann.available():
        parser.error("the scale extra (usearch) is not installed")
    settings = (ann.DTYPE, ann.CONNECTIVITY, ann.EXPANSION_ADD, ann.EXPANSION_SEARCH)
    try:
        report = run(args)
    finally:  # the module's settings as they were (the benchmark sets them per run)
        ann.DTYPE, ann.CONNECTIVITY, ann.EXPANSION_ADD, ann.EXPANSION_SEARCH = settings
    print(json.dumps(report, indent=1))
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


def run(args: argparse.Namespace) -> dict[str, object]:
    texts = queries(args)
    qvecs = np.asarray(create_embedder(args.embedder).embed(texts), dtype=np.float32)
    report: dict[str, object] = {"db": str(args.db), "queries": len(texts), "source": args.source}
    temporary = None
    if args.in_place:
        folder = Path(f"{args.db}.ann")
    else:
        folder = args.folder or Path(temporary := tempfile.mkdtemp(prefix="ann-recall-"))
        folder.mkdir(parents=True, exist_ok=True)
    try:
        # the store alone first (no exact matrix in this process yet): its RSS is the store's
        report.update(open_first(args, folder, qvecs[0]))
        print(json.dumps(report), file=sys.stderr, flush=True)
        with SQLiteStore.open(args.db, read_only=True) as store:
            runs = [search_all(store, args, ef, folder, qvecs) for ef in args.ef]
            report.update(rss_after_searches_mb=rss_mb(), exact_matrix_loads=store._cache.loads)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    ids, matrix = user_matrix(args.db, args.user)
    report.update(rows=len(ids), dim=int(matrix.shape[1]), **numpy_p50(matrix, qvecs))
    rows = [{**figures, **recall(hits, ids, matrix, qvecs)} for figures, hits in runs]
    for row in rows:
        print(json.dumps(row), file=sys.stderr, flush=True)
    report["by_ef"] = rows
    return report


if __name__ == "__main__":
    raise SystemExit(main())

"""Whole searches with SQLite's memory map at several sizes, in the same run (issue 13).

``PRAGMA mmap_size`` lets SQLite read the file's first N bytes through a memory map instead of a
``read()`` into its 2 MB page cache. Each setting runs in fresh processes, the settings alternating
within each round (this machine is shared and noisy: compare the settings of one run, not runs), on
the same file and the same queries (``bench/scale.py``'s corpus), through ``Memory.search`` with the
builtin controller. Each process reports the wall and CPU p50 of its searches and, after them, its
resident anonymous memory and resident file pages (mapped pages of the file count there)::

    python bench/scale.py --sizes 100000 --write-max 0 --embedder hashing --keep /tmp/fx
    python bench/sqlite_mmap.py --db /tmp/fx/bulk-hashing-0-100000.db --embedder hashing \\
        --mmap-mib 0 64 256 1024 --rounds 3 --queries 200
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import USER, Corpus


def child(db: str, embedder: str, mmap_bytes: int, queries: list[str]) -> dict[str, float]:
    from dualmem import Memory, OpenOptions

    options = OpenOptions(mmap_size=mmap_bytes)
    with Memory.open(db, embedder=embedder, answerer=None, profile="builtin", options=options) as mem:
        mem.search("warm up the model and the indexes", user=USER, k=10)
        wall: list[float] = []
        cpu: list[float] = []
        for query in queries:
            w0, c0 = time.perf_counter(), time.process_time()
            mem.search(query, user=USER, k=10)
            wall.append((time.perf_counter() - w0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        with open("/proc/self/status", encoding="ascii") as status:
            kb = {line.split(":")[0]: int(line.split()[1]) for line in status if line.startswith("Rss")}
    return {
        "wall_p50_ms": round(statistics.median(wall), 2),
        "cpu_p50_ms": round(statistics.median(cpu), 2),
        "wall_p95_ms": round(statistics.quantiles(wall, n=20)[-1], 2),
        "rss_anon_mb": round(kb["RssAnon"] / 1024, 1),
        "rss_file_mb": round((kb["RssFile"] + kb.get("RssShmem", 0)) / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="a memory built by bench/scale.py (--keep)")
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    parser.add_argument("--mmap-mib", type=int, nargs="+", default=[0, 64, 256, 1024])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="write OUT.json")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    corpus = Corpus(args.data, args.seed)
    queries = [corpus.query() for _ in range(args.queries)]
    if args.child is not None:
        print(json.dumps(child(args.db, args.embedder, args.child, queries)))
        return 0
    runs: dict[int, list[dict[str, float]]] = {mib: [] for mib in args.mmap_mib}
    for round_no in range(args.rounds):
        order = args.mmap_mib if round_no % 2 == 0 else list(reversed(args.mmap_mib))
        for mib in order:
            cmd = [sys.executable, __file__, "--db", args.db, "--embedder", args.embedder]
            cmd += ["--data", str(args.data), "--queries", str(args.queries), "--seed", str(args.seed)]
            cmd += ["--child", str(mib * 1024 * 1024)]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            runs[mib].append(figures)
            print(json.dumps({"round": round_no + 1, "mmap_mib": mib, **figures}), flush=True)
    summary = {
        str(mib): {
            key: round(statistics.median(run[key] for run in rows), 2)
            for key in ("wall_p50_ms", "cpu_p50_ms", "wall_p95_ms", "rss_anon_mb", "rss_file_mb")
        }
        for mib, rows in runs.items()
    }
    print(json.dumps({"median_over_rounds": summary}, indent=2))
    if args.out is not None:
        args.out.with_suffix(".json").write_text(json.dumps({"runs": runs, "summary": summary}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

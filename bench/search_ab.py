"""``Memory.search`` CPU time of two code trees on one database, alternated in one run (ratios).

Each round runs, once per tree (``PYTHONPATH=<tree>/src``, a fresh subprocess, the order swapped
every round), ``Memory.search`` (k 10) over every question of a LoCoMo conversation on ``--db``
opened read-only (never modified), with the database's stored profile or ``--profile``, after
``--warm`` warm-up searches; each query's embedding is computed afresh (the embedder's cache emptied), as
``bench/pool_latency.py``'s stages do. A worker reports per-query CPU (``time.process_time``: every
thread of the process, the figure a loaded machine distorts least) and wall milliseconds, p50 and
p95. The parent prints each tree's median over rounds of those percentiles and the ratios (second
tree / first), with the load average before and after.

    sqlite3 -readonly research-out/builds/locomo/conv-26-*.sqlite ".backup /tmp/ab/conv-26.sqlite"
    nice -n 10 python bench/search_ab.py --trees /work/main /work/wt-x --db /tmp/ab/conv-26.sqlite \\
        --conversation ../shared/data/locomo/conv-26.json --rounds 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"p50": pick(0.5), "p95": pick(0.95)}


def worker(args: argparse.Namespace) -> None:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    from dualmem import Memory
    from dualmem.conversations import load_conversations

    conv = load_conversations(args.conversation)[0]
    questions = [qa.question for qa in conv.questions][: args.warm + args.questions]
    cpu: list[float] = []
    wall: list[float] = []
    profile = None if args.profile == "stored" else args.profile
    with Memory.open(args.db, embedder=args.embedder, profile=profile, read_only=True) as mem:
        for q in questions[: args.warm]:
            mem.search(q, user=conv.id, k=10)
        retriever = mem._retriever
        for q in questions[args.warm :]:
            retriever.clear_cache()  # embed every query, as pool_latency.py's stages do
            c, w = time.process_time(), time.perf_counter()
            mem.search(q, user=conv.id, k=10)
            cpu.append(1000 * (time.process_time() - c))
            wall.append(1000 * (time.perf_counter() - w))
    print(json.dumps({"cpu_ms": _percentiles(cpu), "wall_ms": _percentiles(wall), "searches": len(cpu)}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trees", nargs=2, type=Path, required=True)
    parser.add_argument("--db", type=Path, required=True, help="a database built from --conversation")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--conversation", type=Path, default=Path("../shared/data/locomo/conv-26.json"))
    parser.add_argument("--questions", type=int, default=150, help="timed searches (after --warm)")
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--embedder", default="minilm", help="the embedder the database was built with")
    parser.add_argument(
        "--profile",
        default="stored",
        help="the profile searched with: 'stored' (the database's own, the default) or a preset / file",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    load_before = [round(x, 2) for x in os.getloadavg()]
    runs: dict[str, list[dict[str, dict[str, float]]]] = {str(t): [] for t in args.trees}
    for r in range(args.rounds):
        order = args.trees if r % 2 == 0 else args.trees[::-1]
        for tree in order:
            env = {**os.environ, "PYTHONPATH": f"{tree.resolve()}/src"}
            command = [sys.executable, __file__, "--worker", "--trees", *map(str, args.trees)]
            command += ["--db", str(args.db), "--conversation", str(args.conversation)]
            command += [
                "--questions",
                str(args.questions),
                "--warm",
                str(args.warm),
                "--embedder",
                args.embedder,
            ]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            runs[str(tree)].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"round {r} {tree}: {runs[str(tree)][-1]}", file=sys.stderr, flush=True)
    figures = [(clock, q) for clock in ("cpu_ms", "wall_ms") for q in ("p50", "p95")]
    medians = {
        t: {f"{clock}_{q}": round(statistics.median(run[clock][q] for run in rs), 3) for clock, q in figures}
        for t, rs in runs.items()
    }
    first, second = (str(t) for t in args.trees)
    out = {
        "trees": [first, second],
        "rounds": args.rounds,
        "db": str(args.db),
        "conversation": str(args.conversation),
        "profile": args.profile,
        "searches": runs[first][0]["searches"],
        "median_over_rounds": medians,
        "ratio_second_over_first": {
            k: round(medians[second][k] / medians[first][k], 4) for k in medians[first]
        },
        "per_round": runs,
        "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

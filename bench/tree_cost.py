"""Write and search cost of two code trees, alternated in one run (ratios on a shared machine).

Each round runs, once per tree (``PYTHONPATH=<tree>/src``, a fresh subprocess, the order swapped
every round), the same workload on a fresh SQLite file: ``add`` of the first ``--turns`` turns of a
conversation file one by one (the builtin profile and controller, ``--embedder``), then ``search``
of each of its questions (k 10). A worker reports CPU seconds (``time.process_time``: every thread
of the process, the figure a loaded machine distorts least) and wall seconds of each part. The
parent prints the per-tree medians and the ratios (second tree / first).

    nice -n 10 python bench/tree_cost.py --trees /work/main /work/wt-x --rounds 5 \\
        --conversation ../shared/data/locomo/conv-26.json --turns 300 --embedder hashing
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def worker(args: argparse.Namespace) -> None:
    from dualmem import Memory
    from dualmem.conversations import load_conversations

    conv = load_conversations(args.conversation)[0]
    turns = conv.observations[: args.turns]
    questions = [qa.question for qa in conv.questions][: args.questions]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "cost.db"
        with Memory.open(db, embedder=args.embedder, controller="builtin", profile="builtin") as mem:
            mem.search("warm up", user=conv.id)
            cpu, wall = time.process_time(), time.perf_counter()
            for o in turns:
                mem.add(
                    o.content, user=conv.id, speaker=o.speaker, at=o.at, session=o.session, turn_id=o.turn_id
                )
            write = (time.process_time() - cpu, time.perf_counter() - wall)
            cpu, wall = time.process_time(), time.perf_counter()
            for q in questions:
                mem.search(q, user=conv.id, k=10)
            search = (time.process_time() - cpu, time.perf_counter() - wall)
    print(
        json.dumps(
            {
                "write_cpu": write[0],
                "write_wall": write[1],
                "search_cpu": search[0],
                "search_wall": search[1],
                "adds": len(turns),
                "searches": len(questions),
            }
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trees", nargs=2, type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--conversation", type=Path, default=Path("../shared/data/locomo/conv-26.json"))
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    runs: dict[str, list[dict[str, float]]] = {str(t): [] for t in args.trees}
    for r in range(args.rounds):
        order = args.trees if r % 2 == 0 else args.trees[::-1]
        for tree in order:
            env = {**os.environ, "PYTHONPATH": f"{tree.resolve()}/src"}
            command = [
                sys.executable,
                __file__,
                "--worker",
                "--trees",
                *map(str, args.trees),
                "--conversation",
                str(args.conversation),
                "--turns",
                str(args.turns),
                "--questions",
                str(args.questions),
                "--embedder",
                args.embedder,
            ]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            runs[str(tree)].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"round {r} {tree}: {runs[str(tree)][-1]}", file=sys.stderr)
    keys = ("write_cpu", "write_wall", "search_cpu", "search_wall")
    medians = {t: {k: statistics.median(run[k] for run in rs) for k in keys} for t, rs in runs.items()}
    first, second = (str(t) for t in args.trees)
    out = {
        "trees": [first, second],
        "rounds": args.rounds,
        "workload": {
            "conversation": str(args.conversation),
            "adds": args.turns,
            "embedder": args.embedder,
            "searches": runs[first][0]["searches"],
        },
        "median_s": medians,
        "ratio_second_over_first": {k: round(medians[second][k] / medians[first][k], 4) for k in keys},
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

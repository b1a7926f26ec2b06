"""Start-up time of the ``dualmem`` command: what a hook or a script pays on every call.

Each case runs as a fresh process, the way the ``dualmem`` console script starts
(``from dualmem.cli.main import main``), ``--runs`` times after ``--warmup`` untimed calls that also
write the bytecode cache (into a temporary ``PYTHONPYCACHEPREFIX``, as an installed package has
one). Cases: an empty Python start (the floor), ``import dualmem``, ``dualmem --version`` and
``dualmem search`` on a small database (``--notes`` notes, the default MiniLM embedder unless
``--embedder`` names another, so the search loads the model). With ``--tree NAME=PATH``
(repeatable) each source tree's ``PATH/src`` is put first on ``PYTHONPATH``, and the trees' calls
alternate within every run, so a before/after comparison shares the machine's noise. Reports the
median and p90 wall time and the median CPU time (user + system) per case and tree. JSON on stdout.

    python bench/cli_startup.py --runs 9 --tree before=/work/main --tree after=.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CLI = "import sys; from dualmem.cli.main import main; sys.exit(main())"
NOTES = [
    "I ride my bike to work every day.",
    "Mira moved to Utrecht in May.",
    "The staging host is called birch.",
    "We use ruff and mypy in CI.",
    "Mira's sister plays the cello.",
    "The payments API returns 429 when rate-limited.",
    "Lunch on Fridays is at the noodle bar.",
    "The release is planned for the 14th.",
]


def _env(tree: Path | None, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), str(tree)])
    return env


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child process (it must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[1:]} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _build(db: Path, env: dict[str, str], n: int, embedder: str) -> None:
    for i in range(n):
        note = NOTES[i % len(NOTES)] + ("" if i < len(NOTES) else f" (note {i})")
        argv = [sys.executable, "-c", CLI, "--db", str(db), "--embedder", embedder, "--user", "u", "-q"]
        argv += ["add", note]
        subprocess.run(argv, env=env, capture_output=True, check=True)


def _cases(db: Path, embedder: str) -> dict[str, list[str]]:
    return {
        "python": [sys.executable, "-c", "pass"],
        "import dualmem": [sys.executable, "-c", "import dualmem"],
        "dualmem --version": [sys.executable, "-c", CLI, "--version"],
        "dualmem search": [
            *(sys.executable, "-c", CLI, "--db", str(db), "--embedder", embedder, "--user", "u"),
            *("search", "bike", "--json"),
        ],
    }


def _summary(walls: list[float], cpus: list[float]) -> dict[str, float]:
    ordered = sorted(walls)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {
        "wall_median_s": round(statistics.median(walls), 3),
        "wall_p90_s": round(p90, 3),
        "wall_min_s": round(ordered[0], 3),
        "cpu_median_s": round(statistics.median(cpus), 3),
    }


def run(
    trees: dict[str, Path | None], *, runs: int, warmup: int, notes: int, embedder: str = "minilm"
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="dualmem-startup-") as tmp:
        root = Path(tmp)
        envs = {name: _env(path, root / f"pycache-{i}") for i, (name, path) in enumerate(trees.items())}
        # each tree writes its own database (a newer tree's schema is one an older tree cannot open)
        dbs = {name: root / f"small-{i}.db" for i, name in enumerate(trees)}
        for name, db in dbs.items():
            _build(db, envs[name], notes, embedder)
        argvs = {name: _cases(db, embedder) for name, db in dbs.items()}
        cases = list(next(iter(argvs.values())))
        samples = {(c, t): ([], []) for c in cases for t in trees}  # type: dict[tuple[str, str], tuple[list[float], list[float]]]
        for case in cases:
            for _ in range(warmup):
                for name in trees:
                    _timed(argvs[name][case], envs[name])
            for _ in range(runs):
                for name in trees:
                    wall, cpu = _timed(argvs[name][case], envs[name])
                    samples[(case, name)][0].append(wall)
                    samples[(case, name)][1].append(cpu)
        return {
            "runs": runs,
            "warmup": warmup,
            "notes": notes,
            "embedder": embedder,
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "trees": {name: str(path) if path else "(installed)" for name, path in trees.items()},
            "results": {case: {name: _summary(*samples[(case, name)]) for name in trees} for case in cases},
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="timed calls per case and tree (default 9)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls first (default 2)")
    parser.add_argument("--notes", type=int, default=20, help="notes in the small database (default 20)")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a source tree to time (its PATH/src first on PYTHONPATH); default: the installed dualmem",
    )
    parser.add_argument(
        "--embedder",
        default="minilm",
        help="the database's embedder (default minilm: a search loads the model)",
    )
    args = parser.parse_args(argv)
    trees: dict[str, Path | None] = {}
    for item in args.tree:
        name, sep, path = item.partition("=")
        if not sep or not name:
            parser.error(f"--tree needs NAME=PATH, got {item!r}")
        trees[name] = Path(path).resolve()
    if not trees:
        trees["installed"] = None
    if args.runs < 1 or args.warmup < 0 or args.notes < 1:
        parser.error("--runs and --notes must be >= 1, --warmup >= 0")
    result = run(trees, runs=args.runs, warmup=args.warmup, notes=args.notes, embedder=args.embedder)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

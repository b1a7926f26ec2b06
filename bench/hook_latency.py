"""Wall time of ``dualmem hook`` as a coding agent runs it: a fresh process per call, warm file cache.

Builds a memory in a temporary directory (the bundled sample conversation plus ``--n`` synthetic
notes, hashing embedder), then times ``--runs`` calls of each case after ``--warmup`` (2) untimed
calls, next to two baselines measured in the same run: an empty Python start and ``import dualmem``
(the floor of any ``dualmem`` command). ``--minilm`` adds ``--full`` on a MiniLM-built memory (loads ONNX).
JSON on stdout.

    python bench/hook_latency.py --runs 15 --n 1000 [--minilm]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

from dualmem import Memory, Profile

PROMPT = json.dumps(
    {"hook_event_name": "UserPromptSubmit", "cwd": "/w/utrecht", "prompt": "Does Mira still eat sushi?"}
)
START = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "cwd": "/w/Biscuit"})
TOPICS = ["the parser", "the release", "the staging host", "ruff", "mypy", "the payments API", "the CI"]


def build(path: Path, *, embedder: str, n: int) -> None:
    prof = Profile.builtin().with_(write__consolidation="off")
    with Memory.open(path, embedder=embedder, profile=prof) as mem:
        sample = resources.files("dualmem.data").joinpath("sample_conversation.json")
        with resources.as_file(sample) as p:
            mem.ingest(p, user="mira")
        notes = [f"Note {i}: we changed {TOPICS[i % len(TOPICS)]} on day {i % 97}." for i in range(n)]
        if notes:
            mem.add_many(notes, user="mira")


def timed(cmd: list[str], stdin: str, runs: int, env: dict[str, str], warmup: int = 2) -> dict[str, Any]:
    def once() -> tuple[float, subprocess.CompletedProcess[str]]:
        started = time.perf_counter()
        done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, check=False)
        return (time.perf_counter() - started) * 1000, done

    for _ in range(warmup):
        once()
    samples, lines = [], 0
    for _ in range(runs):
        ms, done = once()
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr}")
        samples.append(ms)
        lines = len(done.stdout.splitlines())
    samples.sort()
    return {
        "median_ms": round(statistics.median(samples), 1),
        "p90_ms": round(samples[min(len(samples) - 1, int(0.9 * len(samples)))], 1),
        "min_ms": round(samples[0], 1),
        "stdout_lines": lines,
    }


def in_process(argv: list[str], stdin: str, runs: int) -> dict[str, Any]:
    """The hook's own work once its modules are imported: parse, open the store, search, print."""
    from dualmem.cli.main import main as cli

    samples = []
    real_in, real_out = sys.stdin, sys.stdout
    try:
        for i in range(runs + 2):
            sys.stdin, sys.stdout = io.StringIO(stdin), io.StringIO()
            started = time.perf_counter()
            code = cli(argv)
            if i >= 2:
                samples.append((time.perf_counter() - started) * 1000)
            if code != 0:
                raise SystemExit(f"in-process hook failed with {code}")
    finally:
        sys.stdin, sys.stdout = real_in, real_out
    samples.sort()
    return {"median_ms": round(statistics.median(samples), 2), "min_ms": round(samples[0], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument(
        "--n", type=int, default=1000, help="synthetic notes besides the sample (default 1000)"
    )
    parser.add_argument("--minilm", action="store_true", help="also time --full on a MiniLM-built memory")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls of each case first (default 2)")
    args = parser.parse_args()
    py = sys.executable
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="dualmem-hook-bench-") as tmp:
        db = Path(tmp) / "hashing.db"
        build(db, embedder="hashing", n=args.n)
        dm = [
            py,
            "-m",
            "dualmem.cli.main",
            "--db",
            str(db),
            "--user",
            "mira",
            "--embedder",
            "hashing",
            "hook",
        ]
        cases: dict[str, tuple[list[str], str]] = {
            "baseline: python -c pass": ([py, "-c", "pass"], ""),
            "baseline: import dualmem": ([py, "-c", "import dualmem"], ""),
            "hook user-prompt": ([*dm, "user-prompt"], PROMPT),
            "hook session-start": ([*dm, "session-start"], START),
            "hook user-prompt --full (hashing)": ([*dm, "user-prompt", "--full"], PROMPT),
        }
        if args.minilm:
            mini = Path(tmp) / "minilm.db"
            build(mini, embedder="minilm", n=0)
            cmd = [
                py,
                "-m",
                "dualmem.cli.main",
                "--db",
                str(mini),
                "--user",
                "mira",
                "hook",
                "user-prompt",
                "--full",
            ]
            cases["hook user-prompt --full (minilm)"] = (cmd, PROMPT)
        results = {
            name: timed(cmd, stdin, args.runs, env, args.warmup) for name, (cmd, stdin) in cases.items()
        }
        own = {
            "user-prompt": in_process([*dm[3:], "user-prompt"], PROMPT, args.runs),
            "session-start": in_process([*dm[3:], "session-start"], START, args.runs),
        }
    floor = results["baseline: import dualmem"]["median_ms"]
    start = results["baseline: python -c pass"]["median_ms"]
    for r in results.values():
        r["x_import_dualmem"] = round(r["median_ms"] / floor, 2) if floor else None
        r["x_python_start"] = round(r["median_ms"] / start, 2) if start else None
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    out = {
        "memories": args.n + 40,
        "runs": args.runs,
        "cpus": os.cpu_count(),
        "load_1min": load,
        "cases": results,
        "in_process_after_imports": own,
    }
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

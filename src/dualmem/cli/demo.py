"""``dualmem demo``: ingest the bundled sample conversation offline and answer questions over it.

Readable by default (the questions and answers, whatever stdout is: this command is for people);
``--json`` prints the machine output (every answer with its evidence and trace summary). Progress
and the ingest's one line go to stderr.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

from dualmem.cli.options import human_output, open_memory, output_options, progress_for
from dualmem.cli.render import evidence_json, render_demo

__all__ = ["DEMO_QUESTIONS", "cmd_demo", "register"]

DEMO_QUESTIONS = (
    "When did Mira buy a new bicycle, and why?",
    "What is the name of Mira's dog?",
    "Does Mira still eat sushi?",
    "Who helped Mira choose her new bicycle?",
    "When did Biscuit eat a sock?",
    "What is the name of Mira's cat?",
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo",
        help="ingest the bundled sample conversation and answer questions over it",
        parents=[output_options(json_help="print every answer with its evidence as JSON")],
    )
    p.add_argument("--keep", action="store_true", help="keep the demo database (default: a temp file)")
    p.set_defaults(handler=cmd_demo, render=render_demo, human_default=True)


def cmd_demo(args: argparse.Namespace) -> dict[str, Any]:
    sample = resources.files("dualmem.data").joinpath("sample_conversation.json")
    with tempfile.TemporaryDirectory(prefix="dualmem-demo-") as tmp:
        db = args.db if args.keep and args.db else str(Path(tmp) / "demo.db")
        with resources.as_file(sample) as path, open_memory(args, db=db, create=True) as mem:
            user = "demo"
            started = time.perf_counter()
            with progress_for(args, "ingest sample") as progress:
                ids = mem.ingest(path, user=user, on_progress=progress)
            build = time.perf_counter() - started
            if not human_output(args, default=True):  # a terminal reads it once, in the report
                print(f"dualmem demo: stored {len(ids)} turns in {build:.2f} s", file=sys.stderr)
            answers = []
            for q in DEMO_QUESTIONS:
                ans = mem.answer(q, user=user)
                quoted = next((e for e in ans.evidence if ans.used and e.node.id == ans.used[0]), None)
                answers.append(
                    {
                        "question": q,
                        "answer": ans.text,
                        "abstained": ans.abstained,
                        # the memory the answer quotes (first), not merely the top hit
                        "source": None if quoted is None else evidence_json(quoted),
                        "evidence": [evidence_json(e) for e in ans.evidence[:3]],
                        "stop_reason": ans.trace.stop_reason,
                        "controller_calls": ans.trace.controller_calls,
                        "latency_ms": round(ans.trace.latency_ms, 2),
                    }
                )
            return {
                "stored": len(ids),
                "build_seconds": round(build, 3),
                "stats": mem.stats(user=user),
                "answers": answers,
            }

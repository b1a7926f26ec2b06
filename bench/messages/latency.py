"""Search p50 of a 150-word message against a one-line question's, in one run (issue 47).

On one build (``evaluate.py``'s cache), each clean question of a conversation is searched as it is
and inside a ~150-word message (three paragraphs of small talk and news around it, from
``LONG_CHATTER``), alternating, so that both see the same machine state. Prints the p50 of each and
their ratio (target: at most 2).

    python bench/messages/latency.py --corpus locomo --conversation conv-26 --limit 60
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(HERE)]
sys.path.append(str(ROOT / "src"))

import evaluate  # noqa: E402
from evaluate import _build  # noqa: E402

from dualmem.config import Profile  # noqa: E402
from dualmem.conversations import load_conversations  # noqa: E402
from dualmem.memory import Memory  # noqa: E402

LONG_CHATTER: tuple[str, ...] = (
    "Hey, hope your week is going okay! Mine has been a complete blur, honestly. Monday was all "
    "meetings, Tuesday the train was delayed twice, and yesterday I spent the whole evening doing "
    "laundry and trying to get the kids to bed at a reasonable hour, which did not work at all.",
    "Anyway, I finally have a quiet moment with a cup of tea, the rain has stopped for once and the "
    "neighbour's dog is asleep, so I thought I would ask you something that has been on my mind.",
    "Sorry if this is a silly question, I know it's late and you probably get a lot of these. No rush "
    "at all, whenever you get a chance is fine. Thanks so much in advance, you're always a huge help, "
    "and have a lovely evening!",
)


def long_message(question: str) -> str:
    """``question`` inside ~150 words of small talk."""
    return " ".join((LONG_CHATTER[0], LONG_CHATTER[1], question, LONG_CHATTER[2]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="locomo")
    parser.add_argument("--conversation", default="conv-26")
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument("--builds", type=Path, default=Path("/tmp/dualmem-message-builds"))
    parser.add_argument("--out", type=Path, default=None)
    ns = parser.parse_args(argv)
    from research.corpora import CORPORA

    evaluate.REUSE = True  # the evaluation's builds, whatever their key
    conv = next(c for c in load_conversations(CORPORA[ns.corpus].data) if c.id == ns.conversation)
    path = _build(conv, ns.builds / ns.corpus)
    questions = [qa.question for qa in conv.questions if qa.evidence][: ns.limit]
    times: dict[str, list[float]] = {"one line": [], "150-word message": []}
    words = statistics.mean(len(long_message(q).split()) for q in questions)
    with Memory.open(path, answerer=None, profile=Profile.builtin(), read_only=True) as mem:
        mem.search("warm up", user=conv.id, k=10)
        for q in questions:
            for name, text in (("one line", q), ("150-word message", long_message(q))):
                started = time.perf_counter()
                mem.search(text, user=conv.id, k=10)
                times[name].append(1000.0 * (time.perf_counter() - started))
    p50 = {name: statistics.median(ms) for name, ms in times.items()}
    out = {
        "conversation": conv.id,
        "queries": len(questions),
        "message_words_mean": round(words, 1),
        "p50_ms": {k: round(v, 2) for k, v in p50.items()},
        "ratio": round(p50["150-word message"] / p50["one line"], 3),
    }
    print(json.dumps(out, indent=1))
    if ns.out is not None:
        ns.out.parent.mkdir(parents=True, exist_ok=True)
        ns.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

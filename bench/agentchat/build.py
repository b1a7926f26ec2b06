"""Assemble the agent-chat dev corpus: one haystack per persona, in dualmem's conversation format.

``bench/agentchat/src/`` holds what was written by hand for dualmem (no other benchmark was read):
``persona-NN.json`` — one user's sessions with an assistant over months (personal facts that change,
long assistant answers with markdown and code, questions with gold evidence turns and a category) —
and ``fillers.json`` — generic assistant sessions without personal facts. Each haystack is a
persona's sessions with ``--fillers`` filler sessions dated among them (drawn and dated by a seed
from the persona's id, so the build is reproducible), every turn stamped a few minutes after the
previous one. The persona's turn ids (``s2:5``) are kept; fillers get ``f07:3``-style ids.

    python bench/agentchat/build.py            # writes bench/agentchat/haystacks/persona-NN.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import random
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _when(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _iso(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _stamped(session: dict[str, Any], start: dt.datetime, prefix: str | None) -> dict[str, Any]:
    turns = []
    for n, turn in enumerate(session["turns"], start=1):
        out = {
            "speaker": turn["speaker"],
            "text": turn["text"],
            "at": _iso(start + dt.timedelta(minutes=3 * n)),
        }
        if prefix is not None:
            out["id"] = f"{prefix}:{n}"
        turns.append(out)
    return {"id": session["id"], "date": _iso(start), "turns": turns}


def haystack(persona: dict[str, Any], fillers: list[dict[str, Any]], count: int) -> dict[str, Any]:
    """A persona's sessions with ``count`` fillers dated among them (seeded by the persona's id)."""
    seed = int.from_bytes(hashlib.sha256(persona["id"].encode()).digest()[:8], "big")
    rng = random.Random(seed)
    own = [(_when(s["date"]), s, None) for s in persona["sessions"]]
    first, last = min(w for w, _, _ in own), max(w for w, _, _ in own)
    lo, hi = first - dt.timedelta(days=10), last + dt.timedelta(days=10)
    picked = rng.sample(fillers, min(count, len(fillers)))
    dated = []
    for i, filler in enumerate(picked, start=1):
        when = lo + dt.timedelta(seconds=rng.uniform(0, (hi - lo).total_seconds()))
        when = when.replace(second=0, microsecond=0)
        sid = f"f{i:02d}"
        dated.append((when, {"id": sid, "turns": filler["turns"]}, sid))
    sessions = [_stamped(s, w, p) for w, s, p in sorted(own + dated, key=lambda t: t[0])]
    return {
        "format": "dualmem.conversation/1",
        "id": persona["id"],
        "speakers": ["user", "assistant"],
        "sessions": sessions,
        "questions": persona["questions"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=HERE / "src")
    parser.add_argument("--out", type=Path, default=HERE / "haystacks")
    parser.add_argument("--fillers", type=int, default=14, help="filler sessions per haystack")
    ns = parser.parse_args()
    fillers = json.loads((ns.src / "fillers.json").read_text(encoding="utf-8"))
    ns.out.mkdir(parents=True, exist_ok=True)
    for path in sorted(ns.src.glob("persona-*.json")):
        persona = json.loads(path.read_text(encoding="utf-8"))
        built = haystack(persona, fillers, ns.fillers)
        text = json.dumps(built, ensure_ascii=False, indent=1) + "\n"
        (ns.out / path.name).write_text(text, encoding="utf-8")
        turns = sum(len(s["turns"]) for s in built["sessions"])
        sessions, questions = len(built["sessions"]), len(built["questions"])
        print(f"{path.name}: {sessions} sessions, {turns} turns, {questions} questions")


if __name__ == "__main__":
    main()

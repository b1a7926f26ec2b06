"""Validate the CJK dev corpus (bench/cjk/src): every file, its ids, its questions, and the counts.

    python bench/cjk/check.py                 # the whole corpus, with the corpus-wide minimums
    python bench/cjk/check.py FILE_OR_DIR...  # some files (the minimums are not applied)

Exits 1 and prints ``error: <file>: <what>`` for each problem; prints a table of counts per language
and question family.

Rules, per file: the product loader (``dualmem.conversations.load_conversations``) reads it; ``id`` is
the file name and starts with its ``language`` (zh, ja or ko); every message is the user's, in that
language's script; ids run ``m1..mN`` in time order, each ``at`` is on its session's day and later
than the previous message's; sessions are in order. Every question has a known family (category),
evidence naming existing messages (no repeats), an ``asked_at`` after the last message, and at least
``MIN_OTHERS`` other messages of the same user around its evidence; a small-talk (``chatter``)
question has at least two sentences. ``updates`` name existing messages, the new one later.

Corpus-wide (the default folder only): at least 10 Chinese users and 400 Chinese questions, 2
Japanese and 2 Korean users with 40 questions each, and every family in every language.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dualmem.conversations import load_conversations
from dualmem.errors import DualmemError

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
FAMILIES = ("single", "multi", "temporal", "update", "preference", "chatter")
LANGUAGES = ("zh", "ja", "ko")
SPEAKER = "user"
MIN_OTHERS = 28  # messages of the same user besides a question's evidence
#: corpus-wide minimums: language -> (users, questions)
MINIMUMS = {"zh": (10, 400), "ja": (2, 40), "ko": (2, 40)}
SCRIPT = {
    "zh": re.compile(r"[\u4e00-\u9fff]"),
    "ja": re.compile(r"[\u3040-\u30ff]"),  # kana: what tells Japanese from Chinese
    "ko": re.compile(r"[\uac00-\ud7af]"),
}
SENTENCE_END = re.compile(r"[。！？!?.]")
ID = re.compile(r"m(\d+)")


@dataclass
class Stats:
    language: str
    messages: int = 0
    families: Counter[str] = field(default_factory=Counter)


@dataclass
class Result:
    problems: list[str] = field(default_factory=list)
    stats: dict[str, Stats] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def corpus_files(paths: Sequence[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    return files


def _check_file(path: Path, out: Result) -> None:
    def problem(what: str) -> None:
        out.problems.append(f"{path.name}: {what}")

    try:
        load_conversations(path)
    except DualmemError as exc:
        problem(f"the product loader rejects it: {exc}")
        return
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, list):
        problem("one user a file: a JSON object, not a list")
        return
    lang = data.get("language")
    if lang not in LANGUAGES:
        problem(f"language {lang!r} is not one of {', '.join(LANGUAGES)}")
        return
    if data.get("id") != path.stem or not path.stem.startswith(f"{lang}-"):
        problem(f"id {data.get('id')!r} must be the file name ({path.stem!r}) and start with '{lang}-'")
    stats = out.stats[path.stem] = Stats(lang)
    times: dict[str, str] = {}
    last = ""
    previous_day = ""
    for i, session in enumerate(data["sessions"]):
        day = str(session.get("date", ""))[:10]
        if day <= previous_day:
            problem(f"sessions[{i}]: date {session.get('date')} is not after the previous session's")
        previous_day = day
        for turn in session["turns"]:
            tid, at = str(turn.get("id")), str(turn.get("at", ""))
            expected = f"m{len(times) + 1}"
            if tid in times:
                problem(f"message id {tid!r} is used twice")
            elif tid != expected:
                problem(f"message {tid!r}: ids run m1..mN in order, so this one must be {expected!r}")
            if turn["speaker"] != SPEAKER:
                problem(f"message {tid!r}: speaker must be {SPEAKER!r}")
            if at[:10] != day:
                problem(f"message {tid!r}: at {at} is not on its session's day {day}")
            if at <= last:
                problem(f"message {tid!r}: at {at} is not after the previous message ({last})")
            if not SCRIPT[lang].search(turn["text"]):
                problem(f"message {tid!r}: no {lang} script in {turn['text']!r}")
            times[tid] = last = at
    stats.messages = len(times)
    for i, q in enumerate(data.get("questions", [])):
        where = f"questions[{i}]"
        family = q.get("category")
        if family not in FAMILIES:
            problem(f"{where}: family {family!r} is not one of {', '.join(FAMILIES)}")
            continue
        stats.families[family] += 1
        evidence = q.get("evidence")
        if not isinstance(evidence, list) or not evidence:
            problem(f"{where}: evidence must list the messages that hold the answer")
            continue
        for mid in evidence:
            if mid not in times:
                problem(f"{where}: evidence {mid!r} names no message")
        if len(set(evidence)) != len(evidence):
            problem(f"{where}: evidence names a message twice")
        if len(times) - len(set(evidence)) < MIN_OTHERS:
            problem(f"{where}: only {len(times) - len(set(evidence))} other messages (at least {MIN_OTHERS})")
        if str(q.get("asked_at", "")) <= last:
            problem(f"{where}: asked_at {q.get('asked_at')!r} must be after the last message ({last})")
        if not SCRIPT[lang].search(str(q.get("question", ""))):
            problem(f"{where}: no {lang} script in the question")
        if family == "chatter" and len(SENTENCE_END.findall(q["question"])) < 2:
            problem(f"{where}: a chatter question opens with small talk (two sentences or more)")
    for i, u in enumerate(data.get("updates", [])):
        old, new = u.get("old"), u.get("new")
        if old not in times or new not in times:
            problem(f"updates[{i}]: {old!r} or {new!r} names no message")
        elif times[new] <= times[old]:
            problem(f"updates[{i}]: new {new!r} is not later than old {old!r}")


def check(paths: Sequence[Path], *, minimums: bool = False) -> Result:
    out = Result()
    files = corpus_files(paths)
    if not files:
        out.problems.append("no corpus files found")
        return out
    for path in files:
        _check_file(path, out)
    if minimums:
        for lang, (users, questions) in MINIMUMS.items():
            mine = [s for s in out.stats.values() if s.language == lang]
            asked = sum(sum(s.families.values()) for s in mine)
            if len(mine) < users or asked < questions:
                out.problems.append(
                    f"corpus: {lang} has {len(mine)} users and {asked} questions "
                    f"(at least {users} and {questions})"
                )
            for family in FAMILIES:
                if not any(s.families[family] for s in mine):
                    out.problems.append(f"corpus: no {lang} question of family {family!r}")
    return out


def table(stats: dict[str, Stats]) -> str:
    head = ["lang", "users", "msgs", *FAMILIES, "all"]
    rows = [head]
    for lang in [*LANGUAGES, "all"]:
        mine = [s for s in stats.values() if lang in ("all", s.language)]
        if not mine:
            continue
        fam: Counter[str] = sum((s.families for s in mine), Counter())
        rows.append(
            [lang, str(len(mine)), str(sum(s.messages for s in mine))]
            + [str(fam[f]) for f in FAMILIES]
            + [str(sum(fam.values()))]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="files or folders (default: bench/cjk/src)")
    ns = parser.parse_args(argv)
    result = check(ns.paths or [SRC], minimums=not ns.paths)
    for what in result.problems:
        print(f"error: {what}", file=sys.stderr)
    if result.stats:
        print(table(result.stats))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())

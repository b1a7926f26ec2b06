"""Validate the notes corpus (bench/notes/src/*.json) and print a summary of what it holds.

    python bench/notes/check.py                    # every scenario in bench/notes/src
    python bench/notes/check.py path/to/x.json dir/ # given files and folders

Every file must load with the product loader (``dualmem.conversations``) and follow the corpus
format described in bench/notes/README.md: ids ``n1..nN`` in time order, every ``at`` inside its
session's day and strictly increasing, updates and non-updates naming existing notes (an update's
``new`` later than its ``old``; an assistant's suggestion never supersedes a user's statement),
every update chain asked about by a ``current`` question whose ``stale`` lists all its older
versions, ``history`` questions about an older version, ``control`` questions about notes no update
touches. A format problem is printed as ``<file>: <what>`` and makes the exit status 1; soft
expectations (a scenario without history questions, fewer than two controls, long notes) are
printed as warnings and do not fail the check.

The summary table counts scenarios, notes, updates, chains (a latest version with all its older
versions; ``multi`` = chains of three or more versions), non-updates and questions by category, per
domain. ``low-overlap`` is the share of updates whose new note shares at most one content word with
the old one (content words: lowercased letters/digits runs, stopwords and role words such as
"user" removed, a plural ``s`` dropped); ``q-low`` the same for current questions against their
evidence note.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dualmem.conversations import FORMAT, load_conversations
from dualmem.errors import InvalidInput
from dualmem.text.timeparse import parse_time

HERE = Path(__file__).resolve().parent
DOMAINS = ("coding", "assistant", "support")
SPEAKERS = ("agent", "user", "assistant")
CATEGORIES = ("current", "history", "control")
WHY = ("different attribute", "assistant suggestion", "other entity", "adds detail")
NOTES_RANGE = (15, 40)
MIN_SPAN_DAYS = 7
_NOTE_ID = re.compile(r"n([1-9][0-9]*)")
_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
_NOW = re.compile(r"\b(now|currently)\b", re.IGNORECASE)
_STOPWORDS = """a about above after again all also am an and any are as at be been before being below between
    both but by can could did do does doing down during each few for from further had has have having
    he her here hers him his how i if in into is it its itself just me more most my no nor not of off
    on once only or other our ours out over own same she should so some such than that the their them
    then there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours via per still since now currently today
    these days any one get got gets use uses used using user users customer customers agent assistant
    s t don't it's i'm we're they're isn't"""
STOPWORDS = frozenset(_STOPWORDS.split())


def tokens(text: str) -> list[str]:
    """Lowercased word tokens with a trailing possessive or plural ``s`` dropped (also used by BM25)."""
    out = []
    for word in _WORD.findall(text.lower()):
        word = word.removesuffix("'s")
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


def content_words(text: str) -> set[str]:
    return {w for w in tokens(text) if w not in STOPWORDS}


@dataclass
class Stats:
    """What one scenario holds (for the summary table)."""

    domain: str
    notes: int = 0
    words: list[int] = field(default_factory=list)
    updates: int = 0
    low_overlap: int = 0
    chains: int = 0
    multi: int = 0
    non_updates: int = 0
    questions: Counter[str] = field(default_factory=Counter)
    current_low: int = 0
    current_now: int = 0


@dataclass
class Result:
    """Problems (fail the check), warnings (do not) and the stats of every scenario that parsed."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stats: dict[str, Stats] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


class _Scenario:
    """One file's checks; ``fail`` and ``warn`` collect messages prefixed with the file name."""

    def __init__(self, path: Path, result: Result) -> None:
        self.path = path
        self.result = result
        self.at: dict[str, dt.datetime] = {}
        self.speaker: dict[str, str] = {}
        self.text: dict[str, str] = {}

    def fail(self, message: str) -> None:
        self.result.problems.append(f"{self.path.name}: {message}")

    def warn(self, message: str) -> None:
        self.result.warnings.append(f"{self.path.name}: {message}")

    def run(self) -> None:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            self.fail(f"cannot read the file: {exc}")
            return
        before = len(self.result.problems)
        try:
            load_conversations(self.path)
        except InvalidInput as exc:
            self.fail(f"the product loader rejects it: {exc.message}")
        if not isinstance(raw, dict):
            self.fail("a scenario file holds one JSON object")
            return
        stats = self.header(raw)
        if stats is None:
            return
        self.notes(raw, stats)  # its ids and times: what a loader's complaint usually comes from
        if len(self.result.problems) > before:
            return  # the references below would only repeat it
        successors = self.updates(raw.get("updates"), stats)
        self.non_updates(raw.get("non_updates"), successors, stats)
        self.questions(raw.get("questions"), successors, stats)
        self.result.stats[self.path.stem] = stats

    def header(self, raw: dict[str, Any]) -> Stats | None:
        if raw.get("format") != FORMAT:
            self.fail(f"format must be {FORMAT!r}, got {raw.get('format')!r}")
        sid = raw.get("id")
        if sid != self.path.stem:
            self.fail(f"id {sid!r} must equal the file name without .json ({self.path.stem!r})")
            return None
        domain = raw.get("domain")
        prefix = sid.split("-", 1)[0]
        if domain not in DOMAINS:
            self.fail(f"domain must be one of {', '.join(DOMAINS)}, got {domain!r}")
            return None
        if prefix != domain or not re.fullmatch(rf"{domain}-[0-9]{{2,}}", sid):
            self.fail(f"id {sid!r} must be '{domain}-NN' (its domain, a dash, a number)")
        return Stats(domain)

    def notes(self, raw: dict[str, Any], stats: Stats) -> None:
        listed = raw.get("speakers")
        if not isinstance(listed, list) or not listed:
            self.fail("speakers must list the speakers used")
            listed = []
        for who in listed:
            if who not in SPEAKERS:
                self.fail(f"speaker {who!r} is not one of {', '.join(SPEAKERS)}")
        previous: dt.datetime | None = None
        previous_start: dt.datetime | None = None
        session_ids: set[str] = set()
        days: list[dt.date] = []
        for s_index, session in enumerate(raw["sessions"]):
            where = f"sessions[{s_index}]"
            sid, date = session.get("id"), _time(session.get("date"))
            if not isinstance(sid, str) or not sid or sid in session_ids:
                self.fail(f"{where}: every session needs its own id")
            session_ids.add(str(sid))
            if date is None:
                self.fail(f"{where}: date is missing or unreadable")
                continue
            if previous_start is not None and date <= previous_start:
                self.fail(f"{where}: date {_iso(date)} is not after the previous session's")
            previous_start = date
            days.append(date.date())
            for turn in session["turns"]:
                previous = self.note(turn, f"{where}.turns", date, previous)
        used = set(self.speaker.values())
        for who in sorted(set(listed) - used):
            self.fail(f"speaker {who!r} is listed but never speaks")
        for who in sorted(used - set(listed)):
            self.fail(f"speaker {who!r} speaks but is not listed")
        count = len(self.at)
        stats.notes = count
        if not NOTES_RANGE[0] <= count <= NOTES_RANGE[1]:
            self.fail(f"{count} notes; a scenario holds {NOTES_RANGE[0]}-{NOTES_RANGE[1]}")
        if days and (days[-1] - days[0]).days < MIN_SPAN_DAYS:
            self.fail(f"sessions span {(days[-1] - days[0]).days} days; a scenario spans weeks")
        stats.words = [len(t.split()) for t in self.text.values()]
        long = [n for n, t in self.text.items() if len(t.split()) > 40]
        if long:
            self.warn(f"notes longer than 40 words: {', '.join(long)}")

    def note(
        self, turn: dict[str, Any], where: str, date: dt.datetime, previous: dt.datetime | None
    ) -> dt.datetime | None:
        position = len(self.at) + 1
        nid, at, text = turn.get("id"), _time(turn.get("at")), turn.get("text")
        label = f"note {nid!r}" if isinstance(nid, str) else f"{where}: a note"
        if nid != f"n{position}":
            self.fail(f"{label}: ids run n1..nN in order, so this one must be 'n{position}'")
            nid = f"n{position}"
        if at is None:
            self.fail(f"{label}: 'at' is missing or unreadable")
            return previous
        if at.date() != date.date() or at < date:
            self.fail(f"{label}: at {_iso(at)} is not inside its session's day ({_iso(date)} onwards)")
        if previous is not None and at <= previous:
            self.fail(f"{label}: at {_iso(at)} is not after the previous note ({_iso(previous)})")
        if isinstance(text, str) and text != text.strip():
            self.fail(f"{label}: text has leading or trailing blanks")
        self.at[nid] = at
        self.speaker[nid] = str(turn.get("speaker"))
        self.text[nid] = str(text)
        return at

    def _pair(self, item: object, where: str, keys: Sequence[str]) -> tuple[str, str] | None:
        if not isinstance(item, dict):
            self.fail(f"{where}: must be an object with {', '.join(keys)}")
            return None
        for key in keys:
            if not isinstance(item.get(key), str) or not item[key].strip():
                self.fail(f"{where}: {key} must be a non-empty string")
                return None
        old, new = item["old"], item["new"]
        for key, nid in (("old", old), ("new", new)):
            if nid not in self.at:
                self.fail(f"{where}: {key} {nid!r} names no note")
                return None
        if old == new:
            self.fail(f"{where}: old and new are the same note {old!r}")
            return None
        return old, new

    def updates(self, raw: object, stats: Stats) -> dict[str, list[str]]:
        successors: dict[str, list[str]] = defaultdict(list)
        if not isinstance(raw, list):
            self.fail("updates must be a list")
            return successors
        seen: dict[tuple[str, str], str] = {}
        for index, item in enumerate(raw):
            where = f"updates[{index}]"
            pair = self._pair(item, where, ("old", "new", "subject", "attribute"))
            if pair is None:
                continue
            old, new = pair
            if self.at[new] <= self.at[old]:
                self.fail(
                    f"{where}: new {new!r} ({_iso(self.at[new])}) is not later than old {old!r} "
                    f"({_iso(self.at[old])}); an update points forward in time"
                )
                continue
            if self.speaker[new] == "assistant" and self.speaker[old] == "user":
                self.fail(
                    f"{where}: {new!r} is an assistant's suggestion; it never supersedes the user's "
                    f"{old!r} (list the pair in non_updates with why 'assistant suggestion')"
                )
            attribute = item["attribute"].strip().lower()
            if (old, attribute) in seen:
                self.fail(
                    f"{where}: {old!r} is already superseded on {attribute!r} by {seen[old, attribute]!r}"
                )
                continue
            seen[old, attribute] = new
            successors[old].append(new)
            stats.updates += 1
            if len(content_words(self.text[old]) & content_words(self.text[new])) <= 1:
                stats.low_overlap += 1
        return successors

    def non_updates(self, raw: object, successors: dict[str, list[str]], stats: Stats) -> None:
        if not isinstance(raw, list):
            self.fail("non_updates must be a list")
            return
        for index, item in enumerate(raw):
            where = f"non_updates[{index}]"
            pair = self._pair(item, where, ("old", "new", "why"))
            if pair is None:
                continue
            old, new = pair
            stats.non_updates += 1
            if item["why"] not in WHY:
                self.fail(f"{where}: why {item['why']!r} is not one of: {'; '.join(WHY)}")
            if new in successors.get(old, []):
                self.fail(f"{where}: {old!r} -> {new!r} is also listed as an update")
            if item["why"] == "assistant suggestion" and "assistant" not in (
                self.speaker[old],
                self.speaker[new],
            ):
                self.fail(f"{where}: why 'assistant suggestion' but neither note is the assistant's")

    def questions(self, raw: object, successors: dict[str, list[str]], stats: Stats) -> None:
        if not isinstance(raw, list) or not raw:
            self.fail("questions must be a non-empty list")
            return
        older = _ancestors(successors)
        superseded = set(successors)
        touched = superseded | set(older)
        heads = {n for n in older if n not in superseded}
        asked: set[str] = set()
        for index, q in enumerate(raw):
            where = f"questions[{index}]"
            if not isinstance(q, dict):
                self.fail(f"{where}: must be an object")
                continue
            category = q.get("category")
            for key in ("question", "answer"):
                if not isinstance(q.get(key), str) or not q[key].strip():
                    self.fail(f"{where}: {key} must be a non-empty string")
            if category not in CATEGORIES:
                self.fail(f"{where}: category must be one of {', '.join(CATEGORIES)}, got {category!r}")
                continue
            evidence = self._ids(q.get("evidence"), f"{where}.evidence")
            stale = self._ids(q.get("stale", []), f"{where}.stale", allow_empty=True)
            if evidence is None or stale is None:
                continue
            stats.questions[category] += 1
            if category == "current":
                asked |= self._current(q, where, evidence, stale, superseded, older, stats)
            elif stale:
                self.fail(f"{where}: only current questions list stale notes")
            elif category == "history" and not any(e in superseded for e in evidence):
                self.fail(f"{where}: a history question's evidence must include an older version")
            elif category == "control" and any(e in touched for e in evidence):
                changed = ", ".join(e for e in evidence if e in touched)
                self.fail(f"{where}: a control question's evidence must never change, but {changed} does")
        for head in sorted(heads - asked, key=_order):
            chain = ", ".join(sorted(older[head], key=_order))
            self.fail(f"the chain ending in {head!r} (older: {chain}) has no current question")
        stats.chains = len(heads)
        stats.multi = sum(1 for h in heads if len(older[h]) >= 2)
        if not stats.questions["history"] and heads:
            self.warn("no history question")
        if stats.questions["control"] < 2:
            self.warn(f"{stats.questions['control']} control questions (two or more expected)")

    def _current(
        self,
        q: dict[str, Any],
        where: str,
        evidence: list[str],
        stale: list[str],
        superseded: set[str],
        older: dict[str, set[str]],
        stats: Stats,
    ) -> set[str]:
        for e in evidence:
            if e in superseded:
                self.fail(f"{where}: evidence {e!r} is superseded by {', '.join(superseded_by(e, older))}")
                return set()
        heads = [e for e in evidence if e in older]
        if not heads:
            self.fail(f"{where}: a current question's evidence must be the latest version of an update chain")
            return set()
        wanted = set().union(*(older[h] for h in heads))
        if missing := sorted(wanted - set(stale), key=_order):
            self.fail(f"{where}: stale must list every older version; missing {', '.join(missing)}")
        if extra := sorted(set(stale) - wanted, key=_order):
            self.fail(f"{where}: stale {', '.join(extra)} is not an older version of {', '.join(heads)}")
        if len(content_words(q["question"]) & content_words(self.text[heads[0]])) <= 1:
            stats.current_low += 1
        if _NOW.search(q["question"]):
            stats.current_now += 1
        return set(heads)

    def _ids(self, raw: object, where: str, *, allow_empty: bool = False) -> list[str] | None:
        if not isinstance(raw, list) or (not raw and not allow_empty):
            self.fail(f"{where}: must be a {'' if allow_empty else 'non-empty '}list of note ids")
            return None
        bad = [str(i) for i in raw if i not in self.at]
        if bad:
            self.fail(f"{where}: {', '.join(bad)} names no note")
            return None
        return [str(i) for i in raw]


def superseded_by(note: str, older: dict[str, set[str]]) -> list[str]:
    return sorted((h for h, old in older.items() if note in old), key=_order)


def _ancestors(successors: dict[str, list[str]]) -> dict[str, set[str]]:
    """For every note that supersedes something: all the versions before it."""
    direct: dict[str, set[str]] = defaultdict(set)
    for old, news in successors.items():
        for new in news:
            direct[new].add(old)
    out: dict[str, set[str]] = {}
    for note in direct:
        found: set[str] = set()
        todo = list(direct[note])
        while todo:
            n = todo.pop()
            if n not in found:
                found.add(n)
                todo.extend(direct.get(n, ()))
        out[note] = found
    return out


def _order(note: str) -> int:
    m = _NOTE_ID.fullmatch(note)
    return int(m.group(1)) if m else 0


def _time(value: object) -> dt.datetime | None:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return None
    try:
        return parse_time(value)
    except InvalidInput:
        return None


def _iso(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def scenario_files(paths: Iterable[Path]) -> list[Path]:
    """The ``*.json`` files of the given files and folders, sorted by name."""
    out: list[Path] = []
    for path in paths:
        out.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    return out


def check(paths: Iterable[Path]) -> Result:
    """Check every scenario file under ``paths``."""
    result = Result()
    files = scenario_files(paths)
    if not files:
        result.problems.append("no scenario files found")
    for path in files:
        _Scenario(path, result).run()
    return result


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.2f}" if whole else "-"


def table(stats: dict[str, Stats]) -> str:
    """The summary table, one row per domain and a total."""
    heads = ["domain", "scen", "notes", "words", "upd", "low-ovl", "chains", "multi", "non-upd"]
    heads += ["current", "history", "control", "q-low", "q-now"]
    groups: dict[str, list[Stats]] = defaultdict(list)
    for s in stats.values():
        groups[s.domain].append(s)
    rows = [[d, *(_row(groups[d]))] for d in DOMAINS if d in groups]
    rows.append(["all", *_row(list(stats.values()))])
    widths = [max(len(str(r[i])) for r in [heads, *rows]) for i in range(len(heads))]
    lines = ["  ".join(str(c).rjust(w) for c, w in zip(r, widths, strict=True)) for r in [heads, *rows]]
    return "\n".join(lines)


def _row(group: list[Stats]) -> list[str]:
    words = sorted(w for s in group for w in s.words)
    median = words[len(words) // 2] if words else 0
    updates = sum(s.updates for s in group)
    current = sum(s.questions["current"] for s in group)
    return [
        str(len(group)),
        str(sum(s.notes for s in group)),
        str(median),
        str(updates),
        _share(sum(s.low_overlap for s in group), updates),
        str(sum(s.chains for s in group)),
        str(sum(s.multi for s in group)),
        str(sum(s.non_updates for s in group)),
        str(current),
        str(sum(s.questions["history"] for s in group)),
        str(sum(s.questions["control"] for s in group)),
        _share(sum(s.current_low for s in group), current),
        _share(sum(s.current_now for s in group), current),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="columns: words = median words a note; low-ovl = share of updates whose new note shares "
        "<= 1 content word with the old; multi = chains of 3+ versions; q-low = share of current "
        "questions sharing <= 1 content word with their evidence; q-now = share saying now/currently",
    )
    parser.add_argument("paths", nargs="*", type=Path, default=[HERE / "src"], help="files or folders")
    parser.add_argument("--quiet", action="store_true", help="print problems only, no warnings or table")
    ns = parser.parse_args(argv)
    result = check(ns.paths)
    for problem in result.problems:
        print(f"error: {problem}", file=sys.stderr)
    if not ns.quiet:
        for warning in result.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        if result.stats:
            print(table(result.stats))
    if result.problems:
        print(f"{len(result.problems)} problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

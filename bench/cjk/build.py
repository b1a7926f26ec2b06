"""Write the CJK dev corpus (``bench/cjk/src/*.json``) from the hand-written content modules.

    python bench/cjk/build.py            # rewrite bench/cjk/src
    python bench/cjk/build.py --check    # exit 1 if a committed file differs from what it would write

Each user of ``content_zh`` / ``content_ja`` / ``content_ko`` becomes one ``dualmem.conversation/1``
file: their messages to an assistant over six weeks, one session a day, and questions about them.
Every choice (which wording of a message, which day it falls on, which small talk opens a question)
is drawn from a generator seeded by the file's id, so the output is the same on every run.

Timeline (day 0 is a Monday; questions are asked on day 42, the Monday after the last week):
old facts (job, home, tool, commute) fall in the first one or two weeks, the changes later; the
doctor's visit falls on a weekday of the last week and the concert on its weekend (the "上周" /
"先週" / "지난주" questions); every other message falls on any day.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import content_ja  # noqa: E402 - sibling scripts, not a package
import content_ko  # noqa: E402
import content_zh  # noqa: E402

LANGUAGES: dict[str, ModuleType] = {"zh": content_zh, "ja": content_ja, "ko": content_ko}
FAMILIES = ("single", "multi", "temporal", "update", "preference", "chatter")
DAYS = 42
FIRST_MONDAY = dt.date(2025, 3, 3)
SPEAKER = "user"

#: the days a message may fall on (inclusive); keys not listed fall on any day
WHEN: dict[str, tuple[int, int]] = {
    "old_job": (0, 6),
    "old_home": (0, 6),
    "old_tool": (0, 9),
    "old_commute": (1, 9),
    "class1": (2, 13),
    "item_buy": (2, 12),
    "outing1": (3, 15),
    "exam": (3, 30),
    "wedding": (5, 32),
    "trip": (8, 20),
    "health2": (8, 30),
    "new_home": (13, 18),
    "item_problem": (14, 30),
    "class2": (16, 30),
    "outing2": (18, 34),
    "new_commute": (20, 24),
    "new_job": (25, 30),
    "new_tool": (26, 33),
    "doctor": (35, 39),  # a weekday of the last week
    "concert": (40, 41),  # the last weekend
}
#: the minutes of the day a message may fall at (default 07:30-23:30): the concert is "tonight"
MINUTES: dict[str, tuple[int, int]] = {"concert": (1230, 1410)}
#: facts that change: (older message, newer message)
UPDATES = (
    ("old_job", "new_job"),
    ("old_home", "new_home"),
    ("old_tool", "new_tool"),
    ("old_commute", "new_commute"),
)
#: how many fact-free everyday messages each user gets
FILLERS = {"zh": 3, "ja": 4, "ko": 4}
#: how many small-talk questions each user gets
CHATTER = {"zh": 7, "ja": 5, "ko": 5}


def _date(lang: ModuleType, day: dt.date) -> str:
    return str(lang.DATE.format(y=day.year, m=day.month, d=day.day))


def _question(text: str, answer: str, evidence: list[str], family: str, asked: str) -> dict[str, Any]:
    return {"question": text, "answer": answer, "evidence": evidence, "category": family, "asked_at": asked}


def build_user(code: str, index: int, facts: dict[str, str]) -> dict[str, Any]:
    """One user's conversation file (``code``: zh/ja/ko, ``index`` from 1)."""
    lang = LANGUAGES[code]
    cid = f"{code}-{index:02d}"
    rng = random.Random(cid)
    start = FIRST_MONDAY + dt.timedelta(weeks=5 * (index - 1))
    # every message: (day, key, text)
    drafts: list[tuple[int, str, str]] = []
    for key, wordings in lang.MESSAGES.items():
        low, high = WHEN.get(key, (0, DAYS - 1))
        drafts.append((rng.randint(low, high), key, rng.choice(wordings)))
    own: dict[str, Any] = getattr(lang, "OWN", [{}] * index)[index - 1]  # the user's own, written whole
    for key, (text, (low, high)) in own.get("messages", {}).items():
        drafts.append((rng.randint(low, high), key, text))
    for text in rng.sample(lang.FILLERS, FILLERS[code]):
        drafts.append((rng.randint(0, DAYS - 1), "filler", text))
    day_of = {key: day for day, key, _ in drafts}
    values = dict(facts)
    for key, day in day_of.items():  # "{trip_date}": the day a message was written, for answers
        values[f"{key}_date"] = _date(lang, start + dt.timedelta(days=day))
    # times: each message a distinct minute of its day, 07:30-23:30; ids in time order
    stamped = []
    for day, key, text in drafts:
        low, high = MINUTES.get(key, (450, 1410))
        stamped.append((day, rng.randint(low, high), key, text.format(**values)))
    stamped.sort(key=lambda m: (m[0], m[1]))
    sessions: list[dict[str, Any]] = []
    id_of: dict[str, str] = {}
    last: dt.datetime | None = None
    for n, (day, minute, key, text) in enumerate(stamped, start=1):
        at = dt.datetime.combine(start + dt.timedelta(days=day), dt.time()) + dt.timedelta(minutes=minute)
        if last is not None and at <= last:
            at = last + dt.timedelta(minutes=1)
        last = at
        mid = f"m{n}"
        if key != "filler":
            id_of[key] = mid
        stamp = at.strftime("%Y-%m-%dT%H:%M:00Z")
        if not sessions or sessions[-1]["day"] != day:
            sessions.append({"day": day, "id": f"d{day + 1}", "date": stamp, "turns": []})
        sessions[-1]["turns"].append({"id": mid, "speaker": SPEAKER, "text": text, "at": stamp})
    for s in sessions:
        del s["day"]
    asked = (dt.datetime.combine(start + dt.timedelta(days=DAYS), dt.time(9, 0))).strftime(
        "%Y-%m-%dT%H:%M:00Z"
    )
    questions: list[dict[str, Any]] = []
    for family in FAMILIES:
        table = lang.QUESTIONS.get(family, {})
        keys = [k for k, (_, needs, _) in table.items() if all(n in id_of for n in needs)]
        if family == "chatter":
            keys = sorted(rng.sample(keys, min(CHATTER[code], len(keys))), key=keys.index)
        for key in keys:
            wordings, needs, answer = table[key]
            text = rng.choice(wordings).format(**values)
            if family == "chatter":
                talk = rng.sample(lang.SMALLTALK, rng.choice((1, 1, 2, 2, 3)))
                text = lang.JOIN.join([*talk, rng.choice(lang.CONNECTORS) + text])
            questions.append(
                _question(text, answer.format(**values), [id_of[n] for n in needs], family, asked)
            )
        for fam, text, needs, answer in own.get("questions", []):
            if fam == family:
                questions.append(
                    _question(text, answer.format(**values), [id_of[n] for n in needs], family, asked)
                )
    pairs = [*UPDATES, *own.get("updates", [])]
    updates = [{"old": id_of[o], "new": id_of[n]} for o, n in pairs if o in id_of and n in id_of]
    return {
        "format": "dualmem.conversation/1",
        "id": cid,
        "language": code,
        "speakers": [SPEAKER],
        "sessions": sessions,
        "questions": questions,
        "updates": updates,
    }


def build_all() -> dict[str, str]:
    """Every file's name and text."""
    out = {}
    for code, lang in LANGUAGES.items():
        for index, facts in enumerate(lang.USERS, start=1):
            data = build_user(code, index, facts)
            out[f"{data['id']}.json"] = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=HERE / "src", help="folder to write (default bench/cjk/src)"
    )
    parser.add_argument("--check", action="store_true", help="only compare with the files in --out")
    ns = parser.parse_args(argv)
    files = build_all()
    if ns.check:
        stale = [
            n
            for n, text in files.items()
            if not (ns.out / n).exists() or (ns.out / n).read_text("utf-8") != text
        ]
        extra = sorted(p.name for p in ns.out.glob("*.json") if p.name not in files)
        for name in [*stale, *extra]:
            print(f"{name}: differs from what build.py writes", file=sys.stderr)
        return 1 if stale or extra else 0
    ns.out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (ns.out / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} files to {ns.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

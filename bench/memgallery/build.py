"""Convert the Mem-Gallery dialogues into dualmem's conversation format, one haystack per character.

Mem-Gallery (Bei et al., arXiv 2601.03515; MIT licence, see ``../shared/data/memgallery/LICENSE``)
holds 20 files, one per character: dated sessions of rounds (a user message, an assistant message,
sometimes images with captions) and human-annotated questions whose ``clue`` names the rounds that
answer them. Each round becomes one observation:

- turn id: the round id (``"D1:4"``); speaker: the character's name (``character_profile.name``);
- text: the user message, then ``" [image: <caption>]"`` for each caption of the round, then
  ``"\\nAssistant: <assistant message>"``.

Sessions keep their id (``"D1"``) and date. A question keeps ``question`` (with
``" [image: <caption>]"`` appended when it shows an image of its own), ``answer``, ``evidence`` =
its clue rounds (empty for the unanswerable "Not mentioned." ones) and ``category`` = its ``point``
(TTL, VS, FR, MR, AR, VR, TR, KR, CD).

    python bench/memgallery/build.py        # ../shared/data/memgallery -> bench/memgallery/haystacks/
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[1].parent / "shared" / "data" / "memgallery"


def _captions(item: dict[str, Any]) -> list[str]:
    raw = item.get("image_caption")
    if raw is None:
        return []
    captions = [raw] if isinstance(raw, str) else list(raw)
    return [c.strip() for c in captions if isinstance(c, str) and c.strip()]


def _with_images(text: str, item: dict[str, Any]) -> str:
    return text + "".join(f" [image: {c}]" for c in _captions(item))


def convert(raw: dict[str, Any], conv_id: str) -> dict[str, Any]:
    """One Mem-Gallery file (parsed JSON) as a ``dualmem.conversation/1`` object."""
    name = raw["character_profile"]["name"].strip()
    known: set[str] = set()
    sessions = []
    for session in raw["multi_session_dialogues"]:
        turns = []
        for rnd in session["dialogues"]:
            rid = rnd["round"].strip()
            if rid in known:
                raise ValueError(f"{conv_id}: round {rid!r} appears twice")
            known.add(rid)
            text = _with_images(rnd["user"].strip(), rnd) + "\nAssistant: " + rnd["assistant"].strip()
            turns.append({"id": rid, "speaker": name, "text": text})
        sessions.append({"id": session["session_id"], "date": session["date"], "turns": turns})
    questions = []
    for qa in raw["human-annotated QAs"]:
        evidence = [c.strip() for c in qa.get("clue") or []]
        unknown = [c for c in evidence if c not in known]
        if unknown:
            raise ValueError(f"{conv_id}: question {qa['question']!r} names unknown rounds {unknown}")
        questions.append(
            {
                "question": _with_images(qa["question"].strip(), qa),
                "answer": qa["answer"],
                "evidence": evidence,
                "category": qa["point"],
            }
        )
    return {
        "format": "dualmem.conversation/1",
        "id": conv_id,
        "speakers": [name],
        "sessions": sessions,
        "questions": questions,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the Mem-Gallery dialogue files")
    parser.add_argument("--out", type=Path, default=HERE / "haystacks")
    ns = parser.parse_args(argv)
    files = sorted(p for p in ns.data.glob("*.json"))
    if not files:
        raise SystemExit(f"no Mem-Gallery files in {ns.data}")
    ns.out.mkdir(parents=True, exist_ok=True)
    points: Counter[str] = Counter()
    totals = Counter[str]()
    for path in files:
        built = convert(json.loads(path.read_text(encoding="utf-8")), path.stem)
        text = json.dumps(built, ensure_ascii=False, indent=1) + "\n"
        (ns.out / path.name).write_text(text, encoding="utf-8")
        rounds = sum(len(s["turns"]) for s in built["sessions"])
        qs = built["questions"]
        unanswerable = sum(1 for q in qs if not q["evidence"])
        points.update(q["category"] for q in qs)
        totals.update(sessions=len(built["sessions"]), rounds=rounds, questions=len(qs), no_clue=unanswerable)
        print(
            f"{path.stem}: {len(built['sessions'])} sessions, {rounds} rounds, "
            f"{len(qs)} questions ({unanswerable} without clue)"
        )
    print(
        f"total: {len(files)} files, {totals['sessions']} sessions, {totals['rounds']} rounds, "
        f"{totals['questions']} questions ({totals['no_clue']} without clue)"
    )
    print("points: " + ", ".join(f"{p} {n}" for p, n in points.most_common()))


if __name__ == "__main__":
    main()

"""Where do the current and the stale versions of a changed fact rank? dualmem as shipped vs BM25.

    python bench/notes/baseline.py                   # every scenario in bench/notes/src
    python bench/notes/baseline.py --limit 3         # the first three (by file name)
    python bench/notes/baseline.py --out ranks.json  # also every question's ranks

For each scenario an in-memory dualmem memory is built as a user would build it
(``Memory.open(":memory:")``: the default MiniLM embedder, the builtin controller, the default
profile; ``add_many`` of the notes with their speaker and time), and every question is searched
with ``k=40`` (more than any scenario's notes). BM25 (``rank_bm25.BM25Okapi``, the checker's
tokens, stopwords removed) ranks the same notes; ties keep note order. Nothing is fitted or tuned.

Figures: for ``current`` questions, the share where the latest version ranks first, is in the top 3,
and where some stale version ranks above it (a version not returned ranks last); for ``history``
questions, the asked-about old version in the top 3; for ``control`` questions, the evidence first.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rank_bm25 import BM25Okapi

from dualmem import Memory
from dualmem.conversations import load_conversations

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parents[1]))  # the repository root
# the sibling checker by its package path (bench/notes and bench/cjk both have a check.py)
from bench.notes.check import STOPWORDS, scenario_files, tokens  # noqa: E402

K = 40
Ranker = Callable[[str], list[str]]


def _bm25(texts: dict[str, str]) -> Ranker:
    ids = list(texts)
    index = BM25Okapi([_words(texts[i]) or ["_"] for i in ids])

    def rank(query: str) -> list[str]:
        scores = index.get_scores(_words(query))
        order = sorted(range(len(ids)), key=lambda i: -scores[i])  # stable: ties keep note order
        return [ids[i] for i in order]

    return rank


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {value}")
    return value


def _words(text: str) -> list[str]:
    return [w for w in tokens(text) if w not in STOPWORDS]


def _position(ranked: Sequence[str], note: str) -> float:
    return ranked.index(note) + 1 if note in ranked else math.inf


def score(question: dict[str, Any], ranked: Sequence[str]) -> dict[str, Any]:
    """The ranks one question's notes got, and the figures they count towards."""
    first = _position(ranked, question["evidence"][0])
    out: dict[str, Any] = {"rank": None if math.isinf(first) else int(first)}
    category = question["category"]
    if category == "current":
        stale = [_position(ranked, s) for s in question.get("stale", [])]
        out["stale_ranks"] = [None if math.isinf(r) else int(r) for r in stale]
        out["current_first"] = first == 1
        out["current_top3"] = first <= 3
        out["stale_above"] = any(r < first for r in stale)
    elif category == "history":
        out["old_top3"] = first <= 3
    elif category == "control":
        out["control_first"] = first == 1
    return out


def run_scenario(path: Path) -> list[dict[str, Any]]:
    """Every question of one scenario, ranked by dualmem and by BM25."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    conv = load_conversations(path)[0]
    texts = {str(o.turn_id): o.content for o in conv.observations}
    bm25 = _bm25(texts)
    rows = []
    with Memory.open(":memory:") as mem:
        node_ids = mem.add_many(conv.observations, user="notes")
        turn_of = dict(zip(node_ids, texts, strict=True))
        for q in raw["questions"]:
            found = mem.search(q["question"], user="notes", k=K)
            ranked = [turn_of[e.node.id] for e in found.evidence if e.node.id in turn_of]
            rows.append(
                {
                    "scenario": raw["id"],
                    "domain": raw["domain"],
                    "category": q["category"],
                    "question": q["question"],
                    "dualmem": score(q, ranked),
                    "bm25": score(q, bm25(q["question"])),
                }
            )
    return rows


FIGURES = (
    ("current", "current_first", "current first"),
    ("current", "current_top3", "current in top 3"),
    ("current", "stale_above", "stale above current"),
    ("history", "old_top3", "history: old version in top 3"),
    ("control", "control_first", "control first"),
)


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | int]]:
    """``{figure: {"n": questions, "dualmem": share, "bm25": share}}`` over all rows and per domain."""
    out: dict[str, dict[str, float | int]] = {}
    domains = sorted({r["domain"] for r in rows})
    for scope in [None, *domains]:
        picked = [r for r in rows if scope is None or r["domain"] == scope]
        for category, key, label in FIGURES:
            these = [r for r in picked if r["category"] == category]
            if not these:
                continue
            name = label if scope is None else f"{scope}: {label}"
            out[name] = {"n": len(these)}
            for system in ("dualmem", "bm25"):
                out[name][system] = round(sum(bool(r[system][key]) for r in these) / len(these), 3)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[HERE / "src"], help="files or folders")
    parser.add_argument(
        "--limit", type=positive, default=None, metavar="N", help="only the first N scenarios"
    )
    parser.add_argument("--out", type=Path, default=None, help="write every question's ranks (JSON)")
    ns = parser.parse_args(argv)
    files = scenario_files(ns.paths)[: ns.limit]
    if not files:
        parser.error("no scenario files")
    rows = [row for path in files for row in run_scenario(path)]
    figures = summary(rows)
    width = max(len(name) for name in figures)
    print(f"{len(files)} scenarios, {len(rows)} questions")
    print(f"{'figure'.ljust(width)}  {'n':>4}  {'dualmem':>7}  {'bm25':>5}")
    for name, f in figures.items():
        print(f"{name.ljust(width)}  {f['n']:>4}  {f['dualmem']:>7.3f}  {f['bm25']:>5.3f}")
    if ns.out is not None:
        by_scenario: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            by_scenario[row["scenario"]].append(row)
        ns.out.write_text(json.dumps({"figures": figures, "questions": by_scenario}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CJK index terms: overlapping bigrams alone, bigrams and each Han character (the rule), or bigrams
and every character?

Pure lexical retrieval, as the index rule (``dualmem.text.lexical``) and BM25 (``dualmem.plane.
lexindex``) rank: per user of the CJK dev corpus (``bench/cjk/src``), every message is a row, every
question a query over that user's rows (its needed messages among the others). Reports, per
language and variant, the share of each question's needed messages found within the first |needed|
results (``r_at_needed``) and how often the first result is a needed one (``first_hit``).

    python bench/lexical_grams.py --corpus bench/cjk/src --out bench/results/lexical-grams.json
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import dualmem.text.lexical as rule
from dualmem.plane import lexindex


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def _with_unigrams(run: str) -> list[str]:
    return list(run) + ([] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])


def measure(files: list[Path], grams: Callable[[str], list[str]]) -> dict[str, float]:
    """BM25 over each user's messages with ``grams`` as the rule's CJK split."""
    kept = rule._grams
    rule._grams = grams
    rule.porter.cache_clear()
    try:
        found = first = asked = 0.0
        for path in files:
            data = json.loads(path.read_text(encoding="utf-8"))
            rows = {t["id"]: lexindex.terms(t["text"]) for s in data["sessions"] for t in s["turns"]}
            counts = {i: Counter(terms) for i, terms in rows.items()}
            avgdl = sum(map(len, rows.values())) / len(rows)
            for question in data["questions"]:
                score: dict[str, float] = {}
                for phrase in lexindex.phrases(question["question"]):
                    if len(phrase) != 1:
                        continue
                    df = sum(1 for c in counts.values() if c[phrase[0]])
                    for i, c in counts.items():
                        if c[phrase[0]]:
                            part = lexindex.idf(len(rows), df) * lexindex.weight(
                                c[phrase[0]], len(rows[i]), avgdl
                            )
                            score[i] = score.get(i, 0.0) + part
                ranked = [i for i, _ in sorted(score.items(), key=lambda item: -item[1])]
                need = set(question["evidence"])
                asked += 1
                found += len(need & set(ranked[: len(need)])) / len(need)
                first += bool(ranked) and ranked[0] in need
        return {
            "questions": asked,
            "r_at_needed": round(found / asked, 3),
            "first_hit": round(first / asked, 3),
        }
    finally:
        rule._grams = kept
        rule.porter.cache_clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=Path("bench/cjk/src"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for language in ("zh", "ja", "ko"):
        files = sorted(args.corpus.glob(f"{language}-*.json"))
        if files:
            out[language] = {
                "bigrams": measure(files, _bigrams),
                "bigrams_and_han_unigrams (the rule)": measure(files, rule._grams),
                "bigrams_and_unigrams": measure(files, _with_unigrams),
            }
    text = json.dumps(out, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

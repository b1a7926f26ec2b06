"""Cross-validation of the builtin's fitted write heads (``dualmem.learn.write_heads``).

Every judged pair of every dev conversation (its build's relation decisions) is labelled as the
product does (``conversation_rows``; a group is a corpus). Each head is then evaluated two ways:

- leave-one-corpus-out: fitted (L2 and threshold by inner leave-one-corpus-out) on the other
  corpora, scored on the held-out one;
- within-corpus: each fold held out, fitted on every other fold of every corpus.

Reported: ROC AUC, and precision / recall at the chosen threshold (hard negatives passed: labelled
non-updates the head would supersede). ``--out`` writes the heads fitted on every corpus
(``dualmem.write-heads/1``, what ``dualmem calibrate --write-heads-out`` writes).

    python -m research.write_heads --builds research-out/builds --out fitted_weights.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from dualmem.learn.write_heads import (
    HEADS,
    PairRow,
    _xy,
    auc,
    choose_head,
    conversation_rows,
    fit_write_heads,
)
from dualmem.memory import Memory
from research.builds import any_build, embedder
from research.corpora import CORPORA, ENGLISH, conversations, embedder_of, fold_of

__all__ = ["collect", "evaluate", "main"]


def collect(builds: Path, corpora: Sequence[str], limit: int | None = None) -> list[PairRow]:
    """Every judged pair of every conversation, grouped by corpus; the fold in ``conversation``'s
    place is looked up by :func:`folds`."""
    rows: list[PairRow] = []
    for name in corpora:
        for conv in conversations(name, limit):
            path = any_build(conv, builds / name, embedder_of(name))
            with Memory.open(
                path, embedder=embedder(embedder_of(name)), answerer=None, read_only=True
            ) as mem:
                rows += conversation_rows(mem.store, conv, name)
        mine = [r for r in rows if r.group == name]
        ups, rel = sum(r.update for r in mine), sum(r.related for r in mine)
        print(f"{name}: {len(mine)} pairs, {ups} updates, {rel} related", file=sys.stderr)
    return rows


@cache
def _fold_table(name: str) -> dict[str, str]:
    return fold_of(name, [c.id for c in conversations(name)])


def fold(row: PairRow) -> str:
    return _fold_table(row.group)[row.conversation]


def evaluate(rows: Sequence[PairRow], label: str, mode: str) -> list[dict[str, Any]]:
    """Hold out each corpus (``loco``) or fold (``within``); fit on the rest, the rest grouped by
    corpus for the inner choice; score the held-out rows."""
    key = (lambda r: r.group) if mode == "loco" else fold
    out: list[dict[str, Any]] = []
    for held in sorted({key(r) for r in rows}):
        train = [r for r in rows if key(r) != held]
        head = choose_head(train, label)
        test = [r for r in rows if key(r) == held]
        x, y = _xy(test, label)
        if head is None:
            out.append({"held": held, "pairs": len(test), "positives": int(y.sum()), "fitted": False})
            continue
        s = head.score(x)
        pred = s >= head.threshold
        tp = int((pred & (y > 0.5)).sum())
        hard = np.array([r.hard for r in test])
        out.append(
            {
                "held": held,
                "pairs": len(test),
                "positives": int(y.sum()),
                "auc": auc(s, y),
                "threshold": head.threshold,
                "precision": tp / int(pred.sum()) if pred.sum() else None,
                "recall": tp / int(y.sum()) if y.sum() else None,
                "hard_negatives_passed": int((pred & hard).sum()),
            }
        )
    return out


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", type=Path, default=Path("research-out/builds"))
    parser.add_argument("--corpora", nargs="+", default=list(ENGLISH), choices=list(CORPORA))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None, help="write the heads fitted on every corpus")
    parser.add_argument("--report", type=Path, default=None, help="write the CV report (markdown)")
    ns = parser.parse_args(argv)
    rows = collect(ns.builds, ns.corpora, ns.limit)
    lines = ["# Write heads: cross-validation", ""]
    for key, label in HEADS.items():
        for mode in ("loco", "within"):
            lines += ["", f"## {key} ({label}), {mode}", ""]
            lines += [
                "| held out | pairs | pos | AUC | thr | P | R | hard neg passed |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for r in evaluate(rows, label, mode):
                cells = [r["held"], r["pairs"], r["positives"], r.get("auc"), r.get("threshold")]
                cells += [r.get("precision"), r.get("recall"), r.get("hard_negatives_passed")]
                lines.append("| " + " | ".join(map(_fmt, cells)) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if ns.report is not None:
        ns.report.write_text(text, encoding="utf-8")
    if ns.out is not None:
        command = "python -m research.write_heads " + " ".join(sys.argv[1:] if argv is None else argv)
        heads = fit_write_heads(rows, provenance={"command": command, "corpora": list(ns.corpora)})
        heads.save(ns.out)
    _ = replace
    return 0


if __name__ == "__main__":
    sys.exit(main())

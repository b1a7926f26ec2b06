"""Fitting the builtin's write decisions to labels: supersession and relatedness of candidate pairs.

The pairs are the ones the write path really asks about (``research.builds``: each new memory x its
discovered candidates, recorded at build time); their features are the builtin's ``pair`` group
(``dualmem.control.builtin_features``), recomputed from the builds so that a new feature needs no
rebuild. Labels (``research.corpora.labels``):

- ``relation.supersedes``: the pair is an update (the new memory replaces the candidate's value of
  the same attribute): the notes' ``updates`` (with their chains: a later version updates every
  earlier one), the agent chats' knowledge-update and contradiction pairs. Every other judged pair
  is a negative (the notes' ``non_updates`` among them: other attribute, another entity, an
  assistant's suggestion).
- ``relation.semantic`` (and ``consolidate.link_usefulness``): both turns are evidence of one
  question that needs several turns (multi-hop, multi-session).

Each head is a class-balanced logistic (``dualmem.learn.fit_logistic``) over the pair features, its
L2 strength chosen by inner cross-validation over the training corpora. Reported per held-out
corpus (leave-one-corpus-out) and per held-out fold (within-corpus): ROC AUC, and precision/recall at
the decision threshold chosen on the training corpora (best F1). ``--out`` writes the heads fitted
on every corpus as the builtin's weights file overlay (``dualmem.write-heads/1``).

    python -m research.write_heads --builds research-out/builds --out write_heads.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dualmem.control.builtin_features import GROUPS, Features
from dualmem.control.states import EmbeddingFeatures, MemoryState, RelationCandidate, RelationState
from dualmem.learn.fit import fit_logistic
from dualmem.memory import Memory
from dualmem.types import Node
from research.builds import any_build, embedder, load_pairs
from research.corpora import CORPORA, conversations, fold_of, labels

__all__ = ["HEADS", "Example", "collect", "main"]

#: the heads fitted here and the label each reads
HEADS: Mapping[str, str] = {"relation.supersedes": "update", "relation.semantic": "related"}
L2_GRID = (0.1, 1.0, 10.0, 100.0)
NAMES = tuple(sorted(GROUPS["pair"]))


@dataclass(frozen=True, slots=True)
class Example:
    corpus: str
    conversation: str
    fold: str
    new: str
    old: str
    rank: int
    x: tuple[float, ...]
    update: bool
    related: bool
    hard: bool  # a labelled non-update


def _closure(updates: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
    """(new, old) pairs of every chain: a later version updates every earlier one."""
    out = set(updates)
    changed = True
    while changed:
        changed = False
        for a, b in list(out):
            for c, d in list(out):
                if b == c and (a, d) not in out:
                    out.add((a, d))
                    changed = True
    return out


def _pair_x(new: Node, old: Node) -> tuple[float, ...]:
    source = EmbeddingFeatures.of([new, old])
    shared = tuple(sorted(set(new.entities) & set(old.entities)))
    state = RelationState(MemoryState.of(new), (RelationCandidate.of(new, old, shared, source),))
    feats = Features(state, source).get("pair", 0)
    return tuple(float(feats[n]) for n in NAMES)


def collect(
    builds: Path, corpora: Sequence[str], limit: int | None = None
) -> tuple[list[Example], dict[str, Any]]:
    """Every judged pair of every conversation with its features and labels, and label coverage."""
    out: list[Example] = []
    coverage: dict[str, Any] = {}
    for name in corpora:
        convs = conversations(name, limit)
        folds = fold_of(name, [c.id for c in convs])
        labs = labels(name)
        found_updates = total_updates = found_related = total_related = 0
        for conv in convs:
            path = any_build(conv, builds / name)
            lab = labs[conv.id]
            ups = _closure(lab.updates)
            hard = set(lab.non_updates)
            groups = [set(g) for g in lab.co_evidence]
            related = {(a, b) for g in groups for a in g for b in g if a != b}
            pairs = load_pairs(path)
            seen = {(p.new, p.old) for p in pairs}
            total_updates += len(set(lab.updates))
            found_updates += len(set(lab.updates) & seen)
            total_related += len(related) // 2
            found_related += len({frozenset(p) for p in related if p in seen})
            with Memory.open(path, embedder=embedder(), answerer=None, read_only=True) as mem:
                by_turn = {n.turn_id: n for n in mem.nodes(user=conv.id) if n.turn_id}
            for p in pairs:
                a, b = by_turn.get(p.new), by_turn.get(p.old)
                if a is None or b is None:
                    continue
                out.append(
                    Example(
                        name, conv.id, folds[conv.id], p.new, p.old, p.rank, _pair_x(a, b),
                        (p.new, p.old) in ups, (p.new, p.old) in related, (p.new, p.old) in hard,
                    )
                )  # fmt: skip
        coverage[name] = {
            "update_pairs": total_updates,
            "update_pairs_judged": found_updates,
            "related_pairs": total_related,
            "related_pairs_judged": found_related,
        }
        print(f"{name}: {sum(1 for e in out if e.corpus == name)} pairs; {coverage[name]}", file=sys.stderr)
    return out, coverage


# -- fitting and scoring ----------------------------------------------------------------------------


def _xy(rows: Sequence[Example], label: str) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    x = np.array([r.x for r in rows], dtype=np.float64).reshape(len(rows), len(NAMES))
    y = np.array([float(getattr(r, label)) for r in rows])
    return x, y


@dataclass(frozen=True, slots=True)
class Head:
    weights: npt.NDArray[np.float64]
    bias: float
    l2: float

    def score(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        z = x @ self.weights + self.bias
        out: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-z))
        return out


def fit(rows: Sequence[Example], label: str, l2: float) -> Head:
    x, y = _xy(rows, label)
    f = fit_logistic(x, y, l2=l2)
    return Head(np.asarray(f.weights, dtype=np.float64), float(f.bias), l2)


def auc(scores: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float | None:
    pos, neg = scores[y > 0.5], scores[y <= 0.5]
    if not len(pos) or not len(neg):
        return None
    order = np.argsort(np.concatenate([pos, neg]), kind="stable")
    ranks = np.empty(len(order))
    ranks[order] = np.arange(1, len(order) + 1)
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def best_threshold(scores: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    """The score threshold of the best F1 (ties: the higher threshold)."""
    best = (-1.0, 0.5)
    for t in np.unique(np.round(scores, 4)):
        pred = scores >= t
        tp = float((pred & (y > 0.5)).sum())
        if tp == 0:
            continue
        p, r = tp / pred.sum(), tp / (y > 0.5).sum()
        f1 = 2 * p * r / (p + r)
        if f1 >= best[0]:
            best = (f1, float(t))
    return best[1]


def _groups(rows: Sequence[Example], by: str) -> dict[str, list[Example]]:
    out: dict[str, list[Example]] = {}
    for r in rows:
        out.setdefault(getattr(r, by), []).append(r)
    return out


def choose(rows: Sequence[Example], label: str, by: str) -> tuple[Head, float]:
    """The head fitted on ``rows`` with the L2 (and threshold) chosen by inner CV over ``by`` groups."""
    groups = {g: rs for g, rs in _groups(rows, by).items() if any(getattr(r, label) for r in rs)}
    if len(groups) < 2 and by == "corpus":  # one labelled corpus: inner CV over its folds
        return choose(rows, label, "fold")
    best: tuple[float, float] | None = None
    pooled: dict[float, tuple[list[float], list[float]]] = {}
    for l2 in L2_GRID:
        s_all: list[float] = []
        y_all: list[float] = []
        for g in groups:
            train = [r for r in rows if getattr(r, by) != g]
            _, ytr = _xy(train, label)
            if ytr.sum() == 0:
                continue
            head = fit(train, label, l2)
            x, y = _xy([r for r in rows if getattr(r, by) == g], label)
            s_all += head.score(x).tolist()
            y_all += y.tolist()
        pooled[l2] = (s_all, y_all)
        a = auc(np.array(s_all), np.array(y_all)) if s_all else None
        if a is not None and (best is None or a > best[0] + 1e-9):
            best = (a, l2)
    l2 = best[1] if best is not None else 1.0
    s, y = pooled.get(l2, ([], []))
    threshold = best_threshold(np.array(s), np.array(y)) if s else 0.5
    return fit(rows, label, l2), threshold


def evaluate(
    rows: Sequence[Example], label: str, held_by: str, inner_by: str
) -> tuple[list[dict[str, Any]], dict[str, tuple[Head, float]]]:
    """Hold out each ``held_by`` group; fit on the rest (L2 and threshold by inner CV over
    ``inner_by``); score the held-out group."""
    out: list[dict[str, Any]] = []
    heads: dict[str, tuple[Head, float]] = {}
    for g, test in sorted(_groups(rows, held_by).items()):
        train = [r for r in rows if getattr(r, held_by) != g]
        if not any(getattr(r, label) for r in train):
            continue  # nothing to learn from without this group
        head, t = choose(train, label, inner_by)
        heads[g] = (head, t)
        x, y = _xy(test, label)
        s = head.score(x)
        pred = s >= t
        tp = int((pred & (y > 0.5)).sum())
        out.append(
            {
                "held": g,
                "pairs": len(test),
                "positives": int(y.sum()),
                "auc": auc(s, y),
                "threshold": t,
                "l2": head.l2,
                "precision": tp / int(pred.sum()) if pred.sum() else None,
                "recall": tp / int(y.sum()) if y.sum() else None,
                "hard_negatives_passed": int((pred & np.array([r.hard for r in test])).sum()),
            }
        )
    return out, heads


def weights_json(head: Head, threshold: float, at: float) -> dict[str, Any]:
    """The builtin's linear weights of a head, its bias moved so that ``at`` is the chosen threshold
    (the write profile's ``supersede_threshold`` or ``theta_rel`` then decides as the fit did)."""
    shift = math.log(at / (1 - at)) - math.log(threshold / (1 - threshold))
    return {
        "bias": round(head.bias + shift, 6),
        "weights": {n: round(float(w), 6) for n, w in zip(NAMES, head.weights, strict=True) if abs(w) > 1e-9},
    }


def _fmt(v: object) -> str:
    return "-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", type=Path, default=Path("research-out/builds"))
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=list(CORPORA))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None, help="write the heads fitted on every corpus")
    parser.add_argument("--report", type=Path, default=None, help="write the CV report (markdown)")
    ns = parser.parse_args(argv)
    rows, coverage = collect(ns.builds, ns.corpora, ns.limit)
    from dualmem.config import WriteProfile

    wp = WriteProfile()
    at = {"relation.supersedes": wp.supersede_threshold or 0.6, "relation.semantic": wp.theta_rel}
    lines = [
        "# Write heads: cross-validation",
        "",
        "Label coverage (labelled pairs the write path judged):",
        "",
    ]
    lines += [f"- {c}: {json.dumps(v)}" for c, v in coverage.items()]
    fitted: dict[str, Any] = {}
    for key, label in HEADS.items():
        if not any(getattr(r, label) for r in rows):
            lines += ["", f"## {key} ({label}): no labelled pairs in these corpora"]
            continue
        for mode, held, inner in (
            ("leave-one-corpus-out", "corpus", "corpus"),
            ("within-corpus", "fold", "corpus"),
        ):
            res, _ = evaluate(rows, label, held, inner)
            lines += [
                "",
                f"## {key} ({label}), {mode}",
                "",
                "| held out | pairs | pos | AUC | thr | P | R | hard neg passed |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for r in res:
                cells = [r["held"], r["pairs"], r["positives"], r["auc"], r["threshold"], r["precision"]]
                cells += [r["recall"], r["hard_negatives_passed"]]
                lines.append("| " + " | ".join(map(_fmt, cells)) + " |")
        head, t = choose(rows, label, "corpus")
        fitted[key] = weights_json(head, t, at[key])
        fitted[key + "@threshold"] = t
    text = "\n".join(lines) + "\n"
    print(text)
    if ns.report is not None:
        ns.report.write_text(text, encoding="utf-8")
    if ns.out is not None:
        digest = {
            c: hashlib.sha256(
                b"".join(p.read_bytes() for p in sorted(CORPORA[c].data.glob("*.json")))
            ).hexdigest()[:16]
            for c in ns.corpora
        }
        doc = {
            "format": "dualmem.write-heads/1",
            "decisions": {k: v for k, v in fitted.items() if "@" not in k},
            "provenance": {
                "command": "python -m research.write_heads "
                + " ".join(sys.argv[1:] if argv is None else argv),
                "data": digest,
                "pairs": len(rows),
                "thresholds": {k.split("@")[0]: v for k, v in fitted.items() if "@" in k},
                "features": "dualmem.control.builtin_features GROUPS['pair']",
            },
        }
        ns.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

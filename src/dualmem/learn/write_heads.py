"""Fitting the builtin's write decisions to labels: supersession and relatedness of candidate pairs.

The pairs are the ones the write path really asks about: every new memory with the candidates it was
judged against (read back from the relation decisions a build recorded), described by the builtin's
``pair`` features (``dualmem.control.builtin_features``). Labels (``dualmem.conversations``):

- ``relation.supersedes`` (the update head): a conversation's ``updates`` (with their chains: a
  later version replaces every earlier one) and the questions of category ``knowledge_update`` or
  ``contradiction`` whose evidence names the current turn first, then the one it replaced. Every
  other judged pair is a negative, ``non_updates`` among them.
- ``relation.semantic`` (the related head): the evidence turns of one question that needs several
  turns belong together.

Each head is a class-balanced logistic (``fit_logistic``); its L2 strength and decision threshold
are chosen by leave-one-group-out cross-validation (a group: one ``--data`` source of ``dualmem
calibrate``), the threshold at the best F0.5 (precision weighs double: see :data:`BETA`). The bias
is then moved so that the builtin profile's own threshold (``write.supersede_threshold``,
``write.theta_rel``) decides as the chosen one did. A head with fewer than :data:`MIN_POSITIVES`
positives is not fitted, and a fitted head replaces the hand-set one only when its held-out AUC is
higher (the hand-set head scored on the same pairs).

The file (``dualmem.write-heads/1``) holds the heads as the builtin's linear weights with their
provenance; ``BuiltinController(weights=write_heads.weights())`` uses them, and the packaged
``control/fitted_weights.json`` is such a file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dualmem.config import Profile
from dualmem.control.builtin import (
    WRITE_HEADS_FORMAT,
    BuiltinWeights,
    LinearWeights,
    default_weights,
    hand_set_weights,
    with_decisions,
)
from dualmem.control.builtin_features import GROUPS, Features
from dualmem.control.states import EmbeddingFeatures
from dualmem.control.weights import validate_write_heads
from dualmem.conversations import Conversation
from dualmem.errors import ConfigError, InvalidInput
from dualmem.learn.fit import fit_logistic
from dualmem.plane.base import MemoryStore
from dualmem.types import Node, Tenant
from dualmem.write.candidates import Candidate
from dualmem.write.relations import relation_state

__all__ = [
    "FORMAT",
    "HEADS",
    "MIN_POSITIVES",
    "PairRow",
    "WriteHeads",
    "choose_head",
    "conversation_rows",
    "fit_write_heads",
    "judged_pairs",
    "thresholds",
]

FORMAT = WRITE_HEADS_FORMAT
#: each head and the label it reads
HEADS: Mapping[str, str] = {"relation.supersedes": "update", "relation.semantic": "related"}
NAMES: tuple[str, ...] = tuple(sorted(GROUPS["pair"]))
L2_GRID: tuple[float, ...] = (0.1, 1.0, 10.0, 100.0)
MIN_POSITIVES = 20
UPDATE_CATEGORIES = frozenset({"knowledge_update", "contradiction"})


@dataclass(frozen=True, slots=True)
class PairRow:
    """One judged pair: its group (a data source), turns, features (``NAMES``) and labels."""

    group: str
    conversation: str
    new: str
    old: str
    x: tuple[float, ...]
    update: bool
    related: bool
    hard: bool = False  # a labelled non-update


def judged_pairs(store: MemoryStore, tenant: Tenant) -> Iterator[tuple[Node, list[Node]]]:
    """Every node with the candidates its write judged (the relation decisions' other nodes, in order)."""
    nodes = {n.id: n for n in store.iter_nodes(tenant)}
    for node in nodes.values():
        others: dict[str, None] = {}
        for d in store.log.decisions_of(node.id):
            if d.purpose == "relations" and d.other_id is not None:
                others.setdefault(d.other_id)
        cands = [nodes[o] for o in others if o in nodes]
        if cands:
            yield node, cands


def pair_features(node: Node, candidates: Sequence[Node]) -> list[tuple[float, ...]]:
    """The ``pair`` features of ``node`` against each candidate, as the write path computes them."""
    source = EmbeddingFeatures.of([node, *candidates])
    own = set(node.entities)
    found = [
        Candidate(c, 0.0, source.cosine(node.id, c.id), tuple(sorted(own & set(c.entities))))
        for c in candidates
    ]
    feats = Features(relation_state(node, found, source), source)
    return [tuple(float(feats.get("pair", i)[n]) for n in NAMES) for i in range(len(found))]


def _closure(pairs: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """(new, old) pairs with their chains: a later version replaces every earlier one."""
    out = set(pairs)
    while True:
        more = {(a, d) for a, b in out for c, d in out if b == c and (a, d) not in out}
        if not more:
            return out
        out |= more


def conversation_labels(
    conv: Conversation,
) -> tuple[set[tuple[str, str]], set[tuple[str, str]], set[tuple[str, str]]]:
    """(update pairs with their chains, non-update pairs, related pairs) of a conversation, by turn id."""
    updates = set(conv.updates)
    related: set[tuple[str, str]] = set()
    for qa in conv.questions:
        if qa.category in UPDATE_CATEGORIES and len(qa.evidence) >= 2:
            updates.add((qa.evidence[0], qa.evidence[1]))
        if len(qa.evidence) >= 2:
            related |= {(a, b) for a in qa.evidence for b in qa.evidence if a != b}
    return _closure(updates), set(conv.non_updates), related


def conversation_rows(store: MemoryStore, conv: Conversation, group: str) -> list[PairRow]:
    """The labelled pairs of one conversation built in ``store`` (its user: the conversation's id)."""
    updates, hard, related = conversation_labels(conv)
    rows: list[PairRow] = []
    for node, cands in judged_pairs(store, Tenant(conv.id)):
        if node.turn_id is None:
            continue
        for cand, x in zip(cands, pair_features(node, cands), strict=True):
            pair = (node.turn_id, cand.turn_id or "")
            rows.append(PairRow(group, conv.id, *pair, x, pair in updates, pair in related, pair in hard))
    return rows


# -- fitting ----------------------------------------------------------------------------------------


def _xy(rows: Sequence[PairRow], label: str) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    x = np.array([r.x for r in rows], dtype=np.float64).reshape(len(rows), len(NAMES))
    return x, np.array([float(getattr(r, label)) for r in rows])


@dataclass(frozen=True, slots=True)
class Head:
    """A logistic head on the pair features, with the threshold its cross-validation chose."""

    weights: tuple[float, ...]
    bias: float
    l2: float
    threshold: float
    cv_auc: float | None = None  # the pooled leave-one-group-out AUC of the chosen L2

    def score(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        z = np.clip(x @ np.asarray(self.weights) + self.bias, -500, 500)
        out: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-z))
        return out

    def linear(self, at: float) -> LinearWeights:
        """The builtin's weights, the bias moved so that a score of ``at`` is this head's threshold."""
        shift = _logit(at) - _logit(self.threshold)
        return LinearWeights(
            round(self.bias + shift, 6),
            tuple((n, round(w, 6)) for n, w in zip(NAMES, self.weights, strict=True) if abs(w) > 1e-9),
        )


def _logit(p: float) -> float:
    p = min(1 - 1e-6, max(1e-6, p))
    return math.log(p / (1 - p))


def _fit(rows: Sequence[PairRow], label: str, l2: float, threshold: float = 0.5) -> Head:
    x, y = _xy(rows, label)
    f = fit_logistic(x, y, l2=l2)
    return Head(tuple(float(w) for w in f.weights), float(f.bias), l2, threshold)


def auc(scores: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float | None:
    """The probability that a positive outscores a negative (ties count half)."""
    pos, neg = scores[y > 0.5], scores[y <= 0.5]
    if not len(pos) or not len(neg):
        return None
    both = np.concatenate([pos, neg])
    order = both.argsort(kind="stable")
    ranks = np.empty(len(both))
    ranks[order] = np.arange(1, len(both) + 1)
    for value in np.unique(both):  # average the ranks of ties
        tied = both == value
        ranks[tied] = ranks[tied].mean()
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


#: the threshold favours precision (F-beta with beta 0.5): a wrong supersession demotes a fact that
#: still holds, while a missed one is still ranked right when a question matches both versions
#: (``read.likely_update``)
BETA = 0.5


def best_threshold(scores: npt.NDArray[np.float64], y: npt.NDArray[np.float64], beta: float = BETA) -> float:
    """The threshold of the best F-beta over the scores seen (ties: the higher threshold)."""
    best = (-1.0, 0.5)
    positives = float((y > 0.5).sum())
    b2 = beta * beta
    for t in np.unique(np.round(scores, 4)):
        pred = scores >= t
        tp = float((pred & (y > 0.5)).sum())
        if tp == 0:
            continue
        p, r = tp / float(pred.sum()), tp / positives
        f = (1 + b2) * p * r / (b2 * p + r)
        if f >= best[0]:
            best = (f, float(t))
    return best[1]


def choose_head(rows: Sequence[PairRow], label: str) -> Head | None:
    """The head fitted on every row, its L2 and threshold by leave-one-group-out (over conversations
    when one group holds every positive; ``None``: too few positives)."""
    if sum(1 for r in rows if getattr(r, label)) < MIN_POSITIVES:
        return None
    groups = sorted({r.group for r in rows if getattr(r, label)})
    key = "group"
    if len(groups) < 2:  # one labelled source: its conversations are the inner folds
        key = "conversation"
        groups = sorted({r.conversation for r in rows if getattr(r, label)})
        if len(groups) < 2:
            return None
    best: tuple[float, float, float] | None = None  # (auc, l2, threshold)
    for l2 in L2_GRID:
        scores: list[float] = []
        labels: list[float] = []
        for g in groups:
            train = [r for r in rows if getattr(r, key) != g]
            _, ytr = _xy(train, label)
            if not ytr.any():
                continue
            x, y = _xy([r for r in rows if getattr(r, key) == g], label)
            scores += _fit(train, label, l2).score(x).tolist()
            labels += y.tolist()
        s, y_all = np.array(scores), np.array(labels)
        a = auc(s, y_all)
        if a is not None and (best is None or a > best[0] + 1e-9):
            best = (a, l2, best_threshold(s, y_all))
    if best is None:
        return None
    head = _fit(rows, label, best[1], best[2])
    return Head(head.weights, head.bias, head.l2, head.threshold, best[0])


@dataclass(frozen=True, slots=True)
class WriteHeads:
    """Fitted write heads as the builtin's linear weights, with where they came from."""

    decisions: Mapping[str, LinearWeights]
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def weights(self, base: BuiltinWeights | None = None) -> BuiltinWeights:
        """``base`` (the packaged weights by default) with these heads in place of its own."""
        return with_decisions(base or default_weights(), self.decisions)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "decisions": {
                k: {"bias": w.bias, "weights": dict(w.weights)} for k, w in sorted(self.decisions.items())
            },
            "provenance": dict(self.provenance),
        }

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")

    @classmethod
    def from_file(cls, path: Path) -> WriteHeads:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read write heads {path}: {exc}") from exc
        heads = validate_write_heads(data, source=str(path))
        return cls(BuiltinWeights.of(heads.as_weights(), source=str(path)).decisions, dict(heads.provenance))


def _linear_scores(w: LinearWeights, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    given = dict(w.weights)
    z = np.clip(x @ np.array([given.get(n, 0.0) for n in NAMES]) + w.bias, -500, 500)
    out: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-z))
    return out


def thresholds() -> dict[str, float]:
    """The builtin profile's decision threshold of each head (the fitted bias maps to it)."""
    profile = Profile.for_backend("builtin").write
    return {"relation.supersedes": profile.supersede_threshold or 0.6, "relation.semantic": profile.theta_rel}


def fit_write_heads(rows: Sequence[PairRow], *, provenance: Mapping[str, Any] | None = None) -> WriteHeads:
    """Every head of :data:`HEADS` the rows support (see ``choose_head``), in the builtin's form."""
    if not rows:
        raise InvalidInput("no judged pairs to fit write heads on", hint="give conversations with labels")
    at = thresholds()
    decisions: dict[str, LinearWeights] = {}
    fitted: dict[str, Any] = {}
    hand = hand_set_weights()
    for key, label in HEADS.items():
        head = choose_head(rows, label)
        positives = sum(1 for r in rows if getattr(r, label))
        if head is None:
            fitted[key] = {"fitted": False, "positives": positives, "why": "too few labelled pairs"}
            continue
        x, y = _xy(rows, label)
        kept = hand.decisions.get(key)
        hand_auc = None if kept is None else auc(_linear_scores(kept, x), y)
        info = {"positives": positives, "l2": head.l2, "threshold": head.threshold, "cv_auc": head.cv_auc}
        info["hand_set_auc"] = hand_auc
        if hand_auc is not None and head.cv_auc is not None and head.cv_auc <= hand_auc:
            # the fitted head, held out, ranks the pairs no better than the hand-set one
            fitted[key] = {
                "fitted": False,
                **info,
                "why": "cross-validated AUC not above the hand-set head's",
            }
            continue
        decisions[key] = head.linear(at[key])
        fitted[key] = {"fitted": True, **info}
    prov = {
        **(provenance or {}),
        "pairs": len(rows),
        "groups": sorted({r.group for r in rows}),
        "heads": fitted,
    }
    return WriteHeads(decisions, prov)

"""A learned abstention gate: decline to answer when the evidence is unlikely to hold the answer.

The gate is a logistic model over features of what System Two sees (the question, the ranked
evidence and the answerer's draft), never the question's category or gold answer:

=================  ===========================================================================
draft_abstained    the answerer itself declined
names              the question names a person (a capitalised word that is an evidence speaker)
named_top          the top evidence is spoken by a person the question names
named_share        share of the top 5 spoken by a person the question names
named_used         the evidence the draft relies on is spoken by a person the question names
named_absent       the question has a capitalised name found in no evidence (speaker or text)
cover_top          share of the question's topic words in the top evidence
cover_top3         share of them in the top 3
cover_all          share of them anywhere in the evidence
cover_used         share of them in the evidence the draft relies on
rank_used          1 / (1 + rank) of the first evidence the draft relies on (0 without one)
=================  ===========================================================================

Topic words are the question's content words minus the evidence speakers' names. The features use
the evidence's order, not its scores, so the gate means the same whichever scorer ranked it.
``dualmem calibrate`` fits it (labels: LoCoMo's adversarial questions are the ones to decline) and
the threshold with it; :class:`GatedAnswerer` wraps any answerer with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dualmem import _json as bounded_json
from dualmem.errors import ConfigError
from dualmem.reason.base import ABSTAIN_TEXT, Answerer, Draft
from dualmem.text.lexical import content_tokens
from dualmem.types import Evidence

__all__ = [
    "ABSTAIN_FEATURES",
    "FORMAT",
    "AbstentionGate",
    "GatedAnswerer",
    "abstention_features",
    "choose_threshold",
    "fit_gate",
]

FORMAT = "dualmem.abstain/1"

ABSTAIN_FEATURES: tuple[str, ...] = (
    "draft_abstained",
    "names",
    "named_top",
    "named_share",
    "named_used",
    "named_absent",
    "cover_top",
    "cover_top3",
    "cover_all",
    "cover_used",
    "rank_used",
)

_CAPITAL = re.compile(r"\b[A-Z][a-z]+\b")
_QUESTION_WORDS = frozenset(
    re.findall(
        r"[a-z]+",
        "what when where who whom whose which why how did does do is are was were has have had can could "
        "would will should in on at for the a an and or but if by of to with from as",
    )
)


def _names(question: str) -> set[str]:
    """Capitalised words of the question that are not its first word or a question word."""
    words = _CAPITAL.findall(question)
    return {w.lower() for w in words if w.lower() not in _QUESTION_WORDS}


def _cover(topic: set[str], evidence: Sequence[Evidence]) -> float:
    if not topic:
        return 0.0
    got: set[str] = set()
    for ev in evidence:
        got |= set(content_tokens(ev.node.content)) & topic
    return len(got) / len(topic)


def abstention_features(question: str, evidence: Sequence[Evidence], draft: Draft) -> dict[str, float]:
    """The gate's features (``ABSTAIN_FEATURES``) of one answered question, all in [0, 1]."""
    speakers = {ev.node.speaker.lower(): ev for ev in evidence if ev.node.speaker}
    speaker_tokens = {t for s in speakers for t in content_tokens(s)}
    names = _names(question)
    named = names & speakers.keys()
    topic = set(content_tokens(question)) - speaker_tokens

    def is_named(ev: Evidence) -> bool:
        return bool(ev.node.speaker) and (ev.node.speaker or "").lower() in named

    by_id = {ev.node.id: (rank, ev) for rank, ev in enumerate(evidence)}
    used = [by_id[i] for i in draft.used if i in by_id]
    text = " ".join(ev.node.content.lower() for ev in evidence)
    absent = [n for n in names - speakers.keys() if n not in text]
    top5 = evidence[:5]
    return {
        "draft_abstained": float(draft.abstained),
        "names": float(bool(named)),
        "named_top": float(bool(evidence) and is_named(evidence[0])),
        "named_share": sum(map(is_named, top5)) / len(top5) if top5 else 0.0,
        "named_used": float(any(is_named(ev) for _, ev in used)),
        "named_absent": float(bool(absent)),
        "cover_top": _cover(topic, evidence[:1]),
        "cover_top3": _cover(topic, evidence[:3]),
        "cover_all": _cover(topic, evidence),
        "cover_used": _cover(topic, [ev for _, ev in used]),
        "rank_used": 1.0 / (1.0 + min(r for r, _ in used)) if used else 0.0,
    }


def _row(values: Mapping[str, float], names: Sequence[str]) -> npt.NDArray[np.float64]:
    return np.array([values[n] for n in names], dtype=np.float64)


@dataclass(frozen=True, slots=True)
class AbstentionGate:
    """``sigmoid(bias + w · features) >= threshold`` means: decline to answer."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.features) != len(self.weights) or set(self.features) - set(ABSTAIN_FEATURES):
            raise ConfigError(
                "an abstention gate needs one weight per known feature",
                hint=f"features: {', '.join(ABSTAIN_FEATURES)}",
            )
        if not all(math.isfinite(v) for v in (*self.weights, self.bias, self.threshold)):
            raise ConfigError("abstention gate weights and threshold must be finite numbers")
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigError("the abstention threshold must lie in [0, 1]")

    def probability(self, values: Mapping[str, float]) -> float:
        """The gate's probability that the evidence does not hold the answer."""
        z = self.bias + float(_row(values, self.features) @ np.asarray(self.weights))
        return 0.5 * (1.0 + math.tanh(0.5 * z))

    def abstains(self, values: Mapping[str, float]) -> bool:
        return self.probability(values) >= self.threshold

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "features": {f: round(w, 6) for f, w in zip(self.features, self.weights, strict=True)},
            "bias": round(self.bias, 6),
            "threshold": round(self.threshold, 6),
            "provenance": dict(self.provenance),
        }

    @classmethod
    def from_json(cls, data: object, *, source: str = "abstention gate") -> AbstentionGate:
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ConfigError(f"{source}: expected a {FORMAT} object")
        feats, bias, threshold = data.get("features"), data.get("bias", 0.0), data.get("threshold")
        if not isinstance(feats, Mapping) or not feats:
            raise ConfigError(f"{source}: 'features' must be a non-empty object of weights")
        values = [*feats.values(), bias, threshold]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            raise ConfigError(f"{source}: weights, bias and threshold must be numbers")
        prov = data.get("provenance", {})
        return cls(
            tuple(str(k) for k in feats),
            tuple(float(v) for v in feats.values()),
            float(bias),
            float(threshold),  # type: ignore[arg-type]
            dict(prov) if isinstance(prov, Mapping) else {},
        )

    @classmethod
    def from_file(cls, path: Path) -> AbstentionGate:
        return cls.from_json(bounded_json.load_file(path, "the abstention gate"), source=str(path))


def choose_threshold(
    probs: Sequence[float], decline: Sequence[bool], *, max_false: float | None = None
) -> float:
    """The threshold that maximises correct minus false abstention (Youden's J) on these examples;
    with ``max_false``, the one with the most correct abstention whose false-abstention rate (on
    the examples that should be answered) stays within ``max_false``."""
    p = np.asarray(probs, dtype=np.float64)
    y = np.asarray(decline, dtype=bool)
    if not y.any() or y.all():
        return 1.0
    best = (-2.0, 1.0)
    for tau in np.unique(np.concatenate([p, [1.0]])):
        correct, false = float(np.mean(p[y] >= tau)), float(np.mean(p[~y] >= tau))
        if max_false is not None and false > max_false:
            continue
        j = correct if max_false is not None else correct - false
        if j > best[0] + 1e-12:
            best = (j, float(tau))
    return best[1]


def fit_gate(
    rows: Sequence[Mapping[str, float]],
    decline: Sequence[bool],
    *,
    l2: float = 1.0,
    max_false: float | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> AbstentionGate:
    """Fit the gate on answered questions (``decline``: the evidence cannot hold the answer) and
    its threshold on the same examples (:func:`choose_threshold`, ``max_false`` passed on)."""
    from dualmem.learn.fit import fit_logistic

    x = np.stack([_row(r, ABSTAIN_FEATURES) for r in rows])
    y = np.asarray(decline, dtype=np.float64)
    fit = fit_logistic(x, y, l2=l2)
    z = x @ fit.weights + fit.bias
    # the answer is declined when the answerer abstains or the gate fires: thresholds count both
    probs = np.maximum(0.5 * (1.0 + np.tanh(0.5 * z)), x[:, ABSTAIN_FEATURES.index("draft_abstained")])
    threshold = choose_threshold(probs.tolist(), [bool(v) for v in decline], max_false=max_false)
    return AbstentionGate(
        ABSTAIN_FEATURES,
        tuple(float(w) for w in fit.weights),
        fit.bias,
        threshold,
        dict(provenance or {"l2": l2, "max_false": max_false}),
    )


class GatedAnswerer:
    """An answerer whose drafts pass the abstention gate: a draft the gate rejects becomes the
    abstain sentence. It sees what the inner answerer sees (the question and the evidence)."""

    def __init__(self, inner: Answerer, gate: AbstentionGate) -> None:
        self.inner = inner
        self.gate = gate
        self.name = f"{inner.name}+gate"

    def answer(self, question: str, evidence: Sequence[Evidence]) -> Draft:
        draft = self.inner.answer(question, evidence)
        if draft.abstained or not self.gate.abstains(abstention_features(question, evidence, draft)):
            return draft
        return Draft(ABSTAIN_TEXT, abstained=True, input_tokens=draft.input_tokens,
                     output_tokens=draft.output_tokens)  # fmt: skip

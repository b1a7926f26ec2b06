"""The builtin System-One backend: a transparent, deterministic, feature-based decider.

This is NOT a language model. It answers every decision of :mod:`dualmem.control.catalog` from
cheap features of the typed state (:mod:`dualmem.control.states`) and its FeatureSource (embedding
similarity and lexical overlap by node id), entity overlap, time deltas,
regular-expression cues such as causal connectives, negations, preference and
procedural verbs, question words, evidence coverage of the query, depth). Each Noul is
``sigmoid(bias + sum(w_f * f))``; each Choice label gets a logit the same way and the answer is
their softmax. The weights are data (``builtin_weights.json``), hand-set, and its outputs are
scores, not calibrated probabilities: use ``Profile.for_backend("builtin")`` for its thresholds.
Similarity features are centred for the default all-MiniLM-L6-v2 embedder (where unrelated chat
turns already have a cosine near 0.4); see ``builtin_features.PAIR_SIM_FLOOR``.

It dispatches on ``question.key`` and ``question.target`` only, never on question names, text or
order, so every answer depends only on (state, key, target) and batches are independent.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

import numpy as np

from dualmem.control.base import BaseController
from dualmem.control.builtin_features import GROUPS, Features, group_of
from dualmem.control.questions import (
    Answer,
    Batch,
    BatchResult,
    Choice,
    ChoiceAnswer,
    Noul,
    NoulAnswer,
    Question,
)
from dualmem.control.ranker import Ranker
from dualmem.control.scorers import default_ranker
from dualmem.control.states import FeatureSource, Purpose, State, TraversalState, WireFeatures, parse_state
from dualmem.control.weights import (
    WRITE_HEADS_FORMAT,
    LinearSpec,
    WeightsFile,
    read_weights,
    validate_weights,
    validate_write_heads,
)
from dualmem.errors import ConfigError, ControllerError, UnknownDecision

__all__ = [
    "VETOES",
    "WRITE_HEADS_FORMAT",
    "BuiltinController",
    "BuiltinWeights",
    "ChoiceWeights",
    "Head",
    "LinearWeights",
    "default_weights",
    "features_of",
    "fitted_heads",
    "hand_set_weights",
    "with_decisions",
]


class Head(Protocol):
    """A scorer that replaces the builtin's linear head for one Noul decision (e.g. a learned model).

    Called with the batch's typed state, the question's target (the candidate index, or ``None``)
    and the batch's FeatureSource; returns a score, clipped to [0, 1]. It must depend on nothing
    else, so the independence contract holds.
    """

    def __call__(self, state: State, target: int | None, source: FeatureSource) -> float: ...


_LEARNED_KEY = "traverse.relevance"

#: constraints the weights cannot learn from the dev data (too rare there) and no update may break:
#: a new text about another person ("my sister moved") does not replace what its speaker said of
#: themself, and an assistant's suggestion does not replace what the user stated; such a pair's
#: supersession score is 0 whatever the weights say (hand-set, documented in docs/architecture.md)
VETOES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"relation.supersedes": ("other_person", "other_role")}
)

_VERSION = "1"
_WEIGHTS_FILE = "builtin_weights.json"


@dataclass(frozen=True, slots=True)
class LinearWeights:
    """``bias + sum(weights[f] * features[f])`` over a feature group."""

    bias: float
    weights: tuple[tuple[str, float], ...]

    def logit(self, features: Mapping[str, float]) -> float:
        total = self.bias
        for name, w in self.weights:
            total += w * features[name]
        return total


@dataclass(frozen=True, slots=True)
class ChoiceWeights:
    """One linear logit per label of a Choice decision, in label order."""

    labels: tuple[tuple[str, LinearWeights], ...]

    @property
    def label_set(self) -> frozenset[str]:
        return frozenset(label for label, _ in self.labels)

    def distribution(self, features: Mapping[str, float]) -> dict[str, float]:
        logits = [(label, w.logit(features)) for label, w in self.labels]
        top = max(v for _, v in logits)
        exps = [(label, math.exp(v - top)) for label, v in logits]
        total = sum(e for _, e in exps)
        return {label: e / total for label, e in exps}


@dataclass(frozen=True, slots=True)
class BuiltinWeights:
    """The validated contents of a weights file: Noul decisions and Choice decisions by key."""

    version: str
    decisions: Mapping[str, LinearWeights]
    choices: Mapping[str, ChoiceWeights]

    @classmethod
    def from_json(cls, data: object, *, source: str = "weights") -> BuiltinWeights:
        """Parsed JSON validated by the file's model (``control.weights``), then ``of``."""
        return cls.of(validate_weights(data, source=source), source=source)

    @classmethod
    def of(cls, model: WeightsFile, *, source: str = "weights") -> BuiltinWeights:
        """A validated file's weights, checked for what only the decider knows: each key's decision
        family and its features, no key both Noul and Choice. Raises ``ConfigError`` naming the bad
        entry."""
        decisions = {
            key: _linear(spec, key=key, where=f"{source}: decisions.{key}")
            for key, spec in model.decisions.items()
        }
        choices = {
            key: ChoiceWeights(
                tuple(
                    (lab, _linear(s, key=key, where=f"{source}: choices.{key}.{lab}"))
                    for lab, s in labels.items()
                )
            )
            for key, labels in model.choices.items()
        }
        both = set(decisions) & set(choices)
        if both:
            raise ConfigError(f"{source}: keys both Noul and Choice: {sorted(both)}")
        return cls(_VERSION, MappingProxyType(decisions), MappingProxyType(choices))

    @classmethod
    def from_file(cls, path: Path) -> BuiltinWeights:
        """Read and validate a weights file."""
        try:
            data = read_weights(path.read_text(encoding="utf-8"), source=str(path))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read builtin weights {path}: {exc}") from exc
        return cls.from_json(data, source=str(path))


def _linear(spec: LinearSpec, *, key: str, where: str) -> LinearWeights:
    group = group_of(key)
    if group is None:
        raise ConfigError(
            f"{where}: unknown decision family of {key!r}",
            hint="keys start with typing., relation., consolidate., route., traverse., stop. or message.",
        )
    bad = sorted(set(spec.weights) - GROUPS[group])
    if bad:
        raise ConfigError(
            f"{where}: unknown features {bad}", hint=f"{group} features: {', '.join(sorted(GROUPS[group]))}"
        )
    return LinearWeights(bias=spec.bias, weights=tuple(spec.weights.items()))


def with_decisions(base: BuiltinWeights, decisions: Mapping[str, LinearWeights]) -> BuiltinWeights:
    """``base`` with ``decisions`` (Noul heads by key) in place of its own."""
    both = {**base.decisions, **decisions}
    return BuiltinWeights(base.version, MappingProxyType(both), base.choices)


@cache
def default_weights() -> BuiltinWeights:
    """The packaged weights (read once, on first use): the hand-set ones, with the write heads
    fitted to labels in their place (``fitted_weights.json``, see :func:`fitted_heads`)."""
    fitted, _ = fitted_heads()
    return with_decisions(hand_set_weights(), fitted)


@cache
def hand_set_weights() -> BuiltinWeights:
    """The packaged hand-set weights alone (``builtin_weights.json``)."""
    ref = resources.files("dualmem.control").joinpath(_WEIGHTS_FILE)
    try:
        text = ref.read_text(encoding="utf-8")
        data = read_weights(text, source=_WEIGHTS_FILE)
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read the packaged {_WEIGHTS_FILE}: {exc}") from exc
    return BuiltinWeights.from_json(data, source=_WEIGHTS_FILE)


_FITTED_FILE = "fitted_weights.json"


@cache
def fitted_heads() -> tuple[Mapping[str, LinearWeights], Mapping[str, object]]:
    """The packaged fitted write heads and their provenance (empty when none are packaged)."""
    ref = resources.files("dualmem.control").joinpath(_FITTED_FILE)
    if not ref.is_file():
        return MappingProxyType({}), MappingProxyType({})
    try:
        data = json.loads(ref.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read the packaged {_FITTED_FILE}: {exc}") from exc
    heads = validate_write_heads(data, source=_FITTED_FILE)
    parsed = BuiltinWeights.of(heads.as_weights(), source=_FITTED_FILE)
    return parsed.decisions, MappingProxyType(dict(heads.provenance))


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


class BuiltinController(BaseController):
    """Offline System-One backend: answers catalog decisions from state features (not a model)."""

    name = "builtin"
    runs_inline = True  # in-process and deterministic: the Meter needs no watchdog thread

    def __init__(
        self,
        *,
        weights: BuiltinWeights | None = None,
        heads: Mapping[str, Head] | None = None,
        ranker: Ranker | None = None,
    ) -> None:
        """``heads`` replaces the linear head of the named Noul decisions (``traverse.relevance``...);
        ``ranker`` is the learned candidate-relevance head of pooled retrieval (``dualmem calibrate``)."""
        self._weights = weights
        self.heads: Mapping[str, Head] = MappingProxyType(dict(heads or {}))
        self._ranker = ranker

    @property
    def ranker(self) -> Ranker:
        """The learned candidate-relevance head (``dualmem calibrate``); the packaged one by default."""
        if self._ranker is None:
            self._ranker = default_ranker()
        return self._ranker

    @property
    def weights(self) -> BuiltinWeights:
        if self._weights is None:
            self._weights = default_weights()
        return self._weights

    def decide(self, batch: Batch) -> BatchResult:
        weights = self.weights
        if not batch.questions:
            return BatchResult(answers={})
        features = features_of(batch)
        state = features.state
        learned: dict[int, NoulAnswer] | None = None
        answers: dict[str, Answer] = {}
        for name, question in batch.questions.items():
            found = None
            if (
                question.key == _LEARNED_KEY
                and question.target is not None
                and isinstance(state, TraversalState)
            ):
                if learned is None:
                    learned = self._learned(state)
                found = learned.get(question.target)
            answers[name] = found or self._answer(question, weights, features)
        return BatchResult(answers=answers)

    def _learned(self, state: TraversalState) -> dict[int, NoulAnswer]:
        """Candidate relevance from the learned head, by candidate index, for the candidates that
        carry the read path's signals (``TraversalCandidate.signals``; the others get the hand-set
        head). One call scores them all, each row exactly as on its own (``Ranker.score_each``)."""
        held = {k: c.signals for k, c in enumerate(state.candidates) if c.signals}
        if not held:
            return {}
        rows = np.asarray(list(held.values()), dtype=np.float64)
        scores = self.ranker.score_each(rows, state.signal_names)
        return {k: NoulAnswer(score=s) for k, s in zip(held, scores.tolist(), strict=True)}

    def _answer(self, question: Question, weights: BuiltinWeights, features: Features) -> Answer:
        key = question.key
        group = group_of(key)
        match question:
            case Noul():
                head = self.heads.get(key)
                if head is not None:
                    value = float(head(features.state, question.target, features.source))
                    if not math.isfinite(value):
                        raise ControllerError(f"the builtin head for {key!r} returned {value}")
                    return NoulAnswer(score=min(1.0, max(0.0, value)))
                linear = weights.decisions.get(key)
                if linear is None or group is None:
                    raise _unknown(key, "noul", weights)
                values = features.get(group, question.target)
                if any(values[f] >= 1.0 for f in VETOES.get(key, ())):
                    return NoulAnswer(score=0.0)
                return NoulAnswer(score=_sigmoid(linear.logit(values)))
            case Choice():
                spec = weights.choices.get(key)
                if spec is None or group is None:
                    raise _unknown(key, "choice", weights)
                if spec.label_set != frozenset(question.labels):
                    raise UnknownDecision(
                        f"builtin weights for {key!r} have labels "
                        f"{[label for label, _ in spec.labels]}, the question has {list(question.labels)}",
                        hint="use the catalog's Choice for this key or give weights for its labels",
                    )
                dist = spec.distribution(features.get(group, question.target))
                ordered = {label: dist[label] for label in question.labels}
                best = max(question.labels, key=lambda label: ordered[label])
                return ChoiceAnswer(label=best, distribution=ordered)
        raise _unknown(key, question.kind, weights)


_FAMILY_PURPOSE: Mapping[str, Purpose] = {
    "typing": "typing",
    "relation": "relations",
    "consolidate": "consolidation",
    "route": "routing",
    "traverse": "scoring",
    "stop": "assessment",
    "message": "message",
}


def features_of(batch: Batch) -> Features:
    """The feature cache of a batch: its typed state and FeatureSource.

    A batch built from JSON only (``typed`` unset) is parsed strictly by the purpose its decision
    keys name; without a FeatureSource the signals are the state's documented signal fields.
    """
    state = batch.typed
    if state is None:
        families = {q.key.partition(".")[0] for q in batch.questions.values()}
        purposes = {_FAMILY_PURPOSE.get(f) for f in families}
        if len(purposes) > 1:
            purposes.discard("routing")  # routing reads only the query, which every read state has
        if len(purposes) != 1 or None in purposes:
            raise UnknownDecision(
                f"the builtin controller cannot tell the state of a batch with keys of {sorted(families)}",
                hint="ask the decisions of one catalog family per batch",
            )
        (purpose,) = purposes
        assert purpose is not None
        state = parse_state(purpose, batch.state)
    return Features(state, batch.features or WireFeatures.of(state))


def _unknown(key: str, kind: str, weights: BuiltinWeights) -> UnknownDecision:
    if kind not in ("noul", "choice"):
        return UnknownDecision(
            f"the builtin controller answers no {kind} questions (asked {key!r})",
            hint="ask a Noul or a Choice from dualmem.control.catalog",
        )
    known = sorted(weights.decisions) if kind == "noul" else sorted(weights.choices)
    return UnknownDecision(
        f"the builtin controller has no {kind} decision {key!r}",
        hint=f"use a key of dualmem.control.catalog (known {kind} keys: {', '.join(known) or 'none'})",
    )

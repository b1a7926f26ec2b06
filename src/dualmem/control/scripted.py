"""A scripted System-One controller: a real, public fake for tests and demos.

It answers from a function or a table keyed by decision key, never by question name, and records
every batch it saw::

    ScriptedController({"relation.caused_by": 0.9, "relation.caused_by@0": 0.2, "relation.time": "before"})

A table value may be a float (a Noul's score, or a Score's expected level), a str (a Choice's label,
at probability 1) or a mapping (a Choice's distribution; missing labels get 0, it is renormalised).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from typing import TypeAlias, assert_never

from dualmem.control import questions as q
from dualmem.control.base import BaseController
from dualmem.errors import ConfigError, UnknownDecision
from dualmem.types import JSONValue

__all__ = ["AutoController", "ScriptValue", "ScriptedController", "to_answer"]

ScriptValue: TypeAlias = float | str | Mapping[str, float]
ScriptFn: TypeAlias = Callable[
    [Mapping[str, JSONValue], q.Question], "q.Answer | float | str | Mapping[str, float]"
]


class ScriptedController(BaseController):
    """Answers each question from ``fn(state, question)`` if given, else from ``table``.

    The table is looked up by ``"{key}@{target}"`` first, then by ``key``. A question with no
    entry gets ``default`` (a float, used for Nouls and Scores) or raises ``UnknownDecision``.
    """

    def __init__(
        self,
        table: Mapping[str, ScriptValue] | None = None,
        *,
        fn: ScriptFn | None = None,
        default: float | None = None,
        name: str = "scripted",
    ) -> None:
        self.table: dict[str, ScriptValue] = dict(table or {})
        self.fn = fn
        self.default = default
        self.name = name
        self.batches: list[q.Batch] = []

    def decide(self, batch: q.Batch) -> q.BatchResult:
        self.batches.append(batch)
        answers = {name: self._answer(batch.state, asked) for name, asked in batch.questions.items()}
        return q.validate_result(batch, q.BatchResult(answers=answers), self.name)

    def _answer(self, state: Mapping[str, JSONValue], question: q.Question) -> q.Answer:
        if self.fn is not None:
            return to_answer(question, self.fn(state, question))
        for key in (f"{question.key}@{question.target}", question.key):
            if key in self.table:
                return to_answer(question, self.table[key])
        if self.default is not None:
            return to_answer(question, self.default)
        raise UnknownDecision(
            f"{self.name} has no answer for decision {question.key!r} (target {question.target})",
            hint=f"add {question.key!r} to the table or pass default=",
        )


class AutoController(BaseController):
    """Schema-valid answers for any batch, deterministic per (seed, key, target, state).

    For tests that need *some* valid answer to every question without scripting each one: a Noul
    gets a score in (0, 1), a Choice a full distribution over its labels, a Score one over its
    levels, all from a hash of the seed, the decision key and target, and the wire state. Question
    names, order and the other questions never matter (the System-One independence contract).
    """

    def __init__(self, seed: int = 0, *, name: str = "auto") -> None:
        self.seed = seed
        self.name = name

    def decide(self, batch: q.Batch) -> q.BatchResult:
        state = json.dumps(batch.state, sort_keys=True, default=str)
        answers = {name: self._answer(state, asked) for name, asked in batch.questions.items()}
        return q.validate_result(batch, q.BatchResult(answers=answers), self.name)

    def _unit(self, state: str, question: q.Question, salt: str) -> float:
        raw = f"{self.seed}\x00{question.key}\x00{question.target}\x00{salt}\x00{state}".encode()
        digest = hashlib.blake2b(raw, digest_size=8).digest()
        return (int.from_bytes(digest, "big") + 0.5) / 2**64  # strictly inside (0, 1)

    def _answer(self, state: str, question: q.Question) -> q.Answer:
        match question:
            case q.Noul():
                return q.NoulAnswer(score=self._unit(state, question, ""))
            case q.Choice():
                weights = {lb: self._unit(state, question, lb) for lb in question.labels}
                return _choice_from(question, weights)
            case q.Score():
                levels = [self._unit(state, question, str(i)) for i in range(len(question.levels))]
                total = sum(levels)
                dist = tuple(v / total for v in levels)
                return q.ScoreAnswer(value=sum(i * p for i, p in enumerate(dist)), distribution=dist)
            case _:
                assert_never(question)


def to_answer(question: q.Question, value: q.Answer | ScriptValue) -> q.Answer:
    """Turn a scripted value into a typed answer for ``question``."""
    if isinstance(value, q.NoulAnswer | q.ChoiceAnswer | q.ScoreAnswer):
        return value
    match question:
        case q.Noul():
            if isinstance(value, int | float):
                return q.NoulAnswer(score=float(value))
        case q.Choice():
            if isinstance(value, str):
                _check_labels(question, [value])
                return q.ChoiceAnswer(value, {lb: float(lb == value) for lb in question.labels})
            if isinstance(value, Mapping):
                return _choice_from(question, value)
        case q.Score():
            if isinstance(value, int | float):
                return _score_from(question, float(value))
        case _:
            assert_never(question)
    raise ConfigError(f"scripted value {value!r} does not answer a {question.kind} ({question.key})")


def _check_labels(question: q.Choice, labels: list[str]) -> None:
    unknown = set(labels) - set(question.labels)
    if unknown:
        raise ConfigError(
            f"scripted labels {sorted(unknown)} are not options of {question.key}",
            hint=f"options: {', '.join(question.labels)}",
        )


def _choice_from(question: q.Choice, dist: Mapping[str, float]) -> q.ChoiceAnswer:
    _check_labels(question, list(dist))
    total = sum(float(p) for p in dist.values())
    if not (math.isfinite(total) and total > 0):
        raise ConfigError(f"scripted distribution for {question.key} must have a positive sum")
    full = {lb: float(dist.get(lb, 0.0)) / total for lb in question.labels}
    label = max(question.labels, key=lambda lb: full[lb])  # first of the ties, in option order
    return q.ChoiceAnswer(label, full)


def _score_from(question: q.Score, value: float) -> q.ScoreAnswer:
    """A distribution with expectation ``value``: mass split between the two nearest levels."""
    top = len(question.levels) - 1
    if not (math.isfinite(value) and 0.0 <= value <= top):
        raise ConfigError(f"scripted score {value} for {question.key} is outside [0, {top}]")
    low = math.floor(value)
    frac = value - low
    dist = [0.0] * (top + 1)
    dist[low] = 1.0 - frac
    if frac:
        dist[low + 1] = frac
    return q.ScoreAnswer(value=value, distribution=tuple(dist))

"""Typed System-One questions and answers (paper §3.1, B.1).

A batch is one shared JSON ``state`` plus named questions. Each question carries a stable decision
``key`` (``relevance``, ``evidence_sufficient``...) besides its text, and, for per-candidate
questions, the candidate index ``target`` it is about. The wire shape mirrors TypeSafe's
``POST /v1/systemone``: a Noul has instructions + true/false criteria, a Choice labelled options, a
Score ordered levels.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, TypeVar, cast, runtime_checkable

from dualmem.errors import ControllerError
from dualmem.types import JSONValue

if TYPE_CHECKING:
    from dualmem.control.states import FeatureSource, State

__all__ = [
    "Answer",
    "Batch",
    "BatchResult",
    "Choice",
    "ChoiceAnswer",
    "Controller",
    "DecisionKey",
    "Noul",
    "NoulAnswer",
    "Question",
    "Score",
    "ScoreAnswer",
    "Usage",
    "first_failure_raised",
    "validate_result",
]


#: the closed set of decision keys of :mod:`dualmem.control.catalog` (a test pins it to the catalog)
DecisionKey: TypeAlias = Literal[
    "typing.episodic",
    "typing.semantic",
    "typing.procedural",
    "typing.preference",
    "relation.semantic",
    "relation.caused_by",
    "relation.causes",
    "relation.same_episode",
    "relation.alias",
    "relation.time",
    "relation.supersedes",
    "route.semantic",
    "route.temporal",
    "route.causal",
    "route.entity",
    "route.multi_hop_need",
    "route.recency_importance",
    "traverse.relevance",
    "traverse.relation_usefulness",
    "traverse.new_information",
    "traverse.supports_current_evidence",
    "stop.evidence_sufficient",
    "stop.continue_useful",
    "stop.missing_evidence",
    "stop.contradiction",
    "consolidate.redundancy",
    "consolidate.contradiction",
    "consolidate.obsolescence",
    "consolidate.link_usefulness",
    "consolidate.representation",
    "message.clause",
]


@dataclass(frozen=True, slots=True)
class Noul:
    """A binary proposition: the answer is a score in [0, 1] that it holds."""

    key: DecisionKey
    instructions: str
    true: str
    false: str
    target: int | None = None
    kind: Literal["noul"] = "noul"


@dataclass(frozen=True, slots=True)
class Choice:
    """Mutually exclusive alternatives: the answer is a label and a distribution over the labels."""

    key: DecisionKey
    instructions: str
    options: tuple[tuple[str, str], ...]  # (label, description) in order
    target: int | None = None
    kind: Literal["choice"] = "choice"

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(label for label, _ in self.options)


@dataclass(frozen=True, slots=True)
class Score:
    """An ordered rubric: the answer is an expected level and a distribution over levels 0..L-1."""

    key: DecisionKey
    instructions: str
    levels: tuple[str, ...]
    target: int | None = None
    kind: Literal["score"] = "score"


Question: TypeAlias = Noul | Choice | Score


@dataclass(frozen=True, slots=True)
class NoulAnswer:
    score: float
    kind: Literal["noul"] = "noul"


@dataclass(frozen=True, slots=True)
class ChoiceAnswer:
    label: str
    distribution: Mapping[str, float]
    kind: Literal["choice"] = "choice"

    @property
    def probability(self) -> float:
        """Probability of the selected label."""
        return self.distribution[self.label]


@dataclass(frozen=True, slots=True)
class ScoreAnswer:
    value: float  # expected level, sum(i * p_i)
    distribution: tuple[float, ...]
    kind: Literal["score"] = "score"


Answer: TypeAlias = NoulAnswer | ChoiceAnswer | ScoreAnswer


class _Wire:
    """``Batch.state``: the wire JSON, rendered from ``typed`` when first read for a batch made by
    :meth:`Batch.of` (kept in the instance's ``_wire`` after that)."""

    def __get__(self, obj: Batch | None, owner: type | None = None) -> Mapping[str, JSONValue]:
        if obj is None:
            raise AttributeError("state")  # no class default: a dataclass field without one
        wire = obj.__dict__["_wire"]
        if wire is _UNRENDERED:
            assert obj.typed is not None  # only ``Batch.of`` leaves the state unrendered
            wire = obj.typed.to_wire()
            obj.__dict__["_wire"] = wire
        return cast(Mapping[str, JSONValue], wire)

    def __set__(self, obj: Batch, value: Mapping[str, JSONValue]) -> None:
        obj.__dict__["_wire"] = value


#: the state of a batch made by ``Batch.of`` before it is first read
_UNRENDERED: Mapping[str, JSONValue] = MappingProxyType({})


@dataclass(frozen=True)
class Batch:
    """One System-One request: shared state plus named, independent questions.

    ``state`` is the JSON every backend is sent. The read and write paths build batches with
    :meth:`of` from a typed state (:mod:`dualmem.control.states`): then ``typed`` is that state
    (``state == typed.to_wire()``) and ``features`` the FeatureSource its signals came from. Neither
    is sent anywhere; an in-process decider may use them instead of re-reading the JSON. A batch
    made by :meth:`of` renders its ``state`` when it is first read, so a request that nothing
    serialises (the builtin decider's, without an answer cache) never pays for the JSON of every
    candidate.
    """

    if TYPE_CHECKING:
        state: Mapping[str, JSONValue]
    else:
        state: Mapping[str, JSONValue] = _Wire()  # a field without a default, rendered lazily (``of``)
    questions: Mapping[str, Question]
    purpose: str = ""  # what the batch is for (typing, relations, routing...): traces only, never sent
    typed: State | None = field(default=None, compare=False, repr=False)
    features: FeatureSource | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(
        cls,
        state: State,
        questions: Mapping[str, Question],
        purpose: str,
        *,
        features: FeatureSource | None = None,
    ) -> Batch:
        """A batch whose wire state is ``state.to_wire()`` (rendered when first read)."""
        return cls(_UNRENDERED, questions, purpose, typed=state, features=features)

    def __reduce__(self) -> tuple[object, ...]:
        return (Batch, (self.state, self.questions, self.purpose, self.typed, self.features))


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class BatchResult:
    answers: Mapping[str, Answer]
    usage: Usage = field(default_factory=Usage)

    def noul(self, name: str) -> float:
        answer = self.answers[name]
        if not isinstance(answer, NoulAnswer):
            raise ControllerError(f"answer {name!r} is a {answer.kind}, expected a noul")
        return answer.score

    def choice(self, name: str) -> ChoiceAnswer:
        answer = self.answers[name]
        if not isinstance(answer, ChoiceAnswer):
            raise ControllerError(f"answer {name!r} is a {answer.kind}, expected a choice")
        return answer

    def score(self, name: str) -> ScoreAnswer:
        answer = self.answers[name]
        if not isinstance(answer, ScoreAnswer):
            raise ControllerError(f"answer {name!r} is a {answer.kind}, expected a score")
        return answer


@runtime_checkable
class Controller(Protocol):
    """A System-One backend J(S, Q). One required method.

    ``decide`` answers every question of the batch or raises ``ControllerError``; it never returns
    a partial or empty result in place of a failure.
    """

    name: str

    def decide(self, batch: Batch) -> BatchResult: ...


_R = TypeVar("_R")


def first_failure_raised(outcomes: Iterable[_R | ControllerError]) -> list[_R]:
    """The outcomes of several requests as a list when none failed; else the first failure, raised."""
    out: list[_R] = []
    for outcome in outcomes:
        if isinstance(outcome, ControllerError):
            raise outcome
        out.append(outcome)
    return out


def validate_result(batch: Batch, result: BatchResult, backend: str) -> BatchResult:
    """Check that ``result`` answers every question with the right type and a sane value."""
    missing = set(batch.questions) - set(result.answers)
    if missing:
        raise ControllerError(f"{backend} left questions unanswered: {', '.join(sorted(missing))}")
    for name, question in batch.questions.items():
        _check_answer(name, question, result.answers[name], backend)
    return result


def _check_answer(name: str, question: Question, answer: Answer, backend: str) -> None:
    if answer.kind != question.kind:
        raise ControllerError(f"{backend} answered {name!r} with a {answer.kind}, not a {question.kind}")
    match answer:
        case NoulAnswer(score=s):
            if not (math.isfinite(s) and 0.0 <= s <= 1.0):
                raise ControllerError(f"{backend} gave {name!r} a score outside [0, 1]: {s}")
        case ChoiceAnswer(label=label, distribution=dist):
            assert isinstance(question, Choice)
            if set(dist) != set(question.labels) or label not in dist:
                raise ControllerError(f"{backend} answered {name!r} with unknown options")
            total = sum(dist.values())
            if not math.isfinite(total) or abs(total - 1.0) > 1e-3:
                raise ControllerError(f"{backend} gave {name!r} a distribution summing to {total}")
        case ScoreAnswer(distribution=dist):
            assert isinstance(question, Score)
            if len(dist) != len(question.levels):
                raise ControllerError(f"{backend} answered {name!r} with {len(dist)} levels")

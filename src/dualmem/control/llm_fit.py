"""Fitting System-One prompts into a model's context: deterministic trimming and splitting.

A batch whose largest prompt (state + one question) is within the token budget is sent as it is.
Otherwise, in this order, until every prompt fits:

1. the per-target list (``candidates`` or ``pairs``) is split into groups, packed greedily in rank
   order (``similarity`` then ``edge_weight``, highest first; ties by index); each group is its own
   state, its questions re-indexed (``candidates[7]`` becomes ``candidates[0]``, ``target`` too);
2. long texts (every ``content``, ``query`` and ``observation`` string) are cut, ending in
   ``TRUNCATION_MARKER``, and shared evidence is dropped from the lowest-ranked end (the read path
   lists it best first), step by step (``_LEVELS``): texts are cut before evidence goes.

Questions are independent (each prompt holds the state and one question), so splitting changes no
answer's meaning. Token counts are estimated (``estimate_tokens``: UTF-8 bytes / 3, an
over-estimate for English and JSON) unless the server tells the true size by refusing a prompt.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dualmem.control.questions import Choice, Noul, Question, Score
from dualmem.types import JSONValue

__all__ = [
    "MIN_TEXT",
    "TRUNCATION_MARKER",
    "Group",
    "estimate_tokens",
    "fit_batch",
    "reindex",
    "truncate_texts",
]

TRUNCATION_MARKER = " …[truncated]"
MIN_TEXT = 60  # never cut a text shorter than this many characters
_TEXT_KEYS = ("content", "query", "observation")
_LIST_KEYS = ("candidates", "pairs")


def estimate_tokens(text: str) -> int:
    """A deliberately high token estimate: one token per 3 UTF-8 bytes, plus chat-template overhead."""
    return math.ceil(len(text.encode("utf-8")) / 3) + 24


@dataclass(frozen=True, slots=True)
class Group:
    """One state sent to the model and the questions asked about it (by their names in the batch)."""

    state: Mapping[str, JSONValue]
    questions: Mapping[str, Question]


def truncate_texts(value: JSONValue, limit: int) -> JSONValue:
    """``value`` with every ``content``/``query``/``observation`` string longer than ``limit`` cut."""
    if isinstance(value, dict):
        out: dict[str, JSONValue] = {}
        for key, item in value.items():
            if key in _TEXT_KEYS and isinstance(item, str) and len(item) > max(limit, MIN_TEXT):
                out[key] = item[: max(limit, MIN_TEXT)].rstrip() + TRUNCATION_MARKER
            else:
                out[key] = truncate_texts(item, limit)
        return out
    if isinstance(value, list):
        return [truncate_texts(item, limit) for item in value]
    return value


_INDEX = re.compile(r"\b(candidates|pairs)\[(\d+)\]")


def reindex(question: Question, mapping: Mapping[int, int]) -> Question:
    """``question`` about the re-numbered targets: every ``candidates[i]``/``pairs[i]`` and ``target``."""

    def sub(text: str) -> str:
        return _INDEX.sub(lambda m: f"{m.group(1)}[{mapping.get(int(m.group(2)), int(m.group(2)))}]", text)

    target = mapping.get(question.target, question.target) if question.target is not None else None
    match question:
        case Noul():
            return dataclasses.replace(
                question,
                instructions=sub(question.instructions),
                true=sub(question.true),
                false=sub(question.false),
                target=target,
            )
        case Choice():
            options = tuple((label, sub(desc)) for label, desc in question.options)
            return dataclasses.replace(
                question, instructions=sub(question.instructions), options=options, target=target
            )
        case Score():
            return dataclasses.replace(question, instructions=sub(question.instructions), target=target)
    raise TypeError(f"not a question: {question!r}")  # pragma: no cover


Measure = Callable[[Mapping[str, JSONValue], Question], int]


def fit_batch(
    state: Mapping[str, JSONValue], questions: Mapping[str, Question], *, budget: int, measure: Measure
) -> list[Group]:
    """Groups whose every prompt is estimated within ``budget`` tokens (see the module doc).

    ``measure(state, question)`` is the token count of one prompt. When nothing fits even at the
    smallest size, the smallest groups are returned: the server's answer then decides.
    """
    if _fits(state, questions, budget, measure):
        return [Group(state, questions)]
    list_key = next((k for k in _LIST_KEYS if isinstance(state.get(k), list)), None)
    groups: list[Group] = []
    for limit, share in _LEVELS:
        shared = truncate_texts(_keep_evidence(dict(state), share), limit)
        assert isinstance(shared, dict)
        if list_key is None:
            groups = [Group(shared, questions)]
            if _fits(shared, questions, budget, measure):
                return groups
            continue
        groups = _split(shared, list_key, questions, budget, measure)
        if all(_fits(g.state, g.questions, budget, measure) for g in groups):
            return groups
    return groups


#: (text limit in characters, share of the evidence kept), tried in order: texts are cut before
#: evidence goes, and the best-ranked evidence goes last
_LEVELS: tuple[tuple[int, float], ...] = (
    (1600, 1.0),
    (800, 1.0),
    (400, 1.0),
    (200, 1.0),
    (200, 0.5),
    (200, 0.25),
    (100, 0.25),
    (100, 0.125),
    (MIN_TEXT, 0.125),
    (MIN_TEXT, 0.0),
)


def _fits(
    state: Mapping[str, JSONValue], questions: Mapping[str, Question], budget: int, measure: Measure
) -> bool:
    return all(measure(state, q) <= budget for q in questions.values())


def _keep_evidence(state: dict[str, JSONValue], share: float) -> dict[str, JSONValue]:
    """The state with the best-ranked ``share`` of its evidence (listed best first)."""
    evidence = state.get("evidence")
    if not isinstance(evidence, list) or share >= 1.0:
        return state
    return {**state, "evidence": evidence[: int(len(evidence) * share)]}


def _rank(items: Sequence[JSONValue]) -> list[int]:
    def key(i: int) -> tuple[float, float, int]:
        item = items[i]
        sim = _number(item, "similarity")
        weight = _number(item, "edge_weight")
        return (-sim, -weight, i)

    return sorted(range(len(items)), key=key)


def _number(item: Any, name: str) -> float:
    if isinstance(item, dict):
        value = item.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        inner = item.get("candidate")  # a consolidation pair
        if isinstance(inner, dict):
            return _number(inner, name)
    return 0.0


def _split(
    state: dict[str, JSONValue],
    list_key: str,
    questions: Mapping[str, Question],
    budget: int,
    measure: Measure,
) -> list[Group]:
    items = state[list_key]
    assert isinstance(items, list)
    by_target: dict[int | None, dict[str, Question]] = {}
    for name, q in questions.items():
        by_target.setdefault(q.target, {})[name] = q
    groups: list[Group] = []
    current: list[int] = []
    for index in _rank(items):
        if index not in by_target:
            continue  # an item no question asks about: not needed in any prompt
        if current:
            trial = _group(state, list_key, items, [*current, index], by_target)
            if not _fits(trial.state, trial.questions, budget, measure):
                groups.append(_group(state, list_key, items, current, by_target))
                current = []
        current.append(index)
    if current:
        groups.append(_group(state, list_key, items, current, by_target))
    if None in by_target:  # questions about the whole state: asked with the first group's state
        first = groups[0].state if groups else {**state, list_key: []}
        groups.insert(0, Group(first, by_target[None]))
    return groups


def _group(
    state: dict[str, JSONValue],
    list_key: str,
    items: list[JSONValue],
    indices: list[int],
    by_target: Mapping[int | None, Mapping[str, Question]],
) -> Group:
    mapping = {old: new for new, old in enumerate(indices)}
    questions = {name: reindex(q, mapping) for old in indices for name, q in by_target.get(old, {}).items()}
    return Group({**state, list_key: [items[i] for i in indices]}, questions)

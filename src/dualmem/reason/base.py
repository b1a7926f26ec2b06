"""System Two: the Answerer protocol. An answerer sees only the question and the selected evidence."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from dualmem.types import Evidence

__all__ = ["ABSTAIN_TEXT", "Answerer", "Draft"]

#: what every answerer says when the evidence does not hold the answer
ABSTAIN_TEXT = "The memory does not contain the answer."


@dataclass(frozen=True, slots=True)
class Draft:
    """What an answerer wrote: the text, whether it declined to answer, and which evidence it used."""

    text: str
    abstained: bool
    used: tuple[str, ...] = ()  # node ids the answer relies on, when the answerer says
    input_tokens: int | None = None
    output_tokens: int | None = None


@runtime_checkable
class Answerer(Protocol):
    name: str

    def answer(self, question: str, evidence: Sequence[Evidence]) -> Draft: ...

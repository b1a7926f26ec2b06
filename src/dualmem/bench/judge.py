"""LLM-as-a-judge over any OpenAI-compatible chat endpoint.

Two judges, each one request per question:

* ``BinaryJudge`` (in the style of Mem0's evaluation): the model sees the question, the reference
  answer and the generated answer and replies ``CORRECT`` or ``WRONG``. Score 1.0 or 0.0.
* ``ContinuousJudge`` (in the style of MAGMA's evaluation): the model replies ``SCORE: <x>`` with
  ``x`` in [0, 1].

A reply that does not follow the format raises ``JudgeError``: a judge never turns a malformed
reply into a silent "wrong". The judge never sees retrieved evidence or the system's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from dualmem.errors import AnswererError
from dualmem.reason.chat_client import ChatClient

__all__ = [
    "ABSTENTION_REFERENCE",
    "BINARY_PROMPT",
    "CONTINUOUS_PROMPT",
    "BinaryJudge",
    "ContinuousJudge",
    "Judge",
    "JudgeError",
    "Verdict",
    "parse_binary",
    "parse_score",
]

#: the reference answer given to a judge for a question the conversation does not answer (category 5)
ABSTENTION_REFERENCE = (
    "The conversation does not contain this information; a correct response says it is not "
    "mentioned or unknown rather than giving an answer."
)

_SYSTEM = "You grade answers of a memory system against a reference answer. Follow the output format exactly."

BINARY_PROMPT = """Grade the generated answer to a question about a long conversation.

Question: {question}
Reference answer: {gold}
Generated answer: {generated}

The generated answer counts as CORRECT when it conveys the same fact as the reference answer,
even if it is longer, worded differently, or gives a date in another format or a relative form
that clearly refers to the same time. It counts as WRONG when it gives a different fact, misses
the fact, contradicts the reference, or declines to answer when the reference gives an answer.
If the reference says the information is not in the conversation, only a response that says so
is CORRECT.

Reply with exactly one word: CORRECT or WRONG."""

CONTINUOUS_PROMPT = """Rate how well the generated answer to a question about a long conversation
matches the reference answer.

Question: {question}
Reference answer: {gold}
Generated answer: {generated}

Use a score between 0 and 1: 1 when the generated answer states the same fact as the reference
(wording and date format do not matter), values in between when it is partly right or
incomplete, 0 when it is wrong, unrelated, or declines to answer when the reference gives an
answer. If the reference says the information is not in the conversation, a response that says
so scores 1 and any invented answer scores 0.

Reply with one line and nothing else, in the form: SCORE: <number between 0 and 1>"""

_VERDICT_WORDS = re.compile(r"\b(INCORRECT|CORRECT|WRONG)\b")
_SCORE = re.compile(r"SCORE\s*[:=]\s*([-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)", re.IGNORECASE)


class JudgeError(AnswererError):
    """The judge's reply did not follow the required format, or its endpoint failed."""

    code = "judge-error"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One judgement: the score in [0, 1], the label (binary judge), the raw reply, token usage."""

    score: float
    raw: str
    label: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


class Judge(Protocol):
    name: str

    def judge(self, *, question: str, gold: str, generated: str) -> Verdict: ...


def parse_binary(text: str) -> str:
    """``"CORRECT"`` or ``"WRONG"`` from a reply naming exactly one of them; else ``JudgeError``."""
    found = {("WRONG" if w == "INCORRECT" else w) for w in _VERDICT_WORDS.findall(text.upper())}
    if len(found) != 1:
        what = "both CORRECT and WRONG" if len(found) > 1 else "neither CORRECT nor WRONG"
        raise JudgeError(f"judge reply names {what}: {_clip(text)!r}")
    return found.pop()


def parse_score(text: str) -> float:
    """The number of a ``SCORE: x`` reply, which must be in [0, 1]; else ``JudgeError``."""
    values = {float(m) for m in _SCORE.findall(text)}
    if len(values) != 1:
        what = "no SCORE line" if not values else "several different scores"
        raise JudgeError(f"judge reply has {what}: {_clip(text)!r}")
    value = values.pop()
    if not 0.0 <= value <= 1.0:
        raise JudgeError(f"judge score {value} is outside [0, 1]")
    return value


def _clip(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class _ChatJudge:
    prompt: str
    max_tokens: int

    def __init__(self, client: ChatClient, *, temperature: float = 0.0) -> None:
        self.client = client
        self.temperature = temperature

    def _ask(self, *, question: str, gold: str, generated: str) -> tuple[str, int | None, int | None]:
        content = self.prompt.format(question=question, gold=gold, generated=generated or "(empty)")
        messages = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": content}]
        try:
            out = self.client.complete(messages, max_tokens=self.max_tokens, temperature=self.temperature)
        except AnswererError as exc:
            if isinstance(exc, JudgeError):
                raise
            raise JudgeError(f"judge endpoint failed: {exc.message}") from exc
        return out.text, out.input_tokens, out.output_tokens

    def _read(self, text: str) -> tuple[float, str | None]:
        """The score and label of a reply (``JudgeError`` when it has neither)."""
        raise NotImplementedError

    def judge(self, *, question: str, gold: str, generated: str) -> Verdict:
        text, tin, tout = self._ask(question=question, gold=gold, generated=generated)
        score, label = self._read(text)
        return Verdict(score, text, label, tin, tout)


class BinaryJudge(_ChatJudge):
    """CORRECT/WRONG judge: score 1.0 or 0.0."""

    name = "judge_binary"
    prompt = BINARY_PROMPT
    max_tokens = 8

    def _read(self, text: str) -> tuple[float, str | None]:
        label = parse_binary(text)
        return 1.0 if label == "CORRECT" else 0.0, label


class ContinuousJudge(_ChatJudge):
    """0-1 score judge."""

    name = "judge_score"
    prompt = CONTINUOUS_PROMPT
    max_tokens = 12

    def _read(self, text: str) -> tuple[float, str | None]:
        return parse_score(text), None

"""System Two over any OpenAI-compatible chat endpoint.

The answerer sees the question and the selected evidence, nothing else (never a category or a gold
answer). Each memory is shown with its speaker, its content, the date it was *observed* (which need
not be when the event happened) and its grounded time expressions, so relative dates can be resolved.
When the memories do not hold the answer the model is told to say ``ABSTAIN_TEXT`` exactly.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

import httpx

from dualmem.reason.base import ABSTAIN_TEXT, Draft
from dualmem.reason.chat_client import ChatClient
from dualmem.types import Evidence, TemporalRef

__all__ = ["ABSTAIN_TEXT", "SYSTEM_PROMPT", "ChatAnswerer", "build_messages", "is_abstention"]


SYSTEM_PROMPT = (
    "You answer questions about a user's past conversations using only the memories provided. "
    "Each memory shows when it was observed: that is when it was said, not necessarily when the event "
    "happened. Resolve relative dates with the grounded time references given for each memory. "
    "Answer concisely, in a short phrase or sentence. Do not guess: if the memories do not contain the "
    f'answer, reply exactly "{ABSTAIN_TEXT}"'
)


class ChatAnswerer:
    """An ``Answerer`` that asks a chat model to answer from the evidence or abstain."""

    name = "chat"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_tokens: int = 256,
        temperature: float = 0.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        client = ChatClient(
            base_url=base_url, model=model, api_key=api_key, timeout=timeout, transport=transport
        )
        self._init(client, max_tokens=max_tokens, temperature=temperature)

    @classmethod
    def from_client(
        cls, client: ChatClient, *, max_tokens: int = 256, temperature: float = 0.0
    ) -> ChatAnswerer:
        """An answerer over a ready ``ChatClient`` (to choose its retry policy or error type)."""
        self = cls.__new__(cls)
        self._init(client, max_tokens=max_tokens, temperature=temperature)
        return self

    def _init(self, client: ChatClient, *, max_tokens: int, temperature: float) -> None:
        self.client = client
        self.max_tokens = max_tokens
        self.temperature = temperature

    def answer(self, question: str, evidence: Sequence[Evidence]) -> Draft:
        reply = self.client.complete(
            build_messages(question, evidence), max_tokens=self.max_tokens, temperature=self.temperature
        )
        text = reply.text.strip()
        abstained = is_abstention(text)
        return Draft(
            text=ABSTAIN_TEXT if abstained else text,
            abstained=abstained,
            used=() if abstained else tuple(e.node.id for e in evidence),
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
        )

    def close(self) -> None:
        self.client.close()


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def is_abstention(text: str) -> bool:
    """True when ``text`` is the abstain sentence (case, punctuation and spacing aside)."""
    return _normal(text).startswith(_normal(ABSTAIN_TEXT))


def _day(d: dt.date) -> str:
    return f"{d.day} {d:%B %Y}"


def _observed(at: dt.datetime | None) -> str:
    if at is None:
        return "observed on an unknown date"
    return (
        f"observed on {_day(at)}, {at:%H:%M} UTC"
        if (at.hour, at.minute) != (0, 0)
        else f"observed on {_day(at)}"
    )


def _ref(ref: TemporalRef) -> str:
    span = _day(ref.start) if ref.start == ref.end else f"{_day(ref.start)} to {_day(ref.end)}"
    return f"'{ref.expression}' = {span} ({ref.precision})"


def _memory(i: int, ev: Evidence) -> str:
    node = ev.node
    at = node.at.astimezone(dt.UTC) if node.at else None
    lines = [f"[{i}] {_observed(at)}; speaker: {node.speaker or 'unknown'}", f"    {node.content}"]
    refs = ev.temporal_refs or node.temporal_refs
    if refs:
        lines.append("    time references: " + "; ".join(_ref(r) for r in refs))
    return "\n".join(lines)


def build_messages(question: str, evidence: Sequence[Evidence]) -> list[dict[str, str]]:
    """The chat messages: the system rules, then the memories and the question."""
    memories = "\n".join(_memory(i, ev) for i, ev in enumerate(evidence, 1)) or "(no memories)"
    user = f"Memories:\n{memories}\n\nQuestion: {question}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

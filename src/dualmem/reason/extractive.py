"""An offline System-Two stand-in: answers with the best supporting evidence sentence, or abstains.

It is extractive, not generative: it never writes a fact that is not in the evidence. Relative
time expressions are followed by their grounded dates, e.g. "yesterday [15 May 2024]".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dualmem.reason.base import ABSTAIN_TEXT, Draft
from dualmem.text.lexical import content_tokens
from dualmem.text.temporal import describe
from dualmem.text.timeparse import format_day
from dualmem.types import Evidence

__all__ = ["ABSTAIN_TEXT", "ExtractiveAnswerer"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class ExtractiveAnswerer:
    """Pick the evidence sentence that covers most of the question's topic words.

    Topic words are the question's content words minus the speakers' names (a name alone supports
    nothing). A sentence must cover at least ``min_coverage`` of them, and at least one, or the
    answerer abstains. A second sentence is added only when it covers a topic word the first lacks.
    """

    name = "extractive"

    def __init__(self, *, min_coverage: float = 0.34, max_sentences: int = 2) -> None:
        self.min_coverage = min_coverage
        self.max_sentences = max_sentences

    def answer(self, question: str, evidence: Sequence[Evidence]) -> Draft:
        speakers = {tok for ev in evidence for tok in content_tokens(ev.node.speaker or "")}
        topic = set(content_tokens(question)) - speakers
        if not evidence or not topic:
            return Draft(ABSTAIN_TEXT, abstained=True)
        scored: list[tuple[float, int, set[str], str, Evidence]] = []
        for rank, ev in enumerate(evidence):
            for sentence in _SENTENCE.split(ev.node.content.strip()):
                got = set(content_tokens(sentence)) & topic
                if got:
                    scored.append((len(got) / len(topic) + 0.05 * ev.score, rank, got, sentence, ev))
        scored.sort(key=lambda t: (-t[0], t[1]))
        if not scored or scored[0][0] < self.min_coverage:
            return Draft(ABSTAIN_TEXT, abstained=True)
        _, _, covered, sentence, ev = scored[0]
        parts = [self._render(sentence, ev)]
        used = [ev.node.id]
        for score, _, got, other, oev in scored[1:]:
            if len(parts) >= self.max_sentences or score < self.min_coverage / 2:
                break
            if oev.node.id not in used and got - covered:
                parts.append(self._render(other, oev))
                used.append(oev.node.id)
                covered |= got
        return Draft(" ".join(parts), abstained=False, used=tuple(used))

    @staticmethod
    def _render(sentence: str, ev: Evidence) -> str:
        text = sentence.strip()
        for ref in ev.temporal_refs:
            if ref.expression and ref.expression in text:
                text = text.replace(ref.expression, f"{ref.expression} [{describe(ref)}]", 1)
        who = ev.node.speaker or "someone"
        if ev.node.speaker and text.lower().startswith(ev.node.speaker.lower() + ":"):
            text = text[len(ev.node.speaker) + 1 :].lstrip()  # "Mira said: 'Mira: ...'" reads badly
        when = f" on {format_day(ev.node.at.date())}" if ev.node.at else ""
        return f'{who} said{when}: "{text}"'

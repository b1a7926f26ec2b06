"""An offline System-Two stand-in: answers with the best supporting evidence sentence, or abstains.

It is extractive, not generative: it never writes a fact that is not in the evidence. Relative
time expressions are followed by their grounded dates, e.g. "yesterday [15 May 2024]".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dualmem.reason.base import Draft
from dualmem.text.lexical import content_tokens
from dualmem.text.temporal import describe
from dualmem.text.timeparse import format_day
from dualmem.types import Evidence

__all__ = ["ABSTAIN_TEXT", "ExtractiveAnswerer"]

ABSTAIN_TEXT = "The memory does not contain the answer."
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class ExtractiveAnswerer:
    """Pick the evidence sentence that covers most of the question's content words.

    ``min_coverage`` is the fraction of question content words a sentence (with its memory's
    speaker) must cover; below it the answerer abstains.
    """

    name = "extractive"

    def __init__(self, *, min_coverage: float = 0.34, max_sentences: int = 2) -> None:
        self.min_coverage = min_coverage
        self.max_sentences = max_sentences

    def answer(self, question: str, evidence: Sequence[Evidence]) -> Draft:
        wanted = set(content_tokens(question))
        if not evidence or not wanted:
            return Draft(ABSTAIN_TEXT, abstained=True)
        best: list[tuple[float, int, str, Evidence]] = []
        for rank, ev in enumerate(evidence):
            context = set(content_tokens(ev.node.speaker or ""))
            for sentence in _SENTENCE.split(ev.node.content.strip()):
                got = (set(content_tokens(sentence)) | context) & wanted
                coverage = len(got) / len(wanted)
                best.append((coverage + 0.05 * ev.score, -rank, sentence, ev))
        best.sort(key=lambda t: (-t[0], -t[1]))
        top_score, _, sentence, ev = best[0]
        if top_score < self.min_coverage:
            return Draft(ABSTAIN_TEXT, abstained=True)
        parts = [self._render(sentence, ev)]
        used = [ev.node.id]
        for score, _, other, oev in best[1:]:
            if len(parts) >= self.max_sentences or score < self.min_coverage:
                break
            if oev.node.id not in used:
                parts.append(self._render(other, oev))
                used.append(oev.node.id)
        return Draft(" ".join(parts), abstained=False, used=tuple(used))

    @staticmethod
    def _render(sentence: str, ev: Evidence) -> str:
        text = sentence.strip()
        for ref in ev.temporal_refs:
            if ref.expression and ref.expression in text:
                text = text.replace(ref.expression, f"{ref.expression} [{describe(ref)}]", 1)
        who = ev.node.speaker or "someone"
        when = f" on {format_day(ev.node.at.date())}" if ev.node.at else ""
        return f'{who} said{when}: "{text}"'

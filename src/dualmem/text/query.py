"""Deterministic query analysis: who a question is about, when, and what form of answer it wants.

A question names people ("When did Caroline go to the support group?"). In a conversation memory
those names are speakers, so left in the query they dominate its embedding and its BM25 terms and
pull in short, content-free turns of that speaker. ``analyze`` finds the mentions of *known* names
(the speakers of the memory, given by the caller), returns the query with them removed (the text to
embed and to match lexically) and keeps them as a separate feature. Time expressions are grounded
with :func:`dualmem.text.temporal.ground` against the query time, and the question word gives
routing features.

Pure functions, stdlib only.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from dualmem.text.temporal import ground
from dualmem.types import TemporalRef

__all__ = ["QueryAnalysis", "QuestionForm", "analyze", "question_form"]

QuestionForm = Literal["when", "where", "who", "why", "how", "what", "yes_no", "other"]

_WH = re.compile(r"\b(when|where|who|whom|whose|why|how|what|which)\b", re.IGNORECASE)
_YES_NO = re.compile(
    r"^\s*(is|are|was|were|do|does|did|has|have|had|can|could|would|will|should)\b", re.IGNORECASE
)
_SPACES = re.compile(r"\s+")
_DANGLING = re.compile(r"\s+([?.!,;:])")


@dataclass(frozen=True, slots=True)
class QueryAnalysis:
    """What :func:`analyze` found in one query.

    ``persons`` are the known names the query mentions (as the caller spelled them), ``stripped``
    the query without them (the original query when nothing else would remain), ``times`` the
    grounded time expressions, ``form`` the question form.
    """

    query: str
    stripped: str
    persons: tuple[str, ...]
    times: tuple[TemporalRef, ...]
    form: QuestionForm

    def mentions(self, speaker: str | None) -> bool:
        """True when ``speaker`` is one of the persons the query names (case-insensitive)."""
        if not speaker:
            return False
        key = speaker.strip().casefold()
        return any(p.casefold() == key for p in self.persons)

    def time_overlap(self, start: dt.date, end: dt.date) -> bool:
        """True when the span ``start..end`` overlaps a grounded time expression of the query."""
        return any(ref.start <= end and start <= ref.end for ref in self.times)


def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w'])" + re.escape(name) + r"(?:['\u2019]s)?(?![\w])", re.IGNORECASE)


def _may_mention(text: str, name: str) -> bool:
    """False only when ``name`` cannot match in ``text``, checked without compiling its pattern (a
    memory has many speakers; compiling each case-insensitive pattern costs ~0.5 ms): in ASCII text
    an ASCII name matches only where its lower-cased form is a substring of the lower-cased text.
    Non-ASCII text is always checked by the pattern (there ``re.IGNORECASE`` also matches, e.g., the
    long s "ſ" to "s")."""
    if text.isascii() and name.isascii():
        return name.lower() in text.lower()
    return True


def analyze(query: str, *, names: Iterable[str] = (), now: dt.datetime | None = None) -> QueryAnalysis:
    """Analyse ``query`` against the known ``names`` (speakers), grounding times against ``now``."""
    persons: list[str] = []
    stripped = query
    # longest names first, so "Mary Ann" is removed before "Mary"
    for name in sorted({n.strip() for n in names if n and n.strip()}, key=lambda n: (-len(n), n)):
        if not _may_mention(stripped, name):
            continue
        pattern = _name_pattern(name)
        if pattern.search(stripped):
            persons.append(name)
            stripped = pattern.sub(" ", stripped)
    stripped = _DANGLING.sub(r"\1", _SPACES.sub(" ", stripped)).strip()
    if not re.search(r"\w", stripped):
        stripped = query
    return QueryAnalysis(
        query=query,
        stripped=stripped,
        persons=tuple(sorted(persons, key=str.casefold)),
        times=ground(query, now),
        form=question_form(query),
    )


def question_form(query: str) -> QuestionForm:
    """The form of a question: its first question word, or yes/no for an auxiliary-led one."""
    m = _WH.search(query)
    if m is not None:
        word = m.group(1).lower()
        if word in ("who", "whom", "whose"):
            return "who"
        if word in ("what", "which"):
            return "what"
        return word  # type: ignore[return-value]
    if _YES_NO.search(query):
        return "yes_no"
    return "other"

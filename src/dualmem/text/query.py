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

from dualmem.text.cjk import has_cjk
from dualmem.text.temporal import ground
from dualmem.types import TemporalRef

__all__ = [
    "QueryAnalysis",
    "QuestionForm",
    "Role",
    "analyze",
    "asks_preference",
    "perspective",
    "question_form",
    "role_of",
]

QuestionForm = Literal["when", "where", "who", "why", "how", "what", "yes_no", "other"]
Role = Literal["user", "assistant"]

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
    #: whose words the query asks about when speakers are roles: "assistant" for "what did you
    #: suggest ...", "user" for "where do I live ...", ``None`` when it speaks of neither
    perspective: Role | None = None
    #: the query asks what someone would like: a recommendation, or a guess at their taste
    preference: bool = False

    def mentions(self, speaker: str | None) -> bool:
        """True when ``speaker`` is one of the persons the query names (case-insensitive), or, when
        it names none, the role the query asks about (:func:`role_of` the speaker)."""
        if not speaker:
            return False
        key = speaker.strip().casefold()
        if self.persons:
            return any(p.casefold() == key for p in self.persons)
        return self.perspective is not None and role_of(speaker) == self.perspective

    @property
    def about(self) -> bool:
        """The query says whose words it asks about: it names persons, or speaks as or to a role."""
        return bool(self.persons) or self.perspective is not None

    def time_overlap(self, start: dt.date, end: dt.date) -> bool:
        """True when the span ``start..end`` overlaps a grounded time expression of the query."""
        return any(ref.start <= end and start <= ref.end for ref in self.times)


def _name_pattern(name: str) -> re.Pattern[str]:
    if has_cjk(name):  # no spaces around a CJK name ("小林的狗"): the name and a possessive 的/の
        return re.compile(re.escape(name) + "(?:的|の|의)?")
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


_USER_ROLES = frozenset({"user", "human", "me", "customer", "client"})
_ASSISTANT_ROLES = frozenset(
    {"assistant", "ai", "bot", "model", "agent", "system", "chatbot", "gpt", "claude"}
)
#: "you" as the one who said, suggested or did something for the asker (the assistant's words)
_YOU_SAID = re.compile(
    r"\b(?:did|have|had|were|was)\s+you\b(?!\s+(?:know|think|remember|recall|ever)\b)|"
    r"\byou(?:'ve|\s+have|\s+had)?\s+(?:\w+ly\s+)?(?:suggested|recommended|said|told|gave|proposed|advised|wrote|"
    r"explained|showed|listed|shared|provided|offered|picked|chose|mentioned|walked|drafted|sketched|"
    r"outlined|calculated|estimated|warned|described|compared|came up|\w+ed\b)",
    re.IGNORECASE,
)
#: a question asking what someone would like (a recommendation or a guess at their taste)
_PREFERENCE = re.compile(
    r"\bwould\b.{0,40}?\b(?:like|likely|enjoy|love|prefer|want|interested|suit)|\bshould (?:you|i|we)\b|"
    r"\b(?:suggest|recommend|propose)\b|\bsuits? (?:me|us|him|her|them)\b|\bfavou?rite\b|"
    r"\b(?:i'd|i would|we'd)\b.{0,20}?\b(?:enjoy|like|love|want)\b|"
    r"\b(?:kind|sort|type) of\b.{0,40}?\b(?:would|should)\b",
    re.IGNORECASE,
)
_YOUR_WORDS = re.compile(r"\byour\s+(?:suggest|recommend|advice|answer|tip|idea|plan|script|code|list)", re.I)
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll|we|our|us)\b", re.IGNORECASE)


def role_of(speaker: str | None) -> Role | None:
    """The role a speaker name stands for (``user``/``assistant`` and their usual synonyms), or None."""
    if not speaker:
        return None
    key = speaker.strip().casefold()
    if key in _USER_ROLES:
        return "user"
    if key in _ASSISTANT_ROLES:
        return "assistant"
    return None


def perspective(query: str) -> Role | None:
    """Whose words a question about a user-assistant chat asks for: "what did you suggest" asks for
    the assistant's, "where do I live" for the user's; ``None`` when it speaks of neither."""
    if _YOU_SAID.search(query) or _YOUR_WORDS.search(query):
        return "assistant"
    if _FIRST_PERSON.search(query):
        return "user"
    return None


def asks_preference(query: str) -> bool:
    """The question asks what someone would like ("what should you suggest", "would she enjoy"), not
    what was suggested ("what did you suggest")."""
    return _PREFERENCE.search(query) is not None and _YOU_SAID.search(query) is None


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
        perspective=None if persons else perspective(query),
        preference=asks_preference(query),
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

"""Cheap cues about time in a text: does it mention time, does a query ask about the past."""

from __future__ import annotations

import re
from typing import Literal

from dualmem.text._calendar import SEASON_START
from dualmem.text._cjk_words import PAST_CUES, PRESENT_CUES, TIME_WORDS, contains_any
from dualmem.text._words import MONTHS, WEEKDAY_ABBREVIATIONS, WEEKDAYS
from dualmem.text.cjk import has_cjk

__all__ = ["may_have_time", "mentions_time", "query_time_focus"]

_I = re.IGNORECASE
_WORDS = re.compile(r"[a-z]+")
_DIGIT = re.compile(r"\d")


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_UNIT_WORDS = _set(
    "week weeks weekend weekends month months year years hour hours minute minutes day days night "
    "morning afternoon evening"
)
#: a text without a digit and without one of these words has no expression the rules could ground
_TRIGGER_WORDS = frozenset(
    ["yesterday", "today", "tonight", "tomorrow", "ago", *_UNIT_WORDS, *SEASON_START, *WEEKDAYS,
     *WEEKDAY_ABBREVIATIONS, *MONTHS]
)  # fmt: skip


def may_have_time(text: str) -> bool:
    """Whether ``text`` could hold an expression ``ground`` handles (a digit or a time word)."""
    return _DIGIT.search(text) is not None or not _TRIGGER_WORDS.isdisjoint(_WORDS.findall(text.lower()))


_MENTION_WORDS = _TRIGGER_WORDS | _set(
    "when before after since until till during earlier later recently lately first last latest "
    "previous previously next now currently still anymore date dates time times"
)
_MENTION_PHRASES = re.compile(r"\bwhat\s+time\b|\bhow\s+(?:long|often)\b|\bused\s+to\b|\d{4}|\d/\d", _I)


def mentions_time(text: str) -> bool:
    """A cheap check for temporal language (dates, "when", "before", "ago", weekdays, "how long")."""
    if not _MENTION_WORDS.isdisjoint(_WORDS.findall(text.lower())):
        return True
    if _MENTION_PHRASES.search(text) is not None:
        return True
    return has_cjk(text) and contains_any(text, TIME_WORDS)


_PAST = re.compile(
    r"\b(?:used\s+to|use\s+to|before|previously|previous|originally|original|at\s+first|first"
    r"|in\s+the\s+past|formerly|former|earlier|back\s+then|back\s+in|once|ago|last\s+(?:year|month"
    r"|week|time)|in\s+(?:19|20)\d{2}|history|prior|initially|old)\b",
    _I,
)
_CURRENT = re.compile(
    r"\b(?:now|nowadays|currently|current|still|these\s+days|at\s+the\s+moment|at\s+present"
    r"|presently|today|latest|anymore|any\s+more|right\s+now|these\s+days|recent(?:ly)?)\b",
    _I,
)


def query_time_focus(text: str) -> Literal["past", "current", "none"]:
    """Whether a query asks about history ("past") or the present state ("current").

    "used to", "before", "previously", "originally", "at first", "in 2022" -> past;
    "now", "currently", "still", "these days" -> current. A query with both asks for history
    as well, so past wins.
    """
    if _PAST.search(text):
        return "past"
    if _CURRENT.search(text):
        return "current"
    if has_cjk(text):  # 以前 / 原来 / 一开始 -> past; 现在 / 目前 / 最近 -> current (text/_cjk_words)
        if contains_any(text, PAST_CUES):
            return "past"
        if contains_any(text, PRESENT_CUES):
            return "current"
    return "none"

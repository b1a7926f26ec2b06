"""The builtin decider's text cues for Chinese, Japanese and Korean text (private).

:func:`dualmem.control.builtin_cues.cues` and ``query_cues`` read English with regular expressions
over space-separated words; a CJK text has no spaces, so its words are found here as substrings
from the lists of ``text/_cjk_words`` and its content tokens are the bigrams of its CJK runs. These
functions are called only for a text that holds a CJK character, and each cue here is combined with
the English one by ``max`` (a mixed text keeps both), so an English text's features are exactly
what they were before this module existed (the fitted heads read the same numbers).
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from dualmem.text import _cjk_words as w
from dualmem.text._cjk_words import contains_any
from dualmem.text.cjk import bigrams, has_cjk
from dualmem.text.temporal import ground

__all__ = ["cjk_cue_updates", "cjk_query_cue_updates", "cjk_tokens", "without_cjk_runs"]


class _Cues(Protocol):  # the fields of ``builtin_cues.Cues`` read here
    @property
    def tokens(self) -> frozenset[str]: ...

    @property
    def negation(self) -> float: ...

    @property
    def change(self) -> float: ...

    @property
    def pref_pos(self) -> float: ...

    @property
    def pref_neg(self) -> float: ...

    @property
    def habit(self) -> float: ...

    @property
    def past(self) -> float: ...

    @property
    def future(self) -> float: ...

    @property
    def time_words(self) -> float: ...

    @property
    def past_ref(self) -> float: ...

    @property
    def first_person(self) -> float: ...

    @property
    def question(self) -> float: ...

    @property
    def slots(self) -> frozenset[str]: ...

    @property
    def self_change(self) -> float: ...

    @property
    def update(self) -> float: ...

    @property
    def replaced(self) -> frozenset[str]: ...

    @property
    def others(self) -> frozenset[str]: ...


class _QueryCues(Protocol):  # the fields of ``builtin_cues.QueryCues`` read here
    @property
    def tokens(self) -> frozenset[str]: ...

    @property
    def temporal(self) -> float: ...

    @property
    def causal(self) -> float: ...

    @property
    def recency(self) -> float: ...

    @property
    def compare(self) -> float: ...

    @property
    def conjunction(self) -> float: ...

    @property
    def question_words(self) -> int: ...

    @property
    def what(self) -> float: ...


#: characters of a CJK value next to a replacing word ("不再用 pip": the window holds "pip")
_REPLACE_WINDOW = 6
_ENGLISH_WORD = re.compile(r"[A-Za-z][\w.+#-]*")


def cjk_tokens(text: str) -> frozenset[str]:
    """Content tokens of the CJK runs: bigrams that are not only function characters."""
    return frozenset(b for b in bigrams(text) if b not in w.CJK_STOP_BIGRAMS)


def without_cjk_runs(tokens: frozenset[str]) -> frozenset[str]:
    """The English word split's tokens without the whole CJK runs it keeps as one word (their
    bigrams stand for them)."""
    return frozenset(t for t in tokens if not has_cjk(t))


def _flag(text: str, words: frozenset[str]) -> float:
    return 1.0 if contains_any(text, words) else 0.0


def _self_change(text: str) -> float:
    """The speaker says their own situation changed: a first person and a change word, and the
    change is not someone else's ("我妹妹搬到上海" is the sister's)."""
    if not contains_any(text, w.FIRST_PERSON) or not contains_any(text, w.CHANGE_CUES):
        return 0.0
    return 0.0 if _others(text) else 1.0


def _others(text: str) -> frozenset[str]:
    """The other people the text is about, each named after a possessor ("我妹妹" -> 妹妹)."""
    found = set()
    for person in w.OTHER_PEOPLE:
        at = text.find(person)
        while at >= 0:
            if any(text[:at].endswith(owner) for owner in w.POSSESSORS):
                found.add(person)
                break
            at = text.find(person, at + 1)
    # a person inside a longer one found too ("妹" in "妹妹") is the same person
    return frozenset(p for p in found if not any(p != q and p in q for q in found))


def _replaced(text: str, tokens: frozenset[str]) -> frozenset[str]:
    """Content tokens within a few characters after a replacing word: the value replaced."""
    near: set[str] = set()
    for cue in w.REPLACING_CUES:
        at = text.find(cue)
        while at >= 0:
            window = text[at + len(cue) : at + len(cue) + _REPLACE_WINDOW]
            near |= cjk_tokens(window) | {t.lower() for t in _ENGLISH_WORD.findall(window)}
            at = text.find(cue, at + 1)
    return frozenset(near & tokens) if near else frozenset()


def _slots(text: str) -> frozenset[str]:
    return frozenset(name for name, words in w.SLOT_WORDS.items() if contains_any(text, words))


def cjk_cue_updates(english: _Cues, body: str) -> dict[str, Any]:
    """The fields of ``english`` (the cues of ``body`` read as English) with the CJK cues of
    ``body`` added (``dataclasses.replace`` them in)."""
    tokens = without_cjk_runs(english.tokens) | cjk_tokens(body)
    pref_neg = _flag(body, w.PREF_NEG)
    past = sum(1 for marker in w.PAST_MARKERS if marker in body)
    return {
        "tokens": tokens,
        "negation": max(english.negation, _flag(body, w.NEGATION_CUES)),
        "change": max(english.change, _flag(body, w.CHANGE_CUES)),
        "pref_pos": max(english.pref_pos, 0.0 if pref_neg else _flag(body, w.PREF_POS)),
        "pref_neg": max(english.pref_neg, pref_neg),
        "habit": max(english.habit, _flag(body, w.HABIT_CUES)),
        "past": max(english.past, min(1.0, past / 2)),
        "future": max(english.future, _flag(body, w.FUTURE_CUES)),
        "time_words": max(
            english.time_words, 1.0 if ground(body, None) or contains_any(body, w.TIME_WORDS) else 0.0
        ),
        "past_ref": max(english.past_ref, _flag(body, w.PAST_CUES)),
        "first_person": max(english.first_person, _flag(body, w.FIRST_PERSON)),
        "question": max(english.question, 1.0 if body.rstrip().endswith(("?", "？")) else 0.0),
        "slots": english.slots | _slots(body),
        "self_change": max(english.self_change, _self_change(body)),
        "update": max(english.update, _flag(body, w.UPDATE_CUES)),
        "replaced": english.replaced | _replaced(body, tokens),
        "others": english.others | _others(body),
    }


def cjk_query_cue_updates(english: _QueryCues, query: str) -> dict[str, Any]:
    """The fields of ``english`` (the query's cues read as English) with its CJK cues added."""
    asked = {word for word in w.QUESTION_WORDS if word in query}
    return {
        "tokens": without_cjk_runs(english.tokens) | cjk_tokens(query),
        "temporal": max(english.temporal, _flag(query, w.Q_TEMPORAL)),
        "causal": max(english.causal, _flag(query, w.Q_CAUSAL)),
        "recency": max(english.recency, _flag(query, w.Q_RECENCY)),
        "compare": max(english.compare, _flag(query, w.Q_COMPARE)),
        "conjunction": max(
            english.conjunction,
            1.0 if contains_any(query, frozenset({"和", "、", "，", "と", "や"})) else 0.0,
        ),
        "question_words": max(english.question_words, len(asked)),
        "what": max(english.what, _flag(query.replace("为什么", "").replace("為什麼", ""), w.Q_WHAT)),
    }

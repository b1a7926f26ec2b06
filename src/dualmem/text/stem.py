"""The stemmers, in one module: ``stem(word, mode=...)``, three modes that differ by design.

- ``"nltk"`` (the default): NLTK's ``PorterStemmer()`` default (``NLTK_EXTENSIONS`` mode). LoCoMo's
  official F1 stems tokens with it, so the benchmark re-implements it here and needs no NLTK. It
  follows M. F. Porter (1980), "An algorithm for suffix stripping", with NLTK's documented
  departures: words of one or two letters are left alone, a few irregular forms are looked up,
  ``-ies``/``-ied`` on four-letter words keep their ``ie``, step 1c needs a consonant before the
  ``y``, ``alli`` is handled first in step 2, and step 2 knows ``bli``, ``fulli`` and ``logi``.
  Checked word for word against NLTK 3.10 on the LoCoMo vocabulary (``tests/test_bench_metrics.py``).
- ``"fts5"``: the paper's algorithm with none of those departures, as the ``porter`` tokenizer of
  SQLite FTS5 applies it (tokens shorter than three or longer than 64 characters are left alone).
  The PostgreSQL store indexes with it so that its BM25 matches the SQLite store's; a test checks
  it token for token against FTS5 itself (``tests/test_postgres_lexical.py``).
- ``"light"``: the builtin decider's cue stem (``control/builtin_cues.py``): irregular past and
  plural forms looked up, then one of -ies/-ing/-ed/-s, a doubled consonant and a final ``e``
  dropped. Cheaper and more aggressive than Porter's; the builtin's fitted weights were fitted on
  its tokens, so it stays as it is.

Each mode is cached; ``stemmer(mode)`` gives its function for a loop over many tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Literal, TypeAlias

__all__ = ["Mode", "stem", "stemmer"]

Mode: TypeAlias = Literal["nltk", "fts5", "light"]

_Rule = tuple[str, str, Callable[[str], bool] | None]

_IRREGULAR = {
    "skies": "sky",
    "sky": "sky",
    "dying": "die",
    "lying": "lie",
    "tying": "tie",
    "news": "news",
    "innings": "inning",
    "inning": "inning",
    "outings": "outing",
    "outing": "outing",
    "cannings": "canning",
    "canning": "canning",
    "howe": "howe",
    "proceed": "proceed",
    "exceed": "exceed",
    "succeed": "succeed",
}
_VOWELS = frozenset("aeiou")


def _cons(word: str, i: int) -> bool:
    ch = word[i]
    if ch in _VOWELS:
        return False
    if ch == "y":
        return i == 0 or not _cons(word, i - 1)
    return True


def _measure(stem: str) -> int:
    seq = "".join("c" if _cons(stem, i) else "v" for i in range(len(stem)))
    return seq.count("vc")


def _positive(stem: str) -> bool:
    return _measure(stem) > 0


def _gt1(stem: str) -> bool:
    return _measure(stem) > 1


def _has_vowel(stem: str) -> bool:
    return any(not _cons(stem, i) for i in range(len(stem)))


def _double_cons(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _cons(word, len(word) - 1)


def _cvc(word: str) -> bool:
    n = len(word)
    if n >= 3:
        return _cons(word, n - 3) and not _cons(word, n - 2) and _cons(word, n - 1) and word[-1] not in "wxy"
    return n == 2 and not _cons(word, 0) and _cons(word, 1)


def _apply(word: str, rules: list[_Rule], *, proper: bool = False) -> str:
    """The first rule whose suffix matches decides: it applies if its condition holds, else nothing.

    ``proper``: a suffix matches only when something precedes it (FTS5's reading).
    """
    for suffix, replacement, condition in rules:
        if proper and len(suffix) >= len(word):
            continue
        if suffix == "*d":
            if _double_cons(word):
                base = word[:-2]
                return base + replacement if condition is None or condition(base) else word
            continue
        if word.endswith(suffix):
            base = word[: len(word) - len(suffix)]
            return base + replacement if condition is None or condition(base) else word
    return word


def _step1a(word: str) -> str:
    if word.endswith("ies") and len(word) == 4:
        return word[:-3] + "ie"
    return _apply(word, [("sses", "ss", None), ("ies", "i", None), ("ss", "ss", None), ("s", "", None)])


def _step1b(word: str) -> str:
    if word.endswith("ied"):
        return word[:-3] + ("ie" if len(word) == 4 else "i")
    if word.endswith("eed"):
        base = word[:-3]
        return base + "ee" if _measure(base) > 0 else word
    return _step1b_ed_ing(word, _cvc)


def _step1b_ed_ing(word: str, cvc: Callable[[str], bool]) -> str:
    """Step 1b's ``-ed`` / ``-ing`` after a vowel, and what it restores (``cvc``: the ``*o`` test)."""
    for suffix in ("ed", "ing"):
        if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
            mid = word[: -len(suffix)]
            break
    else:
        return word
    return _apply(
        mid,
        [
            ("at", "ate", None),
            ("bl", "ble", None),
            ("iz", "ize", None),
            ("*d", mid[-1], lambda _: mid[-1] not in "lsz"),
            ("", "e", lambda base: _measure(base) == 1 and cvc(base)),
        ],
    )


def _step1c(word: str) -> str:
    return _apply(word, [("y", "i", lambda base: len(base) > 1 and _cons(base, len(base) - 1))])


_STEP2: list[_Rule] = [
    ("ational", "ate", _positive),
    ("tional", "tion", _positive),
    ("enci", "ence", _positive),
    ("anci", "ance", _positive),
    ("izer", "ize", _positive),
    ("bli", "ble", _positive),
    ("alli", "al", _positive),
    ("entli", "ent", _positive),
    ("eli", "e", _positive),
    ("ousli", "ous", _positive),
    ("ization", "ize", _positive),
    ("ation", "ate", _positive),
    ("ator", "ate", _positive),
    ("alism", "al", _positive),
    ("iveness", "ive", _positive),
    ("fulness", "ful", _positive),
    ("ousness", "ous", _positive),
    ("aliti", "al", _positive),
    ("iviti", "ive", _positive),
    ("biliti", "ble", _positive),
    ("fulli", "ful", _positive),
]


def _step2(word: str) -> str:
    if word.endswith("alli") and _positive(word[:-4]):
        return _step2(word[:-4] + "al")
    return _apply(word, [*_STEP2, ("logi", "log", lambda _: _positive(word[:-3]))])


_STEP3: list[_Rule] = [
    ("icate", "ic", _positive),
    ("ative", "", _positive),
    ("alize", "al", _positive),
    ("iciti", "ic", _positive),
    ("ical", "ic", _positive),
    ("ful", "", _positive),
    ("ness", "", _positive),
]

_STEP4: list[_Rule] = [
    *(
        (s, "", _gt1)
        for s in ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent")
    ),
    ("ion", "", lambda base: _measure(base) > 1 and base[-1:] in ("s", "t")),
    *((s, "", _gt1) for s in ("ou", "ism", "ate", "iti", "ous", "ive", "ize")),
]


def _step5a(word: str, cvc: Callable[[str], bool] = _cvc) -> str:
    if word.endswith("e"):
        base = word[:-1]
        m = _measure(base)
        if m > 1 or (m == 1 and not cvc(base)):
            return base
    return word


def _step5b(word: str) -> str:
    return _apply(word, [("ll", "l", lambda _: _measure(word[:-1]) > 1)])


@lru_cache(maxsize=65536)
def _stem_nltk(word: str) -> str:
    """NLTK's Porter stem of one word (lower-cased first)."""
    word = word.lower()
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 2:
        return word
    for step in (_step1a, _step1b, _step1c, _step2):
        word = step(word)
    word = _apply(word, _STEP3)
    word = _apply(word, _STEP4)
    return _step5b(_step5a(word))


# -- the 1980 paper's algorithm, as SQLite FTS5's porter tokenizer applies it ---------------

_FTS5_MAX = 64  # FTS5 leaves longer tokens unstemmed

_STEP2_PAPER: list[_Rule] = [
    (suffix, replacement, condition)
    for suffix, replacement, condition in _STEP2
    if suffix not in ("fulli", "bli", "alli")
] + [("bli", "ble", _positive), ("alli", "al", _positive), ("logi", "log", _positive)]


def _cvc_paper(word: str) -> bool:
    """The paper's ``*o``: the word ends consonant-vowel-consonant, the last not w, x or y."""
    n = len(word)
    return (
        n >= 3
        and _cons(word, n - 3)
        and not _cons(word, n - 2)
        and _cons(word, n - 1)
        and word[-1] not in "wxy"
    )


def _paper_step1b(word: str) -> str:
    if word.endswith("eed") and len(word) > 3:
        base = word[:-3]
        return base + "ee" if _measure(base) > 0 else word
    return _step1b_ed_ing(word, _cvc_paper)


@lru_cache(maxsize=65536)
def _stem_fts5(word: str) -> str:
    """The Porter (1980) stem of one lower-case token, as SQLite FTS5's ``porter`` tokenizer gives it."""
    if len(word) < 3 or len(word) > _FTS5_MAX:
        return word
    step1a: list[_Rule] = [("sses", "ss", None), ("ies", "i", None), ("ss", "ss", None), ("s", "", None)]
    word = _paper_step1b(_apply(word, step1a, proper=True))
    word = _apply(word, [("y", "i", _has_vowel)], proper=True)
    for rules in (_STEP2_PAPER, _STEP3, _STEP4):
        word = _apply(word, rules, proper=True)
    return _step5b(_step5a(word, _cvc_paper))


# -- the builtin decider's light stem ----------------------------------------------------------

_LIGHT_IRREGULAR = {
    past: base
    for base, forms in {
        "buy": "bought", "eat": "ate eaten", "see": "saw seen", "meet": "met", "find": "found",
        "leave": "left", "feel": "felt", "think": "thought", "bring": "brought", "win": "won",
        "lose": "lost", "begin": "began begun", "write": "wrote written", "sing": "sang sung",
        "drive": "drove driven", "fly": "flew flown", "spend": "spent", "send": "sent",
        "build": "built", "catch": "caught", "teach": "taught", "fall": "fell fallen", "keep": "kept",
        "sleep": "slept", "pay": "paid", "sell": "sold", "hear": "heard", "hold": "held",
        "become": "became", "choose": "chose chosen", "swim": "swam swum", "ride": "rode ridden",
        "wear": "wore worn", "run": "ran", "break": "broke broken", "give": "gave given",
        "speak": "spoke spoken", "grow": "grew grown", "know": "knew known", "draw": "drew drawn",
        "read": "read", "lead": "led", "stand": "stood", "understand": "understood", "learn": "learnt",
        "child": "children", "person": "people", "woman": "women", "man": "men",
    }.items()
    for past in forms.split()
}  # fmt: skip


@lru_cache(maxsize=65536)
def _stem_light(token: str) -> str:
    """A light, consistent stem: irregular forms, then -ies/-s/-ing/-ed, a doubled consonant, a final e."""
    base = _LIGHT_IRREGULAR.get(token)
    if base is not None:
        token = base
    elif len(token) > 4 and token.endswith("ies"):
        token = token[:-3] + "y"
    elif len(token) > 5 and token.endswith("ing"):
        token = token[:-3]
    elif len(token) > 4 and token.endswith("ed"):
        token = token[:-2]
    elif len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        token = token[:-1]
    if len(token) > 3 and token[-1] == token[-2] and token[-1] not in "aeiouls":
        token = token[:-1]
    if len(token) > 3 and token.endswith("e"):
        token = token[:-1]
    return token


_STEMMERS: dict[str, Callable[[str], str]] = {"nltk": _stem_nltk, "fts5": _stem_fts5, "light": _stem_light}


def stemmer(mode: Mode = "nltk") -> Callable[[str], str]:
    """The (cached) stem function of ``mode`` (module docstring)."""
    try:
        return _STEMMERS[mode]
    except KeyError:
        raise ValueError(f"unknown stemmer mode {mode!r}; expected one of {', '.join(_STEMMERS)}") from None


def stem(word: str, mode: Mode = "nltk") -> str:
    """The stem of one token in ``mode``: ``"nltk"`` (LoCoMo's F1), ``"fts5"`` (SQLite FTS5's
    ``porter``, the lexical index of both stores) or ``"light"`` (the builtin decider's cues)."""
    return stemmer(mode)(word)

"""Word-level text helpers: tokens, stopwords, overlap, safe SQLite FTS5 queries, and the lexical
index's one rule.

:func:`tokenize` (words with their inner apostrophes, possessive ``'s`` dropped) is what queries'
content words, lexical overlap, the builtin decider's cues and the hashing embedder see.

**The index rule** (``RULE_VERSION``) decides the terms of every lexical index (SQLite FTS5, its
impact-ordered index, PostgreSQL's postings, the in-memory store), at index and at query time:

- :func:`index_words`: the text's words as SQLite FTS5's ``unicode61 remove_diacritics 2`` splits
  and folds them (``_unicode61``: FTS5's own tables, so the split is FTS5's for every code point);
- :func:`index_terms`: those words stemmed as FTS5's ``porter`` tokenizer stems them
  (:func:`porter`: ``dualmem.text.stem`` mode ``fts5`` over the word's UTF-8 bytes, as FTS5 reads it);
- **CJK** (version 2): inside those words, each run of Han, Hiragana, Katakana or Hangul characters
  becomes its overlapping bigrams, and each Han character (an ideograph: a morpheme) a term of its
  own too (``"咖啡店"``: ``"咖"``, ``"咖啡"``, ``"啡"``, ``"啡店"``, ``"店"``; a kana or Hangul
  syllable only in a run of one); the rest of the word stays a word (``"python包"``: ``"python"``,
  ``"包"``). ``bench/lexical_grams.py`` chose it on the CJK dev corpus (results in
  ``bench/results/lexical-grams.json``);
- :func:`query_terms`: a query's OR-ed terms, each its index words joined by a space (a phrase when
  a content word splits into several, as ``don't`` does; a CJK word's bigrams are separate terms);
- :func:`index_text`: what an index that tokenizes by itself (SQLite FTS5) is given so that its
  tokens are the rule's: the text itself when it holds no CJK character (FTS5's split is the rule's),
  else the rule's words joined by spaces.
"""

from __future__ import annotations

import re
from functools import lru_cache

from dualmem.text._unicode61 import FOLDS, SEPARATORS
from dualmem.text.stem import stemmer

__all__ = [
    "CJK_RANGES",
    "RULE_VERSION",
    "STOPWORDS",
    "content_tokens",
    "fts5_tokens",
    "fts_or",
    "fts_query",
    "has_cjk",
    "index_terms",
    "index_text",
    "index_words",
    "overlap",
    "porter",
    "query_terms",
    "tokenize",
]

#: the index rule's version (module docstring): an index written by another version holds other terms
#: (1: FTS5's split and stem; 2: CJK runs as bigrams)
RULE_VERSION = 2

#: common English function words (and their contractions); lower case
STOPWORDS: frozenset[str] = frozenset(
    """
    a about above across after again against ago all almost along also although always am among an and
    another any
    anybody anyone anything anyway anywhere are aren't around as at be became because become been before
    being below beside besides between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't done down during each either else enough etc even ever every everybody everyone
    everything few for from further get gets got gotten had hadn't has hasn't have haven't having he he'd
    he'll he's her here here's hers herself him himself his how how's however i i'd i'll i'm i've if in
    into is isn't it it'd it'll it's its itself just least less let let's like many may maybe me might
    mine more most much must mustn't my myself neither never no nobody none nor not nothing now of off
    often oh ok okay on once one ones only onto or other others ought our ours ourselves out over own
    per perhaps please quite rather really same shall shan't she she'd she'll she's should shouldn't since so
    some somebody someone something sometimes somewhat still such than that that's the their theirs them
    themselves then there there's these they they'd they'll they're they've this those though through
    thus till to too toward towards under until up upon us very via was wasn't we we'd we'll we're we've
    were weren't what what's whatever when when's whenever where where's whereas wherever whether which
    while who who's whoever whom whose why why's will with within without won't would wouldn't yes yet
    you you'd you'll you're you've your yours yourself yourselves
    """.split()  # noqa: SIM905
)

#: a word: letters or digits of any script (no underscore), with inner apostrophes ("don't")
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def _words(text: str) -> list[str]:
    return _TOKEN.findall(text.translate(_APOSTROPHES))


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens (any script, digits kept); a possessive ``'s`` is dropped."""
    tokens = _words(text.lower())
    return [t[:-2] if t.endswith("'s") and t[:-2] not in _KEEP_S else t for t in tokens]


def _separators() -> re.Pattern[str]:
    ranges = []
    for part in SEPARATORS.split():
        lo, _, hi = part.partition("-")
        ranges.append(f"\\U{int(lo, 16):08x}" + (f"-\\U{int(hi, 16):08x}" if hi else ""))
    return re.compile(f"[^{''.join(ranges)}]+")


_UNICODE61 = _separators()
_FOLD: dict[int, str | None] = {}
for _pair in FOLDS.split():
    _code, _, _folded = _pair.partition(":")
    _FOLD[int(_code, 16)] = chr(int(_folded, 16)) if _folded else None


def fts5_tokens(text: str) -> list[str]:
    """The words of ``text`` as FTS5's ``unicode61 remove_diacritics 2`` splits them (no stemming).

    Case- and accent-folded, and split at apostrophes: ``"Zoë's"`` gives ``["zoe", "s"]``.
    """
    return [word for word in (run.translate(_FOLD) for run in _UNICODE61.findall(text)) if word]


_PORTER_MAX = 64  # FTS5 leaves tokens of more bytes (or fewer than 3) as they are
_stem_fts5 = stemmer("fts5")


@lru_cache(maxsize=65536)
def porter(word: str) -> str:
    """``word`` (an index word) stemmed as FTS5's ``porter`` tokenizer stems it: over its UTF-8
    bytes (a byte outside ASCII is a consonant; lengths are in bytes)."""
    if word.isascii():
        return _stem_fts5(word)
    raw = word.encode("utf-8")
    if len(raw) < 3 or len(raw) > _PORTER_MAX:
        return word
    try:
        return _stem_fts5(raw.decode("latin-1")).encode("latin-1").decode("utf-8")
    except UnicodeDecodeError:  # a stem that cuts a character: FTS5 would store broken UTF-8
        return word


#: Hangul Jamo, CJK radicals and symbols' ideographic marks, Hiragana, Katakana (and its phonetic
#: extensions, half-width forms), Hangul compatibility Jamo and syllables, CJK ideographs (the
#: unified blocks, their extensions and compatibility ideographs): code point ranges, inclusive
CJK_RANGES = (
    (0x1100, 0x11FF), (0x2E80, 0x2FDF), (0x3005, 0x3007), (0x3021, 0x3029), (0x3031, 0x3035),
    (0x3038, 0x303C), (0x3041, 0x30FF), (0x3130, 0x318F), (0x31F0, 0x31FF), (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF), (0xA960, 0xA97F), (0xAC00, 0xD7AF), (0xD7B0, 0xD7FF), (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F), (0x20000, 0x3FFFF),
)  # fmt: skip
_CJK_CLASS = "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in CJK_RANGES)
_CJK = re.compile(f"[{_CJK_CLASS}]")
_CJK_RUN = re.compile(f"([{_CJK_CLASS}]+)")
#: the Han characters among them (CJK ideographs and their extensions; 々〆〇)
_HAN = re.compile(
    "[\u3005-\u3007\u3021-\u3029\u3038-\u303b\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff]"
)
#: CJK terms of one query at most (a CJK question is one content token: two terms a character)
_CJK_QUERY_TERMS = 128


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Han, Hiragana, Katakana or Hangul character."""
    return _CJK.search(text) is not None


def _grams(run: str) -> list[str]:
    """A CJK run's terms: each Han character, and each overlapping pair (a run of one: itself)."""
    if len(run) == 1:
        return [run]
    out: list[str] = []
    for i, char in enumerate(run):
        if _HAN.match(char):
            out.append(char)
        if i + 1 < len(run):
            out.append(run[i : i + 2])
    return out


def index_words(text: str) -> list[str]:
    """The index rule's words of ``text``, unstemmed (module docstring)."""
    words = fts5_tokens(text)
    if not has_cjk(text):
        return words
    out: list[str] = []
    for word in words:
        if not has_cjk(word):
            out.append(word)
            continue
        for i, part in enumerate(_CJK_RUN.split(word)):  # odd parts are the CJK runs
            if i % 2:
                out += _grams(part)
            elif part:
                out.append(part)
    return out


def index_text(text: str) -> str:
    """``text`` as a tokenizing index (FTS5 ``unicode61``) is given it: unchanged without a CJK
    character (FTS5 splits it as the rule does), else the rule's words joined by spaces."""
    return text if not has_cjk(text) else " ".join(index_words(text))


def index_terms(text: str) -> list[str]:
    """The index rule's terms of ``text``: its words, stemmed (what every lexical index holds)."""
    return [porter(word) for word in index_words(text)]


def query_terms(text: str, *, max_terms: int = 32) -> list[str]:
    """The OR-ed terms of a lexical query of ``text``: each distinct content token without CJK (at
    most ``max_terms``) as its index words joined by a space (FTS5 reads a quoted string of several
    words as a phrase; tokens without an index word are left out), then the index words of the
    text's words that hold CJK (at most 64), each a term. Unstemmed: an index stems them."""
    tokens = list(dict.fromkeys(content_tokens(text)))[: max(0, max_terms)]
    terms = [" ".join(words) for words in (index_words(t) for t in tokens if not has_cjk(t)) if words]
    if not has_cjk(text):
        return terms
    # every word of the text with a CJK character gives its index words (bigrams, and the words
    # around them), each a term of its own: a CJK question is one run, no phrase of it would match
    grams = dict.fromkeys(
        part for word in fts5_tokens(text) if has_cjk(word) for part in _cjk_query_words(word)
    )
    return terms + [gram for gram in grams if gram not in terms][:_CJK_QUERY_TERMS]


def _cjk_query_words(word: str) -> list[str]:
    """A query word's index words without the CJK stopwords, as English queries drop theirs
    (``content_tokens``): the question words cut the word (``"猫叫什么"``: ``"猫叫"``), then the
    function characters (``的``, ``我``, ``吗``), the bigrams of two of them (``我的``) and those
    with a particle or pronoun in them (``的猫``, ``我看``) are left out; the index keeps every term
    (query side only)."""
    cut = _QUESTION_CUT.sub(" ", word)
    return [
        w
        for piece in cut.split()
        for w in index_words(piece)
        if w not in _CJK_QUERY_STOP and not (len(w) == 2 and (w[0] in _PARTICLES or w[1] in _PARTICLES))
    ]


#: particles and pronouns: a query bigram holding one is a word boundary, not a word
_PARTICLES = frozenset("的了吗呢吧啊我你是のはがをにで")


def _question_cut() -> re.Pattern[str]:
    from dualmem.text._cjk_words import QUESTION_WORDS

    words = sorted((w for w in QUESTION_WORDS if has_cjk(w)), key=len, reverse=True)
    return re.compile("|".join(map(re.escape, words)))


def _query_stop() -> frozenset[str]:
    from dualmem.text._cjk_words import _FUNCTION_JA, _FUNCTION_ZH, CJK_STOP_BIGRAMS, CJK_STOPWORDS

    chars = set(_FUNCTION_ZH) | set(_FUNCTION_JA) | {w for w in CJK_STOPWORDS if len(w) == 1}
    return frozenset(chars) | CJK_STOP_BIGRAMS | frozenset(w for w in CJK_STOPWORDS if len(w) == 2)


_QUESTION_CUT = _question_cut()
_CJK_QUERY_STOP = _query_stop()


# "it's", "that's" ... are contractions, not possessives: keep them whole so they stay stopwords
_KEEP_S = frozenset(t[:-2] for t in STOPWORDS if t.endswith("'s"))


def content_tokens(text: str) -> list[str]:
    """``tokenize(text)`` without stopwords, in order (duplicates kept)."""
    return [t for t in tokenize(text) if t not in STOPWORDS]


@lru_cache(maxsize=8192)
def _token_set(text: str) -> frozenset[str]:
    return frozenset(content_tokens(text))


def overlap(a: str, b: str) -> float:
    """Jaccard similarity of the content-token sets of ``a`` and ``b`` (0.0 when either is empty)."""
    left, right = _token_set(a), _token_set(b)
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def fts_query(text: str, *, max_terms: int = 32) -> str:
    """A safe FTS5 ``MATCH`` expression: the query's terms (``query_terms``), each double-quoted, OR-ed.

    ``"bicycle" OR "broke"``; ``"上周" OR "周三"`` for CJK; an empty string when there is no
    content token (callers treat that as "no lexical results" and must not run the query). Every
    term is a quoted string, so no input can produce an FTS5 syntax error.
    """
    return fts_or(query_terms(text, max_terms=max_terms))


def fts_or(terms: list[str]) -> str:
    """``terms`` each double-quoted (so no input is FTS5 syntax), OR-ed; ``""`` for no terms."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)

"""Word-level text helpers: tokens, stopwords, overlap, and safe SQLite FTS5 queries.

The one tokenizer of dualmem: :func:`tokenize` (words with their inner apostrophes, possessive
``'s`` dropped) is what BM25 queries, lexical overlap, the builtin decider's cues and the hashing
embedder see; :func:`fts5_tokens` is the same word split as SQLite FTS5's ``unicode61`` tokenizer
applies it to stored text (accents folded, apostrophes separate), for the in-memory store's BM25.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["STOPWORDS", "content_tokens", "fts5_tokens", "fts_or", "fts_query", "overlap", "tokenize"]

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


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def fts5_tokens(text: str) -> list[str]:
    """The words of ``text`` as FTS5's ``unicode61 remove_diacritics 2`` splits them (no stemming).

    Case- and accent-folded, and split at apostrophes: ``"Zoë's"`` gives ``["zoe", "s"]``.
    """
    return [part for word in _TOKEN.findall(_fold(text)) for part in word.split("'")]


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
    """A safe FTS5 ``MATCH`` expression: distinct content tokens, each double-quoted, OR-ed.

    ``"bicycle" OR "broke"``; an empty string when there is no content token (callers treat that
    as "no lexical results" and must not run the query). Every term is a quoted string, so no
    input can produce an FTS5 syntax error.
    """
    return fts_or(list(dict.fromkeys(content_tokens(text)))[: max(0, max_terms)])


def fts_or(terms: list[str]) -> str:
    """``terms`` each double-quoted (so no input is FTS5 syntax), OR-ed; ``""`` for no terms."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)

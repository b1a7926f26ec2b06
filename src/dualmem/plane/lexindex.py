"""The one lexical index of every store: one rule for its terms, one BM25 formula, one contract.

Four implementations keep their own tables (SQLite's FTS5 tables and their impact-ordered index,
PostgreSQL's postings, the in-memory store's token lists) and share the store's connection and
transaction; what they index and how they score is decided here, once:

- **The rule** (``dualmem.text.lexical``, version :data:`RULE_VERSION`): :func:`terms` gives the
  terms a text is indexed under (FTS5's ``unicode61 remove_diacritics 2`` words, ``porter``-stemmed
  as FTS5 stems them, CJK runs as overlapping bigrams), :func:`query_terms` a query's OR-ed terms
  (each a phrase of index words, or one CJK bigram) and :func:`phrases` the same stemmed, as an index
  holds them. SQLite's FTS5 is given :func:`index_text` by its triggers (the text itself when it has
  no CJK character, else the rule's words), so its tokens are the rule's
  (``tests/test_lexical_rule.py`` checks its split on every code point and its terms on any text);
  every Python side (queries, the impact-ordered index, PostgreSQL, the in-memory store) calls these.
- **BM25** as SQLite FTS5's ``bm25()`` computes it: :data:`K1`, :data:`B`, :func:`idf` (floored at
  1e-6) and :func:`weight` (a term's frequency part); PostgreSQL's SQL is built from the same
  constants (``_pg_lexical.bm25_query``).
- **The contract** (:class:`LexicalComponent`): ``search`` (BM25 top-k of a field for a tenant),
  ``count`` (the rows a field holds for a user) and ``rule`` (the rule version the stored index was
  written by). Indexing and deleting happen inside the store's own writes (FTS5 triggers, PostgreSQL's
  COPY of postings, the in-memory dicts), so one call stays one transaction.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from dualmem.text.lexical import RULE_VERSION, has_cjk, index_terms, index_text, porter, query_terms
from dualmem.types import Tenant

__all__ = [
    "K1",
    "RULE_VERSION",
    "B",
    "Field",
    "LexicalComponent",
    "doc_terms",
    "has_cjk",
    "idf",
    "index_text",
    "phrases",
    "query_terms",
    "stems",
    "terms",
    "weight",
]

#: FTS5's ``bm25()`` defaults (every column weighted 1)
K1 = 1.2
B = 0.75

#: an indexed field: the nodes' text (speaker and content) or their neighbour context
Field: TypeAlias = Literal["nodes", "context"]


def terms(text: str) -> list[str]:
    """The terms ``text`` is indexed under (the rule; ``dualmem.text.lexical.index_terms``)."""
    return index_terms(text)


def stems(term: str) -> tuple[str, ...]:
    """A query term's index terms (its words, stemmed), in order; ``()`` for ``""``."""
    return tuple(porter(word) for word in term.split(" ")) if term else ()


def phrases(query: str, *, max_terms: int = 32) -> list[tuple[str, ...]]:
    """A query's OR-ed phrases as an index holds them: each of ``query_terms`` stemmed word by word
    (repeats kept: FTS5 scores each OR-ed phrase)."""
    return [stems(term) for term in query_terms(query, max_terms=max_terms)]


def doc_terms(*texts: str | None) -> tuple[int, dict[str, list[int]]]:
    """A row's (token count, term -> positions) over its columns ``texts`` in order; like FTS5's
    columns, a phrase never spans two of them (a position gap)."""
    positions: dict[str, list[int]] = defaultdict(list)
    length = offset = 0
    for text in texts:
        words = terms(text or "")
        for i, term in enumerate(words):
            positions[term].append(offset + i)
        length += len(words)
        offset += len(words) + 1
    return length, dict(positions)


def idf(total: int, df: int) -> float:
    """FTS5's idf: ``ln((N - n + 0.5) / (n + 0.5))``, 1e-6 when not positive."""
    value = math.log((total - df + 0.5) / (df + 0.5))
    return value if value > 0.0 else 1e-6


def weight(tf: float, length: float, avgdl: float) -> float:
    """BM25's term-frequency part of a row of ``length`` tokens (mean ``avgdl``)."""
    return tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avgdl))


@runtime_checkable
class LexicalComponent(Protocol):
    """What a store's lexical index answers (module docstring)."""

    def search(self, field: Field, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        """BM25 top-``k`` ``(node id, score)`` of ``field`` for ``tenant``, best first (ties: older
        first)."""
        ...

    def count(self, field: Field, user: str) -> int:
        """How many rows of ``field`` the index holds for ``user``."""
        ...

    def rule(self) -> int:
        """The rule version the stored index was written by (``RULE_VERSION`` when current)."""
        ...

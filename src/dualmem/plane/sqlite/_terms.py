"""Query-term selection of the SQLite store's FTS5 searches: a bound on the rows BM25 scores.

FTS5's ``ORDER BY rank LIMIT k`` computes ``bm25()`` for every row that holds a query term, so an OR
query costs about its terms' summed document frequencies (~3 µs a row on the shared machine; merging
the postings alone costs a twentieth of that). Once the index holds ``min_docs`` rows:

- a term no row holds is dropped (it adds exactly 0.0 to every row's score: the ranking is unchanged);
- a term in more than ``common_share`` of the rows is dropped unless every term is that common;
- of the rest (at most ``max_terms``), the rarest are the query's *rare* terms while their document
  frequencies sum to at most ``postings`` (the rarest term always is one, so a query of common words
  still finds rows); the others are its *common* terms.

The store passes ``min_docs`` and ``postings`` in the searching tenant's rows (divided by its share of
the table), so a small tenant of a large shared table is ranked exactly.

Only the rows holding a rare term are ranked, each by the whole query's BM25 (the common terms add
their scores to those rows: ``_sqlite_sql.fts_top_split``); rows that hold only common terms are
left out. A common term is one of the query's most frequent: BM25 gives it the smallest weight of
the query's terms (idf ``log((N - df + 0.5) / (df + 0.5))``), so a row holding only such terms rarely
outranks one that also holds a rare term; and it is the term that costs most rows to score. The
budget is absolute, so the rows ``bm25()`` scores stay under ``postings`` plus one term's rows,
whatever the index's size (the common terms' postings are only merged, ~1/20 of the cost a row).
A query's terms are ``lexindex.query_terms`` (each its index words joined by a space, stemmed by
the one rule: ``tokens``). Document frequencies are each table's own (``nodes_vocab`` for the nodes, a TEMP
``fts5vocab`` over ``context_fts`` for the context), read by term (an index lookup, never a scan).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from dualmem.plane import lexindex
from dualmem.plane.sqlite._scale import node_total

__all__ = ["doc_counts", "split_terms", "stems", "tokens"]

#: FTS5 table -> the fts5vocab ('row') table that counts its documents per term
_VOCAB = {"nodes_fts": "main.nodes_vocab", "context_fts": "temp.dualmem_context_vocab"}


def stems(terms: Sequence[str]) -> list[str]:
    """Each query term's first index term (``""`` if none)."""
    return [found[0] if found else "" for found in tokens(terms)]


def tokens(terms: Sequence[str]) -> list[tuple[str, ...]]:
    """Each query term's index terms in order (``lexindex.phrases``: the one rule's stems of the
    term's words)."""
    return [lexindex.stems(term) for term in terms]


def doc_counts(conn: sqlite3.Connection, table: str, terms: Sequence[str]) -> list[int]:
    """How many rows of FTS5 ``table`` hold each term (after stemming)."""
    vocab = _VOCAB[table]
    if vocab.startswith("temp."):
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab} USING fts5vocab (main, {table}, 'row')")
    stemmed = stems(terms)
    wanted = sorted({s for s in stemmed if s})
    if not wanted:
        return [0] * len(terms)
    marks = ",".join("?" * len(wanted))
    docs = dict(conn.execute(f"SELECT term, doc FROM {vocab} WHERE term IN ({marks})", wanted).fetchall())
    return [int(docs.get(s, 0)) if s else 0 for s in stemmed]


def split_terms(
    conn: sqlite3.Connection,
    table: str,
    terms: Sequence[str],
    *,
    max_terms: int,
    common_share: float,
    min_docs: float,
    postings: float,
) -> tuple[list[str], list[str]]:
    """``(rare, common)``: the terms whose rows are ranked (the budget's) and the other kept terms,
    which add their scores to those rows only (module docstring); each in the query's order."""
    if not terms:
        return [], []
    total = node_total(conn)
    if total < min_docs:
        return list(terms), []
    freq = doc_counts(conn, table, terms)
    present = [i for i in range(len(terms)) if freq[i] > 0]
    if not present:
        return [], []
    rarest = sorted(present, key=lambda i: (freq[i], i))
    usual = ([i for i in rarest if freq[i] <= common_share * total] or rarest[:1])[:max_terms]
    keep: list[int] = []
    spent = 0
    for i in usual:
        if keep and spent + freq[i] > postings:
            break
        keep.append(i)
        spent += freq[i]
    rest = set(usual) - set(keep)
    return [terms[i] for i in sorted(keep)], [terms[i] for i in sorted(rest)]

"""Lexical helpers, and FTS5 query safety against a real in-memory SQLite FTS5 table."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dualmem.text import STOPWORDS, content_tokens, fts5_tokens, fts_query, overlap, tokenize


def test_tokenize_lowercases_keeps_digits_and_scripts() -> None:
    assert tokenize("Mira's old Bicycle broke in 2023! Café, 東京 and naïve_user") == [
        "mira", "old", "bicycle", "broke", "in", "2023", "café", "東京", "and", "naïve", "user",
    ]  # fmt: skip


def test_tokenize_keeps_contractions_whole() -> None:
    assert tokenize("It’s fine, don't worry") == ["it's", "fine", "don't", "worry"]


def test_stopwords() -> None:
    assert isinstance(STOPWORDS, frozenset)
    assert {"the", "a", "my", "i", "don't", "it's"} <= STOPWORDS
    assert "bicycle" not in STOPWORDS
    assert all(w == w.lower() for w in STOPWORDS)


def test_content_tokens() -> None:
    assert content_tokens("Mira: My old bicycle broke.") == ["mira", "old", "bicycle", "broke"]
    assert content_tokens("It is what it is") == []


def test_overlap() -> None:
    assert overlap("my bicycle broke", "the bicycle is new") == pytest.approx(1 / 3)
    assert overlap("bicycle", "Bicycle!") == 1.0
    assert overlap("", "bicycle") == 0.0
    assert overlap("the and of", "bicycle") == 0.0
    assert overlap("red bike", "blue car") == 0.0


def test_fts_query_shape() -> None:
    assert fts_query("Mira: my bicycle broke, the bicycle!") == '"mira" OR "bicycle" OR "broke"'
    assert fts_query("the and of it") == ""
    assert fts_query("") == ""
    assert fts_query("a b c d e f", max_terms=2) == '"b" OR "c"'


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE docs USING fts5(content)")
    except sqlite3.OperationalError as exc:  # pragma: no cover - depends on the SQLite build
        pytest.skip(f"SQLite has no FTS5: {exc}")
    conn.executemany(
        "INSERT INTO docs(content) VALUES (?)",
        [("Mira: My old bicycle broke.",), ("I bought a new bicycle yesterday",), ("Café in 東京",)],
    )
    yield conn
    conn.close()


def test_fts_query_finds_rows(fts: sqlite3.Connection) -> None:
    rows = fts.execute("SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY rowid", (fts_query("bicycle?"),))
    assert [r[0] for r in rows] == [1, 2]
    rows = fts.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (fts_query('Mira AND "broke" NEAR(x'),))
    assert [r[0] for r in rows] == [1]


_nasty = st.lists(
    st.sampled_from(['"', "'", "*", "^", ":", "(", ")", "-", "+", "AND", "OR", "NOT", "NEAR", "NEAR(",
                     "content:", "{", "}", "\\", "\x00", "é", "東", "x", "1", " ", "_", "ǅ", "\u0301"]),
    max_size=12,
).map("".join)  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(st.text(max_size=60), _nasty))
def test_fts_query_never_errors(fts: sqlite3.Connection, text: str) -> None:
    query = fts_query(text)
    if not query:
        assert content_tokens(text) == []
        return
    fts.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (query,)).fetchall()


# --- the FTS5 word split: the same as SQLite's unicode61 tokenizer on stored text -----------------


def _sqlite_tokens(text: str) -> list[str]:
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61 remove_diacritics 2')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        db.execute("INSERT INTO t(body) VALUES (?)", (text,))
        rows = db.execute("SELECT term FROM v ORDER BY offset").fetchall()
        return [term for (term,) in rows]
    finally:
        db.close()


def test_fts5_tokens_examples() -> None:
    assert fts5_tokens("Zoë's café, it’s 2023_Q1!") == ["zoe", "s", "cafe", "it", "s", "2023", "q1"]
    assert fts5_tokens("") == []


_FTS_TEXT = st.text(alphabet=st.sampled_from("abcXYZ019 '’_-.,éüñÅ東京"), max_size=40)


@settings(max_examples=150, deadline=None)
@given(_FTS_TEXT)
def test_fts5_tokens_match_sqlite_unicode61(text: str) -> None:
    assert fts5_tokens(text) == _sqlite_tokens(text)

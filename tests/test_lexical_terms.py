"""Issue 13: the FTS5 posting budget of the SQLite store's lexical and context searches."""

from __future__ import annotations

import datetime as dt
import sqlite3

import numpy as np
import pytest

from dualmem.plane import SQLiteStore, codec
from dualmem.plane.sqlite import _sql as sql
from dualmem.plane.sqlite import _terms as terms
from dualmem.text.lexical import fts_or, query_terms
from dualmem.types import Node, Tenant

USER = Tenant("u")
T0 = dt.datetime(2023, 5, 1, tzinfo=dt.UTC)
#: 59 rows hold "garden", 31 "tomato", 6 "zucchini", 2 "quince"; every row is in one session
TEXTS = (
    ["garden day"] * 24
    + ["garden tomato"] * 28
    + ["garden tomato zucchini"] * 2
    + ["garden zucchini"] * 4
    + ["garden quince", "tomato quince"]
)


def _store() -> SQLiteStore:
    rng = np.random.default_rng(11)
    store = SQLiteStore.open(":memory:")
    nodes = []
    for i, text in enumerate(TEXTS):
        vector = rng.normal(size=8).astype(np.float32)
        nodes.append(
            Node(
                id=f"n{i:04d}", tenant=USER, content=text, at=T0 + dt.timedelta(minutes=i),
                session="s1", embedding=vector / np.linalg.norm(vector),
            )
        )  # fmt: skip
    store.put_nodes(nodes)
    return store


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> SQLiteStore:
    monkeypatch.setattr(codec, "QUERY_MIN_DOCS", 10)  # the selection runs on this small index
    monkeypatch.setattr(codec, "QUERY_COMMON_SHARE", 1.0)  # only the budget decides here
    with _store() as opened:
        yield opened


def _matches(conn: sqlite3.Connection, table: str, words: list[str]) -> int:
    return int(
        conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {table} MATCH ?", (fts_or(words),)).fetchone()[0]
    )


def _plain(conn: sqlite3.Connection, table: str, words: list[str], k: int) -> list[tuple[str, float]]:
    statement = (
        f"SELECT n.id, -bm25({table}) AS score FROM {table} CROSS JOIN nodes n ON n.seq = {table}.rowid "
        f"WHERE {table} MATCH ? ORDER BY score DESC, n.seq LIMIT ?"
    )
    return [(r[0], float(r[1])) for r in conn.execute(statement, (fts_or(words), k))]


def test_document_counts_are_each_tables_own(store: SQLiteStore) -> None:
    conn = store._conn
    words = ["gardening", "tomatoes", "zucchini", "quince", "absent"]
    for table in ("nodes_fts", "context_fts"):
        counted = [_matches(conn, table, [w]) for w in words]
        assert terms.doc_counts(conn, table, words) == counted
    assert terms.doc_counts(conn, "nodes_fts", words) == [59, 31, 6, 2, 0]
    # a neighbour's text makes the context field hold a term in more rows than the nodes do
    assert terms.doc_counts(conn, "context_fts", ["quince"])[0] > 2


def test_the_budget_keeps_the_rarest_terms(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = store._conn
    query = ["garden", "tomato", "zucchini", "quince"]
    pick = lambda budget: terms.split_terms(  # noqa: E731
        conn, "nodes_fts", query, max_terms=12, common_share=1.0, min_docs=10, postings=budget
    )[0]
    assert pick(10**9) == query  # no budget: every term, in the query's order
    assert pick(8) == ["zucchini", "quince"]  # 2 + 6 rows fit, "tomato" (31 more) does not
    assert pick(7) == ["quince"]
    assert pick(39) == ["tomato", "zucchini", "quince"]  # order kept, "garden" (59) left out
    # even the rarest over budget: kept alone, so a query of common words still finds rows
    assert terms.split_terms(
        conn, "nodes_fts", ["garden", "tomato"], max_terms=12, common_share=1.0, min_docs=10, postings=1
    )[0] == ["tomato"]


def test_the_budget_bounds_the_rows_scored(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Removing the cap (a huge budget) would rank every row holding "garden": this fails then."""
    conn = store._conn
    monkeypatch.setattr(codec, "QUERY_POSTINGS", 8)
    query = "garden tomato zucchini quince"
    assert store._lexical.query_split("nodes_fts", query) == (["zucchini", "quince"], ["garden", "tomato"])
    hits = store.lexical_search(USER, query, 1000)
    assert len(hits) == _matches(conn, "nodes_fts", ["zucchini", "quince"]) == 8  # not the 59 of "garden"
    rare_rows = {f"n{i:04d}" for i, t in enumerate(TEXTS) if "zucchini" in t or "quince" in t}
    assert {i for i, _ in hits} == rare_rows
    for table, search in (("nodes_fts", store.lexical_search), ("context_fts", store.context_search)):
        rare, _ = store._lexical.query_split(table, query)
        assert sum(terms.doc_counts(conn, table, rare)) <= 8 or len(rare) == 1
        assert len(search(USER, query, 1000)) == _matches(conn, table, rare)


def test_ranked_rows_keep_the_whole_querys_scores(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The common terms still score the rows that are ranked: the same scores and order as the plain
    OR of every term, restricted to the rows holding a rare term."""
    conn = store._conn
    monkeypatch.setattr(codec, "QUERY_POSTINGS", 8)
    query = "garden tomato zucchini quince"
    for table, search in (("nodes_fts", store.lexical_search), ("context_fts", store.context_search)):
        rare, common = store._lexical.query_split(table, query)
        assert common  # the split is in force
        held = {
            row[0]
            for row in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (fts_or(rare),))
        }
        seq = dict(conn.execute("SELECT id, seq FROM nodes"))
        plain = [hit for hit in _plain(conn, table, query.split(), 1000) if seq[hit[0]] in held]
        got = search(USER, query, 1000)
        assert [i for i, _ in got] == [i for i, _ in plain]
        assert [s for _, s in got] == pytest.approx([s for _, s in plain], rel=1e-12)
        assert search(USER, query, 3) == got[:3]


def test_a_query_of_common_terms_still_finds_rows(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(codec, "QUERY_POSTINGS", 1)
    monkeypatch.setattr(codec, "QUERY_COMMON_SHARE", 0.2)  # every term here is "common"
    hits = store.lexical_search(USER, "garden tomato", 10)
    assert len(hits) == 10
    assert store._lexical.query_split("nodes_fts", "garden tomato") == (["tomato"], [])  # both over the share
    assert len(store.context_search(USER, "garden tomato", 10)) == 10


def test_absent_terms_leave_the_ranking_exactly_as_it_was(store: SQLiteStore) -> None:
    conn = store._conn
    query = "tomato zucchini nonexistentword quince"
    assert store._lexical.query_terms("nodes_fts", query) == ["tomato", "zucchini", "quince"]
    assert store.lexical_search(USER, query, 50) == _plain(conn, "nodes_fts", query.split(), 50)
    assert store._lexical.query_terms("nodes_fts", "nonexistentword") == []
    assert store.lexical_search(USER, "nonexistentword", 5) == []


def test_below_min_docs_every_term_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec, "QUERY_POSTINGS", 1)  # would drop all but one term, were it applied
    with _store() as store:  # 62 rows < QUERY_MIN_DOCS (2,000): LoCoMo-sized stores are untouched
        query = "garden tomato zucchini quince nonexistentword"
        assert store._lexical.query_terms("nodes_fts", query) == query.split()
        assert store.lexical_search(USER, query, 100) == _plain(
            store._conn, "nodes_fts", query.split()[:4], 100
        )


def test_stems_match_the_index_tokenizer(store: SQLiteStore) -> None:
    words = query_terms("gardening Tomatoes zucchini ... Zoë'd")
    assert words == ["gardening", "tomatoes", "zucchini", "zoe d"]
    assert terms.stems(words) == ["garden", "tomato", "zucchini", "zoe"]
    assert terms.tokens(["zoe d", ""]) == [("zoe", "d"), ()]
    # each is what FTS5 indexes: the counts of the stems are FTS5's own matches
    assert terms.doc_counts(store._conn, "nodes_fts", words[:3]) == [
        _matches(store._conn, "nodes_fts", [w]) for w in words[:3]
    ]


def test_decoded_tenants_are_shared_values() -> None:
    a, b = sql.tenant_of("u", None, "r"), sql.tenant_of("u", None, "r")
    assert a is b
    assert a == Tenant("u", None, "r")


def test_a_small_tenant_of_a_large_table_is_ranked_exactly(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rules count the searching tenant's rows: a tenant too small for a selection keeps its rows
    that hold only common terms, however large the shared table (issue 13, 1,000 users x 1k)."""
    monkeypatch.setattr(codec, "QUERY_POSTINGS", 5)  # "garden" (61 rows) is common for the table
    small = Tenant("v")
    texts = ["garden path"] * 4 + ["quince jam"]
    store.put_nodes(
        [
            Node(
                id=f"v{i}", tenant=small, content=text, at=T0 + dt.timedelta(hours=i), session="s9",
                embedding=np.eye(8, dtype=np.float32)[i % 8],
            )
            for i, text in enumerate(texts)
        ]
    )  # fmt: skip
    query = "garden quince"
    # the big tenant's search is bounded: only the rows holding "quince" are ranked
    assert {i for i, _ in store.lexical_search(USER, query, 50)} == {"n0058", "n0059"}
    found = store.lexical_search(small, query, 10)
    assert {i for i, _ in found} == {f"v{i}" for i in range(5)}
    plain = [
        (node_id, score) for node_id, score in _plain(store._conn, "nodes_fts", ["garden", "quince"], 100)
        if node_id.startswith("v")
    ]  # fmt: skip
    assert [i for i, _ in found] == [i for i, _ in plain]
    assert [s for _, s in found] == pytest.approx([s for _, s in plain], rel=1e-12)

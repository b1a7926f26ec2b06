"""A database whose lexical index an older rule wrote (CJK runs kept whole): a notice, then a reindex.

An SQLite file as dualmem wrote it before rule 2 is made from a current one the way that dualmem made
it: the FTS5 triggers of schema v1 and v6 (the raw text), FTS5's own ``rebuild`` from the tables, no
rule marker and no migration 12. A PostgreSQL one is written with rule 1's terms (FTS5's split and
stem, no bigrams) and no marker.
"""

from __future__ import annotations

import datetime as dt
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dualmem.plane import SQLiteStore, lexindex
from dualmem.text.lexical import fts5_tokens, porter
from dualmem.types import Node, Tenant

USER = Tenant("u")
T0 = dt.datetime(2025, 3, 1, tzinfo=dt.UTC)
TEXTS = [
    "我女儿叫朵朵，今年上小学二年级。",
    "We planted tomatoes in the garden.",
    "周末我们去了西湖边的咖啡店。",
    "My gardener waters the tomato beds.",
]


def _nodes(texts: list[str]) -> list[Node]:
    rng = np.random.default_rng(1)
    out = []
    for i, text in enumerate(texts):
        vector = rng.normal(size=8).astype(np.float32)
        out.append(
            Node(id=f"n{i}", tenant=USER, content=text, speaker="user", session="s1",
                 at=T0 + dt.timedelta(minutes=i), embedding=vector / np.linalg.norm(vector))
        )  # fmt: skip
    return out


#: the FTS5 triggers of schema v1 (nodes) and v6 (context), as dualmem wrote them before the rule
_NODES_DELETE = (
    "INSERT INTO nodes_fts (nodes_fts, rowid, speaker, content) "
    "VALUES ('delete', old.seq, old.speaker, old.content);"
)
_NODES_INSERT = "INSERT INTO nodes_fts (rowid, speaker, content) VALUES (new.seq, new.speaker, new.content);"
_CONTEXT_DELETE = "INSERT INTO context_fts (context_fts, rowid, text) VALUES ('delete', old.seq, old.text);"
_CONTEXT_INSERT = "INSERT INTO context_fts (rowid, text) VALUES (new.seq, new.text);"
_RULE_1 = [
    f"CREATE TRIGGER nodes_fts_insert AFTER INSERT ON nodes BEGIN {_NODES_INSERT} END",
    f"CREATE TRIGGER nodes_fts_delete AFTER DELETE ON nodes BEGIN {_NODES_DELETE} END",
    "CREATE TRIGGER nodes_fts_update AFTER UPDATE OF content, speaker ON nodes BEGIN "
    f"{_NODES_DELETE} {_NODES_INSERT} END",
    f"CREATE TRIGGER node_context_insert AFTER INSERT ON node_context BEGIN {_CONTEXT_INSERT} END",
    f"CREATE TRIGGER node_context_delete AFTER DELETE ON node_context BEGIN {_CONTEXT_DELETE} END",
    "CREATE TRIGGER node_context_update AFTER UPDATE ON node_context BEGIN "
    f"{_CONTEXT_DELETE} {_CONTEXT_INSERT} END",
]


def _as_rule_1(path: Path) -> None:
    """The file as dualmem wrote it before the rule: raw-text triggers, FTS5 rebuilt from the tables."""
    conn = sqlite3.connect(path, isolation_level=None)
    old = _RULE_1
    conn.execute("BEGIN")
    for statement in old:
        conn.execute(f"DROP TRIGGER {statement.split()[2]}")
        conn.execute(statement)
    conn.execute("INSERT INTO nodes_fts (nodes_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO context_fts (context_fts) VALUES ('rebuild')")
    conn.execute("DELETE FROM meta WHERE key = 'lexical_rule'")
    conn.execute("DELETE FROM schema_migrations WHERE version = 12")
    conn.execute("COMMIT")
    conn.close()


def _ids(found: list[tuple[str, float]]) -> list[str]:
    return [i for i, _ in found]


def test_an_old_file_with_chinese_is_told_and_reindexed_by_a_repair(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "old.db"
    with SQLiteStore.open(path) as store:
        store.put_nodes(_nodes(TEXTS))
        english = store.lexical_search(USER, "gardening tomatoes", 5)
        context = store.context_search(USER, "tomato", 5)
    _as_rule_1(path)
    with caplog.at_level(logging.WARNING, logger="dualmem"), SQLiteStore.open(path) as store:
        assert "dualmem check --repair" in caplog.text
        assert store.lexical.rule() == 1
        assert store.lexical_search(USER, "女儿叫什么名字？", 5) == []  # the old index: 女儿 is no term
        # English found as it was (scores move with the CJK rows' lengths, the index's statistics)
        assert _ids(store.lexical_search(USER, "gardening tomatoes", 5)) == _ids(english)
        report = store.check()
        assert report.kinds() == {"lexical_rule"}
        assert next(p for p in report.problems if p.kind == "lexical_rule").count >= 2  # nodes and contexts
        repaired = store.check(repair=True)
        assert "lexical_rule" in repaired.repaired
        assert repaired.healthy
        assert store.lexical.rule() == lexindex.RULE_VERSION
        assert _ids(store.lexical_search(USER, "女儿叫什么名字？", 5)) == ["n0"]
        assert _ids(store.lexical_search(USER, "西湖的咖啡", 5)) == ["n2"]
        assert store.lexical_search(USER, "gardening tomatoes", 5) == english
        assert store.context_search(USER, "tomato", 5) == context
        # FTS5 stays consistent through later writes of the new rule: delete and rewrite CJK rows
        store.delete_nodes(["n0"])
        store.put_nodes(_nodes(["", "", "", "", "我家的猫叫咪咪。"])[4:])
        assert _ids(store.lexical_search(USER, "猫叫什么", 5)) == ["n4"]
        assert store.check().healthy
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="dualmem"), SQLiteStore.open(path) as store:
        assert "reindex" not in caplog.text


def test_an_old_english_file_takes_the_rule_at_once_with_the_same_results(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "old.db"
    english = [t for t in TEXTS if t.isascii()]
    with SQLiteStore.open(path) as store:
        store.put_nodes(_nodes(english))
        before = store.lexical_search(USER, "gardening tomatoes", 5), store.context_search(USER, "tomato", 5)
    _as_rule_1(path)
    with caplog.at_level(logging.WARNING, logger="dualmem"), SQLiteStore.open(path) as store:
        assert caplog.text == ""
        assert store.lexical.rule() == lexindex.RULE_VERSION
        assert (
            store.lexical_search(USER, "gardening tomatoes", 5),
            store.context_search(USER, "tomato", 5),
        ) == before
        store.put_nodes(_nodes([*english, "我家的猫叫咪咪。"])[2:])
        assert _ids(store.lexical_search(USER, "猫叫什么", 5)) == ["n2"]
        assert store.check().healthy


def test_an_old_postgres_database_is_reindexed_by_a_repair(
    pg_store_factory: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = pg_store_factory()
    with monkeypatch.context() as old:  # rule 1: FTS5's words and stems, CJK runs whole
        old.setattr(lexindex, "terms", lambda text: [porter(w) for w in fts5_tokens(text)])
        store.put_nodes(_nodes(TEXTS))
    with store.transaction(), store._conn("test") as conn:
        conn.execute("DELETE FROM meta WHERE key = 'lexical_rule'")
        conn.execute("DELETE FROM schema_migrations WHERE version = 5")  # migrated again at the next open
    with caplog.at_level(logging.WARNING, logger="dualmem"):
        pg_store_factory(schema=store.schema)  # opened again: migration 5 keeps rule 1 (CJK text), and tells
    assert "dualmem check --repair" in caplog.text
    assert store.lexical.rule() == 1
    assert store.lexical_search(USER, "女儿叫什么名字？", 5) == []
    assert store.context_search(USER, "西湖的咖啡", 5) == []
    english = store.lexical_search(USER, "gardening tomatoes", 5)
    assert store.check().kinds() == {"lexical_rule"}
    repaired = store.check(repair=True)
    assert repaired.healthy
    assert "lexical_rule" in repaired.repaired
    assert store.lexical.rule() == lexindex.RULE_VERSION
    assert _ids(store.lexical_search(USER, "女儿叫什么名字？", 5)) == ["n0"]
    assert store.context_search(USER, "西湖的咖啡", 5) != []
    assert _ids(store.lexical_search(USER, "gardening tomatoes", 5)) == _ids(english)
    assert store.lexical.count("nodes", USER.user) == len(TEXTS)

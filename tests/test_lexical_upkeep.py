"""Issue 13: the lexical index keeps itself fresh by bounded steps (``_sqlite_impact_merge``, schema v10)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from dualmem.cli.main import main
from dualmem.plane import SQLiteStore
from dualmem.plane.sqlite import _impact as impact
from dualmem.plane.sqlite import _impact_merge as merge
from test_lexical_index import QUERIES, A, B, _nodes, _plain, _raw_count, _search, _texts

TABLES = list(impact.TABLES)


@pytest.fixture(autouse=True)
def _small_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(merge, "FROM", 1)
    monkeypatch.setattr(merge, "LAG", 0)
    monkeypatch.setattr(merge, "TIER", 2)  # runs merge early: tiering is exercised on small lists


def _stepped(path: str = ":memory:", *, other: bool = True, step: int = 16) -> SQLiteStore:
    store = SQLiteStore.open(path)
    store.put_nodes(_nodes(A, _texts(1, 120), "a"))
    if other:
        store.put_nodes(_nodes(B, _texts(2, 150) + ["quince quince quince"] * 30, "b"))
    store.use_lexical_index(1, budget=10**9, auto_build=0, step=step)
    return store


def _settle(store: SQLiteStore, *, limit: int = 200) -> int:
    """Search until neither table has upkeep left; the searches it took."""
    for n in range(limit):
        states = store.lexical_index_state()
        quiet = all(
            merge.pending(store._conn, t, lag=0) == 0 and not merge.rebuilding(store._conn, t) for t in TABLES
        )
        if quiet and set(states.values()) == {"fresh"}:
            return n
        for table in TABLES:
            _search(store, table, A, "garden", 3)
    raise AssertionError("the index never settled")


def _same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [s for _, s in got] == pytest.approx(
        [s for _, s in want], rel=2e-4, abs=2e-4
    )  # the build quantizes impacts (16 bits)
    assert [i for i, _ in got] == [i for i, _ in want]


def _rankings(store: SQLiteStore) -> dict[tuple[str, str, str], list[tuple[str, float]]]:
    return {
        (table, tenant.user, query): _search(store, table, tenant, query, 10)
        for table in TABLES
        for tenant in (A, B)
        for query in QUERIES
    }


def _same_as_a_full_build(store: SQLiteStore) -> None:
    """Every query's top 10 of both tenants, both tables, as a full build of the same rows ranks it."""
    got = _rankings(store)
    store.build_lexical_index()
    for key, want in _rankings(store).items():
        _same(got[key], want)


def test_steps_put_a_store_on_the_index_and_rank_as_a_full_build() -> None:
    with _stepped() as store:
        assert store.lexical_index_state() == {"nodes_fts": "none", "context_fts": "none"}
        assert _settle(store) > 5  # bounded steps: 16 rows each
        runs = "SELECT COUNT(DISTINCT block / 65536) FROM lex_blocks WHERE tbl = 0 AND term = 'garden'"
        assert store._conn.execute(runs).fetchone()[0] > 1  # a list of several runs
        _same_as_a_full_build(store)


def test_rows_written_after_a_build_are_merged_by_steps() -> None:
    with _stepped() as store:
        store.build_lexical_index()
        first = impact.built(store._conn, "nodes_fts")
        assert first is not None
        for i in range(6):
            store.put_nodes(_nodes(A, _texts(10 + i, 40), f"n{i}-", session=f"s{i + 2}"))
            store.lexical_search(A, "tomato", 3)
        _settle(store)
        after = impact.built(store._conn, "nodes_fts")
        assert after is not None
        assert after.upto > first.upto
        assert after.rows == first.rows + 240
        _same_as_a_full_build(store)


def test_interleaved_adds_forgets_updates_and_rollbacks_end_as_a_full_build() -> None:
    with _stepped() as store:
        _settle(store)
        for i in range(4):
            store.put_nodes(_nodes(A, _texts(20 + i, 30), f"m{i}-", session=f"t{i}"))
            store.put_nodes(_nodes(B, _texts(30 + i, 10), f"o{i}-", session=f"t{i}"))
            _search(store, "nodes_fts", A, "quince", 5)
            store.delete_nodes([f"m{i}-0003", f"a{i:04d}"])  # an erase: alice is indexed again by steps
            node = store.get_node(f"m{i}-0005")
            assert node is not None
            store.update_node(dataclasses.replace(node, content=f"harpsichord number {i}"))
            with pytest.raises(RuntimeError):
                _undone(store, i)
            _search(store, "context_fts", A, "garden", 5)
        _settle(store)
        assert store._conn.execute("SELECT COUNT(*) FROM nodes WHERE id LIKE 'u%'").fetchone()[0] == 0
        assert [i for i, _ in store.lexical_search(A, "harpsichord", 9)] == [f"m{i}-0005" for i in range(4)]
        _same_as_a_full_build(store)


def _undone(store: SQLiteStore, i: int) -> None:
    with store.transaction():
        store.put_nodes(_nodes(A, ["undone quince"] * 20, f"u{i}-", session="u"))
        _search(store, "nodes_fts", A, "quince", 5)  # inside a write: no upkeep step
        raise RuntimeError("undo")


def test_another_connections_writes_are_merged(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    with _stepped(path) as mine:
        _settle(mine)
        with SQLiteStore.open(path) as theirs:
            theirs.put_nodes(_nodes(A, _texts(40, 50), "t", session="x"))
            theirs.delete_nodes(["a0007"])
        _settle(mine)
        assert "a0007" not in dict(mine.lexical_search(A, "garden tomato", 500))
        _same_as_a_full_build(mine)


def test_a_tenants_steps_never_touch_another_tenants_ranking() -> None:
    with _stepped() as store:
        _settle(store)
        bob = {q: _search(store, "nodes_fts", B, q, 10) for q in QUERIES}
        store.delete_nodes(["a0001"])  # alice is purged and indexed again; bob's postings stay
        assert merge.rebuilding(store._conn, "nodes_fts")
        count = "SELECT COUNT(*) FROM lex_blocks WHERE user_id = 'bob'"
        held = store._conn.execute(count).fetchone()[0]
        _settle(store)
        assert store._conn.execute(count).fetchone()[0] == held
        for query, want in bob.items():
            assert _search(store, "nodes_fts", B, query, 10) == want
        assert all(i.startswith("a") for i, _ in _search(store, "nodes_fts", A, "quince", 50))


def test_erased_words_leave_the_file_and_the_user_is_indexed_again_by_steps(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with _stepped(str(db)) as store:
        store.put_nodes(_nodes(A, ["my locker code is zqlockerx"], "secret", session="s8"))
        _settle(store)
        assert store.lexical_search(A, "zqlockerx", 3)[0][0] == "secret0000"
        store.delete_nodes(["secret0000"])
        store._tx.checkpoint()
        assert _raw_count(db, b"zqlockerx") == 0
        assert store.lexical_index_state()["nodes_fts"] == "purged"
        want = _plain(store._conn, "nodes_fts", "tomato garden", 5, A)
        assert [i for i, _ in store.lexical_search(A, "tomato garden", 5)] == [i for i, _ in want]
        _settle(store)
        store._tx.checkpoint()
        assert _raw_count(db, b"zqlockerx") == 0
        assert store.lexical_search(A, "zqlockerx", 3) == []
        _same_as_a_full_build(store)


def test_the_cli_builds_the_index_alone(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with _stepped(str(db), step=0):
        pass
    assert main(["-q", "--db", str(db), "check", "--lexical-index"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["lexical_index"]["postings"] > 0
    with SQLiteStore.open(db) as store:
        assert impact.built(store._conn, "nodes_fts") is not None
        assert impact.state(store._conn, "context_fts") == "fresh"
    assert main(["-q", "--db", str(db), "--read-only", "check", "--lexical-index"]) == 2


def test_a_search_skips_its_step_while_another_connection_writes(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    with _stepped(path) as store, SQLiteStore.open(path) as other:
        with other.transaction():  # another writer holds the file: the search neither waits nor fails
            other.put_nodes(_nodes(A, ["saxophone quince"], "w", session="w"))
            assert len(store.lexical_search(A, "garden", 5)) == 5
            assert impact.built(store._conn, "nodes_fts") is None
        _settle(store)
        assert "w0000" in dict(store.lexical_search(A, "saxophone", 5))

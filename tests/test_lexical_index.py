"""Issue 13: the impact-ordered, tenant-partitioned lexical index of large FTS5 tables (schema v8)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from dualmem.errors import InvalidInput
from dualmem.plane import SQLiteStore
from dualmem.plane.sqlite import SCHEMA_VERSION
from dualmem.plane.sqlite import _impact as impact
from dualmem.plane.sqlite import _terms as terms
from dualmem.text.lexical import content_tokens, fts_or
from dualmem.types import Node, Tenant
from store_support import tenant_where

A, B = Tenant("alice"), Tenant("bob")
T0 = dt.datetime(2023, 5, 1, tzinfo=dt.UTC)
WORDS = (
    "garden", "tomato", "zucchini", "quince", "river", "bicycle", "painting", "concert", "violin", "marathon",
    "kitten", "puppy", "camera", "recipe", "festival", "museum", "mountain", "ocean", "library", "novel",
    "poetry", "chess", "soccer", "yoga", "bakery", "coffee", "tea", "guitar", "piano", "hiking", "camping",
    "sunset",
)  # fmt: skip
QUERIES = (
    "tomato garden",
    "violin concert in the museum",
    "quince zucchini recipe",
    "hiking mountain sunset camera",
    "chess",
    "coffee tea bakery novel poetry",
    "absentword garden",
)


def _texts(seed: int, n: int) -> list[str]:
    """Zipf-ish word draws of varied length (few exact ties)."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(WORDS) + 1)
    weights /= weights.sum()
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 14)), p=weights)) for _ in range(n)]


def _nodes(tenant: Tenant, texts: list[str], prefix: str, session: str = "s1") -> list[Node]:
    rng = np.random.default_rng(len(texts))
    out = []
    for i, text in enumerate(texts):
        vector = rng.normal(size=8).astype(np.float32)
        out.append(
            Node(
                id=f"{prefix}{i:04d}", tenant=tenant, content=text, speaker="Sam" if i % 3 else "Kim",
                at=T0 + dt.timedelta(minutes=i), session=session, embedding=vector / np.linalg.norm(vector),
            )
        )  # fmt: skip
    return out


def _store(path: str = ":memory:", *, other: bool = False) -> SQLiteStore:
    store = SQLiteStore.open(path)
    store.put_nodes(_nodes(A, _texts(1, 120), "a"))
    if other:
        store.put_nodes(_nodes(B, _texts(2, 150) + ["quince quince quince"] * 30, "b"))
    store.use_lexical_index(1, budget=10**9, auto_build=10**9)
    return store


def _plain(
    conn: sqlite3.Connection, table: str, query: str, k: int, tenant: Tenant
) -> list[tuple[str, float]]:
    """FTS5's exact ranking (the whole table's statistics) among the tenant's rows."""
    words = list(dict.fromkeys(content_tokens(query)))
    clause, params = tenant_where(tenant)
    statement = (
        f"SELECT n.id, -bm25({table}) AS score FROM {table} CROSS JOIN nodes n ON n.seq = {table}.rowid "
        f"WHERE {table} MATCH ? AND {clause} ORDER BY score DESC, n.seq LIMIT ?"
    )
    return [(r[0], float(r[1])) for r in conn.execute(statement, [fts_or(words), *params, k])]


def _search(store: SQLiteStore, table: str, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
    return (store.lexical_search if table == "nodes_fts" else store.context_search)(tenant, query, k)


def _same_ranking(
    got: list[tuple[str, float]], want: list[tuple[str, float]], every: dict[str, float]
) -> None:
    """The same scores in the same order, and every returned row scored as the exact ranking scores it
    (rows of one score may be any of them)."""
    assert len(got) == len(want)
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=2e-4, abs=2e-4)
    for node_id, score in got:
        assert every[node_id] == pytest.approx(score, rel=2e-4, abs=2e-4)


def _every(conn: sqlite3.Connection, table: str, query: str, tenant: Tenant) -> dict[str, float]:
    return dict(_plain(conn, table, query, 10**6, tenant))


@pytest.mark.parametrize("table", list(impact.TABLES))
def test_the_index_ranks_as_fts5_bm25_on_a_one_user_table(table: str) -> None:
    with _store() as store:
        assert store.build_lexical_index() > 0
        for query in QUERIES:
            for k in (1, 5, 50):
                want = _plain(store._conn, table, query, k, A)
                got = _search(store, table, A, query, k)
                _same_ranking(got, want, _every(store._conn, table, query, A))


def test_early_termination_reads_less_and_keeps_the_top_k(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(impact, "FIRST_BLOCK", 2)
    monkeypatch.setattr(impact, "MAX_BLOCK", 4)
    with _store() as store:
        store.build_lexical_index()
        conn, saved = store._conn, 0
        total = int(conn.execute("SELECT SUM(LENGTH(seqs)) / 4 FROM lex_blocks WHERE tbl = 0").fetchone()[0])
        for text in ("tomato garden", "quince zucchini recipe", "hiking mountain sunset camera"):
            words = content_tokens(text)
            query = impact.Query(A.user, tuple(terms.stems(words)), fts_or(words), 3, 10**9)
            upto = impact.built(conn, "nodes_fts").upto  # type: ignore[union-attr]
            ranked = impact.top(conn, "nodes_fts", query, upto=upto, changed=[])
            assert ranked.settled
            saved += total - ranked.read
            every = _every(conn, "nodes_fts", text, A)
            floor = _plain(conn, "nodes_fts", text, 3, A)[-1][1]
            ids = dict(conn.execute("SELECT seq, id FROM nodes"))
            assert len(ranked.seqs) == 3
            assert all(every[ids[seq]] >= floor - 1e-3 for seq in ranked.seqs)  # the true top 3
            budgeted = impact.top(
                conn, "nodes_fts", dataclasses.replace(query, budget=5), upto=upto, changed=[]
            )
            assert budgeted.read <= 5 + 4
            assert not budgeted.settled
        assert saved > 0


def test_a_tenant_never_sees_nor_depends_on_another_tenants_rows() -> None:
    with _store() as alone, _store(other=True) as shared:
        alone.build_lexical_index()
        shared.build_lexical_index()
        for table in impact.TABLES:
            for query in QUERIES:
                mine = _search(alone, table, A, query, 20)
                among = _search(shared, table, A, query, 20)
                assert [i for i, _ in among] == [i for i, _ in mine]
                assert [s for _, s in among] == pytest.approx([s for _, s in mine], rel=1e-12)
                theirs = _search(shared, table, B, query, 20)
                assert all(node_id.startswith("b") for node_id, _ in theirs)
        # bob's 30 "quince" rows make the word common in the shared FTS5 table, not in alice's ranking
        fts_scores = _plain(shared._conn, "nodes_fts", "quince", 3, A)
        ours = _search(shared, "nodes_fts", A, "quince", 3)
        assert ours[0][1] > 1.1 * fts_scores[0][1]  # alice's own idf: the word is rarer among her rows


def test_rows_written_after_the_build_are_found() -> None:
    with _store() as store:
        store.build_lexical_index()
        upto = impact.built(store._conn, "nodes_fts")
        store.put_nodes(_nodes(A, ["saxophone garden tomato"], "late", session="s2"))
        assert impact.built(store._conn, "nodes_fts") == upto  # not rebuilt: the delta is small
        hits = dict(store.lexical_search(A, "saxophone", 5))
        assert list(hits) == ["late0000"]
        assert "late0000" in dict(store.lexical_search(A, "saxophone tomato", 50))


def test_deleted_and_rewritten_rows_are_never_returned_stale() -> None:
    with _store() as store:
        store.build_lexical_index()
        victim, rewritten = store.lexical_search(A, "quince", 2)
        store.delete_nodes([victim[0]])
        node = store.get_node(rewritten[0])
        assert node is not None
        store.update_node(dataclasses.replace(node, content="harpsichord recital"))
        assert impact.built(store._conn, "nodes_fts") is not None
        for table in impact.TABLES:
            found = dict(_search(store, table, A, "quince", 200))
            assert victim[0] not in found
            if table == "nodes_fts":
                assert rewritten[0] not in found
            # every row that holds the word now (scores use the build's statistics until a rebuild)
            assert set(found) == {i for i, _ in _plain(store._conn, table, "quince", 200, A)}
        got = store.lexical_search(A, "harpsichord", 5)
        assert [i for i, _ in got] == [rewritten[0]]
        assert got[0][1] > 0


def test_a_changed_row_is_rescored_from_its_current_text() -> None:
    with _store() as store:
        store.build_lexical_index()
        before = store.lexical_search(A, "zucchini quince", 10)
        with store.transaction():  # the same text written again: the row's postings are set aside
            store._conn.execute("UPDATE nodes SET content = content WHERE id = ?", (before[0][0],))
        assert store._conn.execute("SELECT COUNT(*) FROM lex_changes WHERE tbl = 0").fetchone()[0] == 1
        after = store.lexical_search(A, "zucchini quince", 10)
        assert [i for i, _ in after] == [i for i, _ in before]
        assert [s for _, s in after] == pytest.approx([s for _, s in before], rel=2e-4, abs=2e-4)


def test_the_index_is_rebuilt_once_the_delta_passes_its_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(impact, "REBUILD_MIN", 3)
    monkeypatch.setattr(impact, "REBUILD_SHARE", 0.01)
    with _store() as store:
        store.build_lexical_index()
        first = impact.built(store._conn, "nodes_fts")
        store.put_nodes(_nodes(A, ["saxophone one", "saxophone two"], "x", session="s2"))
        store.lexical_search(A, "saxophone", 5)
        assert impact.built(store._conn, "nodes_fts") == first
        store.put_nodes(_nodes(A, ["saxophone three", "saxophone four"], "y", session="s3"))
        assert len(store.lexical_search(A, "saxophone", 5)) == 4
        again = impact.built(store._conn, "nodes_fts")
        assert first is not None
        assert again is not None
        assert again.upto > first.upto
        assert store._conn.execute("SELECT COUNT(*) FROM lex_changes WHERE tbl = 0").fetchone()[0] == 0


def test_a_rolled_back_write_leaves_the_index_consistent() -> None:
    with _store() as store:
        store.build_lexical_index()
        before = store.lexical_search(A, "quince garden", 10)

        def undone() -> None:
            with store.transaction():
                store.delete_nodes([before[0][0]])
                store.put_nodes(_nodes(A, ["quince quince quince"], "gone", session="s9"))
                assert before[0][0] not in dict(store.lexical_search(A, "quince garden", 10))
                raise RuntimeError("undo")

        with pytest.raises(RuntimeError):
            undone()
        assert store.lexical_search(A, "quince garden", 10) == before
        assert store._conn.execute("SELECT COUNT(*) FROM lex_changes").fetchone()[0] == 0


def test_another_connections_commits_are_seen(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    with _store(path) as mine:
        mine.build_lexical_index()
        with SQLiteStore.open(path) as theirs:
            theirs.put_nodes(_nodes(A, ["saxophone quince"], "t", session="s5"))
            gone = mine.lexical_search(A, "zucchini", 1)[0][0]
            theirs.delete_nodes([gone])
        found = dict(mine.lexical_search(A, "saxophone zucchini", 100))
        assert "t0000" in found
        assert gone not in found


def test_below_the_threshold_fts5_ranks_and_nothing_is_built() -> None:
    with _store() as store:
        store.use_lexical_index(10**6)
        for query in QUERIES:
            got = store.lexical_search(A, query, 10)
            assert got == _plain(store._conn, "nodes_fts", query, 10, A)
        assert impact.built(store._conn, "nodes_fts") is None
        assert store._conn.execute("SELECT COUNT(*) FROM lex_blocks").fetchone()[0] == 0
        store.use_lexical_index(1, auto_build=10**9)
        store.lexical_search(A, "garden", 1)  # crossing the threshold builds it
        assert impact.built(store._conn, "nodes_fts") is not None


def test_migration_v8_applies_to_an_older_file(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with _store(str(path)):
        pass
    conn = sqlite3.connect(path)
    triggers = conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'lex_%' AND type = 'trigger'")
    for (name,) in triggers.fetchall():
        conn.execute(f"DROP TRIGGER {name}")
    for name in ("lex_built", "lex_stats", "lex_blocks", "lex_changes"):
        conn.execute(f"DROP TABLE {name}")
    conn.execute("DELETE FROM schema_migrations WHERE version = 8")
    conn.commit()
    conn.close()
    with SQLiteStore.open(path) as store:
        store.use_lexical_index(1, budget=10**9, auto_build=10**9)
        versions = {r[0] for r in store._conn.execute("SELECT version FROM schema_migrations")}
        assert 8 in versions
        assert SCHEMA_VERSION >= 8
        want = _plain(store._conn, "nodes_fts", "tomato garden", 5, A)
        _same_ranking(store.lexical_search(A, "tomato garden", 5), want, dict(want))
        assert impact.built(store._conn, "nodes_fts") is not None


@pytest.mark.parametrize("first_block", [2, impact.FIRST_BLOCK])
def test_rows_of_one_score_are_cut_as_fts5_cuts_them(
    monkeypatch: pytest.MonkeyPatch, first_block: int
) -> None:
    """Equal scores go to the lower seq (FTS5's rowid order), also when k cuts a group of equal rows
    and when a block boundary does."""
    monkeypatch.setattr(impact, "FIRST_BLOCK", first_block)
    monkeypatch.setattr(impact, "MAX_BLOCK", max(4, first_block))
    with _store() as store:
        store.put_nodes(_nodes(A, ["violin sonata"] * 25 + ["sonata"] * 9, "tie", session="s7"))
        store.build_lexical_index()
        for query, k in (("violin sonata", 7), ("sonata", 30), ("violin sonata garden", 12)):
            want = _plain(store._conn, "nodes_fts", query, k, A)
            assert [i for i, _ in store.lexical_search(A, query, k)] == [i for i, _ in want]


def _raw_count(db: Path, needle: bytes) -> int:
    return sum(
        p.read_bytes().count(needle)
        for p in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-journal"))
        if p.exists()
    )


@pytest.mark.parametrize("how", ["delete", "update"])
def test_erased_words_leave_the_index_and_fts5_ranks_the_user_until_a_rebuild(
    tmp_path: Path, how: str
) -> None:
    db = tmp_path / "m.db"
    with _store(str(db), other=True) as store:
        store.put_nodes(_nodes(A, ["my locker code is zqlockerx"], "secret", session="s8"))
        store.build_lexical_index()
        assert store.lexical_search(A, "zqlockerx", 3)[0][0] == "secret0000"
        assert _raw_count(db, b"zqlockerx") > 0
        if how == "delete":
            store.delete_nodes(["secret0000"])
        else:
            node = store.get_node("secret0000")
            assert node is not None
            store.update_node(dataclasses.replace(node, content="my locker is blue"))
        store._tx.checkpoint()
        assert _raw_count(db, b"zqlockerx") == 0
        count = "SELECT COUNT(*) FROM lex_blocks WHERE user_id = ?"
        assert store._conn.execute(count, ("alice",)).fetchone()[0] == 0  # bob's postings stay
        assert store._conn.execute(count, ("bob",)).fetchone()[0] > 0
        with SQLiteStore.open(db, read_only=True) as reader:  # cannot rebuild: FTS5 ranks alice
            reader.use_lexical_index(1, auto_build=10**9)
            assert reader.lexical_search(A, "zqlockerx", 3) == []
            want = _plain(reader._conn, "nodes_fts", "tomato garden", 5, A)
            assert reader.lexical_search(A, "tomato garden", 5) == want
        assert store.lexical_search(A, "zqlockerx", 3) == []  # a writable search rebuilds first
        assert store._conn.execute(count, ("alice",)).fetchone()[0] > 0
        if how == "delete":  # alice's rows are those of a one-user store again: its ranking
            with _store() as alone:
                alone.build_lexical_index()
                mine, ref = (
                    store.lexical_search(A, "quince zucchini", 9),
                    alone.lexical_search(A, "quince zucchini", 9),
                )
                assert [i for i, _ in mine] == [i for i, _ in ref]
                assert [s for _, s in mine] == pytest.approx([s for _, s in ref], rel=1e-9)


def test_a_search_the_budget_cut_short_is_rescored_from_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(impact, "FIRST_BLOCK", 2)
    monkeypatch.setattr(impact, "MAX_BLOCK", 4)
    with _store() as store:
        store.build_lexical_index()
        store.use_lexical_index(1, budget=6, auto_build=10**9)
        for query in ("hiking mountain sunset camera", "coffee tea bakery novel poetry"):
            every = _every(store._conn, "nodes_fts", query, A)
            got = store.lexical_search(A, query, 5)
            assert len(got) == 5
            # exact scores (not the partial sums of the few postings read), best first
            assert [s for _, s in got] == pytest.approx([every[i] for i, _ in got], rel=1e-9)
            assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)


def test_an_agents_rows_are_ranked_within_the_users_index() -> None:
    agent = Tenant("alice", agent="helper")
    with _store() as store:
        texts = ["garden tomato", "tomato", "garden", "violin tomato", "tomato tomato sunset"]
        store.put_nodes(_nodes(agent, texts, "ag", session="s6"))
        store.build_lexical_index()
        for query, k in (("tomato garden", 3), ("tomato", 10), ("violin", 2)):
            got = store.lexical_search(agent, query, k)
            want = _plain(store._conn, "nodes_fts", query, k, agent)
            assert [i for i, _ in got] == [i for i, _ in want]
            assert all(i.startswith("ag") for i, _ in got)


def test_a_large_store_never_builds_in_a_search_and_a_repair_builds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # above auto_build a search never holds a build: a stale or purged index leaves FTS5 ranking
    # (the bounded path), and `check --repair` (re)builds it
    monkeypatch.setattr(impact, "REBUILD_MIN", 3)
    monkeypatch.setattr(impact, "REBUILD_SHARE", 0.01)
    with _store(str(tmp_path / "m.db"), other=True) as store:
        store.use_lexical_index(1, budget=10**9, auto_build=10, step=0)  # no upkeep steps either
        assert store.lexical_index_state() == {"nodes_fts": "none", "context_fts": "none"}
        want = _plain(store._conn, "nodes_fts", "tomato garden", 5, A)
        assert store.lexical_search(A, "tomato garden", 5) == want
        assert impact.built(store._conn, "nodes_fts") is None  # not built by the search
        report = store.check(repair=True)
        assert "lexical_index" in report.repaired
        assert store.lexical_index_state() == {"nodes_fts": "fresh", "context_fts": "fresh"}
        first = impact.built(store._conn, "nodes_fts")
        store.put_nodes(_nodes(A, [f"saxophone {i}" for i in range(6)], "x", session="s2"))
        assert store.lexical_index_state()["nodes_fts"] == "stale"
        got = store.lexical_search(A, "saxophone tomato", 8)
        assert [i for i, _ in got] == [
            i for i, _ in _plain(store._conn, "nodes_fts", "saxophone tomato", 8, A)
        ]
        assert impact.built(store._conn, "nodes_fts") == first  # still the old build
        store.delete_nodes(["x0000"])
        report = store.check(repair=True)
        assert report.healthy
        assert "lexical_index" in report.repaired
        assert store.lexical_index_state() == {"nodes_fts": "fresh", "context_fts": "fresh"}
        assert store.check(repair=True).repaired == ()  # nothing left to build


def test_a_purged_user_of_a_large_store_is_ranked_by_fts5_and_the_others_by_the_index(
    tmp_path: Path,
) -> None:
    with _store(str(tmp_path / "m.db"), other=True) as store:
        store.use_lexical_index(1, budget=10**9, auto_build=10, step=0)
        store.build_lexical_index()
        store.delete_nodes(["a0000"])
        assert store.lexical_index_state()["nodes_fts"] == "purged"
        want = [i for i, _ in _plain(store._conn, "nodes_fts", "tomato garden", 5, A)]
        assert [i for i, _ in store.lexical_search(A, "tomato garden", 5)] == want
        assert impact.search(store._conn, "nodes_fts", tenant_where(A), _query(store, A, "quince")) is None
        assert impact.search(store._conn, "nodes_fts", tenant_where(B), _query(store, B, "quince"))
        assert store.lexical_index_state()["nodes_fts"] == "purged"  # no rebuild in the search


def _query(store: SQLiteStore, tenant: Tenant, text: str) -> impact.Query:
    words = list(dict.fromkeys(content_tokens(text)))
    return impact.Query(tenant.user, tuple(terms.stems(words)), fts_or(words), 5, 10**9)


def test_with_steps_off_no_search_builds_the_index() -> None:
    with SQLiteStore.open(":memory:") as store:
        store.put_nodes(_nodes(A, _texts(1, 120), "a"))
        store.use_lexical_index(1, step=0)  # the default auto_build: never a full build in a search
        want = _plain(store._conn, "nodes_fts", "tomato garden", 5, A)
        assert store.lexical_search(A, "tomato garden", 5) == want
        assert impact.built(store._conn, "nodes_fts") is None
        assert store.check(repair=True).repaired == ("lexical_index",)
        assert store.lexical_index_state() == {"nodes_fts": "fresh", "context_fts": "fresh"}


def test_adds_to_a_session_after_a_build_rewrite_contexts_again_and_again() -> None:
    # each add rewrites its session neighbours' contexts (an UPSERT): the change triggers must record
    # a row once however often it is rewritten (OR IGNORE failed the second rewrite: UNIQUE)
    with _store() as store:
        store.build_lexical_index()
        for i in range(8):
            store.put_nodes(_nodes(A, [f"fresh turn {i} about saxophone gardens"], f"z{i}-", session="s1"))
        changed = store._conn.execute("SELECT COUNT(*) FROM lex_changes WHERE tbl = 1").fetchone()[0]
        assert changed >= 2
        found = {i for i, _ in store.context_search(A, "saxophone", 20)}
        assert {"z0-0000", "z1-0000"} <= found
        assert len(store.lexical_search(A, "saxophone", 20)) == 8


@pytest.mark.parametrize("bad", [{"budget": 0}, {"threshold": -1}, {"auto_build": -5}, {"step": -1}])
def test_bad_index_settings_are_refused_and_the_old_ones_kept(bad: dict[str, int]) -> None:
    with _store() as store:
        settings = {"threshold": 1, "budget": 10**9, "auto_build": 10**9, **bad}
        with pytest.raises(InvalidInput):
            store.use_lexical_index(settings.pop("threshold"), **settings)
        want = _plain(store._conn, "nodes_fts", "tomato garden", 5, A)
        assert [i for i, _ in store.lexical_search(A, "tomato garden", 5)] == [i for i, _ in want]
        assert impact.built(store._conn, "nodes_fts") is not None  # the kept auto_build built it

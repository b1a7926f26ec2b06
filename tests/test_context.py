"""Write-time neighbour context beyond the Store contract: migration, check/repair, export/import."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dualmem import Memory
from dualmem.errors import DatabaseCorrupt
from dualmem.plane import SQLiteStore, Store
from dualmem.plane.sqlite import store as sqlite_module
from dualmem.types import Node, Tenant

USER = Tenant("u")


def unit(rng: np.random.Generator, dim: int = 16) -> np.ndarray:
    v = rng.normal(size=dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def session(rng: np.random.Generator, words: list[str], name: str = "s1") -> list[Node]:
    return [
        Node(id=f"{name}-{i}", tenant=USER, content=f"we talked about {w}", at=None, session=name,
             embedding=unit(rng))
        for i, w in enumerate(words)
    ]  # fmt: skip


def _contexts(store: Store, ids: list[str]) -> dict[str, tuple[tuple[str, int], ...]]:
    return {i: c.neighbours for i, c in store.node_context(ids, USER).items()}


def test_a_database_from_before_v6_gets_its_context_on_open(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    turns = session(np.random.default_rng(1), ["otter", "heron", "badger"])
    with SQLiteStore.open(db) as store:
        store.put_nodes(turns)
        expected = _contexts(store, [t.id for t in turns])
    conn = sqlite3.connect(db)  # undo migration 6 as a v4 file has it
    with conn:
        for name in ("node_context_insert", "node_context_delete", "node_context_update"):
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DROP TABLE context_fts")
        conn.execute("DROP TABLE node_context")
        conn.execute("DELETE FROM schema_migrations WHERE version = 6")
    conn.close()
    with SQLiteStore.open(db) as store:
        assert _contexts(store, [t.id for t in turns]) == expected
        assert {i for i, _ in store.context_search(USER, "heron", 5)} == {"s1-0", "s1-2"}
        assert store.get_meta("context_stale") is None
        assert store.check().healthy


@pytest.mark.parametrize(
    "damage",
    [
        "DELETE FROM node_context",
        "UPDATE node_context SET neighbours = '[]'",
        # rows that do not decode: reported as stale context, not raised
        "UPDATE node_context SET neighbours = x'ff01' WHERE seq = (SELECT MIN(seq) FROM node_context)",
        "UPDATE node_context SET neighbours = 'not json' WHERE seq = (SELECT MAX(seq) FROM node_context)",
        "UPDATE node_context SET vec = x'0102' WHERE seq = (SELECT MIN(seq) FROM node_context)",
    ],
)
def test_check_finds_damaged_context_and_repair_rebuilds_it(tmp_path: Path, damage: str) -> None:
    turns = session(np.random.default_rng(2), ["lynx", "marten", "stoat", "vole"])
    with SQLiteStore.open(tmp_path / "m.db") as store:
        store.put_nodes(turns)
        expected = _contexts(store, [t.id for t in turns])
        assert store.check().healthy
        store._conn.execute(damage)
        report = store.check()
        assert "context" in report.kinds()
        fixed = store.check(repair=True)
        assert fixed.healthy
        assert "context" in fixed.repaired
        assert _contexts(store, [t.id for t in turns]) == expected
        assert {i for i, _ in store.context_search(USER, "stoat", 5)} == {"s1-0", "s1-1", "s1-3"}


def test_a_changed_window_rebuilds_the_context(tmp_path: Path) -> None:
    turns = session(np.random.default_rng(3), ["ash", "birch", "cedar", "elm", "fir"])
    with SQLiteStore.open(tmp_path / "m.db") as store:
        store.put_nodes(turns)
        store.set_context_window(1)
        assert _contexts(store, ["s1-2"])["s1-2"] == (("s1-1", -1), ("s1-3", 1))
    with SQLiteStore.open(tmp_path / "m.db") as store:  # the window is the file's
        assert _contexts(store, ["s1-2"])["s1-2"] == (("s1-1", -1), ("s1-3", 1))
        assert store.check().healthy


def test_export_import_rebuilds_the_same_context(tmp_path: Path) -> None:
    opener: Callable[[str], Memory] = lambda name: Memory.open(  # noqa: E731
        tmp_path / name, embedder="hashing", controller="builtin"
    )
    observations = [
        {"text": f"turn {i} about {w}", "speaker": "Mira" if i % 2 else "Theo", "session": f"s{i // 4}"}
        for i, w in enumerate(["kettle", "teapot", "saucer", "spoon", "ladle", "whisk", "sieve", "grater"])
    ]
    with opener("a.db") as mem:
        ids = mem.add_many(observations, user="u")
        mem.export_jsonl(tmp_path / "dump.jsonl", user="u")
        before = _contexts(mem.store, ids)
        hits = mem.store.context_search(USER, "saucer", 10)
    with opener("b.db") as mem:
        mem.import_jsonl(tmp_path / "dump.jsonl", user="u")
        assert _contexts(mem.store, ids) == before
        assert [i for i, _ in mem.store.context_search(USER, "saucer", 10)] == [i for i, _ in hits]
    assert len(before) == len(ids)


def test_cached_nodes_and_contexts_follow_another_connections_writes(tmp_path: Path) -> None:
    turns = session(np.random.default_rng(4), ["oak", "yew", "hazel"])
    with SQLiteStore.open(tmp_path / "m.db") as a, SQLiteStore.open(tmp_path / "m.db") as b:
        a.put_nodes(turns)
        first = a.get_nodes(["s1-1"])["s1-1"]
        assert a.node_context(["s1-0"], USER)["s1-0"].neighbours == (("s1-1", 1), ("s1-2", 2))
        assert first.embedding is not None
        assert not first.embedding.flags.writeable  # shared between callers: read-only
        b.update_node(dataclasses.replace(turns[1], content="we talked about rowan"))
        b.delete_nodes(["s1-2"])
        assert a.get_nodes(["s1-1"])["s1-1"].content == "we talked about rowan"
        assert a.get_nodes(["s1-2"]) == {}
        assert a.node_context(["s1-0"], USER)["s1-0"].neighbours == (("s1-1", 1),)
        assert {i for i, _ in a.context_search(USER, "rowan", 5)} == {"s1-0"}


def test_cached_candidates_follow_another_connections_writes(tmp_path: Path) -> None:
    turns = session(np.random.default_rng(6), ["oak", "yew", "hazel"])
    with SQLiteStore.open(tmp_path / "m.db") as a, SQLiteStore.open(tmp_path / "m.db") as b:
        a.put_nodes(turns)
        first = a.candidates(["s1-0", "s1-1"], USER)  # read, then cached
        assert first["s1-0"].context is not None
        assert first["s1-0"].context.neighbours == (("s1-1", 1), ("s1-2", 2))
        embedding = first["s1-1"].embedding
        assert embedding is not None
        assert not embedding.flags.writeable  # shared between callers: read-only
        b.update_node(dataclasses.replace(turns[1], content="we talked about rowan"))
        b.delete_nodes(["s1-2"])
        now = a.candidates(["s1-0", "s1-1", "s1-2"], USER)
        assert set(now) == {"s1-0", "s1-1"}
        assert now["s1-1"].content == "we talked about rowan"
        assert now["s1-0"].context is not None
        assert now["s1-0"].context.neighbours == (("s1-1", 1),)


@pytest.mark.parametrize(
    ("stored", "parsed"),
    [
        ('[["s1-1", 1], ["s1-2", 2]]', (("s1-1", 1), ("s1-2", 2))),  # the joined parse
        ('[["s1-1", 1]], [["s1-2", 2]]', None),  # two values in one row: each row alone, and it fails
        ("", None),
        ("null", None),
        ('[["s1-1", "x"]]', None),
    ],
)
def test_candidate_neighbours_parse_row_by_row_exactly(tmp_path: Path, stored: str, parsed: object) -> None:
    """A neighbour list stored as JSON (schema v6-v10, or an id holding the compact separator) is read
    row by row; a damaged row is never misread as another row's neighbours: the read fails as
    ``node_context`` fails (``DatabaseCorrupt``)."""
    rng = np.random.default_rng(8)
    turns = [*session(rng, ["ash", "elm", "fir"]), *session(rng, ["lime", "pine"], "s2")]
    path = tmp_path / "m.db"
    with SQLiteStore.open(path) as store:
        store.put_nodes(turns)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE node_context SET neighbours = ? WHERE seq = (SELECT seq FROM nodes WHERE id = 's1-0')",
            (stored,),
        )
    ids = ["s2-0", "s1-0", "s1-1", "s2-1"]
    with SQLiteStore.open(path, read_only=True) as store:
        if parsed is None:
            with pytest.raises(DatabaseCorrupt):
                store.candidates(ids, USER)
            with pytest.raises(DatabaseCorrupt):
                store.node_context(ids, USER)
            return
        got = store.candidates(ids, USER)
        expected = store.node_context(ids, USER)
    assert [i for i in got if got[i].context is not None] == list(expected)
    for node_id, context in expected.items():
        assert got[node_id].context is not None
        assert got[node_id].context.neighbours == context.neighbours
    assert got["s1-0"].context is not None
    assert got["s1-0"].context.neighbours == parsed
    assert got["s2-0"].context is not None
    assert got["s2-0"].context.neighbours == (("s2-1", 1),)


def test_a_full_context_cache_never_drops_what_one_read_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the cache was emptied after the call had decided which ids it held, so the ids it
    had cached came back without their context (the pool then lost their neighbours)."""
    turns = session(np.random.default_rng(9), ["ash", "elm", "fir", "oak", "yew"])
    monkeypatch.setattr(sqlite_module, "CONTEXT_CACHE_MAX", 2)
    with SQLiteStore.open(tmp_path / "m.db") as store:
        store.put_nodes(turns)
        ids = [t.id for t in turns]
        want = _contexts(store, ids)
        assert len(want) == 5
    with SQLiteStore.open(tmp_path / "m.db") as store:
        assert _contexts(store, ids[:3]) == {i: want[i] for i in ids[:3]}  # three cached: over the cap
        # two of them cached, two not: the call starts over and still returns all four
        assert _contexts(store, [ids[1], ids[3], ids[2], ids[4]]) == {
            i: want[i] for i in (ids[1], ids[3], ids[2], ids[4])
        }

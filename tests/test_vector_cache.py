"""Issue 13: the SQLite store's vector cache follows writes by deltas, never by reloading the user.

Two real connections to one file: one is the store under test, the other commits behind its back.
Every check compares the cached search with exact numpy over what the database holds right then.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from dualmem.plane import SQLiteStore
from dualmem.types import Node, Tenant

DIM = 8
USER = Tenant("u")


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=DIM).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def node(i: int, rng: np.random.Generator, tenant: Tenant = USER) -> Node:
    return Node(id=f"n{i:05d}", tenant=tenant, content=f"note {i}", at=None, embedding=unit(rng))


def truth(path: Path, tenant: Tenant, q: np.ndarray, k: int) -> list[str]:
    """Exact top-k straight from a fresh connection (no cache)."""
    with SQLiteStore.open(path) as fresh:
        rows = fresh._conn.execute(
            "SELECT v.node_id, v.blob FROM vectors v JOIN nodes n ON n.id = v.node_id WHERE v.user_id = ? "
            "AND (? IS NULL OR n.agent_id = ?) ORDER BY v.rowid",
            (tenant.user, tenant.agent, tenant.agent),
        ).fetchall()
    if not rows:
        return []
    matrix = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
    scores = matrix @ q
    order = sorted(range(len(rows)), key=lambda i: (-scores[i], i))
    return [rows[i][0] for i in order[:k]]


def hits(store: SQLiteStore, q: np.ndarray, k: int = 5, tenant: Tenant = USER) -> list[str]:
    return [node_id for node_id, _ in store.vector_search(tenant, q, k)]


@pytest.fixture
def pair(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "m.db"
    a, b = SQLiteStore.open(path), SQLiteStore.open(path)
    a.bind_embedder("test", DIM)
    yield path, a, b
    a.close()
    b.close()


def warmed(store: SQLiteStore, seed: int, n: int) -> tuple[np.random.Generator, np.ndarray]:
    """``n`` nodes drawn from ``default_rng(seed)`` stored, then a query from the same generator,
    searched once so that the cache holds the user."""
    rng = np.random.default_rng(seed)
    store.put_nodes([node(i, rng) for i in range(n)])
    q = unit(rng)
    hits(store, q)
    return rng, q


def test_own_writes_update_the_cache_without_reloading(pair) -> None:  # type: ignore[no-untyped-def]
    path, store, _ = pair
    rng = np.random.default_rng(1)
    store.put_nodes([node(i, rng) for i in range(50)])
    q = unit(rng)
    assert hits(store, q) == truth(path, USER, q, 5)
    loads = store._cache.loads
    for i in range(50, 80):  # appends, one transaction each
        store.put_nodes([node(i, rng)])
        assert hits(store, q) == truth(path, USER, q, 5)
    best = hits(store, q)[0]
    assert store.delete_nodes([best, "n00003"]) == 2
    assert best not in hits(store, q)
    assert hits(store, q) == truth(path, USER, q, 5)
    moved = store.get_node("n00010")
    assert moved is not None
    store.update_node(dataclasses.replace(moved, embedding=q))  # now the nearest
    assert hits(store, q)[0] == "n00010"
    assert hits(store, q) == truth(path, USER, q, 5)
    assert store._cache.loads == loads  # never read the user again


def test_other_connections_commits_are_read_as_deltas(pair) -> None:  # type: ignore[no-untyped-def]
    path, store, other = pair
    rng, q = warmed(store, 2, 40)
    loads, deltas = store._cache.loads, store._cache.deltas
    other.put_nodes([node(i, rng) for i in range(40, 60)])
    other.put_nodes([Node(id="close", tenant=USER, content="x", at=None, embedding=q)])
    assert hits(store, q)[0] == "close"
    assert hits(store, q) == truth(path, USER, q, 5)
    assert (store._cache.loads, store._cache.deltas) == (loads, deltas + 1)
    store.put_nodes([node(60, rng)])  # own write after theirs: the delta is read first, then ours
    other.put_nodes([node(61, rng)])
    assert hits(store, q, k=100) == truth(path, USER, q, 100)
    assert store._cache.loads == loads


def test_other_connections_deletes_and_rewrites_are_seen(pair) -> None:  # type: ignore[no-untyped-def]
    path, store, other = pair
    _, q = warmed(store, 3, 30)
    other.delete_nodes([hits(store, q)[0]])
    assert hits(store, q) == truth(path, USER, q, 5)
    # the newest row deleted, then a new row: SQLite reuses its rowid (below the cache's mark)
    other.delete_nodes(["n00029"])
    other.put_nodes([Node(id="reused", tenant=USER, content="x", at=None, embedding=q)])
    assert hits(store, q)[0] == "reused"
    assert hits(store, q) == truth(path, USER, q, 5)
    target = other.get_node("n00005")
    assert target is not None
    other.update_node(dataclasses.replace(target, embedding=-q))
    assert hits(store, q, k=30)[-1] == "n00005"  # now the farthest of the 29
    assert hits(store, q, k=30) == truth(path, USER, q, 30)


def test_own_newest_row_deleted_then_another_connection_appends(pair) -> None:  # type: ignore[no-untyped-def]
    path, store, other = pair
    _, q = warmed(store, 4, 10)
    store.delete_nodes(["n00009"])  # our high-water mark must drop with it
    other.put_nodes([Node(id="theirs", tenant=USER, content="x", at=None, embedding=q)])
    assert hits(store, q)[0] == "theirs"
    assert hits(store, q, k=20) == truth(path, USER, q, 20)


def test_rollback_forgets_only_undone_rows(pair) -> None:  # type: ignore[no-untyped-def]
    path, store, _ = pair
    rng = np.random.default_rng(5)
    store.put_nodes([node(i, rng) for i in range(20)])
    store.put_nodes([node(100, rng, Tenant("w"))])
    q = unit(rng)
    hits(store, q)
    hits(store, q, tenant=Tenant("w"))
    seen: list[str] = []

    def undone() -> None:
        with store.transaction():
            store.put_nodes([Node(id="undone", tenant=USER, content="x", at=None, embedding=q)])
            seen.extend(hits(store, q)[:1])  # the open transaction sees its own row
            store.delete_nodes(["n00001"])
            raise RuntimeError("roll back")

    with pytest.raises(RuntimeError):
        undone()
    assert seen == ["undone"]
    assert len(store._cache) == 1  # only the touched user's cache was dropped
    assert "undone" not in hits(store, q, k=50)
    assert hits(store, q, k=50) == truth(path, USER, q, 50)
    assert hits(store, q, tenant=Tenant("w")) == ["n00100"]


def test_agent_masks_follow_deltas(pair) -> None:  # type: ignore[no-untyped-def]
    path, store, other = pair
    rng = np.random.default_rng(6)
    store.put_nodes([node(i, rng, Tenant("u", "a" if i % 2 else None)) for i in range(20)])
    q = unit(rng)
    scoped = Tenant("u", "a")
    assert hits(store, q, tenant=scoped) == truth(path, scoped, q, 5)
    other.put_nodes([Node(id="agent-new", tenant=scoped, content="x", at=None, embedding=q)])
    store.put_nodes([Node(id="plain-new", tenant=USER, content="y", at=None, embedding=q)])
    assert hits(store, q, tenant=scoped)[0] == "agent-new"
    assert hits(store, q, tenant=scoped) == truth(path, scoped, q, 5)
    assert hits(store, q, k=3) == truth(path, USER, q, 3)


def test_random_interleaving_of_two_writers_matches_exact_search(pair) -> None:  # type: ignore[no-untyped-def]
    path, store, other = pair
    rng = np.random.default_rng(7)
    alive: list[str] = []
    nxt = 0
    for step in range(120):
        writer = store if rng.random() < 0.5 else other
        roll = rng.random()
        if roll < 0.55 or len(alive) < 5:
            batch = [node(nxt + j, rng) for j in range(int(rng.integers(1, 4)))]
            nxt += len(batch)
            writer.put_nodes(batch)
            alive += [n.id for n in batch]
        elif roll < 0.8:
            victim = alive.pop(int(rng.integers(len(alive))))
            writer.delete_nodes([victim])
        else:
            old = writer.get_node(alive[int(rng.integers(len(alive)))])
            assert old is not None
            writer.update_node(dataclasses.replace(old, embedding=unit(rng)))
        if step % 3 == 0:
            q = unit(rng)
            assert hits(store, q, k=10) == truth(path, USER, q, 10), step


def test_v4_database_migrates_edges_to_integer_refs_and_counts_vector_changes(tmp_path: Path) -> None:
    from dualmem.plane.sqlite import MIGRATIONS
    from dualmem.types import Edge

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
    for version, steps in MIGRATIONS:
        if version > 4:
            break
        for step in steps:
            step(conn) if callable(step) else conn.execute(step)
        conn.execute("INSERT INTO schema_migrations VALUES (?, '2023-01-01T00:00:00')", (version,))
    rng = np.random.default_rng(8)
    for i, nid in enumerate(("a", "b", "c")):
        conn.execute(
            "INSERT INTO nodes (id, user_id, content, metadata, entities, temporal_refs, created_at, "
            "created_ts, status) VALUES (?, 'u', ?, '{}', '[]', '[]', '2023-01-01T00:00:00+00:00', 0, "
            "'complete')",
            (nid, f"note {i}"),
        )
        conn.execute("INSERT INTO vectors VALUES (?, 'u', ?, ?)", (nid, DIM, unit(rng).tobytes()))
    made = "2023-01-02T00:00:00+00:00"
    old = [
        ("c", "a", "temporal", "before"),
        ("a", "b", "semantic", "related"),
        ("b", "c", "entity", "shared_entity"),
    ]
    for source, target, view, label in old:
        conn.execute(
            "INSERT INTO edges VALUES (?, ?, ?, ?, 0.5, ?, NULL, NULL)", (source, target, view, label, made)
        )
    conn.close()
    with SQLiteStore.open(path) as store:
        got = store.edges_of("a")
        assert [(e.source, e.target, e.view, e.label) for e in got] == old[:2]  # write order kept
        assert all(e.weight == 0.5 and e.created_at.isoformat() == made for e in got)
        store.put_edges([Edge("a", "c", "semantic", "related", 0.7)])
        assert store.stats(USER).edges_by_view["semantic"] == 2
        q = unit(rng)
        before = hits(store, q)
        store.delete_nodes(["c"])  # its edges go with it
        assert [(e.source, e.target) for e in store.edges_of("a")] == [("a", "b")]
        assert hits(store, q) == [h for h in before if h != "c"]
        assert store._conn.execute("SELECT changes FROM vector_changes WHERE user_id = 'u'").fetchone() == (
            1,
        )
        assert store.check().healthy

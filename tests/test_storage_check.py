"""Finding 7 at the store level (edges never cross users) and deliver 8 (``check`` / ``--repair``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dualmem.cli.main import main
from dualmem.errors import InvalidInput
from dualmem.plane import SQLiteStore, Store
from dualmem.plane.base import Decision
from dualmem.types import Edge, Node, Tenant
from store_support import STORE_KINDS, new_store

ALICE, BOB = Tenant("alice"), Tenant("bob")


def unit(rng: np.random.Generator, dim: int = 8) -> np.ndarray:
    v = rng.normal(size=dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def node(node_id: str, tenant: Tenant, content: str = "tea", status: str = "complete") -> Node:
    rng = np.random.default_rng(abs(hash(node_id)) % 1000)
    return Node(id=node_id, tenant=tenant, content=content, at=None, embedding=unit(rng), status=status)  # type: ignore[arg-type]


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made = new_store(request.param, tmp_path)
    made.put_nodes([node("a1", ALICE), node("a2", Tenant("alice", "agent")), node("b1", BOB)])
    yield made
    made.close()


def test_edges_never_link_two_users(store: Store) -> None:
    store.put_edges([Edge("a1", "a2", "semantic", "related")])  # same user, other agent: fine
    with pytest.raises(InvalidInput):
        store.put_edges([Edge("a1", "b1", "semantic", "related")])
    with pytest.raises(InvalidInput):
        store.put_edges([Edge("a2", "a1", "temporal", "before"), Edge("b1", "a2", "causal", "caused_by")])
    assert [e.target for e in store.edges_of("a1")] == ["a2"]  # the refused batch stored nothing
    assert store.edges_of("b1") == []


def test_pair_decisions_never_link_two_users(store: Store) -> None:
    store.put_decisions([Decision("a1", "relations", "p", "related", 0.9, other_id="a2")])
    with pytest.raises(InvalidInput):
        store.put_decisions([Decision("a1", "relations", "p", "related", 0.9, other_id="b1")])
    assert len(store.decisions_of("a1")) == 1


def test_the_schema_refuses_a_cross_user_edge_written_with_raw_sql(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with SQLiteStore.open(db) as store:
        store.put_nodes([node("a1", ALICE), node("b1", BOB)])
    conn = sqlite3.connect(db)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="two users"):
            conn.execute(
                "INSERT INTO edges SELECT a.seq, b.seq, 'semantic', 'x', 1.0, '2024-01-01T00:00:00+00:00', "
                "NULL, NULL FROM nodes a, nodes b WHERE a.id = 'a1' AND b.id = 'b1'"
            )
    finally:
        conn.close()


def test_write_keys_find_and_vanish_with_their_node(store: Store) -> None:
    store.put_keys("alice", {"k1": "a1", "k2": "a2"})
    assert store.find_keys("alice", ["k1", "k2", "k3"]) == {"k1": "a1", "k2": "a2"}
    assert store.find_keys("bob", ["k1"]) == {}
    with pytest.raises(InvalidInput):
        store.put_keys("alice", {"k1": "a2"})
    with pytest.raises(Exception, match="does not have"):
        store.put_keys("bob", {"k9": "a1"})
    with store.transaction():
        store.delete_nodes(["a1"])
    assert store.find_keys("alice", ["k1", "k2"]) == {"k2": "a2"}


def test_check_is_healthy_then_finds_and_repairs_damage(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with SQLiteStore.open(db) as store:
        store.put_nodes([node("a1", ALICE, "green tea"), node("a2", ALICE, "black coffee"), node("b1", BOB)])
        store.put_nodes([node("p1", ALICE, "waiting", status="pending")])
        store.put_edges([Edge("a1", "a2", "semantic", "related")])
        report = store.check()
        assert report.kinds() == {"pending_nodes"}
    damage(db)
    with SQLiteStore.open(db) as store:
        found = store.check()
        assert not found.healthy
        assert found.kinds() >= {
            "fts", "orphan_edges", "cross_user_edges", "vectors_without_node", "orphan_decisions",
            "orphan_entity_links", "vectors_wrong_user", "pending_nodes",
            "chunks_without_node", "chunks_wrong_user", "chunks_bad_size",
        }  # fmt: skip
        fixed = store.check(repair=True)
        assert fixed.kinds() == {"pending_nodes"}  # only the write path can complete pending nodes
        assert set(fixed.repaired) >= {"fts", "orphan_edges", "cross_user_edges", "vectors_without_node"}
        assert set(fixed.repaired) >= {"chunks_without_node", "chunks_wrong_user", "chunks_bad_size"}
        assert set(store.get_chunks(["a1", "a2", "gone"])) == {"a2"}
        assert [h[0] for h in store.lexical_search(ALICE, "tea", 5)] == ["a1"]


def damage(db: Path) -> None:
    """What a buggy writer with foreign keys and triggers off could do."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("DROP TRIGGER edges_same_user_insert")
        created = "'2024-01-01T00:00:00+00:00'"
        seq = "(SELECT seq FROM nodes WHERE id = '{}')"
        a1, b1 = seq.format("a1"), seq.format("b1")
        conn.execute(f"INSERT INTO edges VALUES ({a1}, {b1}, 'semantic', 'x', 1.0, {created}, NULL, NULL)")
        conn.execute(f"INSERT INTO edges VALUES ({a1}, 999, 'semantic', 'x', 1.0, {created}, NULL, NULL)")
        conn.execute("INSERT INTO vectors VALUES ('gone', 'alice', 8, zeroblob(32))")
        conn.execute("UPDATE vectors SET user_id = 'bob' WHERE node_id = 'a2'")
        conn.execute("INSERT INTO chunk_vectors VALUES ('gone', 'alice', 8, 1, zeroblob(32))")
        conn.execute("INSERT INTO chunk_vectors VALUES ('a2', 'bob', 8, 1, zeroblob(32))")  # wrong user
        conn.execute("INSERT INTO chunk_vectors VALUES ('a1', 'alice', 8, 2, zeroblob(32))")  # 1 row, not 2
        conn.execute(
            "INSERT INTO decision_sets (node_id, purpose, backend, latency_ms, created_at, answers) "
            f"VALUES ('gone', 'typing', 'b', 0, {created}, zeroblob(4))"
        )
        conn.execute("INSERT INTO node_entities VALUES ('gone', 999)")
        conn.execute("INSERT INTO nodes_fts (rowid, content) VALUES (999, 'phantom tea')")  # FTS5 out of sync
        conn.execute("CREATE TRIGGER edges_same_user_insert BEFORE INSERT ON edges BEGIN SELECT 1; END")
    finally:
        conn.close()


def test_cli_check_exit_codes_and_repair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "m.db"
    with SQLiteStore.open(db) as store:
        store.put_nodes([node("a1", ALICE, "green tea"), node("a2", ALICE, "black coffee"), node("b1", BOB)])
    assert main(["--db", str(db), "check"]) == 0
    assert json.loads(capsys.readouterr().out)["healthy"] is True
    damage(db)
    assert main(["--db", str(db), "check"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["healthy"] is False
    assert {p["kind"] for p in out["problems"]} >= {"fts", "orphan_edges"}
    assert main(["--db", str(db), "check", "--repair"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["healthy"] is True
    assert "fts" in out["repaired"]
    assert main(["--db", str(db), "--read-only", "check"]) == 0
    capsys.readouterr()


def test_cli_check_of_a_damaged_or_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"garbage" * 1000)
    assert main(["--db", str(bad), "check"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["healthy"] is False
    assert out["problems"][0]["kind"] == "open"
    assert main(["--db", str(tmp_path / "absent.db"), "check"]) == 2
    assert not (tmp_path / "absent.db").exists()


def test_deleting_a_node_leaves_no_reference_of_its_own_decisions(tmp_path: Path) -> None:
    """Found by bench/crash.py: the pair decisions a forgotten node made about others (its own sets,
    cascaded away) left their references behind, and ``check`` reported orphan_decision_refs."""
    with SQLiteStore.open(tmp_path / "m.db") as store:
        store.put_nodes([node("a1", ALICE), node("a2", ALICE), node("a3", ALICE)])
        store.put_decisions(
            [
                Decision("a3", "relations", "p", "related", 0.9, other_id="a1"),
                Decision("a3", "relations", "p", "related", 0.8, other_id="a2"),
                Decision("a1", "relations", "p", "related", 0.7, other_id="a3"),
            ]
        )
        assert store.check().healthy
        assert store.delete_nodes(["a3"]) == 1
        report = store.check()
        assert report.healthy, report.problems
        assert store.decisions_of("a1") == []  # its answer about a3 went with a3

"""SQLite-only behaviour: the file, its journal and schema, locks, damage, caches across processes."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

from dualmem.errors import ConfigError, DatabaseCorrupt, DatabaseLocked, InvalidInput, StoreError
from dualmem.plane import InMemoryStore, SQLiteStore, open_store
from dualmem.plane.sqlite import MIGRATIONS, SCHEMA_VERSION
from dualmem.text.lexical import content_tokens
from dualmem.types import Edge, Node, Tenant
from threads import run_threads

USER = Tenant("u")
T0 = dt.datetime(2023, 5, 1, tzinfo=dt.UTC)


def unit(rng: np.random.Generator, dim: int = 8) -> np.ndarray:
    v = rng.normal(size=dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def node(rng: np.random.Generator, node_id: str, content: str = "some words", **fields: Any) -> Node:
    tenant = fields.pop("tenant", USER)
    return Node(id=node_id, tenant=tenant, content=content, at=T0, embedding=unit(rng), **fields)


def table_hash(path: Path) -> str:
    """A digest of every row of every table (read through a separate connection)."""
    conn = sqlite3.connect(path)
    try:
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()
    finally:
        conn.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(3)


def test_file_is_wal_with_migrations_and_meta(db: Path) -> None:
    with SQLiteStore.open(db) as store:
        store.set_meta("hello", {"x": 1})
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        rows = conn.execute("SELECT version, applied_at FROM schema_migrations").fetchall()
        assert [r[0] for r in rows] == [version for version, _ in MIGRATIONS]
        assert rows[-1][0] == SCHEMA_VERSION
        dt.datetime.fromisoformat(rows[0][1])
        assert conn.execute("SELECT value FROM meta WHERE key = 'hello'").fetchone()[0] == '{"x": 1}'
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        wanted = {"nodes", "vectors", "edges", "entities", "node_entities", "decision_sets", "nodes_fts"}
        assert wanted <= tables
    finally:
        conn.close()


def test_reopen_keeps_everything(db: Path, rng: np.random.Generator) -> None:
    a, b = node(rng, "a", "tea with lemon", entities=("Tea",)), node(rng, "b", "coffee")
    with SQLiteStore.open(db) as store:
        store.bind_embedder("test", 8)
        store.put_nodes([a, b])
        store.put_edges([Edge("a", "b", "temporal", "before")])
    with SQLiteStore.open(db) as store:
        assert store.get_node("a") == a
        assert store.edges_of("b") == [
            Edge("a", "b", "temporal", "before", created_at=store.edges_of("b")[0].created_at)
        ]
        assert store.lexical_search(USER, "lemon", 3)[0][0] == "a"
        assert a.embedding is not None
        assert store.vector_search(USER, a.embedding, 1)[0][0] == "a"
        assert store.entity_search(USER, ["tea"], 3) == [("a", 1)]
        assert store.stats().embedder == "test"
        store.integrity_check()


def test_locked_database_raises_and_changes_nothing(db: Path, rng: np.random.Generator) -> None:
    store = SQLiteStore.open(db, timeout=0.05)
    store.put_nodes([node(rng, "first")])
    before = table_hash(db)
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(DatabaseLocked) as info:
            store.put_nodes([node(rng, "second")])
        assert "\n" not in info.value.one_line()
        with pytest.raises(DatabaseLocked):
            store.set_meta("k", 1)
        assert store.count() == 1  # readers are not blocked (WAL)
        assert store.get_node("second") is None
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert table_hash(db) == before
    store.put_nodes([node(rng, "second")])  # the lock is gone
    assert store.count() == 2
    store.close()


def _open_and_read(db: Path) -> None:
    store = SQLiteStore.open(db)
    try:  # damage may only show on first use
        list(store.iter_nodes())
        store.lexical_search(USER, "text number", 3)
    finally:
        store.close()


@pytest.mark.parametrize("damage", ["random", "truncated", "foreign"])
def test_damaged_files_raise_database_corrupt(db: Path, rng: np.random.Generator, damage: str) -> None:
    if damage == "random":
        db.write_bytes(np.random.default_rng(0).bytes(20_000))
    elif damage == "foreign":
        conn = sqlite3.connect(db)
        conn.execute("CREATE TABLE invoices (id INTEGER)")
        conn.commit()
        conn.close()
    else:
        with SQLiteStore.open(db) as store:
            store.put_nodes([node(rng, f"n{i}", f"text number {i} " * 30) for i in range(300)])
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 3])
    with pytest.raises(DatabaseCorrupt) as info:
        _open_and_read(db)
    assert "\n" not in info.value.one_line()


def test_empty_file_becomes_a_store(db: Path) -> None:
    db.write_bytes(b"")
    with SQLiteStore.open(db) as store:
        assert store.count() == 0


def test_newer_schema_is_refused(db: Path) -> None:
    SQLiteStore.open(db).close()
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO schema_migrations VALUES (999, 'x')")
    conn.commit()
    conn.close()
    with pytest.raises(ConfigError):
        SQLiteStore.open(db)


def test_failed_writes_leave_the_file_unchanged(db: Path, rng: np.random.Generator) -> None:
    store = SQLiteStore.open(db)
    store.put_nodes([node(rng, "a", "alpha"), node(rng, "b", "beta")])
    store.put_edges([Edge("a", "b", "semantic", "related")])
    before = table_hash(db)

    def crash() -> None:
        with store.transaction():
            store.put_nodes([node(rng, "c", "gamma")])
            store.delete_nodes(["a"])
            store.update_node(dataclasses.replace(node(rng, "b", "changed"), entities=("E",)))
            raise RuntimeError("crash mid-transaction")

    with pytest.raises(RuntimeError):
        crash()
    with pytest.raises(InvalidInput):  # the second node repeats an id: the batch is refused whole
        store.put_nodes([node(rng, "d"), node(rng, "a")])
    with pytest.raises(InvalidInput):  # not JSON: refused before anything is written
        store.put_nodes([node(rng, "e", metadata={"x": object()})])
    assert table_hash(db) == before
    assert store.lexical_search(USER, "gamma", 5) == []
    store.close()


def test_a_second_store_on_the_same_file_invalidates_caches(db: Path, rng: np.random.Generator) -> None:
    reader, writer = SQLiteStore.open(db), SQLiteStore.open(db)
    first = node(rng, "first")
    reader.put_nodes([first])
    assert first.embedding is not None
    assert [h[0] for h in reader.vector_search(USER, first.embedding, 5)] == ["first"]  # cache warm
    second = node(rng, "second")
    writer.put_nodes([second])
    assert second.embedding is not None
    assert reader.vector_search(USER, second.embedding, 1)[0][0] == "second"
    writer.delete_nodes(["first"])
    assert [h[0] for h in reader.vector_search(USER, first.embedding, 5)] == ["second"]
    assert reader.get_node("first") is None
    reader.close()
    writer.close()


def test_threads_share_one_store(db: Path) -> None:
    store = SQLiteStore.open(db)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        rng = np.random.default_rng(worker)
        try:
            for i in range(20):
                store.put_nodes([node(rng, f"w{worker}-{i}", f"worker {worker} item {i}")])
                store.lexical_search(USER, "worker item", 3)
        except BaseException as exc:  # collected and re-raised by the test thread
            errors.append(exc)

    run_threads(work, 4)
    assert errors == []
    assert store.count() == 80
    store.close()


def test_closed_store_raises_store_error(db: Path) -> None:
    store = SQLiteStore.open(db)
    store.close()
    with pytest.raises(StoreError):
        store.count()


CORPUS = [
    "the quantum computer solved an optimisation problem overnight",
    "grandma baked an apple pie for the family reunion",
    "we hiked the volcano trail and saw lava fields",
    "the violin concert featured a rare stradivarius",
    "my cat knocked the plant off the windowsill again",
    "the startup raised funding for electric bicycles",
    "a recipe for apple crumble with cinnamon",
    "the museum exhibit showed ancient egyptian pottery",
    "she adopted a rescue dog from the shelter",
    "tickets for the volcano tour sold out quickly",
]
QUERIES = {
    "quantum optimisation computer": 0,
    "grandma pie reunion": 1,
    "lava volcano trail hiked": 2,
    "stradivarius violin": 3,
    "cat windowsill plant": 4,
    "electric bicycles funding": 5,
    "cinnamon apple crumble": 6,
    "egyptian pottery museum": 7,
    "rescue dog shelter": 8,
}


def test_lexical_top1_agrees_with_rank_bm25(db: Path, rng: np.random.Generator) -> None:
    reference = BM25Okapi([content_tokens(doc) for doc in CORPUS])
    with SQLiteStore.open(db) as store:
        store.put_nodes([node(rng, f"d{i}", text) for i, text in enumerate(CORPUS)])
        for query, answer in QUERIES.items():
            ref_top = int(np.argmax(reference.get_scores(content_tokens(query))))
            assert ref_top == answer
            hits = store.lexical_search(USER, query, 3)
            assert hits[0][0] == f"d{answer}", query


def test_in_memory_bm25_matches_fts5_scores(db: Path, rng: np.random.Generator) -> None:
    """Without stemming effects (distinct words), the pure-Python BM25 equals FTS5's bm25()."""
    words = ["zebra", "yak", "walrus", "vole", "tapir", "sloth", "quokka", "panda", "otter", "newt"]
    docs = [" ".join(rng.choice(words, size=int(rng.integers(2, 9)))) for _ in range(40)]
    nodes = [node(rng, f"d{i}", text) for i, text in enumerate(docs)]
    memory = InMemoryStore()
    memory.put_nodes(nodes)
    with SQLiteStore.open(db) as store:
        store.put_nodes(nodes)
        for query in ["zebra", "yak walrus", "otter newt panda", "sloth sloth tapir"]:
            got, want = store.lexical_search(USER, query, 40), memory.lexical_search(USER, query, 40)
            assert [h[0] for h in got] == [h[0] for h in want], query
            np.testing.assert_allclose([h[1] for h in got], [h[1] for h in want], rtol=1e-9)


def test_open_store_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    memory = open_store(":memory:")
    assert isinstance(memory, SQLiteStore)
    memory.close()
    open_store("sqlite:///rel.db").close()
    assert (tmp_path / "rel.db").exists()
    open_store(f"sqlite:///{tmp_path / 'abs.db'}").close()
    assert (tmp_path / "abs.db").exists()
    open_store(str(tmp_path / "plain.db")).close()
    assert (tmp_path / "plain.db").exists()
    with pytest.raises(ConfigError, match="cannot connect to PostgreSQL"):
        open_store("postgresql://user@127.0.0.1:1/db", timeout=1.0)  # nothing listens on port 1
    with pytest.raises(ConfigError):
        open_store("redis://localhost")
    with pytest.raises(ConfigError):
        open_store(str(tmp_path / "missing" / "x.db"))


def test_a_file_missing_a_migration_is_refused_read_only_and_migrated_writable(tmp_path: Path) -> None:
    """A file without the chunk table (v5) opened read-only is never migrated: a typed error says to
    open it writable once; opened writable, the missing version applies (also below the highest)."""
    import sqlite3

    import numpy as np

    from dualmem.types import Node, Tenant

    db = tmp_path / "old.db"
    vec = np.ones(8, dtype=np.float32) / np.sqrt(8)
    with SQLiteStore.open(db) as store:
        store.put_nodes([Node(id="a", tenant=Tenant("u"), content="old memory", at=None, embedding=vec)])
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DROP TABLE chunk_vectors")
    conn.execute("DELETE FROM schema_migrations WHERE version = ?", (5,))
    conn.close()
    with pytest.raises(ConfigError, match="lacks schema migration") as info:
        SQLiteStore.open(db, read_only=True)
    assert "writable" in (info.value.hint or "")
    with SQLiteStore.open(db) as store:  # opened writable, it is migrated and takes chunks
        assert store.vector_search(Tenant("u"), vec, 3)[0][0] == "a"
        store.put_chunks({"a": np.stack([vec])})
        assert set(store.get_chunks(["a"])) == {"a"}

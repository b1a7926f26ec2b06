"""Finding 4 and deliver 5: opening takes no write lock, read-only opens, durability settings."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dualmem import Memory, OpenOptions
from dualmem.errors import ConfigError, ReadOnlyStore
from dualmem.plane import SQLiteStore, open_store
from dualmem.plane.sqlite import MMAP_SIZE
from dualmem.types import Edge, Node, Tenant

USER = Tenant("u")


def unit(rng: np.random.Generator, dim: int = 8) -> np.ndarray:
    v = rng.normal(size=dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def build(db: Path, n: int = 20) -> None:
    rng = np.random.default_rng(0)
    with SQLiteStore.open(db) as store:
        store.bind_embedder("test", 8)
        store.put_nodes(
            [
                Node(id=f"n{i}", tenant=USER, content=f"tea note {i}", at=None, embedding=unit(rng))
                for i in range(n)
            ]
        )


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    build(path)
    return path


def test_open_and_read_while_another_process_holds_the_write_lock(db: Path) -> None:
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    blocker.execute("INSERT INTO meta (key, value) VALUES ('x', '1')")
    try:
        with SQLiteStore.open(db, timeout=0.2) as store:
            store.bind_embedder("test", 8)  # already bound: a read, no BEGIN IMMEDIATE
            assert store.count(USER) == 20
            assert len(store.vector_search(USER, unit(np.random.default_rng(1)), 5)) == 5
            assert store.lexical_search(USER, "tea", 3)
            assert store.stats(USER).nodes == 20
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_read_only_never_writes_and_refuses_writes(db: Path) -> None:
    before = digest(db.parent)
    with SQLiteStore.open(db, read_only=True) as store:
        assert store.read_only
        store.bind_embedder("test", 8)
        assert store.count(USER) == 20
        assert store.check().healthy
        with pytest.raises(ReadOnlyStore):
            store.set_meta("x", 1)
        with pytest.raises(ReadOnlyStore):
            store.put_edges([Edge("n1", "n2", "temporal", "before")])
        with pytest.raises(ReadOnlyStore):
            store.delete_nodes(["n1"])
    # the file is untouched; SQLite may leave an empty -wal and a -shm index beside it (a writable folder)
    assert digest(db.parent)["memory.db"] == before["memory.db"]
    wal = db.with_name("memory.db-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def test_read_only_sees_commits_of_a_writer(db: Path) -> None:
    rng = np.random.default_rng(2)
    with SQLiteStore.open(db) as writer, SQLiteStore.open(db, read_only=True) as reader:
        writer.put_nodes([Node(id="late", tenant=USER, content="late tea", at=None, embedding=unit(rng))])
        assert reader.get_node("late") is not None


def test_read_only_needs_an_existing_dualmem_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        SQLiteStore.open(tmp_path / "absent.db", read_only=True)
    with pytest.raises(ConfigError):
        SQLiteStore.open(":memory:", read_only=True)
    sqlite3.connect(tmp_path / "empty.db").close()
    (tmp_path / "empty.db").touch()
    with pytest.raises(ConfigError):
        SQLiteStore.open(tmp_path / "empty.db", read_only=True)
    assert not (tmp_path / "absent.db").exists()


@pytest.fixture
def locked_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder nobody may write: chmod for a normal user, the immutable attribute for root."""
    folder = tmp_path / "ro"
    folder.mkdir()
    build(folder / "memory.db")
    root = os.geteuid() == 0
    if root and shutil.which("chattr") is None:
        pytest.skip("running as root without chattr: cannot make a folder read-only")
    if root:
        subprocess.run(["chattr", "+i", str(folder / "memory.db"), str(folder)], check=True)
    else:
        (folder / "memory.db").chmod(0o444)
        folder.chmod(0o555)
    try:
        yield folder
    finally:
        if root:
            subprocess.run(["chattr", "-i", str(folder), str(folder / "memory.db")], check=True)
        else:
            folder.chmod(0o755)
            (folder / "memory.db").chmod(0o644)


def test_a_file_in_a_read_only_folder_opens_read_only(locked_folder: Path) -> None:
    db = locked_folder / "memory.db"
    with pytest.raises(ReadOnlyStore):
        open_store(db).close()  # a writable open cannot even set WAL mode up
    with open_store(db, read_only=True) as store:
        assert store.count(USER) == 20
        assert store.lexical_search(USER, "tea", 3)
        with pytest.raises(ReadOnlyStore):
            store.set_meta("x", 1)
    assert sorted(p.name for p in locked_folder.iterdir()) == ["memory.db"]


def test_synchronous_setting_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        SQLiteStore.open(tmp_path / "x.db", synchronous="sometimes")  # type: ignore[arg-type]
    with open_store(tmp_path / "y.db", synchronous="full") as store:
        assert isinstance(store, SQLiteStore)
        assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2


def test_memory_map_setting_reaches_every_connection(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    build(db)
    with SQLiteStore.open(db) as store:
        assert store._conn.execute("PRAGMA mmap_size").fetchone()[0] == MMAP_SIZE
    with SQLiteStore.open(db, read_only=True, mmap_size=1 << 20) as store:
        assert store._conn.execute("PRAGMA mmap_size").fetchone()[0] == 1 << 20
    with open_store(db, mmap_size=0) as store:
        assert isinstance(store, SQLiteStore)
        assert store._conn.execute("PRAGMA mmap_size").fetchone()[0] == 0
    options = OpenOptions(mmap_size=4 << 20)
    with Memory.open(tmp_path / "m.db", embedder="hashing:8", answerer=None, options=options) as mem:
        assert isinstance(mem.store, SQLiteStore)
        assert mem.store._conn.execute("PRAGMA mmap_size").fetchone()[0] == 4 << 20


def test_memory_mapped_reads_equal_plain_reads(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    build(db, n=200)
    query = unit(np.random.default_rng(7))
    found = []
    for size in (0, 64 << 20):
        with SQLiteStore.open(db, read_only=True, mmap_size=size) as store:
            nodes = store.get_nodes([f"n{i}" for i in range(0, 200, 7)], USER).values()
            found.append(
                (
                    store.lexical_search(USER, "tea note 17", 10),
                    store.vector_search(USER, query, 10),
                    [(n.id, n.content, n.embedding.tobytes()) for n in nodes],  # type: ignore[union-attr]
                )
            )
    assert found[0] == found[1]


@pytest.mark.parametrize("bad", [-1, 1.5, "256M", True])
def test_memory_map_setting_is_checked(tmp_path: Path, bad: object) -> None:
    db = tmp_path / "memory.db"
    build(db)
    before = digest(tmp_path)
    with pytest.raises(ConfigError, match="mmap_size"):
        SQLiteStore.open(db, mmap_size=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="mmap_size"):
        OpenOptions(mmap_size=bad)  # type: ignore[arg-type]
    assert digest(tmp_path) == before
    with pytest.raises(ConfigError, match="SQLite setting"):
        open_store("postgresql://127.0.0.1:1/x", mmap_size=0)

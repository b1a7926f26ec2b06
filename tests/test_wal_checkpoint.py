"""The WAL is checkpointed on a background thread, not inside a commit (``plane/sqlite/_wal.py``)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dualmem.plane import SQLiteStore
from dualmem.plane.sqlite import BACKSTOP_PAGES, Checkpointer
from dualmem.plane.sqlite import CHECKPOINT_EVERY as EVERY


def _in_file(db: Path) -> set[str]:
    """meta keys in the database file itself (``immutable=1`` reads no WAL)."""
    conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
            return set()  # the schema itself is still only in the WAL
        return {row[0] for row in conn.execute("SELECT key FROM meta")}
    finally:
        conn.close()


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "dualmem-checkpoint"]


@contextmanager
def _file_store(db: Path) -> Iterator[tuple[SQLiteStore, Checkpointer]]:
    """A writable file store and its background checkpointer, closed afterwards."""
    store = SQLiteStore.open(db)
    try:
        checkpointer = store._checkpointer
        assert checkpointer is not None
        yield store, checkpointer
    finally:
        store.close()


def test_commits_reach_the_file_by_the_background_checkpoint(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with _file_store(db) as (store, checkpointer):
        assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == BACKSTOP_PAGES
        for i in range(EVERY - 1):
            store.set_meta(f"k{i}", i)
        assert checkpointer.checkpoints == 0
        assert not {f"k{i}" for i in range(EVERY - 1)} & _in_file(db)  # still only in the WAL
        store.set_meta(f"k{EVERY - 1}", EVERY - 1)  # the EVERY-th commit wakes the thread
        assert checkpointer.wait_idle(1)
        assert {f"k{i}" for i in range(EVERY)} <= _in_file(db)
        assert store.get_meta("k0") == 0
    assert not _threads()  # close stopped the thread


def test_a_truncating_erase_checkpoint_waits_for_a_background_one(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with _file_store(db) as (store, checkpointer):
        for i in range(EVERY):
            store.set_meta(f"k{i}", "x" * 2000)
        with checkpointer.paused():  # a checkpoint in progress: the thread waits until we leave
            store.set_meta("more", 1)
        assert checkpointer.wait_idle(1)
        store._tx.checkpoint()  # what an erase runs after its commit
        assert not store._tx._wal_dirty
        assert Path(f"{db}-wal").stat().st_size == 0


def test_many_writes_keep_the_wal_small_and_the_file_whole(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with _file_store(db) as (store, checkpointer):
        for i in range(EVERY * 5):
            store.set_meta(f"k{i}", "y" * 4000)
        assert checkpointer.wait_idle(1)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM meta WHERE key LIKE 'k%'").fetchone()[0] == EVERY * 5


def test_no_checkpointer_in_memory_or_read_only(tmp_path: Path) -> None:
    mem = SQLiteStore.open(":memory:")
    try:
        assert mem._checkpointer is None
    finally:
        mem.close()
    db = tmp_path / "m.db"
    SQLiteStore.open(db).close()
    ro = SQLiteStore.open(db, read_only=True)
    try:
        assert ro._checkpointer is None
    finally:
        ro.close()
    assert not _threads()

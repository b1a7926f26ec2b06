"""Finding 6 at the store level: damage is ``DatabaseCorrupt``; sqlite3 errors map by result code."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from dualmem.errors import (
    ConfigError,
    DatabaseCorrupt,
    DatabaseLocked,
    DualmemError,
    InvalidInput,
    ReadOnlyStore,
    StoreError,
)
from dualmem.plane import SQLiteStore
from dualmem.plane.sqlite import classify
from dualmem.types import Node, Tenant

USER = Tenant("u")


def unit(rng: np.random.Generator, dim: int = 8) -> np.ndarray:
    v = rng.normal(size=dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    db = tmp_path_factory.mktemp("flip") / "base.db"
    rng = np.random.default_rng(0)
    with SQLiteStore.open(db) as store:
        store.bind_embedder("test", 8)
        store.put_nodes(
            [
                Node(
                    id=f"n{i}",
                    tenant=USER,
                    content=f"word{i} alpha beta {i}",
                    at=None,
                    entities=("Alpha",),
                    embedding=unit(rng),
                )
                for i in range(300)
            ]
        )
    return db.read_bytes()


def exercise(db: Path) -> None:
    with SQLiteStore.open(db) as store:
        list(store.iter_nodes())
        store.lexical_search(USER, "alpha", 5)
        store.vector_search(USER, unit(np.random.default_rng(1)), 5)
        store.stats()
        store.recent_nodes(USER, 3)
        store.edges_of("n1")
        store.entities_of("n2")
        store.integrity_check()


@pytest.mark.parametrize("seed", range(0, 120, 4))
def test_bit_flips_give_database_corrupt_or_work(pristine: bytes, tmp_path: Path, seed: int) -> None:
    failures = []
    for trial in range(seed, seed + 4):
        data = bytearray(pristine)
        r = random.Random(trial)
        for _ in range(8):
            data[r.randrange(len(data))] ^= 1 << r.randrange(8)
        db = tmp_path / f"flip{trial}.db"
        db.write_bytes(bytes(data))
        try:
            exercise(db)
        except DatabaseCorrupt:
            continue
        except DualmemError as exc:
            failures.append(f"{trial}: {type(exc).__name__}: {exc}")
        try:  # check reports damage instead of raising (when the file opens at all)
            with SQLiteStore.open(db) as store:
                store.check()
        except DatabaseCorrupt:
            pass
    assert failures == []


def test_a_foreign_file_is_corrupt(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    db.write_bytes(b"this is not sqlite at all" * 200)
    with pytest.raises(DatabaseCorrupt):
        SQLiteStore.open(db)


def _error(code: str, text: str, kind: type[sqlite3.Error] = sqlite3.OperationalError) -> sqlite3.Error:
    exc = kind(text)
    exc.sqlite_errorname = code  # type: ignore[attr-defined]
    return exc


@pytest.mark.parametrize(
    ("code", "text", "kind", "expected"),
    [
        ("SQLITE_BUSY", "database is locked", sqlite3.OperationalError, DatabaseLocked),
        ("SQLITE_BUSY_SNAPSHOT", "database is locked", sqlite3.OperationalError, DatabaseLocked),
        ("SQLITE_LOCKED", "database table is locked", sqlite3.OperationalError, DatabaseLocked),
        ("SQLITE_CORRUPT", "database disk image is malformed", sqlite3.DatabaseError, DatabaseCorrupt),
        ("SQLITE_CORRUPT_VTAB", "fts5: corruption", sqlite3.DatabaseError, DatabaseCorrupt),
        ("SQLITE_NOTADB", "file is not a database", sqlite3.DatabaseError, DatabaseCorrupt),
        ("", "Could not decode to UTF-8 column 'content'", sqlite3.OperationalError, DatabaseCorrupt),
        ("SQLITE_READONLY", "attempt to write a readonly database", sqlite3.OperationalError, ReadOnlyStore),
        ("SQLITE_CANTOPEN", "unable to open database file", sqlite3.OperationalError, ConfigError),
        ("SQLITE_FULL", "database or disk is full", sqlite3.OperationalError, StoreError),
        ("SQLITE_IOERR_WRITE", "disk I/O error", sqlite3.OperationalError, StoreError),
        ("SQLITE_CONSTRAINT_TRIGGER", "dualmem: an edge cannot link", sqlite3.IntegrityError, InvalidInput),
        ("SQLITE_CONSTRAINT_UNIQUE", "UNIQUE constraint failed", sqlite3.IntegrityError, StoreError),
    ],
)
def test_sqlite_errors_map_by_code(code: str, text: str, kind: type[sqlite3.Error], expected: type) -> None:
    error = classify("doing x", _error(code, text, kind))
    assert type(error) is expected
    assert error.message.startswith("doing x")


def test_a_closed_store_is_a_store_error(tmp_path: Path) -> None:
    store = SQLiteStore.open(tmp_path / "m.db")
    store.close()
    with pytest.raises(StoreError) as info:
        store.count()
    assert type(info.value) is StoreError

"""The data plane: the ``Store`` protocol and its backends (SQLite embedded default, in-memory)."""

from __future__ import annotations

from pathlib import Path

from dualmem.errors import ConfigError
from dualmem.plane._sqlite_conn import Synchronous
from dualmem.plane.base import Decision, Store, StoreStats
from dualmem.plane.memory import InMemoryStore
from dualmem.plane.sqlite import SQLiteStore

__all__ = ["Decision", "InMemoryStore", "SQLiteStore", "Store", "StoreStats", "open_store"]


def open_store(
    url_or_path: str | Path,
    *,
    timeout: float = 5.0,
    read_only: bool = False,
    synchronous: Synchronous = "normal",
) -> Store:
    """Open a store from a URL or a path (``read_only`` and ``synchronous``: see ``SQLiteStore.open``).

    ``":memory:"`` -> an ``SQLiteStore`` on a private in-memory database; ``"sqlite:///path"`` or a
    plain path -> an ``SQLiteStore`` on that file; ``"postgresql://..."`` -> ``ConfigError`` (not
    available in this version).
    """
    target = str(url_or_path)
    if not target.strip():
        raise ConfigError("no store given", hint="pass a file path, 'sqlite:///path' or ':memory:'")
    scheme = target.split("://", 1)[0].lower() if "://" in target else ""
    if scheme in {"postgres", "postgresql", "postgresql+psycopg"}:
        raise ConfigError(
            "PostgreSQL backend is not available in this version", hint="use a SQLite file path"
        )
    if scheme == "sqlite":
        target = target[len("sqlite://") :]  # SQLAlchemy style: sqlite:///rel.db, sqlite:////abs.db
        target = target[1:] if target.startswith("/") else target
    elif scheme:
        raise ConfigError(
            f"unknown store scheme {scheme!r}", hint="use a path, 'sqlite:///path' or ':memory:'"
        )
    if not target:
        raise ConfigError(
            "the sqlite URL has no path", hint="write sqlite:///relative.db or sqlite:////abs.db"
        )
    return SQLiteStore.open(target, timeout=timeout, read_only=read_only, synchronous=synchronous)

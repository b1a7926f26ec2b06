"""The data plane: the ``Store`` protocol and its backends (SQLite embedded default, in-memory)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from dualmem._registry import Registry
from dualmem.errors import ConfigError
from dualmem.plane.base import Backend, Decision, MemoryStore, Store, StoreStats
from dualmem.plane.memory import InMemoryStore
from dualmem.plane.sqlite import MMAP_SIZE, SQLiteStore, Synchronous

__all__ = [
    "STORES",
    "Decision",
    "InMemoryStore",
    "MemoryStore",
    "SQLiteStore",
    "Store",
    "StoreStats",
    "open_store",
]


if TYPE_CHECKING:  # each backend writes every primitive its components are composed of (mypy checks)
    from dualmem.plane.postgres import PostgresStore

    _BACKENDS: tuple[type[Backend], ...] = (InMemoryStore, SQLiteStore, PostgresStore)

#: the stores by URL scheme: ``sqlite`` and ``postgresql`` (``postgres``, ``postgresql+psycopg``) and
#: those of installed packages (entry point group ``dualmem.stores``, named by their scheme). A factory is
#: called ``factory(url, timeout=..., read_only=..., synchronous=..., mmap_size=...)`` and returns a
#: ``MemoryStore``; a path without a scheme opens SQLite.
STORES = Registry("store", "dualmem.stores")


def open_store(
    url_or_path: str | Path,
    *,
    timeout: float = 5.0,
    read_only: bool = False,
    synchronous: Synchronous = "normal",
    mmap_size: int | None = None,
) -> MemoryStore:
    """Open a store from a URL or a path (``read_only``: see ``SQLiteStore.open`` and ``PostgresStore.open``;
    ``synchronous`` and ``mmap_size`` (``None``: the default): see ``SQLiteStore.open``).

    ``":memory:"`` -> an ``SQLiteStore`` on a private in-memory database; ``"sqlite:///path"`` or a
    plain path -> an ``SQLiteStore`` on that file; ``"postgresql://..."`` (or ``postgres://``) -> a
    ``PostgresStore`` (needs the ``[postgres]`` extra) in the schema ``dualmem`` of that database, or
    the one named by a ``schema=`` query parameter (``postgresql://host/db?schema=team1``); any other
    ``SCHEME://...``: the store a plug-in registered for that scheme (see :data:`STORES`).
    """
    target = str(url_or_path)
    if not target.strip():
        raise ConfigError("no store given", hint="pass a file path, 'sqlite:///path' or ':memory:'")
    scheme = target.split("://", 1)[0].lower() if "://" in target else "sqlite"
    if scheme not in STORES:
        raise ConfigError(
            f"unknown store scheme {scheme!r}",
            hint="use a path, 'sqlite:///path' or ':memory:'; installed schemes: "
            + ", ".join(STORES.names()),
        )
    store: MemoryStore = STORES.factory(scheme)(
        target, timeout=timeout, read_only=read_only, synchronous=synchronous, mmap_size=mmap_size
    )
    return store


def _sqlite(
    target: str, *, timeout: float, read_only: bool, synchronous: Synchronous, mmap_size: int | None
) -> MemoryStore:
    if target.lower().startswith("sqlite://"):
        target = target[len("sqlite://") :]  # SQLAlchemy style: sqlite:///rel.db, sqlite:////abs.db
        target = target[1:] if target.startswith("/") else target
        if not target:
            raise ConfigError(
                "the sqlite URL has no path", hint="write sqlite:///relative.db or sqlite:////abs.db"
            )
    return SQLiteStore.open(
        target,
        timeout=timeout,
        read_only=read_only,
        synchronous=synchronous,
        mmap_size=MMAP_SIZE if mmap_size is None else mmap_size,
    )


def _postgres(
    url: str, *, timeout: float, read_only: bool, synchronous: Synchronous, mmap_size: int | None
) -> MemoryStore:
    del synchronous  # PostgreSQL's durability is the server's setting
    if mmap_size is not None:
        raise ConfigError("mmap_size is a SQLite setting", hint="leave it unset for PostgreSQL")
    return _open_postgres(url, timeout=timeout, read_only=read_only)


STORES.register("sqlite", _sqlite)
for _scheme in ("postgresql", "postgres", "postgresql+psycopg"):
    STORES.register(_scheme, _postgres)


def _open_postgres(url: str, *, timeout: float, read_only: bool) -> MemoryStore:
    if url.lower().startswith("postgresql+psycopg://"):
        url = "postgresql://" + url.split("://", 1)[1]
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise ConfigError(
            f"malformed PostgreSQL URL: {exc}", hint="write postgresql://user:password@host:port/database"
        ) from exc
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [value for key, value in query if key == "schema"]
    url = urlunsplit(parts._replace(query=urlencode([(k, v) for k, v in query if k != "schema"])))
    try:
        from dualmem.plane.postgres import PostgresStore  # the optional [postgres] extra
    except ImportError as exc:
        raise ConfigError(
            f"the PostgreSQL backend needs psycopg ({exc.name} is not installed)",
            hint="pip install 'dualmem[postgres]'",
        ) from exc
    if schemas:
        return PostgresStore.open(url, timeout=timeout, schema=schemas[-1], read_only=read_only)
    return PostgresStore.open(url, timeout=timeout, read_only=read_only)

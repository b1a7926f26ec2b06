"""PostgreSQL read-only mode (issue 11, deliverable 3): ``Memory.open(url, read_only=True)`` and the CLI's
``--read-only`` read everything, write nothing, refuse writes with ``ReadOnlyStore``, and work for a
role that may only read (no CREATE, INSERT, UPDATE or DELETE)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from dualmem import Memory
from dualmem.cli.main import main
from dualmem.embed import HashingEmbedder
from dualmem.errors import ConfigError, ReadOnlyStore
from dualmem.plane import open_store
from dualmem.plane.postgres import PostgresStore
from pg_server import with_schema

ROLE = f"dualmem_reader_{os.getpid()}"


@pytest.fixture
def schema(pg_dsn: str) -> Iterator[str]:
    name = f"ro_{os.getpid()}"
    yield name
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def _filled(pg_dsn: str, schema: str) -> tuple[str, str]:
    url = with_schema(pg_dsn, schema)
    with Memory.open(url, embedder=HashingEmbedder(64), answerer=None) as mem:
        node = mem.add("Mira adopted a cat named Pepper.", user="u")
        mem.add("Sam bought a red bike.", user="u")
    return url, node


def _digest(pg_dsn: str, schema: str) -> list[tuple[object, ...]]:
    """Everything a write could change: every table's row count and the meta table's contents."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        tables = [
            r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))
        ]
        out: list[tuple[object, ...]] = []
        for table in sorted(tables):
            query = sql.SQL("SELECT count(*) FROM {}.{}").format(
                sql.Identifier(schema), sql.Identifier(table)
            )
            out.append((table, conn.execute(query).fetchone()))
        meta = sql.SQL("SELECT key, value FROM {}.meta ORDER BY key").format(sql.Identifier(schema))
        out += [tuple(r) for r in conn.execute(meta)]
    return out


def test_memory_open_read_only_reads_and_refuses_writes(pg_dsn: str, schema: str, tmp_path: Path) -> None:
    url, node = _filled(pg_dsn, schema)
    before = _digest(pg_dsn, schema)
    with Memory.open(url, embedder=HashingEmbedder(64), answerer=None, read_only=True) as mem:
        assert isinstance(mem.store, PostgresStore)
        assert mem.read_only
        assert mem.get(node, user="u").content == "Mira adopted a cat named Pepper."
        assert mem.search("cat Pepper", user="u").ids[0] == node
        assert mem.stats(user="u")["nodes"] == 2
        assert mem.export_jsonl(tmp_path / "out.jsonl", user="u") > 2  # a header, the nodes, their edges
        for write in (
            lambda: mem.add("more", user="u"),
            lambda: mem.update(node, "Mira adopted a dog.", user="u"),
            lambda: mem.forget(node, user="u"),
            lambda: mem.forget_all(user="u"),
            lambda: mem.store.set_meta("x", 1),
            lambda: mem.store.check(repair=True),
        ):
            with pytest.raises(ReadOnlyStore):
                write()
        # the server refuses too: a write that went around the store's own check
        store = mem.store
        with pytest.raises(ReadOnlyStore), store._conn("write around the check") as conn:
            conn.execute("INSERT INTO meta (key, value) VALUES ('sneaky', '1')")
    assert _digest(pg_dsn, schema) == before


def test_read_only_creates_nothing(pg_dsn: str, schema: str) -> None:
    with pytest.raises(ConfigError, match="holds no dualmem memory") as info:
        open_store(with_schema(pg_dsn, schema), read_only=True)
    assert "without read_only" in (info.value.hint or "")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    assert found is None


def test_an_outdated_schema_is_not_migrated_read_only(pg_dsn: str, schema: str) -> None:
    url, _ = _filled(pg_dsn, schema)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        top = sql.SQL(
            "DELETE FROM {}.schema_migrations WHERE version = (SELECT MAX(version) FROM {}.schema_migrations)"
        )
        conn.execute(top.format(sql.Identifier(schema), sql.Identifier(schema)))
    with pytest.raises(ConfigError, match="needs migrating"):
        open_store(url, read_only=True)


def _as_role(dsn: str, role: str, password: str) -> str:
    parts = urlsplit(dsn)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{role}:{password}@{host}"))


def test_a_role_that_may_only_read(pg_dsn: str, schema: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, node = _filled(pg_dsn, schema)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(ROLE)))
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'r3ader'").format(sql.Identifier(ROLE)))
        for grant in ("GRANT USAGE ON SCHEMA {} TO {}", "GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}"):
            conn.execute(sql.SQL(grant).format(sql.Identifier(schema), sql.Identifier(ROLE)))
    reader = with_schema(_as_role(pg_dsn, ROLE, "r3ader"), schema)
    try:
        with Memory.open(reader, embedder=HashingEmbedder(64), answerer=None, read_only=True) as mem:
            assert mem.search("cat Pepper", user="u").ids[0] == node
            with pytest.raises(ReadOnlyStore):
                mem.add("more", user="u")
        argv = ["--db", reader, "--embedder", "hashing:64", "--user", "u", "--read-only"]
        assert main([*argv, "search", "cat"]) == 0
        assert node in capsys.readouterr().out
        assert main([*argv, "stats"]) == 0
        assert json.loads(capsys.readouterr().out)["nodes"] == 2
        assert main([*argv, "add", "x"]) == 2
        assert "read-only" in capsys.readouterr().err
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(ROLE)))
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(ROLE)))

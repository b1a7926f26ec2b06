"""PostgreSQL specifics: distribution-ready keys, migrations, errors, HNSW vs exact, NUL-safe text."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg import sql

from dualmem import Memory
from dualmem.embed import HashingEmbedder
from dualmem.errors import ConfigError, DatabaseCorrupt, DatabaseLocked
from dualmem.plane import open_store
from dualmem.plane.postgres import REFERENCE_TABLES, SCHEMA_VERSION, PostgresStore
from dualmem.types import Node, Tenant
from pg_server import with_schema

ALICE = Tenant("alice")


def _unit(rng: np.random.Generator, dim: int) -> np.ndarray:
    v = rng.normal(size=dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def _node(rng: np.random.Generator, i: int, tenant: Tenant = ALICE, dim: int = 16, **fields: Any) -> Node:
    content = fields.pop("content", f"memory number {i}")
    return Node(id=f"n{i:06d}", tenant=tenant, content=content, at=None, embedding=_unit(rng, dim), **fields)


def _keys(
    conn: psycopg.Connection[Any], schema: str, kind: str
) -> list[tuple[str, str, list[str], list[str]]]:
    """(table, constraint, its columns in key order, referenced columns) of every ``kind`` constraint."""
    rows = conn.execute(
        "SELECT c.conrelid::regclass::text, c.conname, "
        "ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, o) "
        "      JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o), "
        "ARRAY(SELECT a.attname::text FROM unnest(COALESCE(c.confkey, '{}')) WITH ORDINALITY k(n, o) "
        "      JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.o) "
        "FROM pg_constraint c JOIN pg_namespace ns ON ns.oid = c.connamespace "
        "WHERE ns.nspname = %s AND c.contype = %s ORDER BY 1, 2",
        (schema, kind),
    ).fetchall()
    return [(str(r[0]).split(".")[-1], r[1], list(r[2]), list(r[3])) for r in rows]


def test_every_key_leads_with_the_user(pg_store_factory: Callable[..., PostgresStore], pg_dsn: str) -> None:
    """The distribution key: each tenant table's primary key and every foreign key start with user_id."""
    store = pg_store_factory()
    store.bind_embedder("hashing", 16)  # the vector column and its HNSW index exist from here on
    with psycopg.connect(pg_dsn) as conn:
        tables = {
            r[0]
            for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (store.schema,))
        }
        primary = _keys(conn, store.schema, "p")
        foreign = _keys(conn, store.schema, "f")
        uniques = _keys(conn, store.schema, "u")
    assert tables >= {"nodes", "vectors", "edges", "node_entities", "decisions", "postings", "lex_stats"}
    assert tables >= REFERENCE_TABLES
    assert {t for t, *_ in primary} == tables  # every table has a primary key
    bad = [(t, cols) for t, _, cols, _ in primary if t not in REFERENCE_TABLES and cols[0] != "user_id"]
    assert bad == []
    assert foreign, "the schema should have foreign keys"
    bad = [(t, name) for t, name, cols, ref in foreign if cols[0] != "user_id" or ref[0] != "user_id"]
    assert bad == []
    assert [(t, cols) for t, _, cols, _ in uniques if cols[0] != "user_id"] == []
    referenced = {r[0] for r in foreign}
    assert not referenced & REFERENCE_TABLES  # reference tables never join tenant rows by key


def test_migrations_are_recorded_and_idempotent(
    pg_dsn: str, pg_store_factory: Callable[..., PostgresStore]
) -> None:
    store = pg_store_factory()
    again = pg_store_factory(schema=store.schema)  # a second opener finds the schema migrated
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(
            sql.SQL("SELECT version FROM {}.schema_migrations").format(sql.Identifier(store.schema))
        ).fetchall()
        assert sorted(rows) == [(v,) for v in range(1, SCHEMA_VERSION + 1)]
        conn.execute(
            sql.SQL("INSERT INTO {}.schema_migrations VALUES (%s, 'later')").format(
                sql.Identifier(store.schema)
            ),
            (SCHEMA_VERSION + 1,),
        )
        conn.execute("CREATE SCHEMA foreign_tables")
        conn.execute("CREATE TABLE foreign_tables.nodes (x int)")
    again.close()
    with pytest.raises(ConfigError, match="knows up to"):
        PostgresStore.open(pg_dsn, schema=store.schema)
    try:
        with pytest.raises(DatabaseCorrupt, match="not a dualmem schema"):
            PostgresStore.open(pg_dsn, schema="foreign_tables")
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("DROP SCHEMA foreign_tables CASCADE")


@pytest.mark.parametrize(
    "dsn",
    ["postgresql://nobody@127.0.0.1:1/none", "postgresql://[bad", "host=127.0.0.1 port=notaport"],
)
def test_bad_dsn_is_a_config_error_with_a_hint(dsn: str) -> None:
    with pytest.raises(ConfigError) as info:
        open_store(dsn if dsn.startswith("postgresql") else f"postgresql://x?{dsn}", timeout=1.0)
    assert info.value.hint is not None


def test_missing_database_and_password_are_not_echoed(pg_dsn: str) -> None:
    url = pg_dsn.replace("postgresql://postgres:@/postgres", "postgresql://postgres:s3cret@/no_such_db")
    if url == pg_dsn:
        pytest.skip("DUALMEM_PG_DSN has another shape")
    with pytest.raises(ConfigError) as info:
        open_store(url, timeout=2.0)
    assert "s3cret" not in info.value.one_line()
    assert "no_such_db" in info.value.one_line()


def test_memory_opens_a_postgres_url(pg_dsn: str) -> None:
    url = with_schema(pg_dsn, "memory_url_test")
    try:
        with Memory.open(url, embedder=HashingEmbedder(64)) as mem:
            node_id = mem.add("Mira adopted a cat named Pepper.", user="u")
            assert isinstance(mem.store, PostgresStore)
            assert mem.search("cat", user="u").ids[0] == node_id
        with Memory.open(url, embedder=HashingEmbedder(64)) as mem:
            assert mem.count(user="u") == 1
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("DROP SCHEMA IF EXISTS memory_url_test CASCADE")


def test_nul_and_control_characters_round_trip(pg_store_factory: Callable[..., PostgresStore]) -> None:
    store = pg_store_factory()
    rng = np.random.default_rng(3)
    assert Tenant("us\x00er").user == "user"  # a tenant id is normalised: no control character
    weird = Tenant("us\\er", "ag/ent", "r%un")
    node = _node(
        rng,
        1,
        tenant=weird,
        content="nul\x00 and \x01 soh\x01\x01 end",
        speaker="S\x00",
        metadata={"k": "\x00"},
    )
    store.put_nodes([node])
    assert store.get_node(node.id) == node
    assert store.get_node(node.id, weird) == node
    assert [n.id for n in store.iter_nodes(weird)] == [node.id]
    assert [i for i, _ in store.lexical_search(weird, "soh", 5)] == [node.id]


def test_a_held_lock_is_a_typed_error(pg_store_factory: Callable[..., PostgresStore], pg_dsn: str) -> None:
    store = pg_store_factory(timeout=0.3)
    rng = np.random.default_rng(4)
    node = _node(rng, 1)
    store.put_nodes([node])
    with psycopg.connect(pg_dsn) as other:
        other.execute(
            sql.SQL("SELECT 1 FROM {}.nodes WHERE id = %s FOR UPDATE").format(sql.Identifier(store.schema)),
            (node.id,),
        )
        with pytest.raises(DatabaseLocked) as info:
            store.update_node(dataclasses.replace(node, content="changed"))
        assert info.value.hint is not None
    store.update_node(dataclasses.replace(node, content="changed"))  # the lock is gone: it works
    assert store.get_node(node.id).content == "changed"  # type: ignore[union-attr]


def test_transactions_are_per_thread(pg_store_factory: Callable[..., PostgresStore]) -> None:
    """A transaction open on one thread is invisible to (and not joined by) another thread."""
    store = pg_store_factory()
    rng = np.random.default_rng(5)
    seen: list[int] = []
    with store.transaction():
        store.put_nodes([_node(rng, 1)])
        worker = threading.Thread(target=lambda: seen.append(store.count(ALICE)))
        worker.start()
        worker.join()
        assert store.count(ALICE) == 1
    assert seen == [0]
    assert store.count(ALICE) == 1


def _recall_at_10(store: PostgresStore, queries: np.ndarray, tenant: Tenant, exact: PostgresStore) -> float:
    found = 0
    for q in queries:
        want = {i for i, _ in exact.vector_search(tenant, q, 10)}
        got = {i for i, _ in store.vector_search(tenant, q, 10)}
        found += len(want & got)
    return found / (10 * len(queries))


def test_hnsw_with_a_tenant_filter_uses_the_index(pg_store_factory: Callable[..., PostgresStore]) -> None:
    """Above ``exact_below`` HNSW answers (agent filter included), with recall@10 vs exact >= 0.9."""
    rng = np.random.default_rng(6)
    approx = pg_store_factory(exact_below=100)
    exact = pg_store_factory(schema=approx.schema, exact_below=10**9)
    dim = 32
    nodes = [
        _node(rng, i, tenant=Tenant("big", f"a{i % 3}") if i % 4 else Tenant("other"), dim=dim)
        for i in range(2400)
    ]
    approx.put_nodes(nodes)
    queries = np.stack([_unit(rng, dim) for _ in range(20)])
    assert _recall_at_10(approx, queries, Tenant("big"), exact) >= 0.9
    assert _recall_at_10(approx, queries, Tenant("big", "a1"), exact) >= 0.9
    plan = approx.explain_vector_search(Tenant("big", "a1"), queries[0], 10)
    assert "vectors_hnsw" in plan
    hits = approx.vector_search(Tenant("big", "a1"), queries[0], 10)
    assert all(n.tenant == Tenant("big", "a1") for n in approx.get_nodes([i for i, _ in hits]).values())
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_cli_takes_a_postgres_url(pg_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    from dualmem.cli.main import main

    url = with_schema(pg_dsn, "cli_url_test")
    base = ["--db", url, "--embedder", "hashing:64", "--user", "u"]
    try:
        assert main([*base, "add", "Mira adopted a cat named Pepper."]) == 0
        assert main([*base, "stats"]) == 0
        assert '"nodes": 1' in capsys.readouterr().out
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("DROP SCHEMA IF EXISTS cli_url_test CASCADE")

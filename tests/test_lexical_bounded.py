"""Bounded lexical and context search of the SQLite store (issue 13): FTS5 ranks first, a window of
its best rows is joined to ``nodes``; the results must equal the plain join's on a multi-tenant store."""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from dualmem.plane import SQLiteStore
from dualmem.plane.sqlite import _sql as sql
from dualmem.text.lexical import fts_or
from dualmem.types import Node, Tenant
from store_support import tenant_where

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
WORDS = [
    "garden",
    "river",
    "lamp",
    "violin",
    "pasta",
    "hiking",
    "paint",
    "guitar",
    "museum",
    "novel",
    "chess",
    "yoga",
    "bakery",
    "tennis",
    "camera",
    "forest",
    "ocean",
    "tulip",
    "sunset",
    "coffee",
    "piano",
    "kite",
    "puzzle",
    "poetry",
    "market",
    "festival",
    "harbor",
    "lantern",
    "meadow",
]
#: the tenants and their share of the rows: a large user with two agents, a mid one, a small one
TENANTS = [Tenant("big", "a1")] * 5 + [Tenant("big", "a2")] * 2 + [Tenant("mid")] * 2 + [Tenant("tiny")]
QUERIES = [
    "garden",
    "violin OR pasta",
    "river lamp museum",
    "coffee piano kite puzzle",
    "chess",
    "sunset ocean",
    "festival harbor lantern meadow tulip",
    "novel",
]


def _nodes(n: int, seed: int) -> list[Node]:
    rng = random.Random(seed)
    vec = np.ones(8, dtype=np.float32) / np.sqrt(8)
    nodes = []
    for i in range(n):
        words = rng.sample(WORDS, rng.randrange(2, 7))
        text = " ".join(words) if i % 7 else "garden river"  # many exact duplicates: bm25 ties
        nodes.append(
            Node(
                id=f"n{i:05d}",
                tenant=TENANTS[rng.randrange(len(TENANTS))],
                content=text,
                at=T0 + dt.timedelta(minutes=i),
                session=f"s{i // 6}",
                embedding=vec,
            )
        )
    return nodes


@pytest.fixture(scope="module")
def store() -> Iterator[SQLiteStore]:
    s = SQLiteStore.open(":memory:")
    s.put_nodes(_nodes(1500, 3))
    yield s
    s.close()


def _plain(
    conn: sqlite3.Connection, table: str, expression: str, k: int, where: tuple[str, list[Any]]
) -> Any:
    """The plain join the bounded plan replaces (the statement the store ran before)."""
    clause, params = where
    statement = (
        f"SELECT n.id, -bm25({table}) AS score FROM {table} CROSS JOIN nodes n "
        f"ON n.seq = {table}.rowid WHERE {table} MATCH ? AND {clause} ORDER BY score DESC, n.seq LIMIT ?"
    )
    return [(r[0], float(r[1])) for r in conn.execute(statement, [expression, *params, k])]


TENANT_CASES = [Tenant("big"), Tenant("big", "a2"), Tenant("mid"), Tenant("tiny"), Tenant("nobody"), None]


@pytest.mark.parametrize("table", ["nodes_fts", "context_fts"])
@pytest.mark.parametrize("k", [1, 10, 60])
def test_bounded_fts_equals_the_plain_join(store: SQLiteStore, table: str, k: int) -> None:
    conn = store._conn
    for tenant in TENANT_CASES:
        share = 1.0 if tenant is None else store._lexical.share(tenant)
        for query in QUERIES:
            expression = fts_or(query.replace(" OR ", " ").split())
            where = tenant_where(tenant)
            assert sql.fts_top(conn, table, expression, k, where, share) == _plain(
                conn, table, expression, k, where
            ), (tenant, query, k)


def test_bounded_fts_is_exact_through_widening_and_fallback(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first window far too small (every tenant widens), then one that can never be enough (the
    plain join), each with a share that misjudges the tenant."""
    conn = store._conn
    for first, most in ((1, 8192), (1, 2)):
        monkeypatch.setattr(sql, "FTS_FIRST", first)
        monkeypatch.setattr(sql, "FTS_SPARE", 1)
        monkeypatch.setattr(sql, "FTS_MAX_WINDOW", most)
        for tenant in TENANT_CASES[:4]:
            for query in QUERIES:
                expression = fts_or(query.split())
                where = tenant_where(tenant)
                assert sql.fts_top(conn, "nodes_fts", expression, 10, where, 1.0) == _plain(
                    conn, "nodes_fts", expression, 10, where
                )


def test_store_searches_keep_tenants_apart(store: SQLiteStore) -> None:
    owner = {n.id: n.tenant for n in store.iter_nodes()}
    for tenant in (Tenant("big"), Tenant("big", "a1"), Tenant("mid"), Tenant("tiny")):
        for query in QUERIES:
            for search in (store.lexical_search, store.context_search):
                hits = search(tenant, query, 25)
                assert hits, (tenant, query)
                assert all(tenant.covers(owner[i]) for i, _ in hits)
            terms = store._lexical.query_terms("nodes_fts", query)
            assert store.lexical_search(tenant, query, 25) == _plain(
                store._conn, "nodes_fts", fts_or(terms), 25, tenant_where(tenant)
            )
    assert store.lexical_search(Tenant("nobody"), "garden", 10) == []

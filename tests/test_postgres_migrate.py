"""``dualmem migrate``: SQLite -> PostgreSQL -> SQLite, verified, resumable after a real lock timeout."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg import sql

from dualmem import Memory
from dualmem.cli.main import main
from dualmem.embed import HashingEmbedder
from dualmem.errors import DatabaseLocked
from dualmem.plane import Store, open_store
from dualmem.plane.migrate import MIGRATION_META, migrate_store
from dualmem.types import Tenant
from pg_server import with_schema

NOTES = [
    "Mira adopted a cat named Pepper in May 2023.",
    "Pepper the cat likes the garden.",
    "Jon started a pottery class on Tuesdays.",
    "Mira no longer lives in Berlin; she moved to Lisbon.",
    "The pottery class made Jon happy.",
    "Mira and Jon went camping near the lake.",
]


def _build(path: str) -> None:
    with Memory.open(path, embedder=HashingEmbedder(64)) as mem:
        for user in ("ann", "bob", "cyd"):
            for i, note in enumerate(NOTES):
                mem.add(note, user=user, agent="a1" if i % 2 else None, at=f"2023-05-0{i + 1}")
            mem.consolidate(user=user)
        # a long node's chunk vectors (the hashing embedder has no window, so they are put directly)
        first = next(iter(mem.store.iter_nodes(Tenant("ann"))))
        rows = np.random.default_rng(0).normal(size=(3, 64)).astype(np.float32)
        mem.store.put_chunks({first.id: rows / np.linalg.norm(rows, axis=1, keepdims=True)})


def _snapshot(store: Store) -> dict[str, object]:
    nodes = {n.id: n for n in store.iter_nodes()}
    edges = {n: sorted(store.edges_of(n), key=repr) for n in nodes}
    decisions = {n: store.decisions_of(n) for n in nodes}
    chunks = {n: m.tolist() for n, m in store.get_chunks(nodes).items()}
    assert len(chunks) == 1
    return {"nodes": nodes, "edges": edges, "decisions": decisions, "chunks": chunks}


def _same(a: dict[str, object], b: dict[str, object]) -> None:
    assert a["nodes"] == b["nodes"]
    assert a["edges"] == b["edges"]
    assert a["decisions"] == b["decisions"]
    assert a["chunks"] == b["chunks"]


def test_migrate_there_and_back(
    tmp_path: Path, memory_db: Callable[[str], str], capsys: pytest.CaptureFixture[str]
) -> None:
    source = str(tmp_path / "mem.db")
    _build(source)
    middle = memory_db("middle")  # a PostgreSQL schema, or a SQLite file for the sqlite leg
    back = str(tmp_path / "back.db")
    assert main(["migrate", "--from", source, "--to", middle, "--chunk", "4"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["users"], report["nodes"], report["copied_nodes"]) == (3, 18, 18)
    assert report["decisions"] > 0
    assert report["edges"] > 0
    assert main(["migrate", "--from", middle, "--to", back]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["nodes"], again["edges"], again["decisions"]) == (18, report["edges"], report["decisions"])
    stores = [open_store(where) for where in (source, middle, back)]
    try:
        first, *rest = (_snapshot(s) for s in stores)
        for other in rest:
            _same(first, other)
        hits = [s.lexical_search(Tenant("ann"), "pottery class", 3) for s in stores]
        assert [h[0][0] for h in hits] == [hits[0][0][0]] * 3
    finally:
        for store in stores:
            store.close()
    # a second run finds every user done
    assert main(["migrate", "--from", source, "--to", middle]) == 0
    assert json.loads(capsys.readouterr().out)["skipped_users"] == ["ann", "bob", "cyd"]


def test_migrate_resumes_after_a_lock_timeout(tmp_path: Path, pg_dsn: str) -> None:
    source_path = str(tmp_path / "mem.db")
    _build(source_path)
    source = open_store(source_path)
    target = open_store(with_schema(pg_dsn, "resume_test"), timeout=0.5)
    try:
        with psycopg.connect(pg_dsn) as blocker:  # another session locks the edges table
            blocker.execute(
                sql.SQL("LOCK TABLE {}.edges IN EXCLUSIVE MODE").format(sql.Identifier("resume_test"))
            )
            with pytest.raises(DatabaseLocked):
                migrate_store(source, target, chunk=4)
        assert target.count(Tenant("ann")) == source.count(Tenant("ann"))  # the nodes went in first
        assert target.get_meta(MIGRATION_META) is None  # but no user verified
        report = migrate_store(source, target, chunk=4)
        assert [u.copied for u in report.users] == [0, 6, 6]  # ann's nodes were there already
        _same(_snapshot(source), _snapshot(target))  # and no decision was copied twice
    finally:
        source.close()
        target.close()
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("DROP SCHEMA IF EXISTS resume_test CASCADE")

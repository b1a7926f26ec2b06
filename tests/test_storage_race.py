"""Finding 2: readers in other processes never see half of a concurrent delete (no KeyError).

Processes, not threads: each has its own connection, the writer commits between a reader's statements.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from pathlib import Path

import numpy as np

from dualmem.errors import DatabaseLocked
from dualmem.plane import SQLiteStore
from dualmem.types import Node, Tenant

USER = Tenant("u")
DIM = 32
SEARCHES = 150


def _nodes(rng: np.random.Generator, start: int, n: int) -> list[Node]:
    out = []
    for i in range(start, start + n):
        v = rng.normal(size=DIM).astype(np.float32)
        agent = "a" if i % 2 else None
        out.append(
            Node(
                id=f"n{i}",
                tenant=Tenant("u", agent),
                content=f"note {i} about tea",
                at=None,
                embedding=v / np.linalg.norm(v),
            )
        )
    return out


def _search(db: str, out: mp.Queue) -> None:  # type: ignore[type-arg]
    rng = np.random.default_rng()
    errors: list[str] = []
    done = locked = 0
    with SQLiteStore.open(db, timeout=10.0) as store:
        for _ in range(SEARCHES):
            q = rng.normal(size=DIM).astype(np.float32)
            try:
                hits = store.vector_search(USER, q / np.linalg.norm(q), 10)
                store.get_nodes([h[0] for h in hits], USER)
                store.recent_nodes(USER, 5)
                store.stats(USER)
                done += 1
            except DatabaseLocked:
                locked += 1
            except Exception as exc:  # the test counts every kind of failure
                errors.append(f"{type(exc).__name__}: {exc}")
    out.put((done, locked, errors))


def _churn(db: str, stop: float) -> None:
    rng = np.random.default_rng(7)
    i = 10_000
    with SQLiteStore.open(db, timeout=10.0) as store:
        while time.monotonic() < stop:
            victims = [f"n{j}" for j in rng.choice(i, size=3)]
            with store.transaction():
                store.delete_nodes(victims)
                store.put_nodes(_nodes(rng, i, 3))
            i += 3


def test_searches_in_other_processes_during_deletes_never_fail(tmp_path: Path) -> None:
    db = str(tmp_path / "memory.db")
    rng = np.random.default_rng(0)
    with SQLiteStore.open(db) as store:
        store.bind_embedder("test", DIM)
        store.put_nodes(_nodes(rng, 0, 400))
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    churn = ctx.Process(target=_churn, args=(db, time.monotonic() + 600))
    churn.start()
    searchers = [ctx.Process(target=_search, args=(db, out)) for _ in range(2)]
    try:
        for p in searchers:
            p.start()
        results = [out.get(timeout=300) for _ in searchers]
    finally:
        churn.terminate()
        churn.join(30)
        for p in searchers:
            p.join(30)
    errors = [e for _, _, errs in results for e in errs]
    assert errors == []
    assert sum(done for done, _, _ in results) >= SEARCHES  # readers were not blocked by the writer

"""What answering a ``Filter`` by the store's query saves over scanning the tenant (issue 45, item 3).

``write/lifecycle.select`` asks the store (``MemoryStore.links.select``: SQL over the node table on
SQLite, the held nodes in place on the in-memory store); ``lifecycle.scan`` is the old way, every node
of the tenant read and ``Filter.matches`` checked in Python. Per size, one store of N memories
(8 speakers, sessions of 20 turns, a year of times, metadata ``{"topic": one of 20, "n": i % 7}``, a
second tenant of N/4 beside it), then for each filter both ways alternate in the same run (the answers
are asserted equal): p50 milliseconds and their ratio. ``search`` rows (SQLite) time
``Memory.search(where=...)`` end to end (hashing embedder, the builtin controller), the shipped select
against the scan put in its place.

    nice -n 10 python bench/filter_cost.py --sizes 10000 50000 --reps 5 --out bench/results/filter_cost.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import dualmem.memory as memory_module
from dualmem.control.builtin import BuiltinController
from dualmem.embed import HashingEmbedder
from dualmem.memory import Memory
from dualmem.plane import InMemoryStore, SQLiteStore
from dualmem.plane.base import MemoryStore
from dualmem.types import Node, Tenant
from dualmem.vocab import Filter
from dualmem.write.lifecycle import scan, select

USER = Tenant("u")
OTHER = Tenant("other")
SPEAKERS = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi"]
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
DIM = 32
WORDS = [f"w{i}" for i in range(3000)]

FILTERS: dict[str, Filter] = {
    "speaker": Filter(speaker="alice"),
    "session": Filter(session="s00005"),
    "week": Filter(since=T0 + dt.timedelta(days=100), until=T0 + dt.timedelta(days=107)),
    "metadata": Filter(metadata={"topic": "t03"}),
    "speaker+metadata": Filter(speaker="Bob", metadata={"topic": "t07", "n": 3}),
}


def nodes(tenant: Tenant, n: int, rng: np.random.Generator) -> list[Node]:
    out = []
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for i in range(n):
        out.append(
            Node(
                id=f"{tenant.user}-{i}",
                tenant=tenant,
                content=" ".join(rng.choice(WORDS, 10)),
                at=T0 + dt.timedelta(seconds=int(rng.integers(365 * 86400))),
                speaker=SPEAKERS[i % len(SPEAKERS)],
                session=f"s{i // 20:05d}",
                metadata={"topic": f"t{int(rng.integers(20)):02d}", "n": i % 7},
                embedding=vectors[i],
            )
        )
    return out


def build(store: MemoryStore, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    store.meta.bind_embedder(HashingEmbedder(DIM).name, DIM)
    for tenant, size in ((USER, n), (OTHER, n // 4)):
        made = nodes(tenant, size, rng)
        for start in range(0, size, 2000):
            store.put_nodes(made[start : start + 2000])


def _p50(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def _pair(reps: int, shipped: Callable[[], Any], baseline: Callable[[], Any]) -> dict[str, float]:
    times: dict[str, list[float]] = {"store": [], "scan": []}
    for _ in range(reps):
        for kind, fn in (("store", shipped), ("scan", baseline)):
            started = time.perf_counter()
            fn()
            times[kind].append((time.perf_counter() - started) * 1000)
    store_ms, scan_ms = _p50(times["store"]), _p50(times["scan"])
    return {"store_p50_ms": store_ms, "scan_p50_ms": scan_ms, "ratio_p50": round(store_ms / scan_ms, 4)}


def measure(kind: str, n: int, reps: int, seed: int, folder: Path) -> list[dict[str, Any]]:
    store: MemoryStore = InMemoryStore() if kind == "memory" else SQLiteStore.open(folder / f"{kind}-{n}.db")
    build(store, n, seed)
    rows: list[dict[str, Any]] = []
    for name, flt in FILTERS.items():
        answer = select(store, USER, flt)
        assert answer == scan(store, USER, flt), f"{kind} {name}: the store's answer differs from the scan"
        row = {"store": kind, "memories": n, "op": "select", "filter": name, "matches": len(answer)}
        row.update(_pair(reps, lambda f=flt: select(store, USER, f), lambda f=flt: scan(store, USER, f)))
        rows.append(row)
    if kind != "sqlite":  # the in-memory store's own search is what a search there costs
        store.close()
        return rows
    mem = Memory(store, HashingEmbedder(DIM), BuiltinController(), answerer=None)
    try:
        query = " ".join(WORDS[:3])
        for name, flt in FILTERS.items():

            def run(f: Filter = flt) -> Any:
                return mem.search(query, user=USER.user, k=10, where=f)

            def scanned(f: Filter = flt) -> Any:
                memory_module.select = scan  # type: ignore[attr-defined]
                try:
                    return run(f)
                finally:
                    memory_module.select = select  # type: ignore[attr-defined]

            allowed = set(select(store, USER, flt))
            ours, theirs = run(), scanned()
            assert all(e.node.id in allowed for e in (*ours.evidence, *theirs.evidence))
            row = {
                "store": kind, "memories": n, "op": "search", "filter": name,
                "same_evidence": [e.node.id for e in ours.evidence] == [e.node.id for e in theirs.evidence],
            }  # fmt: skip
            row.update(_pair(reps, run, scanned))
            rows.append(row)
    finally:
        mem.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--stores", nargs="+", default=["memory", "sqlite"], choices=["memory", "sqlite"])
    parser.add_argument("--reps", type=int, default=5, help="timed calls of each way per filter")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="dualmem-filter-") as folder:
        for n in args.sizes:
            for kind in args.stores:
                for row in measure(kind, n, args.reps, args.seed, Path(folder)):
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

"""What rebuilding the entities index costs a forget on SQLite (issue 49, item 3), as a ratio in one run.

A forget that drops an entity (its last memory goes) runs ``REINDEX entities`` so that no copy of the
name stays in the unallocated gap of a live index page (``SQLiteStore._prune_entities``). This bench
builds one store per size (N memories of 12 random words, two entities each from a pool of N names,
16-dim vectors), then forgets memories one by one, each holding an entity of its own (the worst case:
every forget rebuilds the index), alternating the shipped forget and the same forget without the
rebuild (the baseline) on the same file. Printed per size: p50/p95 milliseconds of each and the ratio
of the p50s.

    nice -n 10 python bench/forget_cost.py --sizes 10000 100000 --forgets 40
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from dualmem.plane import SQLiteStore
from dualmem.types import Node, Tenant

USER = Tenant("u")
WORDS = [f"w{i}" for i in range(5000)]


def build(db: Path, n: int, forgets: int, rng: np.random.Generator) -> list[str]:
    names = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), 8)).capitalize() for _ in range(n)]
    with SQLiteStore.open(db) as store:
        store.bind_embedder("bench", 16)
        for start in range(0, n, 2000):
            batch = []
            for i in range(start, min(n, start + 2000)):
                v = rng.normal(size=16).astype(np.float32)
                ents = (names[int(rng.integers(n))], names[int(rng.integers(n))])
                content = " ".join(rng.choice(WORDS, 12))
                batch.append(
                    Node(id=f"n{i}", tenant=USER, content=content, at=None, entities=ents, embedding=v)
                )
            store.put_nodes(batch)
        victims = []
        for j in range(2 * forgets):
            v = rng.normal(size=16).astype(np.float32)
            own = f"Victim{j}x{rng.bytes(4).hex()}"
            store.put_nodes([Node(id=f"v{j}", tenant=USER, content="a note to forget", at=None,
                                  entities=(own, names[int(rng.integers(n))]), embedding=v)])  # fmt: skip
            victims.append(f"v{j}")
    return victims


def measure(n: int, forgets: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(prefix="dualmem-forget-") as folder:
        db = Path(folder) / "m.db"
        victims = build(db, n, forgets, rng)
        times: dict[str, list[float]] = {"shipped": [], "baseline": []}
        shipped = SQLiteStore._prune_entities

        def baseline(self: SQLiteStore) -> None:  # the forget before issue 49: no rebuild
            self._conn.execute(
                "DELETE FROM entities WHERE NOT EXISTS "
                "(SELECT 1 FROM node_entities ne WHERE ne.entity_id = entities.id)"
            )

        with SQLiteStore.open(db) as store:
            for j, victim in enumerate(victims):
                kind = "shipped" if j % 2 == 0 else "baseline"
                SQLiteStore._prune_entities = shipped if kind == "shipped" else baseline  # type: ignore[method-assign]
                try:
                    started = time.perf_counter()
                    with store.transaction():
                        assert store.delete_nodes([victim]) == 1
                    times[kind].append((time.perf_counter() - started) * 1000)
                finally:
                    SQLiteStore._prune_entities = shipped  # type: ignore[method-assign]
            entities = store._conn.execute("SELECT count(*) FROM entities").fetchone()[0]
    out: dict[str, float] = {"memories": n, "entities": entities}
    for kind, values in times.items():
        out[f"{kind}_p50_ms"] = round(statistics.median(values), 2)
        out[f"{kind}_p95_ms"] = round(float(np.percentile(values, 95)), 2)
    out["ratio_p50"] = round(out["shipped_p50_ms"] / out["baseline_p50_ms"], 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--forgets", type=int, default=40, help="forgets of each kind per size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        rows.append(measure(n, args.forgets, args.seed))
        print(json.dumps(rows[-1]), flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

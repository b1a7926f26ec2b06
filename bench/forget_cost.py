"""What erasing costs: one forget (delete + FTS5 optimize + WAL truncate) against a plain delete.

For stores of N synthetic memories (12 words, 64-dim vectors), times in the same run:

- ``delete``: the delete statements alone, committed without clearing the index (the old behaviour);
- ``forget``: ``delete_nodes`` in a transaction as dualmem runs it now (FTS5 ``optimize`` before the
  commit, ``wal_checkpoint(TRUNCATE)`` after).

    PYTHONPATH=src .venv/bin/python bench/forget_cost.py --sizes 1000 10000 50000
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

WORDS = [f"w{i}" for i in range(5000)]
USER = Tenant("u")


def build(db: Path, n: int, rng: np.random.Generator) -> SQLiteStore:
    store = SQLiteStore.open(db)
    for start in range(0, n, 1000):
        vecs = rng.normal(size=(min(1000, n - start), 64)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        store.put_nodes(
            [
                Node(
                    id=f"n{start + i}",
                    tenant=USER,
                    content=" ".join(rng.choice(WORDS, 12)),
                    at=None,
                    embedding=v,
                )
                for i, v in enumerate(vecs)
            ]
        )
    return store


def measure(n: int, repeats: int, tmp: Path) -> dict[str, float]:
    rng = np.random.default_rng(n)
    store = build(tmp / f"s{n}.db", n, rng)
    conn = store._conn
    plain, erase = [], []
    for r in range(repeats):
        started = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM nodes WHERE id = ?", (f"n{2 * r}",))
        conn.execute("COMMIT")
        plain.append(time.perf_counter() - started)
        started = time.perf_counter()
        with store.transaction():
            store.delete_nodes([f"n{2 * r + 1}"])
        erase.append(time.perf_counter() - started)
    store.close()
    d, f = statistics.median(plain) * 1000, statistics.median(erase) * 1000
    return {"nodes": n, "delete_ms": round(d, 2), "forget_ms": round(f, 2), "ratio": round(f / d, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dualmem-forget-") as tmp:
        rows = [measure(n, args.repeats, Path(tmp)) for n in args.sizes]
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()

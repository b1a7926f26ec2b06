"""What erasing costs: one forget (delete + FTS5 optimize + WAL truncate) against a plain delete.

For stores of N synthetic memories (12 words, ``--dim`` vectors), times in the same run:

- ``delete``: the delete statements alone, committed without clearing the index (the old behaviour);
- ``forget``: ``delete_nodes`` in a transaction as dualmem runs it now (FTS5 ``optimize`` before the
  commit, ``wal_checkpoint(TRUNCATE)`` after);
- with ``--ann`` (needs the scale extra), a second store of the same memories with its approximate
  index built (one segment over every row, ``use_ann(1000)``), forgotten in the same rounds:
  ``ann_forget`` is the same forget, which also zeroes the forgotten row's slot in the segment file
  and syncs it (issue 28), ``ann_erase`` that step alone (``_ann_erase.erase`` as the commit runs it)
  and ``ann_ratio`` = ``ann_forget / forget``.

    PYTHONPATH=src .venv/bin/python bench/forget_cost.py --sizes 1000 10000 50000
    PYTHONPATH=src .venv/bin/python bench/forget_cost.py --sizes 25000 --ann --dim 384
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from dualmem.plane import SQLiteStore
from dualmem.plane import _ann_erase as ann_erase
from dualmem.types import Node, Tenant

WORDS = [f"w{i}" for i in range(5000)]
USER = Tenant("u")


def synthetic(n: int, rng: np.random.Generator, dim: int) -> Iterable[list[Node]]:
    """``n`` memories of 12 random words and a random unit vector, in batches of 1,000."""
    for start in range(0, n, 1000):
        vecs = rng.normal(size=(min(1000, n - start), dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        yield [
            Node(
                id=f"n{start + i}", tenant=USER, content=" ".join(rng.choice(WORDS, 12)), at=None, embedding=v
            )
            for i, v in enumerate(vecs)
        ]


def build(db: Path, n: int, rng: np.random.Generator, dim: int) -> SQLiteStore:
    store = SQLiteStore.open(db)
    for batch in synthetic(n, rng, dim):
        store.put_nodes(batch)
    return store


def measure(n: int, repeats: int, tmp: Path, dim: int, *, with_ann: bool) -> dict[str, float]:
    """Plain deletes and forgets on one store and, with ``with_ann``, forgets on a second store of the
    same memories with its index built, interleaved (one of each per round: the box is noisy)."""
    store = build(tmp / f"s{n}.db", n, np.random.default_rng(n), dim)
    indexed, built = None, 0.0
    if with_ann:
        indexed = build(tmp / f"a{n}.db", n, np.random.default_rng(n), dim)
        indexed.use_ann(1000)
        started = time.perf_counter()
        indexed.vector_search(USER, np.ones(dim, dtype=np.float32) / dim**0.5, 10)  # builds the segment
        built = time.perf_counter() - started
    conn = store._conn
    plain, erase, ann_forget, zeroing = [], [], [], []
    real = ann_erase.erase

    def erase_timed(folder: Path, rows: Iterable[ann_erase.Doomed]) -> ann_erase.EraseResult:
        began = time.perf_counter()
        try:
            return real(folder, rows)
        finally:
            zeroing.append(time.perf_counter() - began)

    ann_erase.erase = erase_timed  # the store calls it through the module
    try:
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
            if indexed is not None:
                started = time.perf_counter()
                with indexed.transaction():
                    indexed.delete_nodes([f"n{2 * r + 1}"])
                ann_forget.append(time.perf_counter() - started)
    finally:
        ann_erase.erase = real
    store.close()
    d, f = statistics.median(plain) * 1000, statistics.median(erase) * 1000
    row: dict[str, float] = {
        "nodes": n,
        "delete_ms": round(d, 2),
        "forget_ms": round(f, 2),
        "ratio": round(f / d, 1),
    }
    if indexed is not None:
        segments = indexed._ann.segments(USER.user) if indexed._ann is not None else []
        indexed.close()
        a = statistics.median(ann_forget) * 1000
        row.update(
            {
                "ann_build_s": round(built, 1),
                "segments": len(segments),
                "ann_forget_ms": round(a, 2),
                "ann_erase_ms": round(statistics.median(zeroing) * 1000, 2),
                "ann_ratio": round(a / f, 2),
            }
        )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--ann", action="store_true", help="also with a built approximate index")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dualmem-forget-") as tmp:
        rows = [measure(n, args.repeats, Path(tmp), args.dim, with_ann=args.ann) for n in args.sizes]
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()

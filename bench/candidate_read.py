"""A search's candidate read and vector step, two checkouts in the same run (before/after a change).

Times, in CPU ms (``time.process_time``) a search, on a built store opened through
``SQLiteStore.open``:

- ``candidates``: ``Store.candidates`` of ``--ids`` random node ids in three calls (a 100k pool reads
  ~590 in its three rounds), or of the id lists searches asked for (``--ids-file``, three calls a
  search), the decoded-node cache emptied before each call, so every id is a miss (a search at 100k
  rarely hits it);
- ``vector``: ``Store.vector_search`` (k = 50, as the pool asks) of a dozen queries' hashing or
  MiniLM embeddings (``--embedder``; the approximate index beside the file, where it has one);
- ``search`` (with ``--searches N``): ``Memory.search`` (k = 10, builtin profile) of ``N`` of
  ``bench/scale.py``'s corpus queries after five untimed ones, the whole search's CPU p50.

With ``--compare OLD_SRC NEW_SRC`` the script runs itself in fresh processes, alternately with each
source tree first on ``PYTHONPATH`` (``--rounds`` times each), on ``--db`` for the old tree and
``--new-db`` for the new one (copies of the same file: a schema migration may rewrite one), and
prints each tree's median and rounds with the load average before and after. A search may write
(the lexical index's upkeep) and an open may migrate: time copies, never a fixture.

    python bench/candidate_read.py --db /tmp/c/h100k-main.db --new-db /tmp/c/h100k-new.db \\
        --compare /work/main/src src --embedder hashing
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from dualmem.embed import create_embedder
from dualmem.memory import Memory
from dualmem.plane import SQLiteStore
from dualmem.types import Tenant

_QUERIES = (
    "what did she say about the garden", "when is the trip to the lake", "who painted the mural",
    "how did the interview go", "what book is he reading", "where did they go hiking last summer",
    "what does her sister do for work", "which restaurant did they pick", "when did the dog get sick",
    "what game did they play on friday", "how old is the baby now", "what instrument is he learning",
)  # fmt: skip


def measure(ns: argparse.Namespace) -> dict[str, float]:
    """One process's figures: CPU ms a search of each step, over ``--sets`` id sets and queries."""
    tenant = Tenant(ns.user)
    with SQLiteStore.open(ns.db) as store:
        store.use_ann(ns.ann_threshold)
        every = [row[0] for row in store._conn.execute("SELECT id FROM nodes WHERE user_id = ?", (ns.user,))]
        if ns.ids_file is not None:  # what searches asked for: three calls a search
            calls = json.loads(ns.ids_file.read_text())
            sets = [calls[i : i + 3] for i in range(0, len(calls) - 2, 3)][: ns.sets]
        else:
            rng = random.Random(0)
            sets = [_thirds(rng.sample(every, min(ns.ids, len(every)))) for _ in range(ns.sets)]
        embedder = create_embedder(ns.embedder)
        vectors = embedder.embed(list(_QUERIES))
        store.vector_search(tenant, vectors[0], 50)  # opens the index (not timed)
        cand, vec = [], []
        for parts in sets * ns.repeat:
            start = time.process_time()
            for part in parts:
                store._nodes.clear()
                store.candidates(part, tenant)
            cand.append(1000 * (time.process_time() - start))
        for _ in range(ns.repeat * (ns.sets // len(_QUERIES) + 1)):
            for q in vectors:
                start = time.process_time()
                store.vector_search(tenant, q, 50)
                vec.append(1000 * (time.process_time() - start))
    out = {
        "candidates": round(statistics.median(cand), 2), "vector": round(statistics.median(vec), 2),
        "candidates_min": round(min(cand), 2), "vector_min": round(min(vec), 2),
    }  # fmt: skip
    if ns.searches:
        out["search"] = _searches(ns)
    return out


def _searches(ns: argparse.Namespace) -> float:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from scale import Corpus

    corpus = Corpus(ns.data, 11)
    queries = [corpus.query() for _ in range(ns.searches + 5)]
    with Memory.open(ns.db, embedder=ns.embedder, answerer=None, profile="builtin") as mem:
        scope = mem.scope(ns.user)
        for q in queries[:5]:
            scope.search(q, k=10)
        ms = []
        for q in queries[5:]:
            start = time.process_time()
            scope.search(q, k=10)
            ms.append(1000 * (time.process_time() - start))
    return round(statistics.median(ms), 2)


def _thirds(ids: list[str]) -> list[list[str]]:
    third = len(ids) // 3
    return [ids[:third], ids[third : 2 * third], ids[2 * third :]]


def compare(ns: argparse.Namespace) -> dict[str, object]:
    old, new = (str(Path(p).resolve()) for p in ns.compare)
    runs: dict[str, list[dict[str, object]]] = {"old": [], "new": []}
    load = [round(x, 2) for x in os.getloadavg()]
    args = ["--ids", str(ns.ids), "--sets", str(ns.sets), "--embedder", ns.embedder, "--user", ns.user]
    args += ["--ann-threshold", str(ns.ann_threshold), "--repeat", str(ns.repeat)]
    args += ["--searches", str(ns.searches), "--data", str(ns.data)]
    args += [] if ns.ids_file is None else ["--ids-file", str(ns.ids_file)]
    for _ in range(ns.rounds):
        for name, src, db in (("old", old, ns.db), ("new", new, ns.new_db)):
            env = {**os.environ, "PYTHONPATH": src}
            out = subprocess.run(
                [sys.executable, __file__, "--db", str(db), *args],
                env=env, check=True, capture_output=True, text=True,
            )  # fmt: skip
            runs[name].append(json.loads(out.stdout))
    medians = {
        name: {key: statistics.median(float(str(r[key])) for r in rows) for key in rows[0]}
        for name, rows in runs.items()
    }
    return {
        "old": old, "new": new, "db": str(ns.db), "new_db": str(ns.new_db), "ids_per_search": ns.ids,
        "cpu_ms_median": medians, "rounds": runs,
        "load_before": load, "load_after": [round(x, 2) for x in os.getloadavg()],
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--new-db", type=Path, default=None, help="the new tree's copy (default: --db)")
    parser.add_argument("--compare", nargs=2, metavar=("OLD_SRC", "NEW_SRC"), default=None)
    parser.add_argument("--ids", type=int, default=590, help="random ids a search (no --ids-file)")
    parser.add_argument(
        "--ids-file", type=Path, default=None, help="JSON: the id lists of Store.candidates calls"
    )
    parser.add_argument("--sets", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2, help="times each set is read in a process")
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--user", default="bench-user")
    parser.add_argument("--searches", type=int, default=0, help="also time this many Memory.search calls")
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"), help="for --searches")
    parser.add_argument("--ann-threshold", type=int, default=20_000, help="the builtin profile's")
    ns = parser.parse_args()
    if ns.new_db is None:
        ns.new_db = ns.db
    print(json.dumps(compare(ns) if ns.compare else measure(ns), indent=2))


if __name__ == "__main__":
    main()

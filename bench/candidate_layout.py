"""What would a narrow covering table save in the pool's candidate read? Time the layouts, same run.

Copies the columns ``Store.candidates`` reads (``_sqlite_nodes.CANDIDATE_COLS``) of a built store
(``--db``, opened read-only, never modified) into candidate layouts in a scratch file under
``--tmp``, then times ``--sets`` lookups of ``--ids`` random node ids (a 100k pool reads ~590 a
search) through each, alternating, in CPU ms a lookup:

- ``joined``: today's statement (``nodes`` by its id index, then ``vectors`` by its TEXT key's index
  and ``node_context`` by seq: five B-tree descents a row);
- ``rowid``: one rowid table of exactly those columns, ``id`` UNIQUE (two descents a row);
- ``without-rowid``: the same as a WITHOUT ROWID table keyed by id (rows of ~1.6 KB with a 1 KB
  vector: few rows a page, deeper tree);
- ``without-rowid-novec``: WITHOUT ROWID without the vector (the vector would still be read apart);
- ``decode``: ``read_candidates`` on the store (SQL plus decoding into ``Candidate`` values), so the
  decoding's share is the difference to ``joined``.

    python bench/candidate_layout.py --db /tmp/scale3-cache/db/bulk-hashing-0-100000.db
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dualmem.plane._sqlite_nodes import CANDIDATE_COLS, read_candidates

_JOINED = "nodes n LEFT JOIN vectors v ON v.node_id = n.id LEFT JOIN node_context c ON c.seq = n.seq"
_COLS = "id, user_id, agent_id, run_id, content, speaker, at, temporal_refs, valid_to, blob, neighbours, vec"
_LAYOUTS = {
    "rowid": f"CREATE TABLE t_rowid (seq INTEGER PRIMARY KEY, {_COLS.replace('id,', 'id TEXT UNIQUE,', 1)})",
    "without-rowid": f"CREATE TABLE t_wr ({_COLS.replace('id,', 'id TEXT PRIMARY KEY,', 1)}) WITHOUT ROWID",
    "without-rowid-novec": "CREATE TABLE t_wrnv ("
    + _COLS.replace("id,", "id TEXT PRIMARY KEY,", 1).replace(" blob,", "")
    + ") WITHOUT ROWID",
}
_TABLES = {"rowid": "t_rowid", "without-rowid": "t_wr", "without-rowid-novec": "t_wrnv"}


def build(scratch: Path, db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(scratch)
    conn.execute("ATTACH ? AS s", (f"file:{db}?mode=ro",))
    source = _JOINED.replace("nodes n", "s.nodes n").replace("vectors v", "s.vectors v")
    source = source.replace("node_context c", "s.node_context c")
    for name, ddl in _LAYOUTS.items():
        conn.execute(ddl)
        cols = CANDIDATE_COLS if name != "without-rowid-novec" else CANDIDATE_COLS.replace(" v.blob,", "")
        lead = "n.seq, " if name == "rowid" else ""
        conn.execute(f"INSERT INTO {_TABLES[name]} SELECT {lead}{cols} FROM {source} ORDER BY n.seq")
    conn.commit()
    return conn


def cpu_ms(fn: Callable[[list[str]], object], sets: list[list[str]]) -> float:
    start = time.process_time()
    for ids in sets:
        fn(ids)
    return round(1000 * (time.process_time() - start) / len(sets), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--ids", type=int, default=590)
    parser.add_argument("--sets", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tmp", type=Path, default=None)
    ns = parser.parse_args()
    store = sqlite3.connect(f"file:{ns.db}?mode=ro", uri=True)
    every = [row[0] for row in store.execute("SELECT id FROM nodes")]
    rng = random.Random(0)
    sets = [rng.sample(every, min(ns.ids, len(every))) for _ in range(ns.sets)]
    with tempfile.TemporaryDirectory(dir=ns.tmp) as tmp:
        scratch = build(Path(tmp) / "layouts.db", ns.db)

        def marks(ids: list[str]) -> str:
            return ",".join("?" * len(ids))

        runs: dict[str, Callable[[list[str]], object]] = {
            "joined": lambda ids: store.execute(
                f"SELECT {CANDIDATE_COLS} FROM {_JOINED} WHERE n.id IN ({marks(ids)})", ids
            ).fetchall(),
            "decode": lambda ids: read_candidates(store, ids),
        }
        for name, table in _TABLES.items():
            runs[name] = lambda ids, t=table: scratch.execute(
                f"SELECT * FROM {t} WHERE id IN ({marks(ids)})", ids
            ).fetchall()
        out: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(ns.rounds):
            for name, fn in runs.items():
                out[name].append(cpu_ms(fn, sets))
        size = {
            name: scratch.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for name, t in _TABLES.items()
        }
    report = {
        "db": str(ns.db),
        "ids_per_lookup": ns.ids,
        "lookups": ns.sets,
        "rows": size,
        "cpu_ms_per_lookup": {name: sorted(values)[len(values) // 2] for name, values in out.items()},
        "rounds": out,
        "load": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

"""Three processes write and search one PostgreSQL memory for a bounded time: nothing lost, no untyped error.

Run as a script, this file is one worker: ``python test_postgres_concurrency.py URL TAG SECONDS OUT``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

SECONDS = 3.0
WORKERS = 3


def _work(url: str, tag: str, seconds: float, out: Path) -> None:
    from dualmem import Memory
    from dualmem.embed import HashingEmbedder
    from dualmem.errors import DualmemError

    written: list[str] = []
    typed: list[str] = []
    untyped: list[str] = []
    searches = 0
    with Memory.open(url, embedder=HashingEmbedder(64)) as mem:
        deadline = time.monotonic() + seconds
        i = 0
        while time.monotonic() < deadline:
            i += 1
            try:
                written.append(
                    mem.add(f"{tag} wrote note {i} about topic {i % 5} and the garden", user="shared")
                )
                mem.search(f"topic {i % 5} garden", user="shared")
                searches += 1
            except DualmemError as exc:
                typed.append(f"{type(exc).__name__}: {exc.one_line()}")
            except Exception as exc:  # an untyped error is exactly what this test counts
                untyped.append(repr(exc))
    out.write_text(json.dumps({"written": written, "typed": typed, "untyped": untyped, "searches": searches}))


def test_three_processes_write_and_search(pg_dsn: str, tmp_path: Path) -> None:
    import psycopg

    from dualmem import Memory
    from dualmem.embed import HashingEmbedder
    from pg_server import with_schema

    url = with_schema(pg_dsn, f"conc{os.getpid()}")
    Memory.open(url, embedder=HashingEmbedder(64)).close()  # create the schema once, before the race
    try:
        outs = [tmp_path / f"w{i}.json" for i in range(WORKERS)]
        procs = [
            subprocess.Popen([sys.executable, __file__, url, f"w{i}", str(SECONDS), str(out)])
            for i, out in enumerate(outs)
        ]
        codes = [p.wait(timeout=120) for p in procs]
        assert codes == [0] * WORKERS
        results = [json.loads(out.read_text()) for out in outs]
        written = [node_id for r in results for node_id in r["written"]]
        assert [r["untyped"] for r in results] == [[]] * WORKERS
        assert all(r["written"] and r["searches"] for r in results)
        with Memory.open(url, embedder=HashingEmbedder(64)) as mem:
            stored = {n.id: n.status for n in mem.nodes(user="shared")}
        assert len(written) == len(set(written))
        assert set(written) <= stored.keys()  # 0 lost writes
        # a write that raised after its node was committed left it ``pending`` (``repair`` finishes it)
        typed = [t for r in results for t in r["typed"]]
        extra = stored.keys() - set(written)
        assert len(extra) <= len(typed)
        assert {stored[i] for i in extra} <= {"pending"}
        assert all("Locked" in t for t in typed), typed
        print(f"{len(written)} writes, {sum(r['searches'] for r in results)} searches, {typed} typed errors")
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "conc{os.getpid()}" CASCADE')


if __name__ == "__main__":
    if len(sys.argv) != 5:
        pytest.exit("usage: test_postgres_concurrency.py URL TAG SECONDS OUT", returncode=2)
    _work(sys.argv[1], sys.argv[2], float(sys.argv[3]), Path(sys.argv[4]))

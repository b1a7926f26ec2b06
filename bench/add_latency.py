"""Cost of one ``Memory.add`` as one user's memory grows (issue 13), and where it goes.

Builds (once, cached under ``--cache``) a store per size with ``bench/scale.py``'s own builders:
the write path (``add_many``: edges, decisions and all) up to ``--write-max``, bulk-loaded above it
(nodes, entities, vectors; no edges or decisions). Each measurement runs on a fresh copy of the
cached file, so every run starts from the same state. Per size, in the same run:

- ``add`` p50/p95 through the whole stack (builtin controller, consolidation off so that a pass on
  the worker thread does not land inside one add's timing; ``--consolidation background`` keeps it);
- ``embed``: the embedder alone on the same texts (the floor an add cannot go under);
- CPU time per add and per embedding (``time.process_time``: every thread of the process), the
  figure a loaded shared machine distorts least;
- SQLite statements and transactions (``BEGIN`` / ``SAVEPOINT``) per add, from the trace callback
  (on ``--counted`` further adds, not the timed ones; FTS5's own statements count too);
- with ``--profile N``: the top-N functions of a cProfile over the adds (cumulative time);
- with ``--write-only``: each add's vector is computed before its timing (one text per call, as the
  add would; the add then looks it up), so ``add`` and its CPU time are the write work alone: the
  steadier figure of what an add does besides the embedding.

    nice -n 10 python bench/add_latency.py --sizes 1000 10000 100000 --embedder hashing
    nice -n 10 python bench/add_latency.py --sizes 1000 --write-max 1000 --embedder minilm --profile 30
    nice -n 10 python bench/add_latency.py --sizes 600 --write-max 600 --embedder minilm --overlap on
    nice -n 10 python bench/add_latency.py --sizes 600 --write-max 600 --embedder minilm --write-only
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import importlib.util
import io
import json
import pstats
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np

from dualmem import Memory, Profile
from dualmem.embed import Embedder, create_embedder
from dualmem.embed.base import Matrix
from dualmem.embed.windows import embedding_text


def _load_scale() -> ModuleType:
    """bench/scale.py (the corpus and the builders, used as they are), loaded from beside this file."""
    spec = importlib.util.spec_from_file_location("bench_scale", Path(__file__).with_name("scale.py"))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


scale = _load_scale()


def cached_store(n: int, args: argparse.Namespace) -> Path:
    """The built store for ``n`` memories (built on first use, then reused)."""
    mode = "write" if n <= args.write_max else "bulk"
    file = args.cache / f"add-{mode}-{args.embedder}-{args.seed}-{n}.db"
    if file.is_file():
        return file
    args.cache.mkdir(parents=True, exist_ok=True)
    part = file.with_suffix(".part")
    for old in (part, Path(f"{part}-wal"), Path(f"{part}-shm")):
        old.unlink(missing_ok=True)
    corpus = scale.Corpus(args.data, args.seed)
    seconds = (
        scale.build_write(part, corpus, n, args)
        if mode == "write"
        else scale.build_bulk(part, corpus, n, args, [scale.USER])
    )
    with sqlite3.connect(part) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    part.rename(file)
    for old in (Path(f"{part}-wal"), Path(f"{part}-shm")):
        old.unlink(missing_ok=True)
    print(f"built {file.name} in {seconds:.1f} s", file=sys.stderr, flush=True)
    return file


_LITERAL = re.compile(r"'(?:[^']|'')*'")
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")


class Precomputed:
    """An embedder whose vectors were computed before the timing (``--write-only``): the wrapped
    embedder's rows, one text per call as an add embeds them; a text not prepared is embedded then."""

    def __init__(self, inner: Embedder, texts: list[str]) -> None:
        self.name, self.dim, self._inner = inner.name, inner.dim, inner
        self._rows = {text: inner.embed([text])[0] for text in dict.fromkeys(texts)}

    def embed(self, texts: Sequence[str]) -> Matrix:
        for text in texts:
            if text not in self._rows:
                self._rows[text] = self._inner.embed([text])[0]
        return np.stack([self._rows[text] for text in texts]).astype(np.float32)


class Tally:
    """Counts the statements a connection runs (``set_trace_callback``)."""

    def __init__(self) -> None:
        self.statements = 0
        self.transactions = 0
        self.by_text: dict[str, int] = {}

    def __call__(self, statement: str) -> None:
        self.statements += 1
        key = _NUMBER.sub("?", _LITERAL.sub("?", " ".join(statement.split())))[:150]
        self.by_text[key] = self.by_text.get(key, 0) + 1
        head = statement.lstrip()[:9].upper()
        if head.startswith("BEGIN") or head.startswith("SAVEPOINT"):
            self.transactions += 1


def measure(n: int, args: argparse.Namespace) -> dict[str, object]:
    source = cached_store(n, args)
    corpus = scale.Corpus(args.data, args.seed)
    for i in range(n):  # the same random stream as the build: the adds continue the corpus
        corpus.observation(i)
    extra = [corpus.observation(n + i) for i in range(args.warmup + args.adds + args.counted)]
    embedder = create_embedder(args.embedder)
    base = Profile.named("builtin")
    profile = dataclasses.replace(
        base, write=dataclasses.replace(base.write, consolidation=args.consolidation)
    )
    with tempfile.TemporaryDirectory(prefix="dualmem-add-", dir=args.tmp) as folder:
        path = _working_copy(source, Path(folder))
        writer: Embedder = embedder
        if args.write_only:
            writer = Precomputed(embedder, [embedding_text(o.content) for o in extra])
        with Memory.open(path, embedder=writer, answerer=None, profile=profile) as mem:
            if args.overlap != "auto":  # the threaded add (on by default only with 4+ CPUs)
                mem._writer.overlap = args.overlap == "on"
            texts = [o.content for o in extra]
            for text in texts[: args.warmup]:  # the first call loads the model
                embedder.embed([text])
            cpu0 = time.process_time()
            embed_ms = scale.timed(
                lambda i: embedder.embed([texts[args.warmup + i]]), len(texts) - args.warmup
            )
            embed_cpu = 1000 * (time.process_time() - cpu0) / (len(texts) - args.warmup)

            def add(i: int) -> None:
                o = extra[i]
                mem.add(o.content, user=scale.USER, speaker=o.speaker, at=o.at, session=o.session)

            # one search first, as in use: it builds the approximate index a bulk-loaded file lacks
            # (segments are only built outside a write transaction)
            mem.search(corpus.query(), user=scale.USER, k=10)
            for i in range(args.warmup):
                add(i)
            profiler = cProfile.Profile() if args.profile else None
            if profiler is not None:
                profiler.enable()
            cpu0 = time.process_time()  # every thread of the process (the embedder's included)
            add_ms = scale.timed(lambda i: add(args.warmup + i), args.adds)
            cpu_ms = 1000 * (time.process_time() - cpu0) / args.adds
            if profiler is not None:
                profiler.disable()
            # counted on a few more adds, not the timed ones (the trace callback costs time too)
            tally = Tally()
            conn = mem.store._conn  # type: ignore[attr-defined]  # the SQLite store's one connection
            conn.set_trace_callback(tally)
            for i in range(args.counted):
                add(args.warmup + args.adds + i)
            conn.set_trace_callback(None)
    out: dict[str, object] = {
        "n": n,
        "build": "write" if n <= args.write_max else "bulk",
        "embedder": args.embedder,
        "overlap": mem._writer.overlap,
        "write_only": args.write_only,
        "add": {
            **scale.pct(add_ms),
            "mean_ms": round(sum(add_ms) / len(add_ms), 2),
            "max_ms": round(max(add_ms), 2),
        },
        "add_cpu_ms_mean": round(cpu_ms, 2),
        "embed_one": scale.pct(embed_ms),
        "embed_one_cpu_ms_mean": round(embed_cpu, 2),
        "statements_per_add": round(tally.statements / args.counted, 1),
        "transactions_per_add": round(tally.transactions / args.counted, 1),
    }
    return {**out, **_details(args, tally, profiler)}


def _working_copy(source: Path, folder: Path) -> Path:
    """A copy of the cached store to add to; a kept approximate index travels with it (no rebuild)."""
    path = folder / "m.db"
    shutil.copyfile(source, path)
    ann = Path(f"{source}.ann")
    if ann.is_dir():
        shutil.copytree(ann, Path(f"{path}.ann"))
    return path


def _details(args: argparse.Namespace, tally: Tally, profiler: cProfile.Profile | None) -> dict[str, object]:
    """The statements most run per add (``--trace``) and the profile (``--profile``), when asked for."""
    out: dict[str, object] = {}
    if args.trace:
        top = sorted(tally.by_text.items(), key=lambda kv: -kv[1])[: args.trace]
        out["trace"] = [f"{count / args.counted:7.1f}  {text}" for text, count in top]
    if profiler is not None:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(args.sort).print_stats(args.profile)
        out["profile"] = text.getvalue()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10_000, 100_000])
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--write-max", type=int, default=0, help="sizes above are bulk-loaded")
    parser.add_argument("--adds", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--counted", type=int, default=5, help="further adds whose statements are counted")
    parser.add_argument("--consolidation", default="off", choices=["off", "background", "inline"])
    parser.add_argument(
        "--overlap", default="auto", choices=["auto", "on", "off"], help="embed on a worker thread meanwhile"
    )
    parser.add_argument(
        "--write-only", action="store_true", help="vectors computed before the timing: the write work alone"
    )
    parser.add_argument("--profile", type=int, default=0, help="print the top N cProfile functions")
    parser.add_argument("--sort", default="cumulative", help="the profile's order (cumulative, tottime)")
    parser.add_argument("--trace", type=int, default=0, help="report the N most run statements (per add)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/add-latency-cache"))
    parser.add_argument("--tmp", default=None, help="folder for the temporary copies")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = []
    for n in args.sizes:
        result = measure(n, args)
        profile = result.pop("profile", None)
        for line in result.pop("trace", []):  # type: ignore[attr-defined]
            print(line, file=sys.stderr, flush=True)
        results.append(result)
        print(json.dumps(result), file=sys.stderr, flush=True)
        if profile:
            print(profile, file=sys.stderr, flush=True)
    print(json.dumps({"sizes": results, "seconds": round(time.perf_counter() - started, 1)}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

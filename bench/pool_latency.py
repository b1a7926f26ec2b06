"""Read-path latency at LoCoMo scale: BM25 alone, the query embedding, the candidate pool, Memory.search.

Opens a memory built from one LoCoMo conversation (``--db``, e.g. a CV build under
``<out>/cache``; or builds one from ``--data`` with ``add_many`` into ``--db``) and times every
question of it through each path in the same process, so the ratios to ``bm25`` hold under whatever
load the machine has. Wall and CPU (process) time are both reported: on a shared machine the CPU
time is the steadier figure. ``pool-cold`` empties the store's decoded-node cache before each query.
``stages`` splits ``Memory.search`` per query into its steps (wall ms, timed by wrapping the
retriever's methods after the plain ``search`` run, so the wrappers never touch that figure):
``pool`` (searches, query embedding, features), ``prior`` (the pool's RRF prior), the
controller's ``route``/``assess`` asks, ``score`` (the scoring rounds, their ask included),
``expand`` (edges and pool extension) and ``controller`` (every ask, also inside ``score``: there the
builtin decider's learned relevance over the pool).
``--threads`` sets onnxruntime's intra-op threads of the MiniLM embedder (default: onnxruntime's).
``--ranker NAME=PATH`` (repeatable) also times ``Memory.search`` with that candidate scorer
(``dualmem calibrate``'s file) in the builtin decider, as ``search[NAME]``, in the same process.
``--channels temporal entity`` also times ``Memory.search`` with ``read.channels`` on, interleaved
query by query with the default (``search[channels]`` / ``search[plain]``, docs/views.md).

    python bench/pool_latency.py --db /tmp/context-cv/cache/conv-26-full-....sqlite --conversation conv-26
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

from dualmem.conversations import load_conversations  # noqa: E402
from dualmem.embed import MiniLMEmbedder  # noqa: E402
from dualmem.memory import Memory  # noqa: E402
from dualmem.plane import SQLiteStore  # noqa: E402
from dualmem.read.pool import PoolSettings, build_pool  # noqa: E402
from dualmem.types import Tenant  # noqa: E402


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"p50": round(pick(0.5), 3), "p95": round(pick(0.95), 3)}


def _time(fn: Callable[[str], object], queries: list[str], before: Callable[[], None] | None = None) -> dict:
    wall, cpu = [], []
    for q in queries:
        if before is not None:
            before()
        w, c = time.perf_counter(), time.process_time()
        fn(q)
        cpu.append(1000 * (time.process_time() - c))
        wall.append(1000 * (time.perf_counter() - w))
    return {"wall_ms": _percentiles(wall), "cpu_ms": _percentiles(cpu)}


_STAGES = {"pool": "pool", "prior_ranking": "prior", "_route": "route", "_assess": "assess"}
_STAGES |= {"_score": "score", "_expand": "expand"}


def _stages(mem: Memory, queries: list[str], user: str) -> dict[str, dict[str, dict[str, float]]]:
    """Per-query wall and CPU ms of each step of ``Memory.search`` (p50/p95 over the queries)."""
    spent: dict[tuple[str, str], float] = defaultdict(float)

    def timed(fn: Callable[..., object], label: str) -> Callable[..., object]:
        def run(*args: object, **kwargs: object) -> object:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label, "cpu_ms"] += 1000 * (time.process_time() - cpu)
                spent[label, "wall_ms"] += 1000 * (time.perf_counter() - wall)

        return run

    retriever = mem._retriever
    for name, label in _STAGES.items():
        setattr(retriever, name, timed(getattr(retriever, name), label))
    retriever.meter.ask = timed(retriever.meter.ask, "controller")  # type: ignore[method-assign,assignment]
    search = timed(lambda q: mem.search(q, user=user, k=10), "search")
    per: dict[tuple[str, str], list[float]] = defaultdict(list)
    for q in queries:
        spent.clear()
        retriever.clear_cache()  # embed every query, as the plain search run does
        search(q)
        for label in ["search", *_STAGES.values(), "controller"]:
            for clock in ("wall_ms", "cpu_ms"):
                per[label, clock].append(spent[label, clock])
    out: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    for (label, clock), values in per.items():
        out[label][clock] = _percentiles(values)
    return dict(out)


def _with_ranker(db: Path, embedder: object, path: str, queries: list[str], user: str) -> dict:
    from dualmem.control.builtin import BuiltinController
    from dualmem.learn import load_ranker

    controller = BuiltinController(ranker=load_ranker(path))
    with Memory.open(db, embedder=embedder, controller=controller) as mem:  # type: ignore[arg-type]
        for q in queries[:5]:
            mem.search(q, user=user, k=10)
        return _time(lambda q: mem.search(q, user=user, k=10), queries)


def _with_channels(mem: Memory, channels: tuple[str, ...], queries: list[str], user: str) -> dict:
    """``Memory.search`` with ``read.channels`` on and off, interleaved query by query (the order
    swapped every query), so that both see the same machine: ``search[channels]`` and
    ``search[plain]``, wall and CPU p50/p95, and the ratio of their CPU p50s."""
    from dataclasses import replace

    retriever = mem._retriever
    given = retriever.profile
    profiles = {"plain": replace(given, channels=()), "channels": replace(given, channels=channels)}
    wall: dict[str, list[float]] = {"plain": [], "channels": []}
    cpu: dict[str, list[float]] = {"plain": [], "channels": []}
    try:
        for i, q in enumerate(queries):
            for name in ("plain", "channels") if i % 2 == 0 else ("channels", "plain"):
                retriever.profile = profiles[name]
                retriever.clear_cache()
                w, c = time.perf_counter(), time.process_time()
                mem.search(q, user=user, k=10)
                cpu[name].append(1000 * (time.process_time() - c))
                wall[name].append(1000 * (time.perf_counter() - w))
    finally:
        retriever.profile = given
    out = {
        f"search[{name}]": {"wall_ms": _percentiles(wall[name]), "cpu_ms": _percentiles(cpu[name])}
        for name in ("plain", "channels")
    }
    ratio = out["search[channels]"]["cpu_ms"]["p50"] / max(out["search[plain]"]["cpu_ms"]["p50"], 1e-9)
    return {**out, "channels_cpu_ratio": round(ratio, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--conversation", default="conv-26")
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    parser.add_argument("--limit", type=int, default=200, help="questions timed (after 5 warm-up)")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads")
    parser.add_argument("--ranker", action="append", default=[], help="NAME=PATH: also time this scorer")
    parser.add_argument(
        "--channels",
        nargs="*",
        default=None,
        help="also time Memory.search with these read.channels, interleaved with the default "
        "(search[channels], "
        "search[plain])",
    )
    ns = parser.parse_args()
    rankers = dict(r.split("=", 1) for r in ns.ranker)
    conv = {c.id: c for c in load_conversations(ns.data)}[ns.conversation]
    with Memory.open(ns.db, embedder=MiniLMEmbedder(threads=ns.threads)) as mem:
        if mem.count(user=conv.id) == 0:
            mem.add_many(conv.observations, user=conv.id)
        tenant = Tenant(conv.id)
        store, embedder = mem.store, mem.embedder
        queries = [qa.question for qa in conv.questions][: ns.limit + 5]
        for q in queries[:5]:  # warm-up: model session, vector cache
            mem.search(q, user=conv.id, k=10)
        queries = queries[5:]
        settings = PoolSettings(mem.profile.read.pool, mem.profile.read.pool_window)

        def bm25(q: str) -> object:
            return store.get_nodes([i for i, _ in store.lexical_search(tenant, q, 10)], tenant)

        def cold() -> None:
            cache = getattr(store, "_nodes", None) if isinstance(store, SQLiteStore) else None
            if cache is not None:
                cache.clear()

        out = {
            "conversation": conv.id,
            "nodes": mem.count(user=conv.id),
            "queries": len(queries),
            "bm25": _time(bm25, queries),
            "embed": _time(lambda q: embedder.embed([q]), queries),
            "pool-cold": _time(lambda q: build_pool(store, embedder, q, tenant, settings), queries, cold),
            "pool": _time(lambda q: build_pool(store, embedder, q, tenant, settings), queries),
            "search": _time(lambda q: mem.search(q, user=conv.id, k=10), queries),
            "stages": _stages(mem, queries, conv.id),
            **{
                f"search[{name}]": _with_ranker(ns.db, embedder, path, queries, conv.id)
                for name, path in rankers.items()
            },
            **(_with_channels(mem, tuple(ns.channels), queries, conv.id) if ns.channels else {}),
            "threads": ns.threads,
            "load": [round(x, 2) for x in os.getloadavg()],
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

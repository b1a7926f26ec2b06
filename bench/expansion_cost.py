"""What graph expansion costs the read loop: ``Store.edges_of`` per query, bounded or not.

Runs every labelled LoCoMo question of the given builds through ``Memory.search`` (builtin System
One, packaged weights) under two read settings in the same process, alternating question by
question so that load on a shared machine falls on both alike:

- ``all-edges``: expansion reads every edge of a beam node (``read.edges_per_node=None``, main
  before issue 10's bound);
- ``bounded``: the default, a beam node's strongest ``read.edges_per_node`` edges.

For each: search p50/p95, the time spent inside ``Store.edges_of`` and the edges it returned per
query (each one an ``Edge`` object built). JSON on stdout.

    python bench/expansion_cost.py --data ../shared/data/locomo --db CACHE/conv-26-full-*.sqlite ...

The builds are the CV harness's (``bench/cv_locomo.py --out DIR`` leaves them in ``DIR/cache``); a
build's file name starts with its conversation id, its tenant.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from dualmem import Memory, Profile
from dualmem.conversations import load_conversations
from dualmem.embed import MiniLMEmbedder


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class _Timed:
    """Wraps a store's ``edges_of``: seconds spent and edges returned (the loop calls it per node)."""

    def __init__(self, inner: Callable[..., list[Any]]) -> None:
        self.inner, self.seconds, self.edges, self.calls = inner, 0.0, 0, 0

    def __call__(self, *args: Any, **kwargs: Any) -> list[Any]:
        t0 = time.perf_counter()
        out = self.inner(*args, **kwargs)
        self.seconds += time.perf_counter() - t0
        self.edges += len(out)
        self.calls += 1
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    ap.add_argument("--db", type=Path, nargs="+", required=True)
    ap.add_argument("--limit", type=int, default=None, help="first N labelled questions per conversation")
    args = ap.parse_args()
    embedder = MiniLMEmbedder()
    convs = {c.id: c for c in load_conversations(args.data)}
    base = Profile.builtin()
    variants = {"all-edges": base.with_(read__edges_per_node=None), "bounded": base}
    stats: dict[str, dict[str, list[float]]] = {v: {"ms": [], "edges_ms": [], "edges": []} for v in variants}
    for db in args.db:
        conv = next(c for name, c in convs.items() if db.name.startswith(f"{name}-"))
        questions = [q for q in conv.questions if q.category != 5 and q.evidence][: args.limit]
        with ExitStack() as stack:
            mems = {v: stack.enter_context(Memory.open(db, embedder=embedder, profile=p, answerer=None))
                    for v, p in variants.items()}  # fmt: skip
            timers = {}
            for v, mem in mems.items():
                timers[v] = _Timed(mem.store.edges_of)
                mem.store.edges_of = timers[v]  # type: ignore[method-assign]
                mem.search(questions[0].question, user=conv.id, k=10)  # warm caches outside the timings
            for qa in questions:
                for v, mem in mems.items():
                    t = timers[v]
                    s0, e0 = t.seconds, t.edges
                    t0 = time.perf_counter()
                    mem.search(qa.question, user=conv.id, k=10)
                    stats[v]["ms"].append(1000 * (time.perf_counter() - t0))
                    stats[v]["edges_ms"].append(1000 * (t.seconds - s0))
                    stats[v]["edges"].append(float(t.edges - e0))
    out: dict[str, Any] = {"queries": len(stats["bounded"]["ms"]), "edges_per_node": base.read.edges_per_node}
    for v, s in stats.items():
        out[v] = {
            "search_p50_ms": round(pct(s["ms"], 0.5), 2),
            "search_p95_ms": round(pct(s["ms"], 0.95), 2),
            "edges_of_ms_per_query": round(sum(s["edges_ms"]) / len(s["edges_ms"]), 2),
            "edges_per_query": round(sum(s["edges"]) / len(s["edges"]), 1),
        }
    out["edges_of_ratio"] = round(
        out["bounded"]["edges_of_ms_per_query"] / max(out["all-edges"]["edges_of_ms_per_query"], 1e-9), 3
    )
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

"""Write-path throughput and search latency on the LoCoMo conversations.

Ingests every conversation of --data (one tenant each) into a fresh SQLite file, three ways in the
same run so the ratios are fair on a noisy machine:

- ``embed-only``: the embedder alone over the same texts (the floor);
- ``no-control``: the full write path with the controller switched off (deterministic edges only,
  of the views the profile writes: none in the builtin profile);
- ``builtin``: the default stack (MiniLM + builtin System-One controller), with ``add_many``;
- ``builtin_add``: the same stack, one ``add`` per turn (``--add``; the slower path an agent uses).

Then runs every LoCoMo question through ``search`` (adaptive) and through plain RRF, and prints
JSON: turns/s, controller calls per write, edges per node by view, bytes of the database file per
node, search latency p50/p95.

    .venv/bin/python bench/ingest_locomo.py --data ../shared/data/locomo [--add] [--no-search]

The script uses only the public API, so it can time another checkout's ``src`` (before/after):
``PYTHONPATH=<other>/src python bench/ingest_locomo.py ...``; ``version`` says which ran.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import dualmem
from dualmem import Memory, Profile
from dualmem.conversations import load_conversations
from dualmem.embed import MiniLMEmbedder


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ingest(
    data: Path, profile: Profile, tmp: Path, name: str, embedder: MiniLMEmbedder, *, one_by_one: bool = False
) -> dict[str, Any]:
    convs = load_conversations(data)
    turns = sum(len(c.observations) for c in convs)
    started = time.perf_counter()
    db = tmp / f"{name}.db"
    with Memory.open(db, embedder=embedder, controller="builtin", profile=profile) as mem:
        for conv in convs:
            if one_by_one:
                for o in conv.observations:
                    mem.add(o.content, user=conv.id, speaker=o.speaker, at=o.at, session=o.session,
                            turn_id=o.turn_id)  # fmt: skip
            else:
                mem.add_many(conv.observations, user=conv.id)
        elapsed = time.perf_counter() - started
        stats = mem.meter.stats
        edges: dict[str, int] = {}
        for conv in convs:
            for view, n in mem.store.stats(_tenant(conv.id)).edges_by_view.items():
                edges[view] = edges.get(view, 0) + n
        out: dict[str, Any] = {
            "turns": turns,
            "seconds": round(elapsed, 2),
            "turns_per_s": round(turns / elapsed, 1),
            "controller_calls_per_write": round(stats.calls / turns, 3),
            "calls_by_purpose": {p: c.calls for p, c in stats.by_purpose.items()},
            "questions_per_write": round(sum(c.questions for c in stats.by_purpose.values()) / turns, 2),
            "edges_per_node": {v: round(n / turns, 2) for v, n in sorted(edges.items())},
        }
    files = [db, db.with_name(db.name + "-wal")]  # closed: the WAL is checkpointed (or empty)
    out["bytes_per_node"] = round(sum(f.stat().st_size for f in files if f.exists()) / turns)
    return out


def _tenant(user: str) -> Any:
    from dualmem.types import Tenant

    return Tenant(user)


def search_latency(data: Path, db: Path, embedder: MiniLMEmbedder, profile: Profile) -> dict[str, Any]:
    convs = load_conversations(data)
    out: dict[str, Any] = {}
    for label, prof in (("adaptive", profile), ("plain-rrf", profile.with_(read__controller_enabled=False))):
        lat: list[float] = []
        calls: list[int] = []
        with Memory.open(db, embedder=embedder, controller="builtin", profile=prof) as mem:
            for conv in convs:
                for qa in conv.questions:
                    t0 = time.perf_counter()
                    found = mem.search(qa.question, user=conv.id, k=10)
                    lat.append((time.perf_counter() - t0) * 1000)
                    calls.append(found.trace.controller_calls)
        out[label] = {
            "queries": len(lat),
            "p50_ms": round(pct(lat, 0.5), 2),
            "p95_ms": round(pct(lat, 0.95), 2),
            "mean_calls": round(statistics.mean(calls), 2),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/locomo")
    ap.add_argument("--add", action="store_true", help="also ingest with one add per turn (builtin_add)")
    ap.add_argument("--no-search", action="store_true", help="skip the search latency part")
    args = ap.parse_args()
    embedder = MiniLMEmbedder()
    convs = load_conversations(args.data)
    texts = [o.content for c in convs for o in c.observations]
    embedder.embed(texts[:32])  # load the model outside the timings
    t0 = time.perf_counter()
    embedder.embed(texts)
    embed_s = time.perf_counter() - t0
    base = Profile.builtin().with_(write__consolidation="off")
    off = base.with_(write__typing_enabled=False, write__relations_enabled=False)
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        result: dict[str, Any] = {
            "version": dualmem.__version__,
            "source": str(Path(dualmem.__file__).resolve().parent),
            "embed_only": {"turns_per_s": round(len(texts) / embed_s, 1)},
            "no_control": ingest(args.data, off, tmp, "off", embedder),
            "builtin": ingest(args.data, base, tmp, "builtin", embedder),
        }
        if args.add:
            result["builtin_add"] = ingest(args.data, base, tmp, "builtin-add", embedder, one_by_one=True)
        floor = result["embed_only"]["turns_per_s"]
        for name in ("builtin", "builtin_add"):
            if name in result:
                result[f"{name}_vs_embed_only"] = round(result[name]["turns_per_s"] / floor, 3)
        if not args.no_search:
            result["search"] = search_latency(args.data, tmp / "builtin.db", embedder, base)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

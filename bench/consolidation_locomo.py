"""Consolidation on LoCoMo: cost per pass (every 20 writes), what it decides, and recall with it on/off.

Builds every conversation twice in the same run with the builtin controller: consolidation off,
and consolidation inline every 20 writes (inline so its cost is measured; in normal use it runs in
the background). Prints JSON: passes, controller calls and seconds per pass, representation labels,
supersessions, would-be escalations (merge/promote >= 0.85 with contradiction < 0.85), and
evidence recall@10 on categories 1-4 for both builds.

    .venv/bin/python bench/consolidation_locomo.py --data ../shared/data/locomo
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from dualmem import Memory, Profile
from dualmem.conversations import Conversation, load_conversations
from dualmem.embed import MiniLMEmbedder


def build(convs: list[Conversation], db: Path, profile: Profile, embedder: MiniLMEmbedder) -> dict[str, Any]:
    started = time.perf_counter()
    with Memory.open(db, embedder=embedder, controller="builtin", profile=profile) as mem:
        for conv in convs:
            mem.add_many(conv.observations, user=conv.id)
        seconds = time.perf_counter() - started
        counts = mem.meter.stats.by_purpose.get("consolidation")
        out: dict[str, Any] = {"seconds": round(seconds, 2)}
        if counts is None:
            return out
        labels: Counter[str] = Counter()
        escalate = superseded = related = 0
        for conv in convs:
            for node in mem.nodes(user=conv.id):
                for pair in _pairs(mem, node.id):
                    label, p = pair["consolidate.representation"]
                    labels[label] += 1
                    contradiction = pair["consolidate.contradiction"][1]
                    if label in ("merge", "promote") and p >= 0.85 and contradiction < 0.85:
                        escalate += 1
                for e in mem.store.edges_of(node.id):
                    if e.target == node.id and e.label == "superseded_by":
                        superseded += 1
                    if e.source == node.id and e.label == "related":
                        related += 1
        out.update(
            passes=counts.calls,
            calls_per_pass=1.0,
            questions_per_pass=round(counts.questions / counts.calls, 1),
            controller_ms_per_pass=round(1000 * counts.latency_s / counts.calls, 2),
            pairs=sum(labels.values()),
            representations=dict(labels),
            would_escalate=escalate,
            superseded=superseded,
            semantic_edges_total=related,
        )
    return out


def _pairs(mem: Memory, node_id: str) -> list[dict[str, Any]]:
    """The consolidation answers recorded for ``node_id``, one mapping (key -> (label, value)) per pair."""
    by_other: dict[str | None, dict[str, Any]] = {}
    for d in mem.store.decisions_of(node_id):
        if d.purpose == "consolidation":
            by_other.setdefault(d.other_id, {})[d.key] = (d.label, d.value)
    return list(by_other.values())


def recall(
    convs: list[Conversation], db: Path, profile: Profile, embedder: MiniLMEmbedder
) -> dict[str, float]:
    per_cat: dict[int, list[float]] = {}
    with Memory.open(db, embedder=embedder, controller="builtin", profile=profile) as mem:
        for conv in convs:
            for qa in conv.questions:
                if qa.category not in (1, 2, 3, 4) or not qa.evidence:
                    continue
                found = mem.search(qa.question, user=conv.id, k=10)
                got = {e.node.turn_id for e in found.evidence}
                per_cat.setdefault(qa.category, []).append(len(got & set(qa.evidence)) / len(qa.evidence))
    out = {f"cat{c}": round(sum(v) / len(v), 4) for c, v in sorted(per_cat.items())}
    every = [x for v in per_cat.values() for x in v]
    out["overall"] = round(sum(every) / len(every), 4)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/locomo")
    args = ap.parse_args()
    convs = load_conversations(args.data)
    embedder = MiniLMEmbedder()
    embedder.embed(["warm up"])
    off = Profile.builtin().with_(write__consolidation="off")
    on = Profile.builtin().with_(write__consolidation="inline", write__consolidate_every=20)
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        result: dict[str, Any] = {
            "off": build(convs, tmp / "off.db", off, embedder),
            "on": build(convs, tmp / "on.db", on, embedder),
        }
        passes = result["on"].get("passes") or 1
        result["on"]["wall_ms_per_pass_vs_off"] = round(
            1000 * (result["on"]["seconds"] - result["off"]["seconds"]) / passes, 1
        )
        result["recall_at_10"] = {
            "off": recall(convs, tmp / "off.db", off, embedder),
            "on": recall(convs, tmp / "on.db", on, embedder),
        }
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

"""The notes corpus end to end: does the current version of a changed fact come first?

Each scenario is built by the real write path with the given System One weights (``--heads``: a
``dualmem.write-heads/1`` file from ``research.write_heads``, overlaid on the packaged weights), then
every question is asked through ``Memory.search`` (k=10). Figures (``bench/notes`` README, issue's
targets): for ``current`` questions, the current version first / in the top 3, and a stale version
ranked above it; for ``history`` questions, the asked-about old version in the top 3; ``control``
questions, the evidence first. BM25 over the same build, in the same run.

With ``--cv``, every scenario is built with heads fitted without it: ``--cv within`` (the heads of
the other notes folds plus the other corpora's pairs), ``--cv loco`` (the other corpora only).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dualmem.config import Profile
from dualmem.control.builtin import BuiltinWeights, LinearWeights, default_weights
from research.builds import build, build_profile, open_build
from research.corpora import conversations, fold_of, labels

__all__ = ["evaluate", "overlay"]


def overlay(heads: Mapping[str, Any], base: BuiltinWeights | None = None) -> BuiltinWeights:
    """``base`` (the packaged weights) with the heads' decisions in place of its own."""
    from types import MappingProxyType

    base = base or default_weights()
    decisions = dict(base.decisions)
    for key, spec in heads.items():
        decisions[key] = LinearWeights(
            float(spec["bias"]), tuple((k, float(v)) for k, v in spec["weights"].items())
        )
    return BuiltinWeights(base.version, MappingProxyType(decisions), base.choices)


def _rank(ranked: Sequence[str], turn: str) -> int | None:
    return ranked.index(turn) if turn in ranked else None


def evaluate(
    out: Path,
    weights_of: Mapping[str, BuiltinWeights | None],
    *,
    profile: Profile | None = None,
    limit: int | None = None,
    tag: str = "",
) -> dict[str, Any]:
    """Build each scenario with ``weights_of[scenario]`` and score every question."""
    rows: list[dict[str, Any]] = []
    labs = labels("notes")
    read = profile or Profile.builtin()
    for conv in conversations("notes", limit):
        path = build(conv, out, weights=weights_of.get(conv.id), profile=build_profile(), tag=tag)
        with open_build(path, read) as mem:
            by_id = {n.id: n.turn_id for n in mem.nodes(user=conv.id)}
            stale_marked = sum(1 for n in mem.nodes(user=conv.id) if n.valid_to is not None)
            for i, qa in enumerate(conv.questions):
                found = mem.search(qa.question, user=conv.id, k=10).evidence
                ranked = [by_id.get(e.node.id) or "" for e in found]
                lex = [
                    by_id.get(j) or ""
                    for j, _ in mem.store.lexical_search(mem.scope(conv.id).tenant, qa.question, 10)
                ]
                for system, order in (("dualmem", ranked), ("bm25", lex)):
                    gold = qa.evidence[0]
                    r = _rank(order, gold)
                    stale = labs[conv.id].stale.get(i, ())
                    stale_ranks = [x for x in (_rank(order, s) for s in stale) if x is not None]
                    rows.append(
                        {
                            "system": system,
                            "scenario": conv.id,
                            "category": qa.category,
                            "first": r == 0,
                            "top3": r is not None and r < 3,
                            "stale_above": bool(stale_ranks) and (r is None or min(stale_ranks) < r),
                            "marked": stale_marked,
                        }
                    )
    return summarize(rows)


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for system in sorted({r["system"] for r in rows}):
        mine = [r for r in rows if r["system"] == system]

        def share(cat: str, key: str, mine: list[Mapping[str, Any]] = mine) -> float | None:
            xs = [r[key] for r in mine if r["category"] == cat]
            return round(sum(xs) / len(xs), 3) if xs else None

        out[system] = {
            "current_first": share("current", "first"),
            "current_top3": share("current", "top3"),
            "stale_above_current": share("current", "stale_above"),
            "history_top3": share("history", "top3"),
            "control_first": share("control", "first"),
            "questions": len(mine),
        }
    return out


def cv_weights(
    builds: Path, corpora: Sequence[str], mode: str, ids: Sequence[str]
) -> dict[str, BuiltinWeights | None]:
    """Each scenario's weights: the write heads fitted without its fold (``within``) or without the
    notes corpus (``loco``)."""
    from dualmem.learn.write_heads import fit_write_heads
    from research import write_heads as wh

    rows = wh.collect(builds, [c for c in corpora if c != "notes"] + ["notes"])
    folds = fold_of("notes", ids)
    out: dict[str, BuiltinWeights | None] = {}
    cache: dict[str, BuiltinWeights] = {}
    for cid in ids:
        held = folds[cid] if mode == "within" else "notes"
        if held not in cache:
            train = [r for r in rows if (wh.fold(r) if mode == "within" else r.group) != held]
            heads = fit_write_heads(train)
            cache[held] = heads.weights()
            print(f"heads for {held}: {json.dumps(heads.provenance['heads'])}", file=sys.stderr)
        out[cid] = cache[held]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("research-out/notes"))
    parser.add_argument("--heads", type=Path, default=None, help="write heads (dualmem.write-heads/1)")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--cv", choices=["within", "loco"], default=None)
    parser.add_argument("--builds", type=Path, default=Path("research-out/builds"), help="recorded builds")
    parser.add_argument("--corpora", nargs="+", default=["notes", "agentchat", "locomo", "memgallery"])
    ns = parser.parse_args(argv)
    convs = conversations("notes", ns.limit)
    weights_of: dict[str, BuiltinWeights | None] = {}
    if ns.cv is not None:
        weights_of = cv_weights(ns.builds, ns.corpora, ns.cv, [c.id for c in convs])
    else:
        weights = None if ns.heads is None else overlay(json.loads(ns.heads.read_text())["decisions"])
        weights_of = {c.id: weights for c in convs}
    result = evaluate(ns.out, weights_of, limit=ns.limit)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

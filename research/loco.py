"""Leave-one-corpus-out beside within-corpus cross-validation of System One's candidate scorer.

Corpora (``research.corpora``): LoCoMo dev, agent chats (with their message queries), Mem-Gallery
and the notes. Every question's candidate pool is built once over the corpus's build
(``research.builds``) and cached. Then, for each mode:

- ``within``: each fold of each corpus held out in turn; the scorer is fitted on every other fold of
  every corpus;
- ``loco``: each corpus held out in turn; the scorer is fitted on the other three.

The scorer is LightGBM lambdarank trees (``dualmem.learn.boost``), its tree count chosen by inner
cross-validation over the training corpora. Reported per corpus and category: R@1/5/10/20 and MRR of
the pool ranked by the fold's scorer (``dualmem-pool``), beside bm25 / dense / hybrid over the same
builds; on the notes, the share of questions whose evidence is first and in the top 3.

    python -m research.loco --builds research-out/builds --out research-out/loco
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dualmem.control.trees import TreeRanker
from dualmem.learn.boost import TREE_GRID, TreeSettings, choose_trees, fit_trees
from dualmem.memory import Memory
from dualmem.read.pool import FEATURES, POOL_VERSION
from research.builds import any_build, embedder
from research.corpora import CORPORA, SHUFFLED, conversations, fold_of, labels
from research.cv import K_VALUES, CVConfig, QueryPool, _collect, _record, _rows, rank

__all__ = ["Pools", "load", "run"]


@dataclass(slots=True)
class Pools:
    """Every question's pool, by conversation, with each conversation's corpus, fold and build."""

    pools: dict[str, list[QueryPool]] = field(default_factory=dict)
    corpus: dict[str, str] = field(default_factory=dict)
    fold: dict[str, str] = field(default_factory=dict)
    path: dict[str, Path] = field(default_factory=dict)


def load(
    builds: Path, corpora: Sequence[str], *, limit: int | None = None, augment: Sequence[str] = ()
) -> Pools:
    """``augment``: corpora whose shuffled copies (``research.corpora.shuffled``) join every fit
    that does not hold out their source (training only, never scored)."""
    out = Pools()
    corpora = [*corpora, *(c + SHUFFLED for c in augment)]
    cfg = CVConfig(data=Path("."), handset=False, pool=50, window=2)
    for name in corpora:
        convs = conversations(name, limit)
        folds = fold_of(name, [c.id for c in convs])
        for conv in convs:
            path = any_build(conv, builds / name)
            key = hashlib.sha256(json.dumps([path.name, FEATURES, POOL_VERSION]).encode()).hexdigest()[:12]
            cache = path.with_name(f"{path.stem}-qpools-{key}.pkl")
            if cache.exists():
                with cache.open("rb") as fh:
                    pools = pickle.load(fh)
            else:
                started = time.perf_counter()
                with Memory.open(path, embedder=embedder(), answerer=None, read_only=True) as mem:
                    pools = _collect(conv, mem, cfg)
                with cache.open("wb") as fh:
                    pickle.dump(pools, fh)
                print(
                    f"  pools {conv.id}: {len(pools)} in {time.perf_counter() - started:.0f} s",
                    file=sys.stderr,
                )
            out.pools[conv.id] = pools
            out.corpus[conv.id] = name
            out.fold[conv.id] = folds[conv.id]
            out.path[conv.id] = path
    return out


def _groups(pools: Sequence[QueryPool]) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(p.features, p.labels) for p in _rows(pools)]


def fit(
    train: Mapping[str, list[QueryPool]], settings: TreeSettings, *, choose: bool = True
) -> tuple[TreeRanker, int]:
    """Trees fitted on ``train`` (pools by inner-CV group); the tree count by inner CV when ``choose``."""
    folds = {g: _groups(ps) for g, ps in train.items()}
    trees = settings.trees
    if choose and len(folds) > 1:
        trees, _ = choose_trees(folds, FEATURES, grid=TREE_GRID, settings=settings)
    flat = [g for gs in folds.values() for g in gs]
    from dataclasses import replace

    return fit_trees(flat, FEATURES, replace(settings, trees=trees)), trees


def run(data: Pools, mode: str, settings: TreeSettings, *, choose: bool = True) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    held_of = {
        c: (data.fold[c] if mode == "within" else data.corpus[c].removesuffix(SHUFFLED)) for c in data.pools
    }
    tested = sorted({h for c, h in held_of.items() if not data.corpus[c].endswith(SHUFFLED)})
    for held in tested:
        train: dict[str, list[QueryPool]] = {}
        for conv, ps in data.pools.items():
            if held_of[conv] != held:
                group = data.corpus[conv].removesuffix(SHUFFLED)  # inner CV over the source corpora
                train.setdefault(group, []).extend(ps)
        started = time.perf_counter()
        ranker, trees = fit(train, settings, choose=choose)
        for conv in (c for c, h in held_of.items() if h == held and not data.corpus[c].endswith(SHUFFLED)):
            for p in _rows(data.pools[conv]):
                base = {"corpus": data.corpus[conv], "mode": mode}
                rows.append({**_record("dualmem-pool", held, p, rank(ranker, p)[0]), **base})
                for system, ranked in p.baselines.items():
                    rows.append({**_record(system, held, p, ranked), **base})
        print(f"{mode} {held}: {trees} trees, {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return rows


def _mean(xs: Sequence[float | None]) -> float | None:
    kept = [x for x in xs if x is not None]
    return sum(kept) / len(kept) if kept else None


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per mode, corpus and system: R@k, MRR, n, R@10 by category, and first-place share by category."""
    out: dict[str, Any] = {}
    for key in sorted({(r["mode"], r["corpus"], r["system"]) for r in rows}):
        mine = [r for r in rows if (r["mode"], r["corpus"], r["system"]) == key]
        cats = sorted({str(r["category"]) for r in mine})
        out.setdefault(key[0], {}).setdefault(key[1], {})[key[2]] = {
            "n": len(mine),
            **{f"R@{k}": _mean([r["recall"][str(k)] for r in mine]) for k in K_VALUES},
            "MRR": _mean([r["mrr"] for r in mine]),
            "R@10 by category": {
                c: _mean([r["recall"]["10"] for r in mine if str(r["category"]) == c]) for c in cats
            },
            "first by category": {
                c: _mean([float(r["recall"]["1"] == 1.0) for r in mine if str(r["category"]) == c])
                for c in cats
            },
        }
    return out


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def report(summary: Mapping[str, Any]) -> str:
    lines: list[str] = []
    for mode, corpora in summary.items():
        for corpus, systems in corpora.items():
            lines += [
                "",
                f"### {mode}: {corpus}",
                "",
                "| system | n | R@1 | R@5 | R@10 | R@20 | MRR |",
                "|---|---|---|---|---|---|---|",
            ]
            for system, s in systems.items():
                vals = " | ".join(_fmt(s[f"R@{k}"]) for k in K_VALUES)
                lines.append(f"| {system} | {s['n']} | {vals} | {_fmt(s['MRR'])} |")
            cats = sorted({c for s in systems.values() for c in s["R@10 by category"]})
            lines += [
                "",
                "| R@10 (first) by category | " + " | ".join(cats) + " |",
                "|---" * (len(cats) + 1) + "|",
            ]
            for system, s in systems.items():
                cells = [
                    f"{_fmt(s['R@10 by category'].get(c))} ({_fmt(s['first by category'].get(c))})"
                    for c in cats
                ]
                lines.append(f"| {system} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", type=Path, default=Path("research-out/builds"))
    parser.add_argument("--out", type=Path, default=Path("research-out/loco"))
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=list(CORPORA))
    parser.add_argument("--modes", nargs="+", default=["within", "loco"], choices=["within", "loco"])
    parser.add_argument("--trees", type=int, default=300, help="tree count when not chosen by inner CV")
    parser.add_argument("--no-choose", action="store_true", help="fixed --trees (no inner CV)")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--increasing", nargs="*", default=[], help="monotone (increasing) features")
    parser.add_argument("--drop", nargs="*", default=[], help="features left out (set to 0)")
    parser.add_argument("--augment", nargs="*", default=[], help="corpora whose shuffled copies train too")
    ns = parser.parse_args(argv)
    data = load(ns.builds, ns.corpora, limit=ns.limit, augment=ns.augment)
    settings = TreeSettings(trees=ns.trees, threads=1, increasing=tuple(ns.increasing))
    if ns.drop:
        cols = [FEATURES.index(f) for f in ns.drop]
        for ps in data.pools.values():
            for p in ps:
                p.features[:, cols] = 0.0
    rows: list[dict[str, Any]] = []
    for mode in ns.modes:
        rows += run(data, mode, settings, choose=not ns.no_choose)
    summary = summarize(rows)
    ns.out.mkdir(parents=True, exist_ok=True)
    (ns.out / "results.json").write_text(
        json.dumps({"summary": summary, "rows": rows}, default=str), encoding="utf-8"
    )
    text = report(summary)
    (ns.out / "report.md").write_text(text, encoding="utf-8")
    print(text)
    _ = labels  # the notes' stale labels are read by research.notes_eval
    return 0


if __name__ == "__main__":
    sys.exit(main())

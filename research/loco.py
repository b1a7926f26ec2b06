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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from dualmem.config import Profile
from dualmem.control.builtin import BuiltinController
from dualmem.control.questions import Batch, BatchResult, Controller
from dualmem.control.scripted import AutoController
from dualmem.control.trees import TreeRanker
from dualmem.learn.boost import TREE_GRID, TreeSettings, choose_trees, fit_trees
from dualmem.memory import Memory
from dualmem.read.channels import CHANNELS
from dualmem.read.pool import FEATURES, POOL_VERSION
from research.builds import any_build, embedder, views_profile
from research.corpora import CORPORA, ENGLISH, SHUFFLED, conversations, embedder_of, fold_of, labels
from research.cv import (
    K_VALUES,
    CVConfig,
    QueryPool,
    _collect,
    _fmt,
    _record,
    _rows,
    rank,
    read_variant,
    recall_table,
)
from research.cv_joint import Corpora

__all__ = ["load", "run"]


def load(
    builds: Path,
    corpora: Sequence[str],
    *,
    limit: int | None = None,
    augment: Sequence[str] = (),
    channels: Sequence[tuple[str, int]] = (),
    cache: Path | None = None,
    route: str = "fixed",
    route_dir: Path | None = None,
) -> Corpora:
    """``augment``: corpora whose shuffled copies (``research.corpora.shuffled``) join every fit
    that does not hold out their source (training only, never scored); ``channels``: the retrieval
    channels the pools are built with (``read.channels``); ``cache``: where the pools are cached
    (beside each build by default); ``route_dir``: with ``route`` "fitted", the routes fitted
    without each corpus (``without-NAME.json``, ``research.route_fit``): a corpus's pools are routed
    by the route fitted without it (default: the packaged route, fitted on every corpus)."""
    out = Corpora()
    corpora = [*corpora, *(c + SHUFFLED for c in augment)]
    cfg = CVConfig(data=Path("."), handset=False, pool=50, window=2, channels=tuple(channels), route=route)
    for name in corpora:
        if route == "fitted" and route_dir is not None:
            art = route_dir / f"without-{name.removesuffix(SHUFFLED)}.json"
            cfg = replace(cfg, route_artefact=art)
        convs = conversations(name, limit)
        folds = fold_of(name, [c.id for c in convs])
        for conv in convs:
            path = any_build(conv, builds / name, embedder_of(name))
            parts: list[Any] = [path.name, FEATURES, POOL_VERSION]
            if channels:
                parts.append([list(c) for c in channels])
                if route != "fixed":
                    parts.append(route)
                if cfg.route_artefact is not None:
                    parts.append(hashlib.sha256(cfg.route_artefact.read_bytes()).hexdigest()[:12])
            key = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:12]
            stored = (cache or path.parent) / f"{path.stem}-qpools-{key}.pkl"
            if stored.exists():
                with stored.open("rb") as fh:
                    pools = pickle.load(fh)
            else:
                started = time.perf_counter()
                spec = embedder(embedder_of(name))
                with Memory.open(path, embedder=spec, answerer=None, read_only=True) as mem:
                    pools = _collect(conv, mem, cfg)
                stored.parent.mkdir(parents=True, exist_ok=True)
                with stored.open("wb") as fh:
                    pickle.dump(pools, fh)
                print(
                    f"  pools {conv.id}: {len(pools)} in {time.perf_counter() - started:.0f} s",
                    file=sys.stderr,
                )
            out.pools[conv.id] = pools
            out.corpus_of[conv.id] = name
            out.fold_of[conv.id] = folds[conv.id]
            out.paths[conv.id] = path
    return out


#: a channel's rank columns (``read.pool``), by channel: the temporal channel's ordering walk
#: (``read.walk``, ``walk_rank``) is part of it, ``walk`` the walk alone (the rest of the temporal
#: channel kept); ``entity`` is the entity channel with its Personalized PageRank list
#: (``read.ppr``), ``ppr`` the PageRank list alone, ``entity-direct`` the entity channel without it,
#: ``ppr-added`` the candidates only the PageRank list found (its ``ppr_rank`` of the others kept: the
#: list as a feature that adds no candidate)
CHANNEL_COLUMNS = {
    "temporal": ("time_rank", "walk_rank"),
    "entity": ("entity_rank", "ppr_rank"),
    "causal": ("causal_rank",),
    "semantic": ("semantic_rank",),
    "walk": ("walk_rank",),
    "ppr": ("ppr_rank",),
    "entity-direct": ("entity_rank",),
    "ppr-added": ("ppr_rank",),
}
#: a channel's other columns (0 for a candidate outside its list)
CHANNEL_SCORES = {
    "entity": ("entity_idf",),
    "entity-direct": ("entity_idf",),
    "semantic": ("semantic_cos",),
}
#: removals that keep the columns of the rows that stay
_ROWS_ONLY = frozenset({"ppr-added"})


def drop_channel(pool: QueryPool, channel: str | Sequence[str], *, n: int = 50) -> QueryPool:
    """``pool`` as if ``channel`` (or each of several) had not run: the candidates only they found
    are removed and their columns reset (the other channels' and the neighbours' rows stay; features
    of other rows that read a removed candidate, ``nb_vec`` and ``coherence``, keep its value: a
    close approximation)."""
    dropped = {channel} if isinstance(channel, str) else set(channel)
    f = pool.features
    absent = 10.0 / (10.0 + 4 * n)
    removed = {name for c in dropped for name in CHANNEL_COLUMNS[c]}
    cols = [FEATURES.index(name) for name in sorted(removed)]
    found = np.zeros(len(f), dtype=bool)
    for name in ("vec_rank", "lex_rank", "lex_q_rank"):
        found |= f[:, FEATURES.index(name)] > absent
    found |= f[:, FEATURES.index("ctx_lex")] > 0
    found |= f[:, FEATURES.index("neighbour")] > 0.5
    for other, names in CHANNEL_COLUMNS.items():
        if other not in dropped:
            for name in set(names) - removed:
                found |= f[:, FEATURES.index(name)] > absent
    keep = found | ~(f[:, cols] > absent).any(axis=1)
    features = f[keep].copy()
    reset = {name for c in dropped - _ROWS_ONLY for name in CHANNEL_COLUMNS[c]}
    features[:, [FEATURES.index(name) for name in sorted(reset)]] = absent
    for c in dropped:
        for name in CHANNEL_SCORES.get(c, ()):
            features[:, FEATURES.index(name)] = 0.0
    from dataclasses import replace as _replace

    return _replace(
        pool,
        turn_ids=tuple(t for t, k in zip(pool.turn_ids, keep, strict=True) if k),
        features=features,
        labels=pool.labels[keep],
        neighbour_only=pool.neighbour_only[keep],
        contents=tuple(c for c, k in zip(pool.contents, keep, strict=True) if k) if pool.contents else (),
        speakers=tuple(c for c, k in zip(pool.speakers, keep, strict=True) if k) if pool.speakers else (),
    )


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


def held_out_fits(data: Corpora, settings: TreeSettings) -> Iterator[tuple[str, TreeRanker, list[str]]]:
    """Leave-one-corpus-out: per held-out corpus, the trees fitted on the other corpora's pools (no
    inner CV) and the held-out corpus's conversations."""
    for held in sorted(set(data.corpus_of.values())):
        train: dict[str, list[QueryPool]] = {}
        for conv, ps in data.pools.items():
            if data.corpus_of[conv] != held:
                train.setdefault(data.corpus_of[conv], []).extend(ps)
        ranker, _ = fit(train, settings, choose=False)
        yield held, ranker, [c for c in data.pools if data.corpus_of[c] == held]


#: the read-path systems of ``--search``: a name, and the profile change or controller it runs with
SEARCH_SYSTEMS: tuple[str, ...] = (
    "dualmem",
    "random-s1",
    "dualmem no-views",
    "dualmem no-semantic",
    "dualmem no-temporal",
    "dualmem no-causal",
    "dualmem no-entity",
    "dualmem no-expansion",
    "dualmem no-supersession",
)


class RandomRoute:
    """The builtin decider with a random route (``AutoController``'s answers to the routing batch):
    what the route's choices are worth (``read.channels``)."""

    name = "random-route"

    def __init__(self, ranker: TreeRanker, seed: int = 7) -> None:
        self.inner = BuiltinController(ranker=ranker)
        self.route = AutoController(seed)

    def decide(self, batch: Batch) -> BatchResult:
        return (self.route if batch.purpose == "routing" else self.inner).decide(batch)


def _search_profile(system: str) -> Profile:
    base = views_profile()
    if system in ("dualmem", "random-s1"):
        return base
    if system == "dualmem channels":  # the fitted route
        return base.with_(read__channels=CHANNELS)
    if system in ("dualmem builtin-route", "random-route"):  # the controller's route answers route
        return base.with_(read__channels=CHANNELS, read__channel_route="builtin")
    if system.startswith("dualmem channel="):  # one channel alone
        return base.with_(read__channels=(system.removeprefix("dualmem channel="),))
    if system == "dualmem no-supersession":
        return base.with_(read__prefer_current=False)
    if system.startswith("dualmem likely="):  # read.likely_update at another value ("off": None)
        value = system.removeprefix("dualmem likely=")
        return base.with_(read__likely_update=None if value == "off" else float(value))
    if system.startswith("dualmem pair="):  # read.pair_cosine at another value ("off": None)
        value = system.removeprefix("dualmem pair=")
        return base.with_(read__pair_cosine=None if value == "off" else float(value))
    what = system.removeprefix("dualmem no-")
    return read_variant(base, what)


def searched_rows(
    data: Corpora, conv: str, path: Path, ranker: TreeRanker, held: str, mode: str, systems: Sequence[str]
) -> list[dict[str, Any]]:
    """``Memory.search`` (k=20) over a held-out conversation's build, for each system."""
    stale = labels("notes").get(conv, None) if data.corpus_of[conv] == "notes" else None
    tests = _rows(data.pools[conv])
    out: list[dict[str, Any]] = []
    for system in systems:
        ctl: Controller = (
            AutoController(7)
            if system == "random-s1"
            else RandomRoute(ranker)
            if system == "random-route"
            else BuiltinController(ranker=ranker)
        )
        with Memory.open(
            path,
            embedder=embedder(embedder_of(data.corpus_of[conv])),
            controller=ctl,
            answerer=None,
            profile=_search_profile(system),
            read_only=True,
        ) as mem:
            turn = {n.id: n.turn_id or n.id for n in mem.nodes(user=conv)}
            for p in tests:
                found = mem.search(p.question, user=conv, k=20).evidence
                ranked = [turn.get(e.node.id, e.node.id) for e in found]
                row = {**_record(system, held, p, ranked), "corpus": data.corpus_of[conv], "mode": mode}
                row["evidence0"] = p.evidence[0]
                row["stale_above"] = _stale_above(stale.stale.get(p.index, ()) if stale else (), p, ranked)
                out.append(row)
    return out


def _stale_above(stale: Sequence[str], p: QueryPool, ranked: Sequence[str]) -> bool | None:
    """Whether a stale version outranks the current one (``None``: the question has no stale one)."""
    if not stale:
        return None
    gold = ranked.index(p.evidence[0]) if p.evidence[0] in ranked else None
    ranks = [ranked.index(t) for t in stale if t in ranked]
    return bool(ranks) and (gold is None or min(ranks) < gold)


def run(
    data: Corpora,
    mode: str,
    settings: TreeSettings,
    *,
    choose: bool = True,
    search: Mapping[str, Path] | None = None,
    systems: Sequence[str] = SEARCH_SYSTEMS,
) -> list[dict[str, Any]]:
    """``search``: the held-out builds to run ``Memory.search`` on (by conversation), if any."""
    rows: list[dict[str, Any]] = []
    held_of = {
        c: (data.fold_of[c] if mode == "within" else data.corpus_of[c].removesuffix(SHUFFLED))
        for c in data.pools
    }
    tested = sorted({h for c, h in held_of.items() if not data.corpus_of[c].endswith(SHUFFLED)})
    for held in tested:
        train: dict[str, list[QueryPool]] = {}
        for conv, ps in data.pools.items():
            if held_of[conv] != held:
                group = data.corpus_of[conv].removesuffix(SHUFFLED)  # inner CV over the source corpora
                train.setdefault(group, []).extend(ps)
        started = time.perf_counter()
        ranker, trees = fit(train, settings, choose=choose)
        for conv in (c for c, h in held_of.items() if h == held and not data.corpus_of[c].endswith(SHUFFLED)):
            notes = labels("notes").get(conv) if data.corpus_of[conv] == "notes" else None
            for p in _rows(data.pools[conv]):
                base = {"corpus": data.corpus_of[conv], "mode": mode, "evidence0": p.evidence[0]}
                stale = notes.stale.get(p.index, ()) if notes else ()
                for system, ranked in [("dualmem-pool", rank(ranker, p)[0]), *p.baselines.items()]:
                    row = {**_record(system, held, p, ranked), **base}
                    rows.append({**row, "stale_above": _stale_above(stale, p, ranked)})
            if search is not None and conv in search:
                rows += searched_rows(data, conv, search[conv], ranker, held, mode, systems)
        print(f"{mode} {held}: {trees} trees, {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return rows


def _mean(xs: Sequence[float | None]) -> float | None:
    kept = [x for x in xs if x is not None]
    return sum(kept) / len(kept) if kept else None


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per mode, corpus and system: R@k, MRR, n; by category R@10, the share of questions whose
    (first) evidence is first and in the top 3; the share of questions a stale version outranks."""
    out: dict[str, Any] = {}
    for key in sorted({(r["mode"], r["corpus"], r["system"]) for r in rows}):
        mine = [r for r in rows if (r["mode"], r["corpus"], r["system"]) == key]
        cats = sorted({str(r["category"]) for r in mine})

        def by(cat: str, value: Any, mine: list[Mapping[str, Any]] = mine) -> float | None:
            return _mean([value(r) for r in mine if str(r["category"]) == cat])

        out.setdefault(key[0], {}).setdefault(key[1], {})[key[2]] = {
            "n": len(mine),
            **{f"R@{k}": _mean([r["recall"][str(k)] for r in mine]) for k in K_VALUES},
            "MRR": _mean([r["mrr"] for r in mine]),
            "R@10 by category": {c: by(c, lambda r: r["recall"]["10"]) for c in cats},
            "first by category": {
                c: by(c, lambda r: float(r["retrieved"][:1] == [r["evidence0"]])) for c in cats
            },
            "top3 by category": {
                c: by(c, lambda r: float(r["evidence0"] in r["retrieved"][:3])) for c in cats
            },
            "stale above current": _mean(
                [float(r["stale_above"]) for r in mine if r.get("stale_above") is not None]
            ),
        }
    return out


def report(summary: Mapping[str, Any]) -> str:
    lines: list[str] = []
    for mode, corpora in summary.items():
        for corpus, systems in corpora.items():
            lines += recall_table(f"### {mode}: {corpus}", systems)
            cats = sorted({c for s in systems.values() for c in s["R@10 by category"]})
            lines += [
                "",
                "| R@10 (first, top 3) by category | " + " | ".join(cats) + " |",
                "|---" * (len(cats) + 1) + "|",
            ]
            for system, s in systems.items():
                cells = [
                    f"{_fmt(s['R@10 by category'].get(c))} ({_fmt(s['first by category'].get(c))}, "
                    f"{_fmt(s['top3 by category'].get(c))})"
                    for c in cats
                ]
                lines.append(f"| {system} | " + " | ".join(cells) + " |")
            stale = {
                k: v["stale above current"]
                for k, v in systems.items()
                if v["stale above current"] is not None
            }
            if stale:
                lines += [
                    "",
                    "Stale version above the current one: "
                    + ", ".join(f"{k} {_fmt(v)}" for k, v in stale.items()),
                ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", type=Path, default=Path("research-out/builds"))
    parser.add_argument("--out", type=Path, default=Path("research-out/loco"))
    parser.add_argument("--corpora", nargs="+", default=list(ENGLISH), choices=list(CORPORA))
    parser.add_argument("--modes", nargs="+", default=["within", "loco"], choices=["within", "loco"])
    parser.add_argument("--trees", type=int, default=300, help="tree count when not chosen by inner CV")
    parser.add_argument("--no-choose", action="store_true", help="fixed --trees (no inner CV)")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument(
        "--increasing",
        nargs="*",
        default=None,
        help="monotone (increasing) features; default: dualmem.learn.boost.RELEVANCE; none given: none",
    )
    parser.add_argument("--drop", nargs="*", default=[], help="features left out (set to 0)")
    parser.add_argument("--augment", nargs="*", default=[], help="corpora whose shuffled copies train too")
    parser.add_argument("--search", type=Path, default=None, help="LOCO builds to run Memory.search on")
    parser.add_argument(
        "--systems",
        nargs="*",
        default=list(SEARCH_SYSTEMS),
        help="read-path systems (--search); also 'dualmem likely=X' / 'dualmem pair=X' "
        "(read.likely_update / read.pair_cosine X, or off), 'dualmem channels' (read.channels on), "
        "'dualmem builtin-route' (the same, System One's route), "
        "'random-route' (routed at random), 'dualmem channel=NAME' (one channel)",
    )
    parser.add_argument("--search-corpora", nargs="*", default=None, help="search these only (default: all)")
    parser.add_argument(
        "--channels", nargs="*", default=[], help="retrieval channels the pools are built with: NAME=SIZE"
    )
    parser.add_argument(
        "--route",
        default="fixed",
        choices=["fixed", "builtin", "random", "fitted"],
        help="who chooses each question's channels (--channels: their sizes' sum is the budget)",
    )
    parser.add_argument(
        "--route-dir",
        type=Path,
        default=None,
        help="--route fitted: the routes fitted without each corpus (research.route_fit --loco-dir)",
    )
    parser.add_argument(
        "--drop-channel",
        nargs="+",
        default=None,
        choices=list(CHANNEL_COLUMNS),
        help="as if it (or each of several) had not run",
    )
    parser.add_argument(
        "--cache", type=Path, default=None, help="where pools are cached (default: beside the builds)"
    )
    ns = parser.parse_args(argv)
    channels = [(c.split("=")[0], int(c.split("=")[1])) for c in ns.channels]
    data = load(
        ns.builds,
        ns.corpora,
        limit=ns.limit,
        augment=ns.augment,
        channels=channels,
        cache=ns.cache,
        route=ns.route,
        route_dir=ns.route_dir,
    )
    if ns.drop_channel:
        for conv, ps in data.pools.items():
            data.pools[conv] = [drop_channel(p, ns.drop_channel) for p in ps]
    increasing = None if ns.increasing is None else tuple(ns.increasing)
    settings = TreeSettings(trees=ns.trees, threads=1, increasing=increasing)
    if ns.drop:
        cols = [FEATURES.index(f) for f in ns.drop]
        for ps in data.pools.values():
            for p in ps:
                p.features[:, cols] = 0.0
    rows: list[dict[str, Any]] = []
    search = None
    if ns.search is not None:
        from research.builds import any_build

        search = {
            c.id: any_build(c, ns.search / name, embedder_of(name))
            for name in (ns.corpora if ns.search_corpora is None else ns.search_corpora)
            for c in conversations(name, ns.limit)
        }
    for mode in ns.modes:
        rows += run(data, mode, settings, choose=not ns.no_choose, search=search, systems=ns.systems)
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

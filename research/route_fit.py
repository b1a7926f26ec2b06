"""Fit the channel route (``dualmem.read.channel_route``) on whether each channel paid, by CV.

1. ``table``: every question's pool built with every channel (``research.loco.load`` with
   ``--channels``, cached), and per channel whether it *paid*: its hits held an evidence turn that
   the vector and lexical lists ranked beyond ``DEEP_RANK`` (0-based: 12th or lower) or missed
   (``found`` label). Beside it,
   the question's R@10 under each subset of the channels: the held-out corpus's pools ranked by the
   scorer fitted on the other corpora (LightGBM, ``research.loco.fit``), a channel removed by
   ``research.loco.drop_channel`` (what a route that turns it off gives, at fixed sizes).
2. ``fit``: per channel a logistic model of ``found`` over the query's route features
   (``route_features``), its threshold chosen on the training corpora to maximise their R@10
   (offline: each question's R@10 under the channels the route turns on); leave-one-corpus-out beside
   within-corpus (folds of ``research.corpora.fold_of``). Reported: the held-out R@10 of the
   fitted route against always all channels, none, the builtin route, a random route and the oracle;
   then the route fitted on every corpus is written (``--artefact``).

    python -m research.route_fit table --builds research-out/builds --cache DIR --out T.json
    python -m research.route_fit fit --table T.json --artefact src/dualmem/read/channel_route.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dualmem.config import READ_CHANNELS
from dualmem.control.builtin import BuiltinController
from dualmem.control.catalog import routing_questions
from dualmem.control.questions import Batch
from dualmem.control.scripted import AutoController
from dualmem.control.states import RoutingState
from dualmem.learn.boost import TreeSettings
from dualmem.read.channel_route import ROUTE_FEATURES, FittedRoute, route_features
from dualmem.read.pool import FEATURES
from research.corpora import ENGLISH
from research.cv import _rows, rank, recall_at_k
from research.cv_joint import Corpora
from research.loco import CHANNEL_COLUMNS, drop_channel, held_out_fits, load

__all__ = ["DEEP_RANK", "fit_logistic", "found_labels", "main", "table"]

#: a channel pays when it finds an evidence turn the indexes rank beyond this 0-based rank (or miss)
DEEP_RANK = 10
#: the thresholds a channel's probability is tried at (1.01: never runs)
THRESHOLDS = (0.0, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.01)
_INDEX_COLUMNS = ("vec_rank", "lex_rank", "lex_q_rank")


def _subsets(channels: Sequence[str]) -> list[tuple[str, ...]]:
    return [s for k in range(len(channels) + 1) for s in itertools.combinations(channels, k)]


def _key(subset: Sequence[str]) -> str:
    return "+".join(subset) or "-"


def found_labels(
    features: npt.NDArray[np.float64], labels: npt.NDArray[np.float64], n: int = 50
) -> dict[str, bool]:
    """Per channel: whether its hits hold an evidence row the indexes rank beyond ``DEEP_RANK`` or miss."""
    absent = 10.0 / (10.0 + 4 * n)
    best = np.zeros(len(features))
    for name in _INDEX_COLUMNS:
        best = np.maximum(best, features[:, FEATURES.index(name)])
    deep = best < 10.0 / (10.0 + DEEP_RANK) - 1e-9  # rank below DEEP_RANK (or absent)
    gold = labels > 0
    out = {}
    for c, cols in CHANNEL_COLUMNS.items():
        if c not in READ_CHANNELS:  # a part of a channel (the temporal channel's walk)
            continue
        hit = np.zeros(len(features), dtype=bool)
        for col in cols:
            hit |= features[:, FEATURES.index(col)] > absent
        out[c] = bool(np.any(gold & deep & hit))
    return out


def table(data: Corpora, channels: Sequence[str], settings: TreeSettings) -> list[dict[str, Any]]:
    """Per question: corpus, fold, question, category, ``found`` per channel, R@10 per subset."""
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for held, ranker, convs in held_out_fits(data, settings):
        for conv in convs:
            for p in _rows(data.pools[conv]):
                r10: dict[str, float | None] = {}
                for subset in _subsets(channels):
                    q = p
                    for c in channels:
                        if c not in subset:
                            q = drop_channel(q, c)
                    r10[_key(subset)] = recall_at_k(rank(ranker, q)[0], q.evidence, 10)
                rows.append(
                    {
                        "corpus": held,
                        "fold": data.fold_of[conv],
                        "conversation": conv,
                        "index": p.index,
                        "category": str(p.category),
                        "question": p.question,
                        "found": found_labels(p.features, p.labels),
                        "r10": r10,
                    }
                )
        print(f"table {held}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
        started = time.perf_counter()
    return rows


# -- the route's fit --------------------------------------------------------------------------


def fit_logistic(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], l2: float = 1.0, iters: int = 50
) -> tuple[npt.NDArray[np.float64], float]:
    """L2-regularised logistic regression by Newton's method (intercept not penalised)."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -40, 40)))
        grad = xb.T @ (p - y) + reg * w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return w[:-1], float(w[-1])


def _features(rows: Sequence[Mapping[str, Any]]) -> npt.NDArray[np.float64]:
    return np.array([route_features(r["question"]) for r in rows], dtype=np.float64)


def _r10(rows: Sequence[Mapping[str, Any]], on: Sequence[Sequence[str]], channels: Sequence[str]) -> float:
    vals = [r["r10"][_key([c for c in channels if c in chosen])] for r, chosen in zip(rows, on, strict=True)]
    kept = [v for v in vals if v is not None]
    return float(np.mean(kept)) if kept else 0.0


def fit_route(rows: Sequence[Mapping[str, Any]], channels: Sequence[str], l2: float = 1.0) -> FittedRoute:
    """Per channel a logistic model of ``found``; thresholds chosen jointly-by-coordinate on ``rows``'
    R@10 (each corpus weighs the same), ties to the higher threshold (fewer channels run)."""
    x = _features(rows)
    weights: dict[str, tuple[float, ...]] = {}
    intercepts: dict[str, float] = {}
    for c in channels:
        y = np.array([float(r["found"][c]) for r in rows])
        w, b = fit_logistic(x, y, l2)
        weights[c], intercepts[c] = tuple(float(v) for v in w), b
    route = FittedRoute(ROUTE_FEATURES, weights, intercepts, dict.fromkeys(channels, 0.0))
    probs = [route.need(r["question"], list(channels)) for r in rows]
    corpora = sorted({r["corpus"] for r in rows})
    thresholds = dict.fromkeys(channels, 0.0)
    for _ in range(2):
        for c in channels:
            best: tuple[float, float] | None = None
            for t in THRESHOLDS:
                trial = {**thresholds, c: t}
                on = [[d for d in channels if pr[d] >= trial[d]] for pr in probs]
                score = float(
                    np.mean(
                        [
                            _r10(
                                [r for r in rows if r["corpus"] == k],
                                [o for r, o in zip(rows, on, strict=True) if r["corpus"] == k],
                                channels,
                            )
                            for k in corpora
                        ]
                    )
                )
                if best is None or score >= best[0] - 1e-12:
                    best = (score, t)
            assert best is not None
            thresholds[c] = best[1]
    return FittedRoute(ROUTE_FEATURES, weights, intercepts, thresholds)


def _builtin_on(question: str, channels: Sequence[str], ctl: Any, theta: float = 0.10) -> list[str]:
    res = ctl.decide(Batch.of(RoutingState(question), routing_questions(), "routing"))
    return [c for c in channels if res.noul(c) >= theta]


def evaluate(rows: Sequence[Mapping[str, Any]], channels: Sequence[str], seed: int = 7) -> dict[str, Any]:
    """Held-out R@10 (offline, fixed sizes) by corpus of each route; LOCO and within-corpus fits."""
    out: dict[str, Any] = {}
    builtin = BuiltinController()
    rnd = random.Random(seed)
    routes: dict[str, list[list[str]]] = {
        "all": [list(channels)] * len(rows),
        "none": [[]] * len(rows),
        "builtin": [_builtin_on(r["question"], channels, builtin) for r in rows],
        "random": [[c for c in channels if rnd.random() < 0.5] for _ in rows],
        "oracle": [
            list(max(_subsets(channels), key=lambda s, r=r: (r["r10"][_key(s)] or 0.0, -len(s))))
            for r in rows
        ],
    }
    for mode in ("loco", "within"):
        on: list[list[str]] = [[] for _ in rows]
        held_of = [r["corpus"] if mode == "loco" else r["fold"] for r in rows]
        fitted: dict[str, Any] = {}
        for held in sorted(set(held_of)):
            train = [r for r, h in zip(rows, held_of, strict=True) if h != held]
            route = fit_route(train, channels)
            fitted[held] = route.thresholds
            for i, h in enumerate(held_of):
                if h == held:
                    need = route.need(rows[i]["question"], list(channels))
                    on[i] = [c for c in channels if need[c] >= route.thresholds[c]]
        routes[f"fitted ({mode})"] = on
        out[f"thresholds ({mode})"] = fitted
    table_: dict[str, dict[str, float]] = {}
    for name, on in routes.items():
        table_[name] = {}
        for corpus in [*ENGLISH, "mean"]:
            idx = [i for i, r in enumerate(rows) if corpus == "mean" or r["corpus"] == corpus]
            if corpus == "mean":
                table_[name][corpus] = float(np.mean([table_[name][k] for k in ENGLISH if k in table_[name]]))
            elif idx:
                table_[name][corpus] = _r10([rows[i] for i in idx], [on[i] for i in idx], channels)
        for c in channels:
            table_[name][f"{c} on"] = float(np.mean([c in o for o in on]))
    out["r10"] = table_
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("table")
    t.add_argument("--builds", type=Path, default=Path("research-out/builds"))
    t.add_argument("--cache", type=Path, required=True)
    t.add_argument("--channels", nargs="*", default=["temporal=20", "entity=20"])
    t.add_argument("--corpora", nargs="+", default=list(ENGLISH))
    t.add_argument("--trees", type=int, default=200)
    t.add_argument("--limit", type=int, default=None)
    t.add_argument("--out", type=Path, required=True)
    f = sub.add_parser("fit")
    f.add_argument("--table", type=Path, required=True)
    f.add_argument("--artefact", type=Path, default=None)
    f.add_argument("--out", type=Path, default=None, help="the CV figures (json)")
    f.add_argument(
        "--loco-dir", type=Path, default=None, help="write the routes fitted without each corpus here"
    )
    ns = parser.parse_args(argv)
    if ns.cmd == "table":
        channels = [(c.split("=")[0], int(c.split("=")[1])) for c in ns.channels]
        data = load(ns.builds, ns.corpora, limit=ns.limit, channels=channels, cache=ns.cache)
        rows = table(data, [c for c, _ in channels], TreeSettings(trees=ns.trees, threads=1))
        ns.out.parent.mkdir(parents=True, exist_ok=True)
        ns.out.write_text(json.dumps({"channels": [c for c, _ in channels], "rows": rows}), encoding="utf-8")
        return 0
    data_ = json.loads(ns.table.read_text(encoding="utf-8"))
    channels_ = list(data_["channels"])
    rows_ = data_["rows"]
    figures = evaluate(rows_, channels_)
    for name, vals in figures["r10"].items():
        print(f"{name:18s} " + " ".join(f"{k} {v:.3f}" for k, v in vals.items()))
    print(json.dumps({k: v for k, v in figures.items() if k != "r10"}))
    if ns.out is not None:
        ns.out.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    if ns.loco_dir is not None:
        ns.loco_dir.mkdir(parents=True, exist_ok=True)
        for corpus in sorted({r["corpus"] for r in rows_}):
            held = fit_route([r for r in rows_ if r["corpus"] != corpus], channels_)
            path = ns.loco_dir / f"without-{corpus}.json"
            path.write_text(json.dumps(held.to_json(), indent=1) + "\n", encoding="utf-8")
    if ns.artefact is not None:
        route = fit_route(rows_, channels_)
        ns.artefact.write_text(json.dumps(route.to_json(), indent=1) + "\n", encoding="utf-8")
        print(f"artefact: thresholds {route.thresholds}")
    _ = AutoController  # the random route of the read path (research.loco.RandomRoute)
    return 0


if __name__ == "__main__":
    sys.exit(main())

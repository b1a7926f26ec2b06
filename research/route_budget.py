"""What a route that splits the *indexes'* budget is worth (offline, over cached pools).

``research.route_fit`` shows that turning a channel on or off moves pool R@10 by at most ~0.006 on
the dev corpora (even an oracle route), so no channel route can be 0.03 better than a random one.
This asks the other budget a route could decide: how deep each of the pool's lists goes (vector,
lexical as written, lexical name-stripped, context). Each question's pool (built with every list
50 deep and both channels, ``research.loco.load``) is cut to a split of ``TOTAL`` candidates over the
four lists (``SPLITS``): a row stays when one of its lists ranks it within that list's depth (or a
channel found it); session-neighbour rows are left out of every variant; rank features beyond a
list's depth are reset to absent. The held-out corpus is ranked by the scorer fitted on the other
corpora (LightGBM, full pools). Routes compared, per question: every list 50 deep (``full``), the
even split, a random split, a fitted split (per split a ridge regression of R@10 over the route
features, fitted leave-one-corpus-out; the split of highest prediction) and the oracle.

    python -m research.route_budget --builds research-out/builds --cache DIR --out R.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dualmem.learn.boost import TreeSettings
from dualmem.read.channel_route import route_features
from dualmem.read.pool import FEATURES
from research.corpora import ENGLISH
from research.cv import _rows, rank, recall_at_k
from research.loco import held_out_fits, load
from research.pools import QueryPool

__all__ = ["SPLITS", "cut", "main"]

#: candidates the four lists share in a split
TOTAL = 100
#: the splits a route may choose (vector, lexical, lexical name-stripped, context depth)
SPLITS: dict[str, tuple[int, int, int, int]] = {
    "even": (25, 25, 25, 25),
    "vector": (55, 15, 15, 15),
    "lexical": (15, 55, 15, 15),
    "stripped": (15, 15, 55, 15),
    "context": (15, 15, 15, 55),
}
_RANKS = ("vec_rank", "lex_rank", "lex_q_rank")


def _rank_of(col: npt.NDArray[np.float64], absent: float) -> npt.NDArray[np.float64]:
    """A rank column's 0-based ranks (``inf`` where absent)."""
    with np.errstate(divide="ignore"):
        r = np.where(col > absent + 1e-12, 10.0 / np.maximum(col, 1e-12) - 10.0, np.inf)
    return np.asarray(r)


def cut(pool: QueryPool, depths: Sequence[int], n: int = 50) -> QueryPool:
    """``pool`` with each list cut to ``depths`` (vector, lexical, stripped, context) and no
    session-neighbour rows (see the module docstring)."""
    f = pool.features
    absent = 10.0 / (10.0 + 4 * n)
    keep = np.zeros(len(f), dtype=bool)
    out = f.copy()
    for name, d in zip(_RANKS, depths[:3], strict=True):
        col = FEATURES.index(name)
        inside = _rank_of(f[:, col], absent) < d - 0.5
        keep |= inside
        out[~inside, col] = absent
    ctx = FEATURES.index("ctx_lex")
    scores = f[:, ctx]
    order = np.argsort(-scores, kind="stable")
    ctx_rank = np.empty(len(f))
    ctx_rank[order] = np.arange(len(f))
    inside = (scores > 0) & (ctx_rank < depths[3])
    keep |= inside
    out[~inside, ctx] = 0.0
    for name in ("time_rank", "entity_rank"):
        keep |= f[:, FEATURES.index(name)] > absent
    keep &= ~pool.neighbour_only
    return replace(
        pool,
        turn_ids=tuple(t for t, k in zip(pool.turn_ids, keep, strict=True) if k),
        features=out[keep],
        labels=pool.labels[keep],
        neighbour_only=pool.neighbour_only[keep],
        contents=tuple(c for c, k in zip(pool.contents, keep, strict=True) if k) if pool.contents else (),
        speakers=tuple(c for c, k in zip(pool.speakers, keep, strict=True) if k) if pool.speakers else (),
    )


def table(data: Any, settings: TreeSettings) -> list[dict[str, Any]]:
    """Per question: corpus, question and R@10 under each split (and ``full``)."""
    rows: list[dict[str, Any]] = []
    variants = {"full": (50, 50, 50, 50), **SPLITS}
    started = time.perf_counter()
    for held, ranker, convs in held_out_fits(data, settings):
        for conv in convs:
            for p in _rows(data.pools[conv]):
                r10 = {}
                for name, depths in variants.items():
                    q = cut(p, depths)
                    r10[name] = recall_at_k(rank(ranker, q)[0], q.evidence, 10) if q.turn_ids else 0.0
                rows.append({"corpus": held, "question": p.question, "r10": r10})
        print(f"budget {held}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
        started = time.perf_counter()
    return rows


def _ridge(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], l2: float = 1.0
) -> npt.NDArray[np.float64]:
    xb = np.hstack([x, np.ones((len(x), 1))])
    reg = np.full(xb.shape[1], l2)
    reg[-1] = 0.0
    return np.asarray(np.linalg.solve(xb.T @ xb + np.diag(reg), xb.T @ y))


def evaluate(rows: Sequence[Mapping[str, Any]], seed: int = 7) -> dict[str, dict[str, float]]:
    """Held-out R@10 by corpus of each route (``full``, ``even``, random, fitted LOCO, oracle)."""
    names = list(SPLITS)
    x = np.array([route_features(r["question"]) for r in rows], dtype=np.float64)
    xb = np.hstack([x, np.ones((len(x), 1))])
    rnd = random.Random(seed)
    chosen: dict[str, list[str]] = {
        "full (50 each)": ["full"] * len(rows),
        "even (25 each)": ["even"] * len(rows),
        "random split": [rnd.choice(names) for _ in rows],
        "oracle split": [max(names, key=lambda s, r=r: (r["r10"][s] or 0.0, s == "even")) for r in rows],
        "fitted split (loco)": [""] * len(rows),
    }
    for held in sorted({r["corpus"] for r in rows}):
        train = [i for i, r in enumerate(rows) if r["corpus"] != held]
        preds = {}
        for s in names:
            y = np.array([rows[i]["r10"][s] or 0.0 for i in train])
            preds[s] = xb @ _ridge(x[train], y)
        for i, r in enumerate(rows):
            if r["corpus"] == held:
                chosen["fitted split (loco)"][i] = max(names, key=lambda s, i=i: preds[s][i])
    out: dict[str, dict[str, float]] = {}
    for route, picks in chosen.items():
        out[route] = {}
        for corpus in ENGLISH:
            vals = [r["r10"][p] for r, p in zip(rows, picks, strict=True) if r["corpus"] == corpus]
            kept = [v for v in vals if v is not None]
            if kept:
                out[route][corpus] = float(np.mean(kept))
        out[route]["mean"] = float(np.mean([out[route][c] for c in ENGLISH if c in out[route]]))
        out[route]["even chosen"] = float(np.mean([p == "even" for p in picks]))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", type=Path, default=Path("research-out/builds"))
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--channels", nargs="*", default=["temporal=20", "entity=20"])
    parser.add_argument("--corpora", nargs="+", default=list(ENGLISH))
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--table", type=Path, default=None, help="reuse a table written before")
    parser.add_argument("--out", type=Path, required=True)
    ns = parser.parse_args(argv)
    if ns.table is not None:
        rows = json.loads(ns.table.read_text(encoding="utf-8"))["rows"]
    else:
        channels = [(c.split("=")[0], int(c.split("=")[1])) for c in ns.channels]
        data = load(ns.builds, ns.corpora, limit=ns.limit, channels=channels, cache=ns.cache)
        rows = table(data, TreeSettings(trees=ns.trees, threads=1))
    figures = evaluate(rows)
    for route, vals in figures.items():
        print(f"{route:22s} " + " ".join(f"{k} {v:.3f}" for k, v in vals.items()))
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(json.dumps({"figures": figures, "rows": rows}), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

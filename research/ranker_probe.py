"""Probe: would a different System-One scorer over the same pool features close issue 27's gaps?

    pip install 'dualmem[learn]'                      # LightGBM
    python -m research.run_cv_joint --views --no-random --out /tmp/cvj   # builds and caches the pools
    python -m research.ranker_probe --out /tmp/cvj

Same folds as ``research/run_cv_joint.py`` (LoCoMo dev one conversation per fold, agent chats 4 folds; each
scorer fitted on every other fold of both corpora), the pool ranked by the scorer alone
(``dualmem-pool``). Systems:

- ``linear``: the shipped scorer (logistic, L2 by inner CV), the reference;
- ``linear+session β``: its logits, top-10 picked greedily with β × (picks already from the same
  session) subtracted (a set-level novelty term: do multi-hop misses come from one session
  crowding the top 10?);
- ``gbdt-<objective> L<leaves> T<trees>``: gradient-boosted trees (LightGBM, learning rate 0.05,
  at least 50 rows a leaf) on the same features, binary log-loss or lambdarank per question.

Prints R@10 per corpus and per category; ``bench/README.md`` says what it found. The lambdarank
trees were then shipped (``dualmem.learn.boost``, tree count by inner CV): ``research/run_cv_joint.py``
measures them, with ``--scorer linear`` for the logistic scorer.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dualmem.bench.metrics import recall_at_k
from dualmem.read.pool import FEATURES
from research.cv import QueryPool, _choose_l2, _rows, fit_ranker, rank
from research.cv_joint import Corpus, JointConfig, load_corpora

ROOT = Path(__file__).resolve().parents[1]  # the repository

Order = Callable[[Any, QueryPool], Sequence[str]]
Fit = Callable[[dict[str, list[QueryPool]]], Any]


def _session(turn: str) -> str:
    return turn.split(":", 1)[0]


def _linear(train: dict[str, list[QueryPool]]) -> Any:
    return fit_ranker([p for ps in train.values() for p in ps], l2=_choose_l2(train, (), False))


def _session_diverse(beta: float) -> Order:
    def order(ranker: Any, p: QueryPool) -> Sequence[str]:
        z = ranker.logits(p.features, FEATURES)
        free = np.ones(len(z), dtype=bool)
        picked: list[str] = []
        count: dict[str, int] = {}
        for _ in range(min(10, len(z))):
            adj = z - beta * np.array([count.get(_session(t), 0) for t in p.turn_ids])
            adj[~free] = -np.inf
            i = int(np.argmax(adj))
            free[i] = False
            picked.append(p.turn_ids[i])
            count[_session(p.turn_ids[i])] = count.get(_session(p.turn_ids[i]), 0) + 1
        return picked

    return order


def _gbdt(objective: str, leaves: int, trees: int) -> Fit:
    import lightgbm as lgb

    def fit(train: dict[str, list[QueryPool]]) -> Any:
        pools = [p for ps in train.values() for p in ps]
        x = np.vstack([p.features for p in pools])
        y = np.concatenate([p.labels for p in pools]).astype(int)
        common = {"n_estimators": trees, "learning_rate": 0.05, "num_leaves": leaves, "min_child_samples": 50}
        if objective == "lambdarank":
            model = lgb.LGBMRanker(objective="lambdarank", label_gain=[0, 1], verbose=-1, **common)
            model.fit(x, y, group=[len(p.labels) for p in pools])
        else:
            model = lgb.LGBMClassifier(verbose=-1, **common)
            model.fit(x, y)
        return model

    return fit


def _gbdt_order(model: Any, p: QueryPool) -> Sequence[str]:
    s = (
        model.predict_proba(p.features)[:, 1]
        if hasattr(model, "predict_proba")
        else model.predict(p.features)
    )
    return [p.turn_ids[i] for i in np.lexsort((np.arange(len(s)), -s))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=ROOT.parent / "shared" / "data" / "locomo")
    parser.add_argument("--agentchat", type=Path, default=ROOT / "bench" / "agentchat" / "haystacks")
    parser.add_argument(
        "--out", type=Path, default=Path("bench-cv-joint"), help="cv_joint's --out (pool cache)"
    )
    ns = parser.parse_args()
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        parser.error("the tree scorers need LightGBM: pip install lightgbm")
    corpora = (Corpus("locomo", ns.locomo), Corpus("agentchat", ns.agentchat, folds=4))
    loaded = load_corpora(JointConfig(corpora=corpora, out=ns.out), progress=False)
    pools, corpus_of, fold_of = loaded.pools, loaded.corpus_of, loaded.fold_of
    systems: list[tuple[str, Fit, Order]] = [("linear", _linear, lambda r, p: rank(r, p)[0])]
    systems += [(f"linear+session {b}", _linear, _session_diverse(b)) for b in (0.1, 0.2, 0.35, 0.5)]
    systems += [
        (f"gbdt-{o} L{leaves} T{trees}", _gbdt(o, leaves, trees), _gbdt_order)
        for o in ("binary", "lambdarank")
        for leaves, trees in ((7, 200), (15, 300))
    ]
    fitted: dict[tuple[int, str], Any] = {}
    for system, fit, order in systems:
        rows: list[tuple[str, str, float]] = []
        for fold in sorted(set(fold_of.values())):
            key = (id(fit), fold)
            if key not in fitted:
                train: dict[str, list[QueryPool]] = {}
                for conv, ps in pools.items():
                    if fold_of[conv] != fold:
                        train.setdefault(fold_of[conv], []).extend(_rows(ps))
                fitted[key] = fit(train)
            for conv, ps in pools.items():
                if fold_of[conv] == fold:
                    for p in _rows(ps):
                        r = recall_at_k(order(fitted[key], p), p.evidence, 10)
                        if r is not None:
                            rows.append((corpus_of[conv], str(p.category), r))
        for corpus in ("locomo", "agentchat"):
            mine = [r for r in rows if r[0] == corpus]
            cats = sorted({r[1] for r in mine})
            per = " ".join(f"{c}={np.mean([r[2] for r in mine if r[1] == c]):.3f}" for c in cats)
            print(f"{system:28s} {corpus:9s} R@10 {np.mean([r[2] for r in mine]):.3f} | {per}", flush=True)


if __name__ == "__main__":
    main()

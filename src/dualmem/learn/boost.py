"""Fitting the boosted-trees candidate scorer (``dualmem.control.trees.TreeRanker``).

LightGBM's lambdarank objective learns one ordering per query (the question's pool), which is what
recall@k rewards; its trees are copied out into ``dualmem.trees/1`` data, so reading memory never
imports LightGBM. The summed leaves are then mapped to probabilities by a one-feature logistic fit
(class-balanced, as the linear scorer is), so eq. 23 mixes a relevance of the same scale whichever
scorer answers. The number of trees is chosen by leave-one-group-out recall@10
(``choose_trees``); the other settings are fixed: 7 leaves a tree, at least 50 candidates a leaf,
learning rate 0.05.

No recency prior (issue 46): the score may only rise with the features that say how well a
candidate matches the query (:data:`RELEVANCE`, LightGBM's monotone constraints, the default), and
no pool feature says how old a memory is (``dualmem.read.pool``: a memory written later scores
exactly as one written earlier); only a version relation (``read.versions``) puts a newer memory
first.

LightGBM is needed to fit only: ``pip install 'dualmem[learn]'``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from dualmem.control.trees import MAX_LEAVES, Tree, TreeRanker
from dualmem.errors import ConfigError, InvalidInput
from dualmem.learn.fit import fit_logistic
from dualmem.read.pool import FEATURES

__all__ = [
    "RELEVANCE",
    "TREE_GRID",
    "Group",
    "TreeSettings",
    "choose_trees",
    "fit_trees",
    "monotone",
    "recall10",
]

FloatArray = npt.NDArray[np.float64]
#: one query's pool: its feature rows and their 0/1 (or soft, thresholded at 0.5) relevance targets
Group = tuple[FloatArray, FloatArray]
#: the tree counts ``choose_trees`` compares
TREE_GRID: tuple[int, ...] = (100, 200, 300, 400)
#: the pool features that measure how well a candidate matches the query (its text, its context, its
#: neighbours', the speaker and the time the query names, the retrieval channels' ranks): the score
#: never falls as one rises
RELEVANCE: tuple[str, ...] = tuple(
    f
    for f in FEATURES
    if f not in {"other_speaker", "log_len", "short", "neighbour", "question", "pref", "coherence"}
)


@dataclass(frozen=True, slots=True)
class TreeSettings:
    """LightGBM's settings for the trees scorer: boosting rounds, leaves a tree (at most
    ``MAX_LEAVES``: the evaluator's tables), the least candidates a leaf, the learning rate."""

    trees: int = 200
    leaves: int = 7
    rate: float = 0.05
    min_rows: int = 50
    seed: int = 0
    threads: int = 0  # LightGBM's default (OpenMP's); results are reproducible for one thread count
    #: features the score may only rise with (LightGBM's monotone constraints): a candidate more like
    #: the query never scores lower for it, whatever memory the trees were fitted on; ``None``: those
    #: of :data:`RELEVANCE` among the features fitted, ``()``: none
    increasing: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.trees < 1 or not 2 <= self.leaves <= MAX_LEAVES or self.min_rows < 1:
            raise InvalidInput(
                f"tree settings need trees >= 1, 2 <= leaves <= {MAX_LEAVES} and min_rows >= 1"
            )
        if not 0 < self.rate <= 1:
            raise InvalidInput("the learning rate must lie in (0, 1]")


def require_lightgbm() -> Any:
    """The ``lightgbm`` module, or a ``ConfigError`` saying how to install it."""
    try:
        import lightgbm
    except ImportError as exc:  # pragma: no cover - dev installs have it
        raise ConfigError(
            "fitting the trees scorer needs LightGBM",
            hint="pip install 'dualmem[learn]' or use --scorer linear",
        ) from exc
    return lightgbm


def _stack(groups: Sequence[Group]) -> tuple[FloatArray, npt.NDArray[np.int64], list[int]]:
    kept = [(x, y) for x, y in groups if len(y)]
    if not kept:
        raise InvalidInput("no candidates to fit the trees scorer on")
    x = np.vstack([np.asarray(g[0], dtype=np.float64) for g in kept])
    y = np.concatenate([(np.asarray(g[1]) > 0.5).astype(np.int64) for g in kept])
    if not np.isfinite(x).all():
        raise InvalidInput("pool features must be finite")
    if y.sum() == 0 or y.sum() == len(y):
        raise InvalidInput("the targets need both relevant and irrelevant candidates")
    return x, y, [len(g[1]) for g in kept]


def _booster(
    x: FloatArray, y: npt.NDArray[np.int64], sizes: Sequence[int], s: TreeSettings, names: Sequence[str]
) -> Any:
    lgb = require_lightgbm()
    increasing = monotone(s, names)
    unknown = sorted(set(increasing) - set(names))
    if unknown:
        raise InvalidInput(f"monotone features {unknown} are not among the features")
    params: dict[str, Any] = {
        "objective": "lambdarank",
        "label_gain": [0.0, 1.0],
        "num_leaves": s.leaves,
        "learning_rate": s.rate,
        "min_data_in_leaf": s.min_rows,
        "seed": s.seed,
        "deterministic": True,
        "force_row_wise": True,
        "num_threads": s.threads,
        "verbosity": -1,
    }
    if increasing:
        params["monotone_constraints"] = [1 if n in increasing else 0 for n in names]
    data = lgb.Dataset(x, label=y, group=sizes, params={"verbosity": -1})
    return lgb.train(params, data, num_boost_round=s.trees)


def monotone(settings: TreeSettings, names: Sequence[str]) -> tuple[str, ...]:
    """The features ``settings`` constrains to rise (``None``: :data:`RELEVANCE` among ``names``)."""
    if settings.increasing is None:
        return tuple(n for n in names if n in RELEVANCE)
    return settings.increasing


def _tree(node: Mapping[str, Any]) -> Tree:
    """One LightGBM tree (``dump_model`` form) as a ``Tree``: internal nodes and leaves in DFS order."""
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    leaf: list[float] = []

    def walk(n: Mapping[str, Any]) -> int:
        if "leaf_value" in n:
            leaf.append(float(n["leaf_value"]))
            return -len(leaf)  # leaf k is child -k - 1
        if n.get("decision_type") != "<=":
            raise ConfigError(f"unsupported LightGBM split {n.get('decision_type')!r}")
        i = len(feature)
        feature.append(int(n["split_feature"]))
        threshold.append(float(n["threshold"]))
        left.append(0)
        right.append(0)
        left[i] = walk(n["left_child"])
        right[i] = walk(n["right_child"])
        return i

    walk(node)
    return Tree(tuple(feature), tuple(threshold), tuple(left), tuple(right), tuple(leaf))


def _ranker(booster: Any, names: Sequence[str]) -> TreeRanker:
    built = tuple(_tree(t["tree_structure"]) for t in booster.dump_model()["tree_info"])
    return TreeRanker(tuple(names), built)


def _calibrated(
    ranker: TreeRanker, x: FloatArray, y: npt.NDArray[np.int64], provenance: Mapping[str, Any]
) -> TreeRanker:
    raw = ranker.raw(x, ranker.features)
    fit = fit_logistic(raw[:, None], y.astype(np.float64), l2=1e-3)
    return TreeRanker(ranker.features, ranker.trees, float(fit.weights[0]), fit.bias, dict(provenance))


def fit_trees(
    groups: Sequence[Group], names: Sequence[str], settings: TreeSettings | None = None
) -> TreeRanker:
    """Fit the trees on ``groups`` (one per query; columns ``names``) and calibrate their sum
    (fewer than ``settings.trees`` when LightGBM finds no split worth making before that)."""
    s = settings or TreeSettings()
    x, y, sizes = _stack(groups)
    ranker = _ranker(_booster(x, y, sizes, s, names), names)
    prov = {
        "scorer": "trees",
        "trees": len(ranker.trees),
        "leaves": s.leaves,
        "rate": s.rate,
        "min_rows": s.min_rows,
        **({"increasing": list(monotone(s, names))} if monotone(s, names) else {}),
    }
    return _calibrated(ranker, x, y, prov)


def recall10(scores: Sequence[FloatArray], groups: Sequence[Group]) -> float:
    """Mean share of each query's relevant candidates in its top 10 (queries without any skipped)."""
    vals = []
    for s, (_, y) in zip(scores, groups, strict=True):
        gold = np.asarray(y) > 0.5
        if gold.any():
            top = np.lexsort((np.arange(len(s)), -np.asarray(s)))[:10]
            vals.append(float(gold[top].sum()) / float(gold.sum()))
    return float(np.mean(vals)) if vals else 0.0


def choose_trees(
    folds: Mapping[str, Sequence[Group]],
    names: Sequence[str],
    *,
    grid: Sequence[int] = TREE_GRID,
    settings: TreeSettings | None = None,
) -> tuple[int, dict[int, float]]:
    """The tree count of ``grid`` with the best leave-one-fold-out recall@10 (ties: fewer trees), and
    every count's score. One fit of ``max(grid)`` trees per held-out fold serves every count (a
    boosted model's first k trees are the model of k rounds)."""
    if not grid or min(grid) < 1:
        raise InvalidInput("the tree grid needs positive counts")
    base = settings or TreeSettings()
    counts = sorted(set(grid))
    if len(folds) < 2:
        return counts[len(counts) // 2], {}
    per: dict[int, list[float]] = {k: [] for k in counts}
    longest = replace(base, trees=counts[-1])
    for held in sorted(folds):
        train = [g for f, gs in folds.items() if f != held for g in gs]
        test = list(folds[held])
        full = _ranker(_booster(*_stack(train), longest, names), names)
        staged = [_staged(full, x) for x, _ in test]  # (rows, trees) running sums per query
        for k in counts:
            # LightGBM stops early when no split gains: k rounds past that are the whole model
            per[k].append(recall10([st[:, min(k, st.shape[1]) - 1] for st in staged], test))
    scores = {k: float(np.mean(v)) for k, v in per.items()}
    best = max(counts, key=lambda k: (scores[k], -k))
    return best, scores


def _staged(ranker: TreeRanker, x: FloatArray) -> FloatArray:
    """Each row's sum of the first k trees, k = 1..T (columns)."""
    if len(x) == 0:
        return np.zeros((0, len(ranker.trees)))
    out: FloatArray = np.cumsum(ranker.leaf_values(x, ranker.features), axis=1)
    return out

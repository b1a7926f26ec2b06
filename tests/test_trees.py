"""The boosted-trees candidate scorer: its data format, its numpy evaluator and its LightGBM fit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dualmem.control.scorers import ranker_from_json
from dualmem.control.trees import MAX_LEAVES, Tree
from dualmem.errors import ConfigError, InvalidInput
from dualmem.learn import LinearRanker, TreeRanker, default_ranker, load_ranker
from dualmem.learn.boost import TreeSettings, choose_trees, fit_trees, recall10

NAMES = ("a", "b", "c", "d")
LEAF = {"feature": [], "threshold": [], "left": [], "right": [], "leaf": [0.5]}


def _random_tree(rng: np.random.Generator, leaves: int, d: int) -> Tree:
    """A random tree of ``leaves`` leaves: split a random leaf ``leaves - 1`` times."""
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    holes: list[tuple[int, str]] = []  # (node, side) whose child is still a leaf
    for _ in range(leaves - 1):
        i = len(feature)
        feature.append(int(rng.integers(d)))
        threshold.append(float(rng.choice([rng.normal(), 0.0, 1.0])))
        left.append(-1)
        right.append(-1)
        if holes:
            node, side = holes.pop(int(rng.integers(len(holes))))
            (left if side == "l" else right)[node] = i
        holes += [(i, "l"), (i, "r")]
    leaf = [float(v) for v in rng.normal(size=leaves)]
    for k, (node, side) in enumerate(sorted(holes)):
        (left if side == "l" else right)[node] = -k - 1
    return Tree(tuple(feature), tuple(threshold), tuple(left), tuple(right), tuple(leaf))


def _ranker(seed: int, trees: int = 30) -> TreeRanker:
    rng = np.random.default_rng(seed)
    built = tuple(_random_tree(rng, int(rng.integers(1, MAX_LEAVES + 1)), len(NAMES)) for _ in range(trees))
    return TreeRanker(NAMES, built, scale=0.7, bias=-0.2, provenance={"data": "test"})


@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_tables_give_the_reference_walk(seed: int) -> None:
    ranker = _ranker(seed)
    rng = np.random.default_rng(100 + seed)
    # columns in another order, one extra column, thresholds hit exactly (<= goes left)
    names = ("x", "d", "b", "a", "c")
    m = rng.normal(size=(300, len(names)))
    m[:40, 1:] = rng.choice([0.0, 1.0], size=(40, 4))
    rows = m[:, [names.index(f) for f in NAMES]]
    want = np.array([sum(t.value(r) for t in ranker.trees) for r in rows])
    assert np.allclose(ranker.raw(m, names), want, rtol=0, atol=1e-12)
    assert np.allclose(ranker.logits(m, names), 0.7 * want - 0.2, atol=1e-12)
    s = ranker.score(m, names)
    assert ((s > 0) & (s < 1)).all()
    assert np.array_equal(np.argsort(s, kind="stable"), np.argsort(ranker.logits(m, names), kind="stable"))


def test_score_each_is_each_row_alone_at_every_size() -> None:
    ranker = _ranker(3, trees=200)
    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 7, 8, 9, 31, 257, 4097):
        m = rng.normal(size=(n, len(NAMES)))
        got = ranker.score_each(m, NAMES)
        want = [float(ranker.score(m[i][None, :], NAMES)[0]) for i in range(0, n, max(1, n // 40))]
        assert got[:: max(1, n // 40)].tolist() == want
    assert ranker.score_each(np.zeros((0, 4)), NAMES).shape == (0,)


def test_json_round_trip_and_loading_by_format(tmp_path: Path) -> None:
    ranker = _ranker(1)
    path = tmp_path / "t.json"
    ranker.save(path)
    back = load_ranker(path)
    assert isinstance(back, TreeRanker)
    assert back.to_json() == ranker.to_json()
    m = np.random.default_rng(0).normal(size=(50, 4))
    assert np.allclose(back.score(m, NAMES), ranker.score(m, NAMES), atol=1e-9)
    linear = LinearRanker(("a",), (1.0,), 0.0)
    linear.save(tmp_path / "l.json")
    assert load_ranker(tmp_path / "l.json") == linear
    assert ranker.with_provenance({"x": 1}).provenance == {"x": 1}


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([], "object"),
        ({"format": "dualmem.ranker/9"}, "unsupported format"),
        ({"format": "dualmem.trees/1", "features": "a", "trees": []}, "features"),
        ({"format": "dualmem.trees/1", "features": ["a"], "trees": {}}, "trees"),
        ({"format": "dualmem.trees/1", "features": ["a"], "trees": []}, "at least one tree"),
        ({"format": "dualmem.trees/1", "features": ["a", "a"], "trees": [LEAF]}, "distinct"),
        (
            {"format": "dualmem.trees/1", "features": ["a"], "trees": [{"feature": [0]}]},
            r"trees\[0\]\.threshold: Field required",
        ),
        (
            {"format": "dualmem.trees/1", "features": ["a"], "scale": "1", "trees": []},
            "scale: expected a number",
        ),
    ],
)
def test_bad_files_are_config_errors(data: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ranker_from_json(data)


def _tree(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "feature": [0],
        "threshold": [0.5],
        "left": [-1],
        "right": [-2],
        "leaf": [1, 2],
    }
    return {**base, **kw}


@pytest.mark.parametrize(
    ("tree", "match"),
    [
        (_tree(leaf=[1]), "needs 2 leaves"),
        (_tree(left=[0]), "reached twice"),  # a cycle back to the root
        (_tree(right=[-1]), "reached twice"),
        (_tree(right=[-3]), "out of range"),
        (_tree(left=[3]), "not one of"),
        (_tree(threshold=[float("nan")]), "finite"),
        (_tree(feature=[0.5]), r"feature\[0\]: Input should be a valid integer"),
        (_tree(feature=[7]), "outside"),
        (_tree(threshold=[]), "one length"),
    ],
)
def test_malformed_trees_are_refused(tree: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ranker_from_json({"format": "dualmem.trees/1", "features": ["a"], "trees": [tree]})


def test_a_tree_has_at_most_max_leaves() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigError, match="at most"):
        _random_tree(rng, MAX_LEAVES + 1, 2)
    with pytest.raises(ConfigError, match="ranker uses features"):
        _ranker(0).raw(np.zeros((1, 2)), ("a", "b"))


def _groups(seed: int, n: int = 60) -> list[tuple[np.ndarray, np.ndarray]]:
    """Queries whose one relevant candidate has a high ``a`` and ``b`` together (an interaction a
    linear scorer cannot express alone), among distractors high on one of them."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = rng.random((40, 4))
        x[:20, 0] += 1.0  # high a only
        x[20:, 1] += 1.0  # high b only
        y = np.zeros(40)
        g = int(rng.integers(40))
        x[g, :2] = 1.0 + rng.random(2) * 0.3
        y[g] = 1.0
        out.append((x, y))
    return out


def test_fit_learns_the_ordering_and_matches_lightgbm() -> None:
    import lightgbm as lgb

    train, test = _groups(0), _groups(1)
    ranker = fit_trees(train, NAMES, TreeSettings(trees=60, min_rows=10, threads=1))
    assert len(ranker.trees) == 60
    assert ranker.provenance["scorer"] == "trees"
    assert ranker.scale > 0
    trained = recall10([ranker.score(x, NAMES) for x, _ in test], test)
    linear_like = recall10([x[:, 0] + x[:, 1] for x, _ in test], test)
    assert trained > 0.9 > linear_like
    # the copied-out trees are LightGBM's model, to rounding
    x = np.vstack([g[0] for g in train])
    y = np.concatenate([g[1] for g in train]).astype(int)
    params = {"objective": "lambdarank", "label_gain": [0.0, 1.0], "num_leaves": 7, "learning_rate": 0.05,
              "min_data_in_leaf": 10, "seed": 0, "deterministic": True, "force_row_wise": True,
              "num_threads": 1, "verbosity": -1}  # fmt: skip
    booster = lgb.train(params, lgb.Dataset(x, label=y, group=[40] * len(train)), num_boost_round=60)
    assert np.allclose(ranker.raw(x, NAMES), booster.predict(x), atol=1e-9)
    again = fit_trees(train, NAMES, TreeSettings(trees=60, min_rows=10, threads=1))
    assert again.to_json() == ranker.to_json()


def test_choose_trees_scores_every_count_by_held_out_folds() -> None:
    folds = {"f0": _groups(2, 30), "f1": _groups(3, 30), "f2": _groups(4, 30)}
    best, scores = choose_trees(folds, NAMES, grid=(5, 40), settings=TreeSettings(min_rows=10, threads=1))
    assert set(scores) == {5, 40}
    assert best == max(scores, key=lambda k: (scores[k], -k))
    assert all(0 <= v <= 1 for v in scores.values())
    assert choose_trees({"one": _groups(2, 5)}, NAMES, grid=(5, 40, 80)) == (40, {})
    with pytest.raises(InvalidInput):
        choose_trees(folds, NAMES, grid=())


def test_bad_training_input_is_a_typed_error() -> None:
    x = np.zeros((5, 4))
    with pytest.raises(InvalidInput, match="both"):
        fit_trees([(x, np.zeros(5))], NAMES)
    with pytest.raises(InvalidInput, match="finite"):
        fit_trees([(np.full((5, 4), np.nan), np.array([1.0, 0, 0, 0, 0]))], NAMES)
    with pytest.raises(InvalidInput, match="no candidates"):
        fit_trees([(np.zeros((0, 4)), np.zeros(0))], NAMES)
    with pytest.raises(InvalidInput):
        TreeSettings(leaves=MAX_LEAVES + 1)


def test_the_packaged_scorer_is_trees_over_pool_features() -> None:
    from dualmem.read.pool import FEATURES, POOL_VERSION

    r = default_ranker()
    assert isinstance(r, TreeRanker)
    assert set(r.features) <= set(FEATURES)
    # refitted whenever a feature changes meaning: a stale scorer reads columns it was not fitted on
    assert r.provenance["pool_version"] == POOL_VERSION
    assert r.provenance["scorer"] == "trees"
    assert r.provenance["trees"] == len(r.trees)
    assert json.dumps(r.to_json())

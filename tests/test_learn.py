"""The learned scorer: numpy logistic fit, the weights file, pure-numpy inference."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dualmem.errors import ConfigError, InvalidInput
from dualmem.learn import LinearRanker, default_ranker, fit_logistic
from dualmem.read.pool import FEATURES


def _data(seed: int = 0, n: int = 2000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    true = np.array([2.0, -1.0, 0.0])
    y = (x @ true - 1.5 + rng.logistic(size=n) > 0).astype(float)
    return x, y, true


def test_fit_recovers_the_direction_of_the_true_weights() -> None:
    x, y, true = _data()
    fit = fit_logistic(x, y, l2=0.1, balance=False)
    cos = fit.weights @ true / np.linalg.norm(fit.weights) / np.linalg.norm(true)
    assert cos > 0.99
    assert abs(fit.weights[2]) < 0.2
    assert fit.iterations < 100


def test_fit_is_deterministic_and_penalty_shrinks() -> None:
    x, y, _ = _data(1)
    a, b = fit_logistic(x, y, l2=1.0), fit_logistic(x, y, l2=1.0)
    assert np.array_equal(a.weights, b.weights)
    assert a.bias == b.bias
    strong = fit_logistic(x, y, l2=1e5)
    assert np.linalg.norm(strong.weights) < np.linalg.norm(a.weights) / 5


def test_soft_targets_are_accepted() -> None:
    x, y, _ = _data(2)
    soft = 0.1 + 0.8 * y
    fit = fit_logistic(x, soft)
    assert fit.weights[0] > 0 > fit.weights[1]


@pytest.mark.parametrize(
    ("x", "y"),
    [
        (np.zeros((3, 2)), np.zeros(3)),  # no positives
        (np.zeros((3, 2)), np.array([0.0, 1.0])),  # shape mismatch
        (np.zeros((2, 2)), np.array([0.0, 2.0])),  # target out of range
        (np.array([[np.nan, 0.0], [1.0, 1.0]]), np.array([0.0, 1.0])),
    ],
)
def test_bad_training_data_is_a_typed_error(x: np.ndarray, y: np.ndarray) -> None:
    with pytest.raises(InvalidInput):
        fit_logistic(x, y)


def test_ranker_round_trips_and_scores_by_feature_name(tmp_path: Path) -> None:
    r = LinearRanker(("b", "a"), (2.0, -1.0), 0.5, {"data": "x"})
    path = tmp_path / "w.json"
    r.save(path)
    back = LinearRanker.from_file(path)
    assert back == r
    m = np.array([[1.0, 0.0, 3.0], [0.0, 1.0, 3.0]])  # columns a, b, c
    z = back.logits(m, ("a", "b", "c"))
    assert z.tolist() == [-0.5, 2.5]
    s = back.score(m, ("a", "b", "c"))
    assert s[1] > s[0]
    assert 0 < s[0] < 1


def test_ranker_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="format"):
        LinearRanker.from_json({"format": "x", "features": {"a": 1}})
    with pytest.raises(ConfigError, match=r"features\.a: expected a number, got '1'"):
        LinearRanker.from_json({"format": "dualmem.ranker/1", "features": {"a": "1"}})
    with pytest.raises(ConfigError, match="features: Dictionary should have at least 1"):
        LinearRanker.from_json({"format": "dualmem.ranker/1", "features": {}})
    with pytest.raises(ConfigError, match="does not compute"):
        LinearRanker(("zzz",), (1.0,), 0.0).logits(np.zeros((1, 1)), ("a",))
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot read"):
        LinearRanker.from_file(bad)


def test_the_packaged_ranker_uses_pool_features_and_says_where_it_came_from() -> None:
    r = default_ranker()
    assert set(r.features) <= set(FEATURES)
    prov = r.provenance
    assert prov["command"].startswith("dualmem ")
    assert " calibrate --data " in prov["command"]
    assert prov["mode"] == "labels"
    assert prov["queries"] > 500
    data = json.dumps(prov["data"])
    assert "locomo" in data

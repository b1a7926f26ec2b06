"""The search side's batched arithmetic gives exactly what the per-item code gave (round six):
the builtin decider's linear logit, the pool's best-first order and the superseded demotion of the
final top-K. A search must return the same scores to the last bit (``bench/search_same.py``)."""

from __future__ import annotations

import math
import random

import numpy as np

from dualmem.control.builtin import LinearWeights, default_weights
from dualmem.read import scoring
from dualmem.read.loop import _best_first


def _loop_logit(linear: LinearWeights, features: dict[str, float]) -> float:
    total = linear.bias
    for name, w in linear.weights:
        total += w * features[name]
    return total


def test_the_logit_adds_left_to_right_as_the_loop_did() -> None:
    rng = random.Random(3)
    weights = default_weights()
    for linear in weights.decisions.values():
        names = [name for name, _ in linear.weights]
        for _ in range(200):
            features = {name: rng.choice([0.0, 1.0, rng.random(), rng.random() * 1e-9]) for name in names}
            assert linear.logit(features) == _loop_logit(linear, features)
    # an order where float addition is not associative
    tricky = LinearWeights(1e16, (("a", 1.0), ("b", 1.0), ("c", -1e16)))
    assert tricky.logit({"a": 1.0, "b": 1.0, "c": 1.0}) == _loop_logit(tricky, {"a": 1.0, "b": 1.0, "c": 1.0})


def test_best_first_is_sorted_by_score_then_row() -> None:
    rng = np.random.default_rng(5)
    for n in (0, 1, 7, 580):
        scores = rng.choice([0.1, 0.5, 0.5000000000000001, 0.9, 0.0], size=n).astype(np.float64)
        want = sorted(range(n), key=lambda r: (-scores[r], r))
        assert _best_first(scores).tolist() == want


def test_the_vectorised_demotion_is_demote_superseded() -> None:
    rng = np.random.default_rng(9)
    raw = rng.random(500)
    superseded = rng.random(500) < 0.3
    for factor in (0.5, 0.35, 1 / 3, math.pi / 10):
        got = np.where(superseded, raw * factor, raw).tolist()
        want = [
            scoring.demote_superseded(float(s), superseded=bool(x), asks_past=False, factor=factor)
            for s, x in zip(raw, superseded, strict=True)
        ]
        assert got == want

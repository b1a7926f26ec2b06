"""The search side's batched arithmetic gives exactly what the per-item code gave (round six):
the pool's best-first order and the superseded demotion of the final top-K. A search must return
the same scores to the last bit (``bench/search_same.py``)."""

from __future__ import annotations

import math

import numpy as np

from dualmem.read import scoring
from dualmem.read.loop import _best_first


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

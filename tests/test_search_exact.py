"""The search side's batched arithmetic gives exactly what the per-item code gave (round six):
the pool's best-first order and the learned head's scores of a round's candidates. A search must
return the same scores to the last bit (``bench/search_same.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from dualmem import Memory
from dualmem.control.builtin import BuiltinController
from dualmem.control.ranker import LinearRanker
from dualmem.control.scorers import default_ranker
from dualmem.embed import Embedder
from dualmem.plane import SQLiteStore
from dualmem.read.loop import _best_first
from dualmem.read.pool import FEATURES
from test_pool_features import QUERIES, _observations


def test_best_first_is_sorted_by_score_then_row() -> None:
    rng = np.random.default_rng(5)
    for n in (0, 1, 7, 580):
        scores = rng.choice([0.1, 0.5, 0.5000000000000001, 0.9, 0.0], size=n).astype(np.float64)
        want = sorted(range(n), key=lambda r: (-scores[r], r))
        assert _best_first(scores).tolist() == want


def _linear() -> LinearRanker:
    w = np.random.default_rng(3).normal(size=len(FEATURES)) * 3
    return LinearRanker(FEATURES, tuple(float(v) for v in w), -1.7)


@pytest.mark.parametrize("which", ["packaged", "linear"])
def test_score_each_is_score_of_each_row_alone(which: str) -> None:
    """The builtin decider scores a round's candidates with the learned head in one call
    (``score_each``); each value must be what the one-row ``score`` gave (round six's per-question
    call), to the last bit, at every batch size (SIMD lanes and tails of ``tanh`` included)."""
    ranker = default_ranker() if which == "packaged" else _linear()
    names = FEATURES
    rng = np.random.default_rng(11)
    for n in (1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 30, 31, 64, 257):
        matrix = rng.random((n, len(names))) * rng.choice([1.0, 3.0, 1e-3], size=(n, 1))
        matrix[:, names.index("short")] = rng.random(n) < 0.5
        got = ranker.score_each(matrix, names).tolist()
        want = [float(ranker.score(matrix[i][None, :], names)[0]) for i in range(n)]
        assert got == want
    assert ranker.score_each(np.zeros((0, len(names))), names).shape == (0,)


def test_the_decider_scores_real_rounds_as_one_row_calls(
    hashing: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On real searches (the trace shows the learned relevance only to 4 decimals, so
    ``bench/search_same.py`` cannot see its last bits): every batch the builtin decider scores
    equals the one-row calls round six made."""
    batches: list[int] = []
    kind = type(default_ranker())  # the packaged scorer's class (trees, or a linear one)
    each = kind.score_each

    def checked(self: Any, matrix: npt.NDArray[np.float64], names: Sequence[str]) -> Any:
        got = each(self, matrix, names)
        assert got.tolist() == [float(self.score(matrix[i][None, :], names)[0]) for i in range(len(matrix))]
        batches.append(len(matrix))
        return got

    monkeypatch.setattr(kind, "score_each", checked)
    with Memory(SQLiteStore.open(tmp_path / "m.db"), hashing, BuiltinController()) as mem:
        mem.add_many(_observations(), user="u")
        for query in QUERIES:
            mem.search(query, user="u", k=10)
    assert batches
    assert max(batches) > 2

"""No recency prior in the learned scorer (issue 46, item 4): only a version relation may put a newer
memory first.

- the trees are fitted with the score rising with every relevance feature (``learn.boost.RELEVANCE``,
  LightGBM's monotone constraints, the default): data that reward a middle band of a relevance
  feature cannot teach the scorer to prefer a candidate that matches the query less;
- no pool feature says when a memory was written: the same notes observed at other times give the
  same feature rows, so whatever the trees learn, it is not "newer is better".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dualmem import Memory
from dualmem.embed import Embedder
from dualmem.learn.boost import RELEVANCE, TreeSettings, fit_trees, monotone
from dualmem.read.pool import FEATURES, PoolSettings, build_pool
from dualmem.types import Tenant


def _band_groups(seed: int, n: int = 80) -> list[tuple[np.ndarray, np.ndarray]]:
    """Queries whose relevant candidate has a middling ``vec`` (0.5-0.7) while the best ``vec`` of
    each pool belongs to a distractor: what a recency-like confound teaches an unconstrained fit."""
    rng = np.random.default_rng(seed)
    col = FEATURES.index("vec")
    out = []
    for _ in range(n):
        x = rng.random((30, len(FEATURES))) * 0.3
        x[:, col] = rng.random(30) * 0.5
        x[:3, col] = 0.85 + rng.random(3) * 0.15  # the best matches: never relevant here
        y = np.zeros(30)
        g = 3 + int(rng.integers(27))
        x[g, col] = 0.5 + rng.random() * 0.2
        y[g] = 1.0
        out.append((x, y))
    return out


def _vec_curve(ranker_score: object) -> np.ndarray:
    grid = np.linspace(0.0, 1.0, 41)
    x = np.full((len(grid), len(FEATURES)), 0.15)
    x[:, FEATURES.index("vec")] = grid
    return np.asarray(ranker_score(x, FEATURES))  # type: ignore[operator]


def test_the_score_never_falls_as_a_relevance_feature_rises() -> None:
    groups = _band_groups(0)
    constrained = fit_trees(groups, FEATURES, TreeSettings(trees=40, min_rows=10, threads=1))
    free = fit_trees(groups, FEATURES, TreeSettings(trees=40, min_rows=10, threads=1, increasing=()))
    assert constrained.provenance["increasing"] == [f for f in FEATURES if f in RELEVANCE]
    assert "increasing" not in free.provenance
    c, f = _vec_curve(constrained.raw), _vec_curve(free.raw)
    assert np.all(np.diff(c) >= -1e-12)  # more like the query never scores lower
    assert np.any(np.diff(f) < -1e-6)  # without the constraint the fit learns to prefer a worse match


def test_the_relevance_features_are_pool_features() -> None:
    assert set(RELEVANCE) <= set(FEATURES)
    assert monotone(TreeSettings(), ("a", "vec", "lex")) == ("vec", "lex")
    assert monotone(TreeSettings(increasing=()), FEATURES) == ()


NOTES = [
    "User's dentist is Dr. Rhys at Shore Dental.",
    "User drives a silver Ford Fiesta.",
    "User banks with Nationwide.",
    "User trains at PureGym Leith on weekday mornings.",
    "User's partner Callum works as a nurse.",
    "User is learning Spanish on Duolingo.",
]


@pytest.mark.parametrize("query", ["Who is the user's dentist?", "Where does the user work out?"])
def test_pool_features_do_not_depend_on_when_a_memory_was_observed(
    hashing: Embedder, tmp_path: Path, query: str
) -> None:
    """The same notes, written in the same order, observed at other times (the oldest made the
    newest, months apart): every candidate's feature row is the same."""
    early = [f"2024-01-{i + 1:02d}T10:00:00Z" for i in range(len(NOTES))]
    late = [f"2025-{12 - i:02d}-01T10:00:00Z" for i in range(len(NOTES))]
    rows = []
    for name, times in (("a", early), ("b", late)):
        with Memory.open(tmp_path / f"{name}.db", embedder=hashing, answerer=None) as m:
            s = m.scope("u")
            for text, at in zip(NOTES, times, strict=True):
                s.add(text, speaker="agent", at=at)
            pool = build_pool(m.store, m.embedder, query, Tenant("u"), PoolSettings(50, 2))
            text_of = {n.id: n.content for n in m.nodes(user="u")}
            rows.append({text_of[i]: tuple(pool.features[j]) for j, i in enumerate(pool.ids)})
    assert rows[0].keys() == rows[1].keys()
    for text in rows[0]:
        assert rows[0][text] == pytest.approx(rows[1][text]), text

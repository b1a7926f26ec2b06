"""Routing arithmetic (eq. 12-16): property tests."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from dualmem.read.route import active_views, allocate, depth, rrf

VIEWS = ["semantic", "temporal", "causal", "entity"]
needs = st.fixed_dictionaries({g: st.floats(0.0, 1.0) for g in VIEWS})


def test_active_views_threshold_and_order() -> None:
    need = {"semantic": 0.8, "temporal": 0.1, "causal": 0.05, "entity": 0.3}
    assert active_views(need, 0.10) == ["semantic", "entity", "temporal"]


@given(needs, st.integers(0, 200), st.integers(0, 5), st.floats(0.25, 3.0))
def test_allocation_sums_to_budget_with_minimum(
    need: dict[str, float], budget: int, m: int, gamma: float
) -> None:
    active = active_views(need, 0.1)
    alloc = allocate(need, active, budget=budget, minimum=m, gamma=gamma)
    assert set(alloc) == set(active)
    if active:
        assert sum(alloc.values()) == budget
        if budget >= m * len(active):
            assert all(v >= m for v in alloc.values())


@given(needs, st.sampled_from(VIEWS), st.floats(0.0, 0.5))
def test_allocation_monotone_in_need(need: dict[str, float], view: str, bump: float) -> None:
    need = {g: max(p, 0.1) for g, p in need.items()}  # all active
    active = list(need)
    before = allocate(need, active, budget=80, minimum=1, gamma=1.0)[view]
    higher = dict(need, **{view: min(1.0, need[view] + bump)})
    after = allocate(higher, active, budget=80, minimum=1, gamma=1.0)[view]
    assert after >= before


def test_allocation_paper_example() -> None:
    need = {"semantic": 0.5, "temporal": 0.9, "causal": 0.9, "entity": 0.05}
    alloc = allocate(need, active_views(need, 0.10), budget=80, minimum=1, gamma=1.0)
    # rest 77 split 0.5:0.9:0.9 -> 16.74, 30.13, 30.13; one left over goes to the largest remainder
    assert alloc == {"temporal": 31, "causal": 31, "semantic": 18}
    assert sum(alloc.values()) == 80


@given(st.floats(0.0, 1.0), st.integers(1, 12))
def test_depth_equation(h: float, dmax: int) -> None:
    assert depth(h, dmax) == min(dmax, max(1, math.ceil(dmax * h)))
    assert 1 <= depth(h, dmax) <= dmax


def test_rrf_kappa_60() -> None:
    fused = dict(rrf([["a", "b", "c"], ["b", "d"]], 60))
    assert fused["b"] == 1 / 62 + 1 / 61
    assert fused["a"] == 1 / 61
    assert next(iter(dict(rrf([["a", "b", "c"], ["b", "d"]], 60)))) == "b"


@given(st.lists(st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8), max_size=4))
def test_rrf_scores_sorted_and_complete(rankings: list[list[str]]) -> None:
    fused = rrf(rankings, 60)
    assert [s for _, s in fused] == sorted((s for _, s in fused), reverse=True)
    assert {i for i, _ in fused} == {i for r in rankings for i in r}

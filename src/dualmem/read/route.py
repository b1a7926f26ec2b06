"""Routing arithmetic of paper §3.3: active views (eq. 12), budgets (eq. 13-14), depth (eq. 15).

Pure functions, property-tested.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

__all__ = ["active_views", "allocate", "depth", "rrf"]


def active_views(need: Mapping[str, float], theta: float) -> list[str]:
    """Views whose need score reaches ``theta``, highest first (ties by name)."""
    return sorted((g for g, p in need.items() if p >= theta), key=lambda g: (-need[g], g))


def allocate(
    need: Mapping[str, float], active: list[str], *, budget: int, minimum: int, gamma: float
) -> dict[str, int]:
    """Split ``budget`` over ``active`` views: ``minimum`` each, the rest in proportion to p^gamma.

    Largest-remainder rounding, so the allocations sum to exactly ``budget`` whenever
    ``budget >= minimum * len(active)``; otherwise the budget is shared as evenly as possible.
    """
    if not active:
        return {}
    if budget < minimum * len(active):
        base, extra = divmod(max(budget, 0), len(active))
        return {g: base + (1 if i < extra else 0) for i, g in enumerate(active)}
    weights = {g: max(need[g], 0.0) ** gamma for g in active}
    total = sum(weights.values())
    rest = budget - minimum * len(active)
    if total <= 0:
        weights = dict.fromkeys(active, 1.0)
        total = float(len(active))
    quotas = {g: rest * weights[g] / total for g in active}
    floors = {g: math.floor(q) for g, q in quotas.items()}
    left = rest - sum(floors.values())
    order = sorted(active, key=lambda g: (-(quotas[g] - floors[g]), -weights[g], g))
    for g in order[:left]:
        floors[g] += 1
    return {g: minimum + floors[g] for g in active}


def depth(multi_hop: float, max_depth: int) -> int:
    """D(q) = min(D_max, max(1, ceil(D_max * h)))."""
    return min(max_depth, max(1, math.ceil(max_depth * min(max(multi_hop, 0.0), 1.0))))


def fused_scores(rankings: Iterable[Iterable[str]], kappa: int = 60) -> dict[str, float]:
    """Reciprocal-rank fusion (eq. 16): each item's sum of 1 / (kappa + rank), ranks from 1, in the
    order the items were first seen (a stable sort on the score keeps that order among ties)."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (kappa + rank)
    return scores


def rrf(rankings: list[list[str]], kappa: int = 60) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion (eq. 16): sum of 1 / (kappa + rank), ranks from 1; best first."""
    return sorted(fused_scores(rankings, kappa).items(), key=lambda kv: (-kv[1], kv[0]))

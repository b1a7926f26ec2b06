"""Graph reach as a learned feature: which candidates the relation views link to the top anchors.

After the pool is ranked (:mod:`dualmem.read.pool`, the learned relevance head), each candidate
gets one feature per view, ``via_<view>``: the strongest edge of that view from one of the top
``anchors`` candidates to it, times that anchor's relevance relative to the best (0 when no such
edge). The reach head (:class:`dualmem.control.ranker.LinearRanker` over ``REACH_FEATURES``: the
relevance logit plus the ``via_*`` columns) re-scores the pool with them. Its weights are fitted
from data (``dualmem calibrate``; cross-validated in ``research/cv.py``), so a view whose edges do
not point at answers gets a weight near zero instead of a hand-set expansion prior.

Only edges between pool candidates count: the pool already holds the anchors' session
neighbours, and on the LoCoMo dev conversations almost every missed answer a view's edge reaches
from the top anchors is in the pool already.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from dualmem.plane.base import Store
from dualmem.types import VIEWS, View

__all__ = ["REACH_FEATURES", "Links", "reach_features", "reach_links", "top_rows"]

#: the reach head's columns: the relevance head's logit, then one reach feature per view
REACH_FEATURES: tuple[str, ...] = ("logit", *(f"via_{v}" for v in VIEWS))

#: per view, the pool rows an edge joins (both directions) and its weight
Links = Mapping[str, tuple[tuple[int, int, float], ...]]


def reach_links(store: Store, ids: Sequence[str], rows: Collection[int], views: Collection[View]) -> Links:
    """Edges of the ``views`` from the candidates at ``rows`` of ``ids`` to other candidates."""
    index = {node_id: i for i, node_id in enumerate(ids)}
    out: dict[str, list[tuple[int, int, float]]] = {str(v): [] for v in views}
    if not views:
        return {}
    for r in rows:
        source = ids[r]
        for edge in store.edges_of(source, list(views)):
            other = index.get(edge.other(source))
            if other is not None and other != r:
                out[edge.view].append((r, other, float(edge.weight)))
    return {v: tuple(e) for v, e in out.items()}


def top_rows(logits: npt.NDArray[np.float64], anchors: int) -> list[int]:
    """The ``anchors`` best rows by logit (ties by position)."""
    return [int(i) for i in np.lexsort((np.arange(len(logits)), -logits))[:anchors]]


def reach_features(
    logits: npt.NDArray[np.float64], links: Links, *, anchors: int = 10
) -> npt.NDArray[np.float64]:
    """The reach head's matrix (columns ``REACH_FEATURES``) of a pool with relevance ``logits``.

    ``links`` may hold edges from any rows; only those from the top ``anchors`` rows count.
    """
    n = len(logits)
    out = np.zeros((n, len(REACH_FEATURES)))
    out[:, 0] = logits
    if n == 0:
        return out
    top = top_rows(logits, anchors)
    prob = 0.5 * (1.0 + np.tanh(0.5 * logits))
    best = float(prob[top[0]]) or 1.0
    reach = {r: float(prob[r]) / best for r in top}
    for col, view in enumerate(VIEWS, start=1):
        for source, target, weight in links.get(view, ()):
            strength = reach.get(source)
            if strength is not None:
                out[target, col] = max(out[target, col], weight * strength)
    return out

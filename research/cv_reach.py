"""The relation views as learned features under CV: the reach head and its per-view ablations.

Part of :mod:`research.cv` (``dualmem-pool +reach ...`` systems); see
:mod:`dualmem.read.reach` for the features.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dualmem.bench.metrics import mrr, recall_at_k
from dualmem.control.ranker import LinearRanker
from dualmem.learn.fit import fit_logistic
from dualmem.read.pool import FEATURES
from dualmem.read.reach import REACH_FEATURES, Links, reach_features
from dualmem.types import VIEWS

if TYPE_CHECKING:
    from research.pools import QueryPool

__all__ = ["REACH_ANCHORS", "fit_reach", "multi_hop_need", "multi_hop_threshold", "reach_systems"]

Record = Callable[[str, str, "QueryPool", Sequence[str]], dict[str, Any]]

#: top candidates whose view edges give the reach features (half the beam W = 10)
REACH_ANCHORS = 5


def _reach_rows(
    ranker: LinearRanker, pools: Sequence[QueryPool], links: Sequence[Links]
) -> list[tuple[QueryPool, npt.NDArray[np.float64]]]:
    out = []
    for p, link in zip(pools, links, strict=True):
        if p.category != 5 and p.evidence and len(p.turn_ids):
            out.append((p, reach_features(ranker.logits(p.features, FEATURES), link, anchors=REACH_ANCHORS)))
    return out


def fit_reach(
    rows: Sequence[tuple[QueryPool, npt.NDArray[np.float64]]], drop: Sequence[str] = ()
) -> LinearRanker:
    """The reach head: a logistic re-scorer over the relevance logit and the views' reach features."""
    cols = [i for i, f in enumerate(REACH_FEATURES) if f not in drop]
    fit = fit_logistic(np.vstack([x[:, cols] for _, x in rows]), np.concatenate([p.labels for p, _ in rows]))
    names = tuple(REACH_FEATURES[i] for i in cols)
    return LinearRanker(names, tuple(float(w) for w in fit.weights), fit.bias, {"l2": 1.0})


def _reranked(head: LinearRanker | None, p: QueryPool, x: npt.NDArray[np.float64]) -> tuple[str, ...]:
    s = x[:, 0] if head is None else head.logits(x, REACH_FEATURES)
    return tuple(p.turn_ids[i] for i in np.lexsort((np.arange(len(s)), -s)))


def _route_row(question: str) -> npt.NDArray[np.float64]:
    from dualmem.control.builtin_features import GROUPS, Features
    from dualmem.control.states import RoutingState, WireFeatures

    state = RoutingState(question)
    f = Features(state, WireFeatures.of(state)).get("route", None)
    return np.array([f[n] for n in sorted(GROUPS["route"])])


def reach_systems(
    ranker: LinearRanker,
    held: str,
    pools: Mapping[str, list[QueryPool]],
    links: Mapping[str, list[Links]],
    record: Record,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Reach head with every view, without each view in turn, and routed: applied only where a
    routing head over the question's form (the builtin's route features) predicts that it helps
    (labels: the head raised or lowered MRR on a training question). All fitted on the training folds."""
    train = [r for c in pools if c != held for r in _reach_rows(ranker, pools[c], links[c])]
    test = _reach_rows(ranker, pools[held], links[held])
    heads = {"dualmem-pool +reach": fit_reach(train)}
    for view in VIEWS:
        heads[f"dualmem-pool +reach no-{view}"] = fit_reach(train, (f"via_{view}",))
    full = heads["dualmem-pool +reach"]
    xs, ys = [], []
    for p, x in train:
        gain = (mrr(_reranked(full, p, x), p.evidence) or 0.0) - (
            mrr(_reranked(None, p, x), p.evidence) or 0.0
        )
        if abs(gain) > 1e-9:
            xs.append(_route_row(p.question))
            ys.append(float(gain > 0))
    # the routing head; without both outcomes among the training questions it never routes
    route = fit_logistic(np.array(xs), np.array(ys), l2=1.0, balance=False) if 0 < sum(ys) < len(ys) else None
    theta = multi_hop_threshold(full, train)
    rows = []
    for p, x in test:
        for name, head in heads.items():
            rows.append(record(name, held, p, _reranked(head, p, x)))
        use = route is not None and float(_route_row(p.question) @ route.weights + route.bias) > 0
        rows.append(record("dualmem-pool +reach routed", held, p, _reranked(full if use else None, p, x)))
        hop = theta is not None and multi_hop_need(p.question) >= theta
        rows.append(record("dualmem-pool +reach multi-hop", held, p, _reranked(full if hop else None, p, x)))
    info = {
        "reach": dict(zip(full.features, full.weights, strict=True)),
        "route": dict(zip(_route_names(), route.weights.tolist(), strict=True)) if route else None,
        "route_examples": len(ys),
        "multi_hop_theta": theta,
    }
    return rows, info


@cache
def multi_hop_need(question: str) -> float:
    """The builtin System One's route head ``multi_hop_need`` for ``question`` (what sets D(q))."""
    from dualmem.control import catalog
    from dualmem.control.builtin import BuiltinController
    from dualmem.control.questions import Batch
    from dualmem.control.states import RoutingState

    batch = Batch.of(RoutingState(question), catalog.routing_questions(), "routing")
    return BuiltinController().decide(batch).noul("multi_hop_need")


def _quality(head: LinearRanker | None, p: QueryPool, x: npt.NDArray[np.float64]) -> tuple[float, float]:
    ranked = _reranked(head, p, x)
    return recall_at_k(ranked, p.evidence, 10) or 0.0, mrr(ranked, p.evidence) or 0.0


def multi_hop_threshold(
    head: LinearRanker, train: Sequence[tuple[QueryPool, npt.NDArray[np.float64]]]
) -> float | None:
    """The ``multi_hop_need`` at or above which the reach head re-scores a question: the value of
    the training questions' own needs (or never, ``None``) with the best mean training R@10, then MRR."""
    needs = [multi_hop_need(p.question) for p, _ in train]
    base = [_quality(None, p, x) for p, x in train]
    reach = [_quality(head, p, x) for p, x in train]
    best: tuple[float, float, float | None] = (*np.mean(base, axis=0).tolist(), None)
    for theta in sorted(set(needs)):
        picked = [r if n >= theta else b for n, b, r in zip(needs, base, reach, strict=True)]
        r10, m = np.mean(picked, axis=0).tolist()
        if (r10, m) > best[:2]:
            best = (r10, m, float(theta))
    return best[2]


def _route_names() -> list[str]:
    from dualmem.control.builtin_features import GROUPS

    return sorted(GROUPS["route"])

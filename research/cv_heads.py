"""The learned stop and routing heads under CV: AUC against the hand-set heads, and the read loop
with fold-fitted heads (what was found: docs/decisions/005-learned-heads.md).

Per fold the relevance head is fitted on the training conversations as in
:func:`research.cv.run_cv` (same L2 choice, so the same weights), ranks every pool, and the
heads are fitted on the training conversations' examples only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dualmem.control.builtin import BuiltinController, default_weights
from dualmem.control.ranker import LinearRanker
from dualmem.learn.heads import (
    HEAD_GROUPS,
    HeadExample,
    LabelledPool,
    LearnedHeads,
    fit_heads,
    head_example,
    learned_weights,
)
from dualmem.memory import Memory
from dualmem.read.pool import FEATURES
from dualmem.read.reach import Links
from dualmem.types import Node
from research.cv import (
    K_VALUES,
    CVConfig,
    QueryPool,
    _choose_l2,
    _embedder,
    _rate,
    _record,
    fit_ranker,
)

__all__ = ["fitted_heads", "head_examples", "heads_cv", "heads_search"]


def _auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """Area under the ROC curve (ties count half); ``None`` without both outcomes."""
    s, y = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=bool)
    pos, neg = s[y], s[~y]
    if not len(pos) or not len(neg):
        return None
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater) / (len(pos) * len(neg))


def head_examples(
    ranker: LinearRanker,
    conv: str,
    pools: Sequence[QueryPool],
    links: Sequence[Links],
    nodes: Mapping[str, Node],
    *,
    k: int = 10,
) -> list[HeadExample]:
    """The heads' examples of one conversation's labelled questions, ranked by ``ranker``."""
    vec = FEATURES.index("vec") if "vec" in FEATURES else None
    out = []
    for p, link in zip(pools, links, strict=True):
        if p.category == 5 or not p.evidence or not all(t in nodes for t in p.turn_ids):
            continue
        gold = {i for i, t in enumerate(p.turn_ids) if t in set(p.evidence)}
        cos = p.features[:, vec] if vec is not None else np.zeros(len(p.turn_ids))
        pool = LabelledPool(conv, p.question, tuple(nodes[t] for t in p.turn_ids), cos, frozenset(gold), link)
        out.append(head_example(pool, ranker.logits(p.features, FEATURES), k=k))
    return out


def _turn_nodes(path: Path, conv: str, embedder: str) -> dict[str, Node]:
    with Memory.open(path, embedder=_embedder(embedder), answerer=None) as mem:
        return {n.turn_id: n for n in mem.nodes(user=conv) if n.turn_id}


def heads_cv(
    cfg: CVConfig,
    pools: Mapping[str, list[QueryPool]],
    links: Mapping[str, list[Links]],
    paths: Mapping[str, Path],
) -> dict[str, dict[str, Any]]:
    """Leave-one-conversation-out AUC of each learned head against the hand-set one, per fold.

    Per fold: the relevance head is fitted on the training conversations, ranks every pool, the
    stop and routing heads are fitted on the training conversations' examples and both heads score
    the held-out conversation's. A head the training data does not support keeps the hand-set one."""
    nodes = {c: _turn_nodes(paths[c], c, cfg.embedder) for c in pools}
    hand = default_weights()
    out: dict[str, dict[str, Any]] = {}
    for held in pools:
        train = {c: ps for c, ps in pools.items() if c != held}
        ranker = fit_ranker([p for ps in train.values() for p in ps], l2=_choose_l2(train, (), False))
        ex = {c: head_examples(ranker, c, pools[c], links[c], nodes[c]) for c in pools}
        heads = fit_heads([e for c in train for e in ex[c]])
        fold: dict[str, Any] = {}
        for key, group in HEAD_GROUPS.items():
            test = ex[held]
            labels = [e.targets[key] for e in test]
            learned = heads.decisions.get(key)
            fold[key] = {
                "positive_rate": _rate(labels),
                "handset_auc": _auc([hand.decisions[key].logit(e.features[group]) for e in test], labels),
                "learned_auc": _auc([learned.logit(e.features[group]) for e in test], labels)
                if learned is not None
                else None,
                "unsupported": heads.unsupported.get(key),
            }
        out[held] = fold
    return out


def _search(
    system: str,
    held: str,
    path: Path,
    controller: BuiltinController,
    test: Sequence[QueryPool],
    embedder: str,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from research.builds import views_profile

    rows, ms, calls, rounds = [], [], [], []
    stops: dict[str, int] = {}
    with Memory.open(
        path, embedder=_embedder(embedder), controller=controller, answerer=None, profile=views_profile()
    ) as mem:
        for p in test:
            started = time.perf_counter()
            found = mem.search(p.question, user=p.conversation, k=max(K_VALUES))
            ms.append(1000 * (time.perf_counter() - started))
            rows.append(_record(system, held, p, tuple(e.node.turn_id or e.node.id for e in found.evidence)))
            calls.append(found.trace.controller_calls)
            rounds.append(max((r.round for r in found.trace.rounds), default=0))
            stops[found.trace.stop_reason] = stops.get(found.trace.stop_reason, 0) + 1
    return rows, {"ms": ms, "calls": calls, "depth": rounds, "stops": stops}


def heads_search(
    cfg: CVConfig,
    pools: Mapping[str, list[QueryPool]],
    links: Mapping[str, list[Links]],
    paths: Mapping[str, Path],
    *,
    limit: int | None = None,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The read loop (``Memory.search``, builtin profile) on each held-out conversation's first
    ``limit`` labelled questions, with the fold's relevance head and the hand-set stop/routing heads
    (``dualmem``) or the fold-fitted ones (``dualmem +heads``)."""
    nodes = {c: _turn_nodes(paths[c], c, cfg.embedder) for c in pools}
    rows: list[dict[str, Any]] = []
    stats: dict[str, dict[str, Any]] = {}
    for held in pools:
        train = {c: ps for c, ps in pools.items() if c != held}
        ranker = fit_ranker([p for ps in train.values() for p in ps], l2=_choose_l2(train, (), False))
        heads = fit_heads([e for c in train for e in head_examples(ranker, c, pools[c], links[c], nodes[c])])
        test = [p for p in pools[held] if p.category != 5 and p.evidence and len(p.turn_ids)][:limit]
        for system, controller in (
            ("dualmem", BuiltinController(ranker=ranker)),
            ("dualmem +heads", BuiltinController(ranker=ranker, weights=learned_weights(heads))),
        ):
            found, st = _search(system, held, paths[held], controller, test, cfg.embedder)
            rows += found
            mine = stats.setdefault(system, {"ms": [], "calls": [], "depth": [], "stops": {}})
            for key in ("ms", "calls", "depth"):
                mine[key] += st[key]
            for reason, n in st["stops"].items():
                mine["stops"][reason] = mine["stops"].get(reason, 0) + n
    return rows, stats


def fitted_heads(pools: Mapping[str, list[QueryPool]], ranker: LinearRanker, links: Mapping[str, list[Links]],
                 nodes: Mapping[str, Mapping[str, Node]]) -> LearnedHeads:  # fmt: skip
    """Heads fitted on every conversation of ``pools`` (ranked by ``ranker``)."""
    return fit_heads([e for c in pools for e in head_examples(ranker, c, pools[c], links[c], nodes[c])])

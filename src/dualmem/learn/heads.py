"""Learned stop (sufficiency) and routing heads of the builtin decider, fitted from labelled pools.

The builtin answers every catalog decision with a linear head over a feature group of the typed
state (:mod:`dualmem.control.builtin_features`); most are hand-set. ``dualmem calibrate
--heads-out FILE`` fits, from the same labelled queries as the relevance head:

* ``stop.evidence_sufficient`` over the ``stop`` group of the round-0 assessment state (the query
  and the top-k of the ranked pool, as the read loop builds it). Target: every labelled memory of
  the query is already in that top-k.
* ``route.<view>`` over the ``route`` group (the question's form). Target: an edge of that view
  links one of the top anchors to a labelled memory the top-k misses (the view could pay).

A head is fitted only where the data holds enough examples of both outcomes (``MIN_POSITIVES``);
otherwise the file says why under ``unsupported`` and the hand-set head stays. The file
(``dualmem.heads/1``) carries provenance; :func:`learned_weights` merges it over the packaged
weights for ``BuiltinController(weights=...)``. The heads read only the typed state, so answers
stay per question and batches independent (``tests/test_independence.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dualmem import _json as bounded_json
from dualmem.control.builtin import BuiltinWeights, LinearWeights, default_weights, with_decisions
from dualmem.control.builtin_features import GROUPS, Features
from dualmem.control.states import (
    EvidenceItem,
    MemoryState,
    RoutingState,
    StoppingState,
    WireFeatures,
)
from dualmem.errors import ConfigError
from dualmem.learn.abstain import AbstentionGate
from dualmem.learn.fit import fit_logistic
from dualmem.types import VIEWS, Node

__all__ = [
    "FORMAT",
    "HEAD_GROUPS",
    "MIN_POSITIVES",
    "HeadExample",
    "LabelledPool",
    "LearnedHeads",
    "fit_heads",
    "head_example",
    "learned_weights",
    "route_features",
    "stop_features",
]

FORMAT = "dualmem.heads/1"

#: fewest examples of the rarer outcome a head is fitted from
MIN_POSITIVES = 30

#: the heads fitted, each with the feature group it reads
HEAD_GROUPS: Mapping[str, str] = {
    "stop.evidence_sufficient": "stop",
    "route.semantic": "route",
    "route.temporal": "route",
    "route.causal": "route",
    "route.entity": "route",
}


def stop_features(
    query: str, evidence: Sequence[tuple[Node, float, float]], *, max_depth: int
) -> dict[str, float]:
    """The ``stop`` group of the round-0 assessment over ``evidence`` ((node, cosine, lexical)),
    computed from the typed state alone (its documented signal fields). The memories carry no
    grounded time references, as the loop shows them for a query it did not route as temporal."""
    items = tuple(EvidenceItem(MemoryState.of(n), sim, lex) for n, sim, lex in evidence)
    state = StoppingState(query, items, 0, max_depth)
    return dict(Features(state, WireFeatures.of(state)).get("stop", None))


def route_features(query: str) -> dict[str, float]:
    """The ``route`` group of a query."""
    state = RoutingState(query)
    return dict(Features(state, WireFeatures.of(state)).get("route", None))


@dataclass(frozen=True, slots=True)
class HeadExample:
    """One labelled query: its feature groups and the target of each head (``None``: no label)."""

    group: str  # a conversation or user
    features: Mapping[str, Mapping[str, float]]  # by feature group
    targets: Mapping[str, bool]  # by head key


@dataclass(frozen=True, slots=True)
class LabelledPool:
    """A labelled query's pool as the heads see it: candidate nodes in row order, their query
    cosines, the rows that answer it, and the views' edges between rows
    (:func:`dualmem.read.reach.reach_links`)."""

    group: str
    query: str
    nodes: tuple[Node, ...]
    cosines: npt.NDArray[np.float64]
    gold: frozenset[int]
    links: Mapping[str, Sequence[tuple[int, int, float]]]


def head_example(
    pool: LabelledPool, logits: npt.NDArray[np.float64], *, k: int = 10, max_depth: int = 2
) -> HeadExample:
    """The heads' example of one labelled pool ranked by the relevance head's ``logits``."""
    top = [int(i) for i in np.lexsort((np.arange(len(logits)), -logits))[:k]]
    ev = [(pool.nodes[i], float(pool.cosines[i]), 0.0) for i in top]
    targets = {"stop.evidence_sufficient": pool.gold <= set(top)}
    missed, anchors = pool.gold - set(top), set(top)
    for view in VIEWS:
        targets[f"route.{view}"] = any(a in anchors and b in missed for a, b, _ in pool.links.get(view, ()))
    feats = {"stop": stop_features(pool.query, ev, max_depth=max_depth), "route": route_features(pool.query)}
    return HeadExample(pool.group, feats, targets)


@dataclass(frozen=True, slots=True)
class LearnedHeads:
    """Fitted heads by decision key, the ones the data did not support (with why), provenance."""

    decisions: Mapping[str, LinearWeights]
    unsupported: Mapping[str, str] = field(default_factory=dict)
    provenance: Mapping[str, Any] = field(default_factory=dict)
    abstention: AbstentionGate | None = None  # the learned abstention gate (dualmem.learn.abstain)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "decisions": {
                key: {"bias": round(w.bias, 6), "weights": {f: round(v, 6) for f, v in w.weights}}
                for key, w in self.decisions.items()
            },
            "unsupported": dict(self.unsupported),
            "abstention": self.abstention.to_json() if self.abstention is not None else None,
            "provenance": dict(self.provenance),
        }

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def from_json(cls, data: object, *, source: str = "heads") -> LearnedHeads:
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ConfigError(f"{source}: expected a {FORMAT} object")
        decisions = data.get("decisions", {})
        if not isinstance(decisions, Mapping):
            raise ConfigError(f"{source}: 'decisions' must be an object")
        # validated the way the builtin validates its own weights file (families, feature names)
        checked = BuiltinWeights.from_json({"version": "1", "decisions": decisions}, source=source)
        unknown = sorted(set(checked.decisions) - set(HEAD_GROUPS))
        if unknown:
            raise ConfigError(
                f"{source}: no learned head for {unknown}", hint=f"heads: {', '.join(HEAD_GROUPS)}"
            )
        unsupported = data.get("unsupported", {})
        prov = data.get("provenance", {})
        gate = data.get("abstention")
        return cls(
            dict(checked.decisions),
            {str(k): str(v) for k, v in unsupported.items()} if isinstance(unsupported, Mapping) else {},
            dict(prov) if isinstance(prov, Mapping) else {},
            AbstentionGate.from_json(gate, source=f"{source}: abstention") if gate is not None else None,
        )

    @classmethod
    def from_file(cls, path: Path) -> LearnedHeads:
        return cls.from_json(bounded_json.load_file(path, "learned heads"), source=str(path))


def learned_weights(heads: LearnedHeads, base: BuiltinWeights | None = None) -> BuiltinWeights:
    """``base`` (the packaged weights by default) with the learned heads in place of its own."""
    return with_decisions(base or default_weights(), heads.decisions)


def _matrix(rows: Sequence[Mapping[str, float]], names: Sequence[str]) -> npt.NDArray[np.float64]:
    return np.array([[r[n] for n in names] for r in rows], dtype=np.float64)


def fit_heads(
    examples: Sequence[HeadExample],
    *,
    l2: float = 1.0,
    keys: Sequence[str] = tuple(HEAD_GROUPS),
    provenance: Mapping[str, Any] | None = None,
) -> LearnedHeads:
    """Fit each head of ``keys`` on the examples that label it (class-balanced logistic)."""
    decisions: dict[str, LinearWeights] = {}
    unsupported: dict[str, str] = {}
    for key in keys:
        group = HEAD_GROUPS[key]
        names = sorted(GROUPS[group])
        labelled = [e for e in examples if key in e.targets]
        y = np.array([float(e.targets[key]) for e in labelled])
        rarer = int(min(y.sum(), len(y) - y.sum())) if len(y) else 0
        if rarer < MIN_POSITIVES:
            unsupported[key] = (
                f"{rarer} examples of the rarer outcome among {len(y)} labelled queries "
                f"(< {MIN_POSITIVES}): the hand-set head stays"
            )
            continue
        fit = fit_logistic(_matrix([e.features[group] for e in labelled], names), y, l2=l2)
        decisions[key] = LinearWeights(
            fit.bias, tuple((n, float(w)) for n, w in zip(names, fit.weights, strict=True))
        )
    return LearnedHeads(decisions, unsupported, dict(provenance or {"l2": l2}))

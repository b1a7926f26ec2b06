"""The fitted channel route: which retrieval channels a query runs, and how many candidates each adds.

The builtin route (System One's routing request, ``read.channels.routed_sizes``) runs a channel when
its view's need reaches ``theta_act``; its entity need never falls below it, so it decided nothing
measurable (docs/views.md). This route is fitted on whether each channel *paid*: per query of the
dev corpora, whether the channel's hits held an evidence turn that the vector and lexical lists
ranked 12th or lower, or missed (``research.route_fit``). Per channel, a logistic model over the query's
cues (``route_features``: what System One's routing reads from the query, and the channels' own
triggers) gives the probability that the channel pays; the channel runs when it reaches the
channel's threshold (chosen by cross-validation), and the channels that run share
``read.channel_budget`` by that probability (eq. 13-14, ``route.allocate``).

The coefficients ship in ``channel_route.json`` beside this module. A channel the artefact does not
know (a new channel) is routed by the builtin need (``fallback``), so new channels plug in.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources

from dualmem.config import ReadProfile
from dualmem.control.builtin_features import route_cues
from dualmem.errors import ConfigError
from dualmem.read.route import active_views, allocate
from dualmem.text.cues import mentions_time
from dualmem.text.entities import extract_entities
from dualmem.text.temporal import ground

__all__ = [
    "ROUTE_FEATURES",
    "FittedRoute",
    "fitted_route",
    "fitted_sizes",
    "route_features",
]

#: the query-only features the fitted route reads (``route_features``), in order
ROUTE_FEATURES: tuple[str, ...] = (
    "temporal",
    "causal",
    "names",
    "two_names",
    "recency",
    "compare",
    "conjunction",
    "two_questions",
    "what",
    "who",
    "when",
    "how_many",
    "time_words",
    "window",
    "order",
    "entities",
    "lower_entities",
    "words",
)

_PACKAGED = "channel_route.json"
#: grounding needs a "now"; whether a query names a window does not depend on which
_NOW = dt.datetime(2024, 6, 15, 12, tzinfo=dt.UTC)
_ORDER = re.compile(r"\b(?:first|last|before|after|earlier|later|then|next|previous|since|until)\b", re.I)
_WHEN = re.compile(r"\bwhen\b", re.I)
_HOW_MANY = re.compile(r"\bhow (?:many|much|long|often)\b", re.I)
_WHO = re.compile(r"\bwho\b", re.I)


@lru_cache(maxsize=4096)
def route_features(query: str) -> tuple[float, ...]:
    """The query's route features (``ROUTE_FEATURES``), from the query text alone."""
    entities = extract_entities(query)
    lower = [e for e in entities if e == e.lower()]
    values = {
        **route_cues(query),
        "who": 1.0 if _WHO.search(query) else 0.0,
        "when": 1.0 if _WHEN.search(query) else 0.0,
        "how_many": 1.0 if _HOW_MANY.search(query) else 0.0,
        "time_words": 1.0 if mentions_time(query) else 0.0,
        "window": 1.0 if ground(query, _NOW) else 0.0,
        "order": 1.0 if _ORDER.search(query) else 0.0,
        "entities": math.log1p(len(entities)),
        "lower_entities": math.log1p(len(lower)),
        "words": math.log1p(len(query.split())),
    }
    return tuple(float(values[f]) for f in ROUTE_FEATURES)


@dataclass(frozen=True, slots=True)
class FittedRoute:
    """Per channel: a logistic model over ``features`` (weights, intercept) and the threshold at
    which the channel runs."""

    features: tuple[str, ...]
    weights: Mapping[str, tuple[float, ...]]
    intercepts: Mapping[str, float]
    thresholds: Mapping[str, float]

    def need(self, query: str, channels: Sequence[str]) -> dict[str, float]:
        """The probability that each fitted channel of ``channels`` pays for ``query`` (channels the
        route does not know are left out)."""
        x = dict(zip(ROUTE_FEATURES, route_features(query), strict=True))
        out: dict[str, float] = {}
        for c in channels:
            w = self.weights.get(c)
            if w is None:
                continue
            z = self.intercepts[c] + sum(wi * x.get(f, 0.0) for wi, f in zip(w, self.features, strict=True))
            out[c] = 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "features": list(self.features),
            "channels": {
                c: {
                    "weights": list(self.weights[c]),
                    "intercept": self.intercepts[c],
                    "threshold": self.thresholds[c],
                }
                for c in self.weights
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> FittedRoute:
        features = data.get("features")
        channels = data.get("channels")
        if not isinstance(features, list) or not isinstance(channels, dict):
            raise ConfigError("a fitted route needs 'features' (a list) and 'channels' (an object)")
        unknown = [f for f in features if f not in ROUTE_FEATURES]
        if unknown:
            raise ConfigError(f"fitted route: unknown features {unknown}", hint=f"use {list(ROUTE_FEATURES)}")
        weights: dict[str, tuple[float, ...]] = {}
        intercepts: dict[str, float] = {}
        thresholds: dict[str, float] = {}
        for c, spec in channels.items():
            if not isinstance(spec, dict) or len(spec.get("weights", ())) != len(features):
                raise ConfigError(f"fitted route: channel {c!r} needs one weight per feature")
            weights[c] = tuple(float(w) for w in spec["weights"])
            intercepts[c] = float(spec["intercept"])
            thresholds[c] = float(spec["threshold"])
        return cls(tuple(str(f) for f in features), weights, intercepts, thresholds)


@cache
def fitted_route() -> FittedRoute:
    """The packaged fitted route (``channel_route.json``)."""
    text = resources.files("dualmem.read").joinpath(_PACKAGED).read_text(encoding="utf-8")
    return FittedRoute.from_json(json.loads(text))


def fitted_sizes(
    query: str,
    profile: ReadProfile,
    fallback: Mapping[str, float] | None = None,
    route: FittedRoute | None = None,
) -> tuple[dict[str, float], dict[str, int]]:
    """The fitted route's need of each channel of ``profile.channels`` and the channels it runs with
    their candidate budgets. A channel runs when its need reaches its threshold: the fitted
    channels' need is the probability that they pay against their fitted threshold; a channel the
    route does not know is routed by ``fallback`` (the builtin need) against ``theta_act``. The
    channels that run share ``channel_budget`` by need (eq. 13-14)."""
    route = route or fitted_route()
    names = list(profile.channels)
    need = route.need(query, names)
    fallback = fallback or {}
    active: list[str] = []
    for c in names:
        if c in need:
            if need[c] >= route.thresholds[c]:
                active.append(c)
        else:
            need[c] = fallback.get(c, 0.0)
            active += active_views({c: need[c]}, profile.theta_act)
    active.sort(key=lambda c: (-need[c], c))
    sizes = allocate(
        need, active, budget=profile.channel_budget, minimum=profile.min_per_view, gamma=profile.gamma
    )
    return need, sizes

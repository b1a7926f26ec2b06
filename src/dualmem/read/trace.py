"""Retrieval results and their trace: what the controller decided, round by round, and why it stopped."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from dualmem.types import Evidence, JSONValue

__all__ = [
    "Assessment",
    "ClauseDecision",
    "Retrieval",
    "RoundTrace",
    "ScoredCandidate",
    "SessionHit",
    "StopReason",
    "Trace",
    "render_trace",
]

StopReason = Literal[
    "sufficient",  # eq. 21
    "no_gain",  # eq. 22
    "depth",  # D(q) reached
    "visited_limit",
    "edge_limit",
    "controller_limit",
    "time_limit",
    "exhausted",  # nothing left to expand
    "fixed_depth",  # ablation: ran the fixed number of rounds
    "controller_off",  # ablation: plain RRF top-K
    "empty",  # the tenant has no memories
]


def _rounded(**values: float) -> dict[str, float]:
    """``values`` rounded to 4 places, in their order (a trace's scores and distributions)."""
    return {k: round(v, 4) for k, v in values.items()}


@dataclass(frozen=True, slots=True)
class ClauseDecision:
    """One clause of a long query and System One's label for it (``need``, ``context`` or
    ``chatter``, ``dualmem.read.message``), with the label's distribution."""

    text: str
    label: str
    distribution: Mapping[str, float]

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "text": self.text,
            "label": self.label,
            "distribution": {k: round(v, 4) for k, v in self.distribution.items()},
        }


@dataclass(frozen=True, slots=True)
class Assessment:
    sufficient: float
    continue_useful: float
    missing: float
    contradiction: float

    def to_json(self) -> dict[str, float]:
        return _rounded(
            evidence_sufficient=self.sufficient,
            continue_useful=self.continue_useful,
            missing_evidence=self.missing,
            contradiction=self.contradiction,
        )


@dataclass(frozen=True, slots=True)
class ScoredCandidate:
    node_id: str
    view: str
    label: str
    score: float  # adjusted transition score (eq. 25)
    similarity: float
    relevance: float
    relation_usefulness: float
    new_information: float
    support: float
    admitted: bool

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "node_id": self.node_id,
            "view": self.view,
            "label": self.label,
            **_rounded(
                score=self.score,
                similarity=self.similarity,
                relevance=self.relevance,
                relation_usefulness=self.relation_usefulness,
                new_information=self.new_information,
                supports_current_evidence=self.support,
            ),
            "admitted": self.admitted,
        }


@dataclass(frozen=True, slots=True)
class RoundTrace:
    round: int
    assessment: Assessment | None
    candidates: tuple[ScoredCandidate, ...]

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "round": self.round,
            "assessment": self.assessment.to_json() if self.assessment else None,  # type: ignore[dict-item]
            "candidates": [c.to_json() for c in self.candidates],
        }


@dataclass(frozen=True, slots=True)
class Trace:
    query: str
    route: dict[str, float] = field(default_factory=dict)
    active: tuple[str, ...] = ()
    budgets: dict[str, int] = field(default_factory=dict)
    depth: int = 0
    anchors: tuple[tuple[str, float], ...] = ()
    rounds: tuple[RoundTrace, ...] = ()
    stop_reason: StopReason = "empty"
    controller_calls: int = 0
    calls_by_purpose: dict[str, int] = field(default_factory=dict)
    visited: int = 0
    edges_inspected: int = 0
    latency_ms: float = 0.0
    #: a long query's clauses as System One labelled them (empty for a query of one clause), and
    #: the text searched in its place (``dualmem.read.message``)
    message: tuple[ClauseDecision, ...] = ()
    focus: str | None = None
    #: the retrieval channels the route ran and how many candidates each could add (``read.channels``)
    channels: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSONValue]:
        out: dict[str, JSONValue] = {
            "query": self.query,
            "route": {k: round(v, 4) for k, v in self.route.items()},
            "active_views": list(self.active),
            "budgets": dict(self.budgets),
            "depth": self.depth,
            "anchors": [[i, round(s, 5)] for i, s in self.anchors],
            "rounds": [r.to_json() for r in self.rounds],
            "stop_reason": self.stop_reason,
            "controller_calls": self.controller_calls,
            "calls_by_purpose": dict(self.calls_by_purpose),
            "visited": self.visited,
            "edges_inspected": self.edges_inspected,
            "latency_ms": round(self.latency_ms, 3),
        }
        if self.message:
            out["message"] = [c.to_json() for c in self.message]
            out["focus"] = self.focus
        if self.channels:
            out["channels"] = dict(self.channels)
        return out


@dataclass(frozen=True, slots=True)
class SessionHit:
    """One session of a search grouped by session (``Memory.search(..., group="session")``): its
    score (its turns' evidence added up, ``dualmem.read.sessions``) and its best turns."""

    session: str
    score: float
    evidence: tuple[Evidence, ...]

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "session": self.session,
            "score": round(self.score, 6),
            "turns": [
                {"id": e.node.id, "turn_id": e.node.turn_id, "score": round(e.score, 6)}
                for e in self.evidence
            ],
        }


@dataclass(frozen=True, slots=True)
class Retrieval:
    """Top-K evidence, best first, and the trace of how it was found. Grouped by session, ``sessions``
    holds the K best sessions and ``evidence`` their turns, session by session."""

    query: str
    evidence: tuple[Evidence, ...]
    trace: Trace
    sessions: tuple[SessionHit, ...] = ()

    @property
    def ids(self) -> list[str]:
        return [e.node.id for e in self.evidence]


def render_trace(trace: Trace) -> str:
    """A readable, multi-line account of a retrieval for a person."""
    lines = [f"query: {trace.query}"]
    for clause in trace.message:
        p = clause.distribution.get(clause.label, 0.0)
        lines.append(f"   [{clause.label} {p:.2f}] {clause.text}")
    if trace.message:
        lines.append(f"searched as: {trace.focus}")
    if trace.route:
        route = ", ".join(f"{k}={v:.2f}" for k, v in trace.route.items())
        lines.append(f"route: {route}")
        lines.append(
            f"active views: {', '.join(trace.active) or '-'}   budgets: "
            + (", ".join(f"{k}={v}" for k, v in trace.budgets.items()) or "-")
            + f"   depth D(q)={trace.depth}"
        )
    lines.append(f"anchors (RRF): {len(trace.anchors)}")
    for rnd in trace.rounds:
        head = f"round {rnd.round}:"
        if rnd.assessment is not None:
            a = rnd.assessment
            head += (
                f" sufficient={a.sufficient:.2f} continue={a.continue_useful:.2f}"
                f" missing={a.missing:.2f} contradiction={a.contradiction:.2f}"
            )
        admitted = sum(1 for c in rnd.candidates if c.admitted)
        head += f"  scored {len(rnd.candidates)}, admitted {admitted}"
        lines.append(head)
        for c in sorted(rnd.candidates, key=lambda c: -c.score)[:5]:
            mark = "+" if c.admitted else " "
            lines.append(
                f"   {mark} {c.node_id} via {c.view}/{c.label} score={c.score:.3f}"
                f" rel={c.relevance:.2f} sim={c.similarity:.2f}"
            )
    lines.append(
        f"stop: {trace.stop_reason}   controller calls: {trace.controller_calls}   visited: {trace.visited}"
        f"   edges inspected: {trace.edges_inspected}   {trace.latency_ms:.1f} ms"
    )
    return "\n".join(lines)

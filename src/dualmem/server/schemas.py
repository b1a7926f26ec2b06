"""Wire models of the HTTP API (pydantic, the boundary only) and their mapping to dualmem's dataclasses.

Used by the server (dataclass -> model here) and by :mod:`dualmem.client` (model -> dataclass in
:mod:`dualmem.server.decode`), so both sides agree on one schema. Imports neither FastAPI nor httpx.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema

from dualmem.memory import Answer, Inspection
from dualmem.plane.base import Decision
from dualmem.plane.jsonl import ImportReport
from dualmem.read.trace import Retrieval, StopReason, Trace
from dualmem.text.timeparse import parse_time
from dualmem.types import MAX_K, Edge, Evidence, Node, TemporalRef, Tenant, View
from dualmem.write.consolidate import ConsolidationReport
from dualmem.write.lifecycle import Filter

__all__ = [
    "AddRequest",
    "AddResponse",
    "AnswerOut",
    "ConsolidationOut",
    "DecisionOut",
    "EdgeOut",
    "EvidenceOut",
    "FilterFields",
    "ForgetRequest",
    "ForgetResponse",
    "HistoryOut",
    "ImportOut",
    "InspectionOut",
    "KeyCreate",
    "KeyCreated",
    "KeyOut",
    "ListRequest",
    "NodeList",
    "NodeOut",
    "NodePage",
    "ObservationIn",
    "Problem",
    "QueryRequest",
    "SearchOut",
    "Status",
    "TenantOut",
    "TraceOut",
    "TraceSummary",
    "UpdateRequest",
    "UpdateResponse",
    "WhoAmI",
    "answer_out",
    "consolidation_out",
    "evidence_out",
    "import_out",
    "inspection_out",
    "node_out",
    "search_out",
    "summary_of",
    "trace_out",
]

MAX_TEXT = 20_000
MAX_QUERY = 4_000
MAX_BATCH = 1_000
MAX_LIST = 500  # memories per list page
ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"


def _encodable(value: str) -> str:
    """Reject text SQLite cannot store (lone surrogates): a 422 instead of a 500."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("text must be valid Unicode (no lone surrogates)") from exc
    return value


def _encodable_json(value: Any) -> Any:
    if isinstance(value, str):
        _encodable(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            _encodable(str(k))
            _encodable_json(v)
    elif isinstance(value, list):
        for v in value:
            _encodable_json(v)
    return value


Text = Annotated[str, AfterValidator(_encodable)]
ShortText = Annotated[str, Field(min_length=1, max_length=512), AfterValidator(_encodable)]
Metadata = Annotated[dict[str, Any], AfterValidator(_encodable_json)]
MAX_TIME_TEXT = 100


def _time_in(value: Any) -> str | int | float | None:
    """A time as given (parsed later, by the core): text, or epoch seconds. Booleans are refused
    (JSON ``true`` is not 1 s after the epoch), and so is every other type."""
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    if isinstance(value, str):
        if len(value) > MAX_TIME_TEXT:
            raise ValueError(f"a time is at most {MAX_TIME_TEXT} characters")
        return value
    kind = "a boolean" if isinstance(value, bool) else f"a {type(value).__name__}"
    raise ValueError(f"a time is ISO-8601 or written text or epoch seconds, not {kind}")


#: when: ISO-8601 ('2024-05-08T10:00:00Z'), a written date ('8 May 2023') or epoch seconds
TimeIn = Annotated[
    str | int | float | None,
    PlainValidator(_time_in),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "maxLength": MAX_TIME_TEXT}, {"type": "number"}, {"type": "null"}]}
    ),
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- requests ----------------------------------------------------------------------------------
class ObservationIn(_Model):
    """One observation to remember. ``at`` is when it was observed (ISO-8601, epoch seconds, '8 May 2023')."""

    text: Annotated[Text, Field(min_length=1, max_length=MAX_TEXT)]
    speaker: ShortText | None = None
    at: TimeIn = None
    source: ShortText | None = None
    session: ShortText | None = None
    turn_id: ShortText | None = None
    metadata: Metadata = Field(default_factory=dict)


class AddRequest(_Model):
    """Observations without ``at`` are stamped with the time the server received them (UTC)."""

    observations: list[ObservationIn] = Field(min_length=1, max_length=MAX_BATCH)


class FilterFields(_Model):
    """Which memories count: every given condition must hold (none given: every memory)."""

    speaker: ShortText | None = Field(default=None, description="said by (case-insensitive)")
    session: ShortText | None = None
    since: TimeIn = Field(default=None, description="observed at or after")
    until: TimeIn = Field(default=None, description="observed before")
    metadata: Metadata | None = Field(default=None, description="metadata[key] == value for every pair")

    def where(self) -> Filter:
        return Filter(
            speaker=self.speaker, session=self.session, since=parse_time(self.since),
            until=parse_time(self.until),
            metadata=self.metadata or None,
        )  # fmt: skip


class QueryRequest(FilterFields):
    query: Annotated[Text, Field(min_length=1, max_length=MAX_QUERY)]
    k: int = Field(default=10, ge=1, le=MAX_K)
    trace: bool = Field(default=False, description="include the full retrieval trace (rounds, scored pool)")


class ListRequest(FilterFields):
    limit: int = Field(default=100, ge=1, le=MAX_LIST)
    offset: int = Field(default=0, ge=0)


class UpdateRequest(_Model):
    text: Annotated[Text, Field(min_length=1, max_length=MAX_TEXT)]
    at: TimeIn = None
    metadata: Metadata | None = Field(default=None, description="replaces the new version's metadata")


class ForgetRequest(FilterFields):
    """Forget by filter: every given condition must hold. ``all`` forgets every memory of the tenant."""

    all: bool = False


class KeyCreate(_Model):
    user: ShortText | None = None
    agent: ShortText | None = None
    run: ShortText | None = None
    admin: bool = False
    label: ShortText | None = None


# -- responses ---------------------------------------------------------------------------------
class TenantOut(_Model):
    user: str
    agent: str | None = None
    run: str | None = None


class TemporalRefOut(_Model):
    expression: str
    start: dt.date
    end: dt.date
    precision: Literal["day", "week", "month", "year"]


class TypeScoresOut(_Model):
    episodic: float
    semantic: float
    procedural: float
    preference: float


class NodeOut(_Model):
    id: str
    tenant: TenantOut
    content: str
    at: dt.datetime | None
    speaker: str | None
    source: str | None
    session: str | None
    turn_id: str | None
    metadata: dict[str, Any]
    entities: list[str]
    temporal_refs: list[TemporalRefOut]
    types: TypeScoresOut | None
    created_at: dt.datetime
    status: Literal["complete", "pending"]
    valid_from: dt.datetime | None
    valid_to: dt.datetime | None
    derived: bool


class NodePage(_Model):
    items: list[NodeOut]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null on the last")


class NodeList(_Model):
    items: list[NodeOut]
    next_offset: int | None = Field(description="the offset of the next page; null on the last")


class AddResponse(_Model):
    ids: list[str]


class UpdateResponse(_Model):
    old: str
    new: str
    node: NodeOut


class HistoryOut(_Model):
    id: str
    versions: list[NodeOut]


class ForgetResponse(_Model):
    forgotten: int


class EdgeOut(_Model):
    source: str
    target: str
    view: View
    label: str
    weight: float
    created_at: dt.datetime
    valid_from: dt.datetime | None
    valid_to: dt.datetime | None


class DecisionOut(_Model):
    node_id: str
    purpose: str
    name: str
    key: str
    value: float
    label: str | None
    backend: str
    latency_ms: float
    other_id: str | None
    created_at: dt.datetime


class InspectionOut(_Model):
    node: NodeOut
    edges: list[EdgeOut]
    decisions: list[DecisionOut]


class EvidenceOut(_Model):
    node: NodeOut
    score: float
    view: Literal["semantic", "temporal", "causal", "entity", "anchor"]
    via: EdgeOut | None
    round: int
    temporal_refs: list[TemporalRefOut]


class AssessmentOut(_Model):
    sufficient: float
    continue_useful: float
    missing: float
    contradiction: float


class CandidateOut(_Model):
    node_id: str
    view: str
    label: str
    score: float
    similarity: float
    relevance: float
    relation_usefulness: float
    new_information: float
    support: float
    admitted: bool


class RoundOut(_Model):
    round: int
    assessment: AssessmentOut | None
    candidates: list[CandidateOut]


class TraceSummary(_Model):
    """Why retrieval stopped and what it cost."""

    route: dict[str, float]
    active_views: list[str]
    depth: int
    stop_reason: StopReason
    controller_calls: int
    latency_ms: float


class AnchorOut(_Model):
    node_id: str
    score: float


class SupersededOut(_Model):
    old: str
    new: str


class TraceOut(_Model):
    query: str
    route: dict[str, float]
    active_views: list[str]
    budgets: dict[str, int]
    depth: int
    anchors: list[AnchorOut]
    rounds: list[RoundOut]
    stop_reason: StopReason
    controller_calls: int
    calls_by_purpose: dict[str, int]
    visited: int
    edges_inspected: int
    latency_ms: float


class SearchOut(_Model):
    query: str
    evidence: list[EvidenceOut]
    summary: TraceSummary
    trace: TraceOut | None = None


class AnswerOut(SearchOut):
    text: str
    abstained: bool
    answerer: str


class ConsolidationOut(_Model):
    user: str
    examined: int
    pairs: int
    calls: int
    links: int
    superseded: list[SupersededOut]
    derived: list[str]
    representations: dict[str, int]
    seconds: float


class ImportOut(_Model):
    nodes: int
    edges: int
    decisions: int


class KeyOut(_Model):
    id: str
    user: str | None
    agent: str | None
    run: str | None
    admin: bool
    label: str | None
    created_at: dt.datetime
    revoked_at: dt.datetime | None


class KeyCreated(_Model):
    key: KeyOut
    token: str = Field(description="the secret; shown once, stored only as a hash")


class WhoAmI(_Model):
    key_id: str | None
    admin: bool
    tenant: TenantOut | None


class Status(_Model):
    status: str
    detail: dict[str, Any] = Field(default_factory=dict)


class Problem(BaseModel):
    """An RFC 9457 problem document (``application/problem+json``)."""

    type: str = Field(description="a URN naming the dualmem error code")
    title: str
    status: int
    detail: str
    code: str = Field(description="the dualmem error code, e.g. not-found")
    hint: str | None = None
    instance: str | None = None
    errors: list[dict[str, Any]] | None = Field(default=None, description="field errors of a 422")


# -- dataclass -> model ------------------------------------------------------------------------
def _tenant_out(t: Tenant) -> TenantOut:
    return TenantOut(user=t.user, agent=t.agent, run=t.run)


def _ref_out(r: TemporalRef) -> TemporalRefOut:
    return TemporalRefOut(expression=r.expression, start=r.start, end=r.end, precision=r.precision)


def node_out(n: Node) -> NodeOut:
    return NodeOut(
        id=n.id,
        tenant=_tenant_out(n.tenant),
        content=n.content,
        at=n.at,
        speaker=n.speaker,
        source=n.source,
        session=n.session,
        turn_id=n.turn_id,
        metadata=dict(n.metadata),
        entities=list(n.entities),
        temporal_refs=[_ref_out(r) for r in n.temporal_refs],
        types=TypeScoresOut(**n.types.to_json()) if n.types else None,
        created_at=n.created_at,
        status=n.status,
        valid_from=n.valid_from,
        valid_to=n.valid_to,
        derived=n.derived,
    )


def _edge_out(e: Edge) -> EdgeOut:
    return EdgeOut(
        source=e.source, target=e.target, view=e.view, label=e.label, weight=e.weight,
        created_at=e.created_at, valid_from=e.valid_from, valid_to=e.valid_to,
    )  # fmt: skip


def _decision_out(d: Decision) -> DecisionOut:
    return DecisionOut(
        node_id=d.node_id, purpose=d.purpose, name=d.name, key=d.key, value=d.value, label=d.label,
        backend=d.backend, latency_ms=d.latency_ms, other_id=d.other_id, created_at=d.created_at,
    )  # fmt: skip


def inspection_out(info: Inspection) -> InspectionOut:
    return InspectionOut(
        node=node_out(info.node),
        edges=[_edge_out(e) for e in info.edges],
        decisions=[_decision_out(d) for d in info.decisions],
    )


def evidence_out(e: Evidence) -> EvidenceOut:
    return EvidenceOut(
        node=node_out(e.node),
        score=e.score,
        view=e.view,
        via=_edge_out(e.via) if e.via else None,
        round=e.round,
        temporal_refs=[_ref_out(r) for r in e.temporal_refs],
    )


def summary_of(t: Trace) -> TraceSummary:
    return TraceSummary(
        route=dict(t.route),
        active_views=list(t.active),
        depth=t.depth,
        stop_reason=t.stop_reason,
        controller_calls=t.controller_calls,
        latency_ms=t.latency_ms,
    )


def trace_out(t: Trace) -> TraceOut:
    rounds = [
        RoundOut(
            round=r.round,
            assessment=AssessmentOut(
                sufficient=r.assessment.sufficient,
                continue_useful=r.assessment.continue_useful,
                missing=r.assessment.missing,
                contradiction=r.assessment.contradiction,
            )
            if r.assessment
            else None,
            candidates=[
                CandidateOut(
                    node_id=c.node_id,
                    view=c.view,
                    label=c.label,
                    score=c.score,
                    similarity=c.similarity,
                    relevance=c.relevance,
                    relation_usefulness=c.relation_usefulness,
                    new_information=c.new_information,
                    support=c.support,
                    admitted=c.admitted,
                )
                for c in r.candidates
            ],
        )
        for r in t.rounds
    ]
    return TraceOut(
        query=t.query, route=dict(t.route), active_views=list(t.active), budgets=dict(t.budgets),
        depth=t.depth, anchors=[AnchorOut(node_id=i, score=s) for i, s in t.anchors], rounds=rounds,
        stop_reason=t.stop_reason,
        controller_calls=t.controller_calls, calls_by_purpose=dict(t.calls_by_purpose), visited=t.visited,
        edges_inspected=t.edges_inspected, latency_ms=t.latency_ms,
    )  # fmt: skip


def search_out(found: Retrieval, *, with_trace: bool) -> SearchOut:
    return SearchOut(
        query=found.query,
        evidence=[evidence_out(e) for e in found.evidence],
        summary=summary_of(found.trace),
        trace=trace_out(found.trace) if with_trace else None,
    )


def answer_out(query: str, ans: Answer, *, with_trace: bool) -> AnswerOut:
    return AnswerOut(
        query=query,
        evidence=[evidence_out(e) for e in ans.evidence],
        summary=summary_of(ans.trace),
        trace=trace_out(ans.trace) if with_trace else None,
        text=ans.text,
        abstained=ans.abstained,
        answerer=ans.answerer,
    )


def consolidation_out(r: ConsolidationReport) -> ConsolidationOut:
    return ConsolidationOut(
        user=r.user, examined=r.examined, pairs=r.pairs, calls=r.calls, links=r.links,
        superseded=[SupersededOut(old=a, new=b) for a, b in r.superseded], derived=list(r.derived),
        representations=dict(r.representations), seconds=r.seconds,
    )  # fmt: skip


def import_out(r: ImportReport) -> ImportOut:
    return ImportOut(nodes=r.nodes, edges=r.edges, decisions=r.decisions)

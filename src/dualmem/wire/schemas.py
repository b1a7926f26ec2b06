"""Wire models of the HTTP API (pydantic, the boundary only) and the value -> document direction.

Used by the server (value -> document here) and by :mod:`dualmem.client` (document -> value in
:mod:`dualmem.wire.decode`, request bodies in :mod:`dualmem.wire.encode`), so both sides agree on one
schema. Imports neither FastAPI nor httpx.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    Strict,
    WithJsonSchema,
    model_validator,
)

from dualmem.errors import InvalidInput
from dualmem.vocab import (
    MAX_K,
    Answer,
    BackfillReport,
    ConsolidationReport,
    Decision,
    Edge,
    Evidence,
    Filter,
    ImportReport,
    Inspection,
    Node,
    Retrieval,
    StopReason,
    TemporalRef,
    Trace,
    View,
    WriteReport,
    parse_time,
    tenant_id_pattern,
)

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
    "RepairOut",
    "SearchOut",
    "SearchRequest",
    "SessionOut",
    "Status",
    "TenantOut",
    "TraceOut",
    "TraceSummary",
    "UpdateRequest",
    "UpdateResponse",
    "WhoAmI",
    "WouldForgetOut",
    "answer_out",
    "backfill_out",
    "brief",
    "consolidation_out",
    "evidence_out",
    "import_out",
    "inspection_out",
    "node_list",
    "node_out",
    "repair_out",
    "search_out",
    "summary_of",
    "trace_out",
    "would_forget_out",
]

MAX_TEXT = 20_000
MAX_QUERY = 4_000
MAX_BATCH = 1_000
MAX_LIST = 500  # memories per list page
ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"

#: what ``str.strip()`` removes (Python's whitespace), as a JSON Schema (ECMA-262) character class
_BLANKS = r"\u0009-\u000d\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
#: a string with at least one character that is not whitespace (what the core calls non-empty)
NON_BLANK = f"[^{_BLANKS}]"


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
#: an observation's text: the core refuses a blank one ("content is empty"), the schema says so too
Content = Annotated[Text, Field(min_length=1, max_length=MAX_TEXT, json_schema_extra={"pattern": NON_BLANK})]
#: a caller's idempotency key of one observation: the core refuses a blank one, the schema says so too
IdempotencyKey = Annotated[
    Text, Field(min_length=1, max_length=512, json_schema_extra={"pattern": NON_BLANK})
]
#: a question: blank ones get the core's own message ("the query is empty"), as in every adapter
QueryText = Annotated[
    Text, Field(max_length=MAX_QUERY, json_schema_extra={"minLength": 1, "pattern": NON_BLANK})
]


def _whole(value: Any) -> Any:
    """JSON has one number type: 10.0 is the integer 10 (JSON Schema agrees); 10.5 and true are not."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


#: an integer in a JSON body: a whole number, never a boolean or a numeric string
Int = Annotated[int, BeforeValidator(_whole), Strict()]
#: a boolean in a JSON body: ``true`` or ``false``, never 0/1 or "yes"
Bool = Annotated[bool, Strict()]

MAX_TIME_TEXT = 100
#: epoch seconds a time may be: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z
MIN_EPOCH = -62_135_596_800
MAX_EPOCH = 253_402_300_799
#: the OpenAPI ``format`` of a time written as text (ISO-8601 or a written date)
TIME_FORMAT = "dualmem-time"
#: the OpenAPI ``format`` of a list cursor (opaque: ``next_cursor`` of a previous page)
CURSOR_FORMAT = "dualmem-cursor"
TIME_TEXT_SCHEMA: dict[str, Any] = {
    "type": "string",
    "format": TIME_FORMAT,
    "minLength": 1,
    "maxLength": MAX_TIME_TEXT,
    "description": "ISO-8601 ('2024-05-08', '2024-05-08T10:00:00Z'), or a written date ('8 May 2023', "
    "'May 8, 2023', '1:56 pm on 8 May, 2023'); without an offset it is UTC",
}


EPOCH_SCHEMA: dict[str, Any] = {
    "type": "number",
    "minimum": MIN_EPOCH,
    "maximum": MAX_EPOCH,
    "description": "epoch seconds",
}


def _time_text(value: str) -> str:
    try:
        parse_time(value)
    except InvalidInput as exc:
        raise ValueError(exc.one_line()) from exc
    return value


def _time_in(value: Any) -> str | int | float | None:
    """A time as given (the core parses it again): text, or epoch seconds. It must parse here, so a
    bad one is a 422 naming its field. Booleans are refused (JSON ``true`` is not 1 s after the
    epoch), and so is every other type."""
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not MIN_EPOCH <= value <= MAX_EPOCH:
            raise ValueError(f"epoch seconds must be from {MIN_EPOCH} to {MAX_EPOCH} (years 1 to 9999)")
        return value
    if isinstance(value, str):
        if len(value) > MAX_TIME_TEXT:
            raise ValueError(f"a time is at most {MAX_TIME_TEXT} characters")
        return _time_text(value)
    kind = "a boolean" if isinstance(value, bool) else f"a {type(value).__name__}"
    raise ValueError(f"a time is ISO-8601 or written text or epoch seconds, not {kind}")


#: when: ISO-8601 ('2024-05-08T10:00:00Z'), a written date ('8 May 2023') or epoch seconds
TimeIn = Annotated[
    str | int | float | None,
    PlainValidator(_time_in),
    WithJsonSchema(
        {
            "anyOf": [
                TIME_TEXT_SCHEMA,
                EPOCH_SCHEMA,
                {"type": "null"},
            ]
        }
    ),
]
#: a time in a query string: the text forms only
TimeText = Annotated[
    str, Field(max_length=MAX_TIME_TEXT), AfterValidator(_time_text), WithJsonSchema(TIME_TEXT_SCHEMA)
]
#: the OpenAPI ``format`` of an import body: JSON Lines exactly as ``GET /v1/export`` wrote them
EXPORT_FORMAT = "dualmem-export"
EXPORT_SCHEMA: dict[str, Any] = {
    "type": "string",
    "format": EXPORT_FORMAT,
    "description": "an export of this tenant (GET /v1/export), unedited: JSON Lines",
}
#: ``next_cursor`` of a previous page: base64url of the last item's position
Cursor = Annotated[
    str,
    Field(max_length=1000),
    WithJsonSchema(
        {"type": "string", "format": CURSOR_FORMAT, "maxLength": 1000,
         "description": "next_cursor of the previous page (opaque; another string is a 400)"}
    ),
]  # fmt: skip


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- requests ----------------------------------------------------------------------------------
class ObservationIn(_Model):
    """One observation to remember. ``at`` is when it was observed (ISO-8601, epoch seconds, '8 May 2023')."""

    text: Content
    speaker: ShortText | None = None
    at: TimeIn = None
    source: ShortText | None = None
    session: ShortText | None = None
    turn_id: ShortText | None = None
    metadata: Metadata = Field(default_factory=dict)
    key: IdempotencyKey | None = Field(
        default=None,
        description="an idempotency key of this observation: one stored under the same key before is "
        "not stored again, its id is returned",
    )


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
    query: QueryText
    k: Int = Field(default=10, ge=1, le=MAX_K)
    trace: Bool = Field(default=False, description="include the full retrieval trace (rounds, scored pool)")


class SearchRequest(QueryRequest):
    group: Literal["turn", "session"] = Field(
        default="turn", description="session: the k best sessions, each with its best turns (in evidence)"
    )
    now: TimeIn = Field(
        default=None,
        description="the asker's present: relative time in the query ('last weekend') is grounded against it",
    )


class ListRequest(FilterFields):
    limit: Int = Field(default=100, ge=1, le=MAX_LIST)
    offset: Int = Field(default=0, ge=0)
    status: Literal["current", "superseded", "pending", "complete"] | None = Field(
        default=None, description="only memories in this state (as GET /v1/memories?status=)"
    )


class UpdateRequest(_Model):
    text: Content
    at: TimeIn = None
    metadata: Metadata | None = Field(default=None, description="replaces the new version's metadata")


def _set(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": [name], "properties": {name: schema}}


_TIME_GIVEN = {"anyOf": [TIME_TEXT_SCHEMA, EPOCH_SCHEMA]}
#: a filter that selects something: at least one condition given (not null; metadata not empty)
_SOME_CONDITION = [
    _set("speaker", {"type": "string"}),
    _set("session", {"type": "string"}),
    _set("since", _TIME_GIVEN),
    _set("until", _TIME_GIVEN),
    _set("metadata", {"type": "object", "minProperties": 1}),
]
#: ``{"all": true}`` alone (every filter field absent or null), or filter fields without ``all: true``
_FORGET_BODY: dict[str, Any] = {
    "oneOf": [
        {
            "required": ["all"],
            "properties": {
                "all": {"const": True},
                **{name: {"type": "null"} for name in ("speaker", "session", "since", "until")},
                "metadata": {"anyOf": [{"type": "null"}, {"type": "object", "maxProperties": 0}]},
            },
        },
        {"properties": {"all": {"const": False}}, "anyOf": _SOME_CONDITION},
    ]
}


class ForgetRequest(FilterFields):
    """Forget by filter: every given condition must hold. ``{"all": true}`` (and no condition)
    forgets every memory of the tenant; an empty filter is refused, never read as "everything"."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_FORGET_BODY)

    all: Bool = False

    @model_validator(mode="after")
    def _one_way(self) -> ForgetRequest:
        if self.all == (not self.where().empty()):
            raise ValueError("give either filter fields or all=true, not both and not neither")
        return self


#: a tenant's user, agent or run id: not blank (the core's rule)
def _tenant_id(schema: dict[str, Any]) -> None:
    schema["pattern"] = tenant_id_pattern()  # what Tenant keeps of an id (NFKC, no invisibles, trimmed)


TenantId = Annotated[ShortText, Field(json_schema_extra=_tenant_id)]


class KeyCreate(_Model):
    """A tenant key (``user``, optionally ``agent`` and ``run``) or an admin key (``admin: true``
    and no tenant): one of the two."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["admin"],
                    "properties": {
                        "admin": {"const": True},
                        **{name: {"type": "null"} for name in ("user", "agent", "run")},
                    },
                },
                {"required": ["user"], "properties": {"admin": {"const": False}, "user": {"type": "string"}}},
            ]
        },
    )

    user: TenantId | None = None
    agent: TenantId | None = None
    run: TenantId | None = None
    admin: Bool = False
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


class WouldForgetOut(_Model):
    """What a forget would remove now, in time order (versions and derived summaries included): the
    one shape of a forget preview (HTTP ``/forget/preview``, ``forget-preview`` and the CLI's
    ``forget --dry-run --json``)."""

    would_forget: int = Field(description="how many memories would go (len(items))")
    items: list[NodeOut]


class RepairOut(_Model):
    """The pending memories a repair completed (``ids``) and those still pending after it."""

    ids: list[str]
    pending: list[str]
    edges: int
    error: str | None = Field(description="the controller failure that left memories pending, if any")


class BackfillOut(_Model):
    """What ``POST /v1/repair/views`` did: memories looked at, edges added per view, memories whose
    relation question failed (their deterministic edges were still added; run it again later)."""

    memories: int
    edges: dict[str, int]
    failed: list[str]
    views: list[str]


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


class SessionOut(_Model):
    """A session of a search grouped by session: its score and its turns' ids (in ``evidence``)."""

    session: str
    score: float
    turns: list[str]


class SearchOut(_Model):
    query: str
    evidence: list[EvidenceOut]
    summary: TraceSummary
    trace: TraceOut | None = None
    sessions: list[SessionOut] | None = None


class AnswerOut(_Model):
    """The answer first (``abstained``: memory has none), then what a search returns."""

    text: str
    abstained: bool
    answerer: str
    used: list[str] = Field(
        default_factory=list, description="ids of the memories the answer quotes, first the main one"
    )
    query: str
    evidence: list[EvidenceOut]
    summary: TraceSummary
    trace: TraceOut | None = None


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
def _ref_out(r: TemporalRef) -> TemporalRefOut:
    return TemporalRefOut.model_validate(r.to_json())


def node_out(n: Node) -> NodeOut:
    """``Node.to_json`` with the tenant as one object (the wire shape of a node)."""
    data = n.to_json()
    tenant = {name: data.pop(name) for name in ("user", "agent", "run")}
    return NodeOut.model_validate({**data, "tenant": tenant})


def _edge_out(e: Edge) -> EdgeOut:
    return EdgeOut.model_validate(e.to_json())


def _decision_out(d: Decision) -> DecisionOut:
    return DecisionOut.model_validate(d.to_json())


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
        sessions=[SessionOut(session=h.session, score=h.score, turns=[e.node.id for e in h.evidence])
                  for h in found.sessions] if found.sessions else None,
    )  # fmt: skip


def answer_out(query: str, ans: Answer, *, with_trace: bool) -> AnswerOut:
    return AnswerOut(
        query=query,
        evidence=[evidence_out(e) for e in ans.evidence],
        summary=summary_of(ans.trace),
        trace=trace_out(ans.trace) if with_trace else None,
        text=ans.text,
        abstained=ans.abstained,
        answerer=ans.answerer,
        used=list(ans.used),
    )


def would_forget_out(nodes: Sequence[Node]) -> WouldForgetOut:
    """A forget preview: the memories a forget would remove, each as ``node_out`` writes it."""
    return WouldForgetOut(would_forget=len(nodes), items=[node_out(n) for n in nodes])


def node_list(nodes: Sequence[Node], *, limit: int, offset: int) -> NodeList:
    """A page of a list: ``nodes`` as fetched with ``limit + 1`` (one more tells a next page exists)."""
    more = len(nodes) > limit
    return NodeList(items=[node_out(n) for n in nodes[:limit]], next_offset=offset + limit if more else None)


# -- brief: the same shapes, fewer fields (what an agent reads over MCP) -----------------------------
#: the fields of a memory an agent uses; ``metadata`` when not empty, ``status`` when pending,
#: ``valid_to`` when superseded
BRIEF_NODE = frozenset({"id", "content", "speaker", "at", "session", "metadata", "status", "valid_to"})


def _brief_node(m: NodeOut) -> dict[str, Any]:
    out = m.model_dump(mode="json", include=set(BRIEF_NODE), exclude_none=True)
    if not out.get("metadata"):
        out.pop("metadata", None)
    if out.get("status") == "complete":
        del out["status"]
    return out


def _brief_summary(m: TraceSummary) -> dict[str, Any]:
    out = m.model_dump(mode="json")
    out["route"] = {view: round(p, 3) for view, p in m.route.items()}
    out["latency_ms"] = round(m.latency_ms, 1)
    return out


def brief(m: BaseModel) -> dict[str, Any]:
    """``m`` as a short JSON object of the same shape (the same names and nesting as over HTTP and
    from the CLI): a memory keeps what an agent reads, evidence its memory and score (3 digits),
    a search or an answer its trace summary; nulls are left out. Other models are dumped whole."""
    if isinstance(m, NodeOut):
        return _brief_node(m)
    if isinstance(m, EvidenceOut):
        return {"node": _brief_node(m.node), "score": round(m.score, 3)}
    if isinstance(m, SearchOut | AnswerOut):
        out = m.model_dump(mode="json", exclude={"evidence", "summary", "trace", "sessions"})
        if isinstance(m, SearchOut) and m.sessions:
            out["sessions"] = [s.model_dump(mode="json") for s in m.sessions]
        out["evidence"] = [brief(e) for e in m.evidence]
        out["summary"] = _brief_summary(m.summary)
        return out
    if isinstance(m, NodeList):
        return {"items": [_brief_node(n) for n in m.items], "next_offset": m.next_offset}
    if isinstance(m, HistoryOut):
        return {"id": m.id, "versions": [_brief_node(n) for n in m.versions]}
    if isinstance(m, UpdateResponse):
        return {"old": m.old, "new": m.new, "node": _brief_node(m.node)}
    return m.model_dump(mode="json")


def consolidation_out(r: ConsolidationReport) -> ConsolidationOut:
    return ConsolidationOut(
        user=r.user, examined=r.examined, pairs=r.pairs, calls=r.calls, links=r.links,
        superseded=[SupersededOut(old=a, new=b) for a, b in r.superseded], derived=list(r.derived),
        representations=dict(r.representations), seconds=r.seconds,
    )  # fmt: skip


def import_out(r: ImportReport) -> ImportOut:
    return ImportOut(nodes=r.nodes, edges=r.edges, decisions=r.decisions)


def repair_out(r: WriteReport) -> RepairOut:
    return RepairOut(ids=list(r.ids), pending=list(r.pending), edges=r.edges, error=r.error)


def backfill_out(r: BackfillReport) -> BackfillOut:
    return BackfillOut(memories=r.memories, edges=dict(r.edges), failed=list(r.failed), views=list(r.views))

"""Wire documents back to dualmem's values (the document -> value direction of :mod:`dualmem.wire`),
for :mod:`dualmem.client` (pydantic only)."""

from __future__ import annotations

from collections.abc import Mapping

from dualmem import errors
from dualmem._boundary import describe_error
from dualmem.vocab import (
    Answer,
    Assessment,
    BackfillReport,
    ConsolidationReport,
    Decision,
    Edge,
    Evidence,
    ImportReport,
    Inspection,
    Node,
    Retrieval,
    RoundTrace,
    ScoredCandidate,
    SessionHit,
    TemporalRef,
    Trace,
    WriteReport,
)
from dualmem.wire.schemas import (
    AnswerOut,
    BackfillOut,
    ConsolidationOut,
    EdgeOut,
    EvidenceOut,
    ImportOut,
    InspectionOut,
    NodeOut,
    RepairOut,
    SearchOut,
    TemporalRefOut,
    TraceOut,
)

__all__ = [
    "HTTP_PROBLEMS",
    "answer_from",
    "backfill_from",
    "consolidation_from",
    "describe_error",
    "error_from",
    "import_from",
    "inspection_from",
    "node_from",
    "retrieval_from",
    "write_report_from",
]


def _ref_from(r: TemporalRefOut) -> TemporalRef:
    return TemporalRef.from_json(r.model_dump())


def node_from(m: NodeOut) -> Node:
    """A ``Node`` as the server stored it, without its embedding (vectors stay on the server):
    ``Node.from_json`` of the wire shape with its tenant object flattened."""
    return Node.from_json({**m.model_dump(exclude={"tenant"}), **m.tenant.model_dump()})


def _edge_from(m: EdgeOut) -> Edge:
    return Edge.from_json(m.model_dump())


def inspection_from(m: InspectionOut) -> Inspection:
    decisions = tuple(Decision.from_json(d.model_dump()) for d in m.decisions)
    return Inspection(node_from(m.node), tuple(_edge_from(e) for e in m.edges), decisions)


def _evidence_from(m: EvidenceOut) -> Evidence:
    return Evidence(
        node=node_from(m.node),
        score=m.score,
        view=m.view,
        via=_edge_from(m.via) if m.via else None,
        round=m.round,
        temporal_refs=tuple(_ref_from(r) for r in m.temporal_refs),
    )


def _trace_from(m: TraceOut) -> Trace:
    rounds = tuple(
        RoundTrace(
            r.round,
            Assessment(**r.assessment.model_dump()) if r.assessment else None,
            tuple(ScoredCandidate(**c.model_dump()) for c in r.candidates),
        )
        for r in m.rounds
    )
    return Trace(
        query=m.query, route=dict(m.route), active=tuple(m.active_views), budgets=dict(m.budgets),
        depth=m.depth, anchors=tuple((a.node_id, a.score) for a in m.anchors), rounds=rounds,
        stop_reason=m.stop_reason,
        controller_calls=m.controller_calls, calls_by_purpose=dict(m.calls_by_purpose), visited=m.visited,
        edges_inspected=m.edges_inspected, latency_ms=m.latency_ms,
    )  # fmt: skip


def _full_trace(m: SearchOut | AnswerOut) -> Trace:
    if m.trace is None:
        raise ValueError("the response has no trace; ask with trace=true")
    return _trace_from(m.trace)


def retrieval_from(m: SearchOut) -> Retrieval:
    evidence = tuple(_evidence_from(e) for e in m.evidence)
    by_id = {e.node.id: e for e in evidence}
    sessions = tuple(
        SessionHit(s.session, s.score, tuple(by_id[i] for i in s.turns if i in by_id))
        for s in m.sessions or ()
    )
    return Retrieval(m.query, evidence, _full_trace(m), sessions)


def answer_from(m: AnswerOut) -> Answer:
    return Answer(
        m.text,
        tuple(_evidence_from(e) for e in m.evidence),
        _full_trace(m),
        m.abstained,
        m.answerer,
        used=tuple(m.used),
    )


def consolidation_from(m: ConsolidationOut) -> ConsolidationReport:
    return ConsolidationReport(
        user=m.user, examined=m.examined, pairs=m.pairs, calls=m.calls, links=m.links,
        superseded=tuple((p.old, p.new) for p in m.superseded), derived=tuple(m.derived),
        representations=dict(m.representations), seconds=m.seconds,
    )  # fmt: skip


def import_from(m: ImportOut) -> ImportReport:
    return ImportReport(m.nodes, m.edges, m.decisions)


def write_report_from(m: RepairOut) -> WriteReport:
    """The report of ``POST /v1/repair``."""
    return WriteReport(tuple(m.ids), tuple(m.pending), m.edges, m.error)


def backfill_from(m: BackfillOut) -> BackfillReport:
    """The report of ``POST /v1/repair/views``."""
    return BackfillReport(m.memories, dict(m.edges), tuple(m.failed), tuple(m.views))


#: every error class by its ``code`` (what a problem document's ``code`` names)
_BY_CODE: dict[str, type[errors.DualmemError]] = {
    cls.code: cls for cls in (getattr(errors, name) for name in errors.__all__)
}

#: the problem codes of the HTTP layer itself, which no ``DualmemError`` has, and the error each one is
#: to a caller; ``http-error`` (any other HTTP status) goes by its status (``tests/test_vocab.py``
#: checks that every code the server sends is known)
HTTP_PROBLEMS: Mapping[str, type[errors.DualmemError]] = {
    "malformed-json": errors.InvalidInput,
    "invalid-cursor": errors.InvalidInput,
    "too-large": errors.InvalidInput,
    "too-deep": errors.InvalidInput,
    "unsupported-media-type": errors.InvalidInput,
    "unauthorized": errors.AuthError,
    "forbidden": errors.AuthError,
    "idempotency-conflict": errors.Conflict,
    "rate-limited": errors.RuntimeFailure,
    "method-not-allowed": errors.UserError,
}


def error_from(status: int, doc: object, reason: str = "") -> errors.DualmemError:
    """The error a failed reply stands for: its problem document's ``code`` (a ``DualmemError``'s, or
    one of :data:`HTTP_PROBLEMS`), ``detail`` and ``hint``; by the status when it names neither (401/403
    ``AuthError``, another 4xx ``UserError``, 429 and 5xx ``RuntimeFailure``)."""
    fields = doc if isinstance(doc, Mapping) else {}
    detail = str(fields.get("detail") or reason or f"HTTP {status}")
    hint = fields.get("hint")
    code = str(fields.get("code", ""))
    cls = _BY_CODE.get(code) or HTTP_PROBLEMS.get(code)
    if cls is None:
        if status in (401, 403):
            cls = errors.AuthError
        else:
            cls = errors.UserError if status < 500 and status != 429 else errors.RuntimeFailure
    return cls(detail, hint=hint if isinstance(hint, str) else None)

"""Wire documents back to dualmem's values (the document -> value direction of :mod:`dualmem.wire`),
for :mod:`dualmem.client` (pydantic only)."""

from __future__ import annotations

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
    "answer_from",
    "backfill_from",
    "consolidation_from",
    "describe_error",
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

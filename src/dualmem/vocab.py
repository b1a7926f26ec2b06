"""dualmem's vocabulary: every public value type, importable from one module.

    from dualmem.vocab import Filter, Node, Retrieval, Answer, WriteReport

A value is defined next to the code that makes it (``Filter`` with the forget/list selection in
``dualmem.write.lifecycle``, ``Retrieval`` with the read path's trace, ``Decision`` with the store
that logs it, ...); this module names them all, so a user, the wire layer (:mod:`dualmem.wire`) and
the adapters (``server/``, ``client.py``, ``mcp_server/``, ``integrations/``) import them from one
place. Every older import path keeps working: each type is the same object here and there.
``tests/test_vocab.py`` checks that the adapters import only public names (this module, ``dualmem``,
``dualmem.errors``, ``dualmem.wire``, and their own package).

The groups:

- memories and their provenance: :class:`Tenant`, :class:`Observation`, :class:`Node`,
  :class:`Edge`, :class:`TemporalRef`, :class:`TypeScores`, :class:`Decision`, ``View`` / ``VIEWS``;
- selecting: :class:`Filter`, ``ListStatus``, ``TimeInput`` (:func:`parse_time` reads one);
- reading: :class:`Retrieval`, :class:`Evidence`, :class:`SessionHit`, :class:`Answer`,
  :class:`Inspection`, the trace (:class:`Trace`, :class:`RoundTrace`, :class:`Assessment`,
  :class:`ScoredCandidate`, ``StopReason``);
- reports of the write side: :class:`WriteReport`, :class:`ConsolidationReport`,
  :class:`BackfillReport`, :class:`ImportReport`;
- limits and checks every boundary applies: ``MAX_K``, ``MAX_JSON_DEPTH``, :func:`check_json`,
  :func:`tenant_id_pattern`, :func:`utcnow`, :func:`stamped`;
- what an adapter builds on: :class:`Store` (the protocol a store meets), :class:`Trigger` (when a
  periodic pass runs), :class:`Closing` (``with`` support), :func:`load_observations`.
"""

from __future__ import annotations

from dualmem._closing import Closing
from dualmem.conversations import load_observations
from dualmem.memory import LIST_STATUSES, Answer, Inspection, ListStatus, stamped
from dualmem.plane.base import Decision, Store
from dualmem.plane.jsonl import ImportReport
from dualmem.read.trace import (
    Assessment,
    Retrieval,
    RoundTrace,
    ScoredCandidate,
    SessionHit,
    StopReason,
    Trace,
)
from dualmem.text.timeparse import TimeInput, parse_time
from dualmem.types import (
    MAX_JSON_DEPTH,
    MAX_K,
    VIEWS,
    Edge,
    Evidence,
    JSONValue,
    Node,
    NodeStatus,
    Observation,
    TemporalRef,
    Tenant,
    TypeScores,
    View,
    check_json,
    tenant_id_pattern,
    utcnow,
)
from dualmem.write.backfill import BackfillReport
from dualmem.write.background import Trigger
from dualmem.write.consolidate import ConsolidationReport
from dualmem.write.lifecycle import Filter
from dualmem.write.pipeline import WriteReport

__all__ = [
    "LIST_STATUSES",
    "MAX_JSON_DEPTH",
    "MAX_K",
    "VIEWS",
    "Answer",
    "Assessment",
    "BackfillReport",
    "Closing",
    "ConsolidationReport",
    "Decision",
    "Edge",
    "Evidence",
    "Filter",
    "ImportReport",
    "Inspection",
    "JSONValue",
    "ListStatus",
    "Node",
    "NodeStatus",
    "Observation",
    "Retrieval",
    "RoundTrace",
    "ScoredCandidate",
    "SessionHit",
    "StopReason",
    "Store",
    "TemporalRef",
    "Tenant",
    "TimeInput",
    "Trace",
    "Trigger",
    "TypeScores",
    "View",
    "WriteReport",
    "check_json",
    "load_observations",
    "parse_time",
    "stamped",
    "tenant_id_pattern",
    "utcnow",
]

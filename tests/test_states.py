"""Typed System-One states (dualmem.control.states): the wire JSON of every purpose is pinned."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any, get_args

import numpy as np
import pytest

from control_support import BOUGHT, BROKE, QUESTION, T1, T2, Recorder, mira_node, wire_memory
from dualmem.config import Profile
from dualmem.control import catalog
from dualmem.control.builtin import BuiltinController
from dualmem.control.questions import Batch, DecisionKey
from dualmem.control.states import (
    QUERY,
    WIRE_ADDITIONS,
    ConsolidationPair,
    ConsolidationState,
    EmbeddingFeatures,
    EvidenceItem,
    MemoryState,
    RelationCandidate,
    RelationState,
    RoutingState,
    StoppingState,
    TraversalCandidate,
    TraversalState,
    TypingState,
    WireFeatures,
    parse_state,
)
from dualmem.embed import HashingEmbedder
from dualmem.errors import ControllerError, InvalidInput
from dualmem.memory import Memory
from dualmem.plane.sqlite import SQLiteStore
from dualmem.types import TemporalRef

YESTERDAY = TemporalRef("yesterday", dt.date(2024, 5, 15), dt.date(2024, 5, 15), "day")


def unit(*xs: float) -> np.ndarray[Any, np.dtype[np.float32]]:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


M1 = mira_node("m1", BROKE, T1, (1.0, 0.0, 0.0), session="s1")
M2 = mira_node("m2", BOUGHT, T2, (0.6, 0.8, 0.0), session="s2", temporal_refs=(YESTERDAY,))
Q = QUESTION
QVEC = unit(0.0, 1.0, 0.0)

M1_WIRE = wire_memory("m1", BROKE, T1, ["bicycle", "mira"])
M2_WIRE = wire_memory("m2", BOUGHT, T2, ["bicycle", "mira"])
M2_TEMPORAL = {
    **M2_WIRE,
    "timestamp_role": "observation_time",
    "temporal_references": [
        {"expression": "yesterday", "start": "2024-05-15", "end": "2024-05-15", "precision": "day"}
    ],
}


def source() -> EmbeddingFeatures:
    return EmbeddingFeatures.of([M1, M2], query=Q, qvec=QVEC)


def relation_state() -> RelationState:
    return RelationState(MemoryState.of(M2), (RelationCandidate.of(M2, M1, ("bicycle", "mira"), source()),))


def traversal_state() -> TraversalState:
    src = source()
    ev = EvidenceItem(MemoryState.of(M1, temporal=True), src.cosine(QUERY, "m1"), src.lexical(QUERY, "m1"))
    cand = TraversalCandidate(
        MemoryState.of(M2, temporal=True), "causal", "causes", "m1", "m2", 0.9, src.cosine(QUERY, "m2"),
        src.lexical(QUERY, "m2"),
    )  # fmt: skip
    return TraversalState(Q, (ev,), (cand,))


PAIR_WIRE = {
    **M1_WIRE,
    "similarity": 0.6,
    "lexical_overlap": 0.5,
    "shared_entities": ["bicycle", "mira"],
    "time_delta_days": 2.0,
    "same_session": False,
}
M1_TEMPORAL = {**M1_WIRE, "timestamp_role": "observation_time", "temporal_references": []}

#: the exact JSON each purpose sends (the paper's fields + the documented additions), key order included
GOLDEN: dict[str, tuple[Any, dict[str, Any]]] = {
    "typing": (
        TypingState.of(M2),
        {"observation": M2.content, "speaker": "Mira", "timestamp": "2024-05-16T10:00:00+00:00"},
    ),
    "relations": (relation_state(), {"new_memory": M2_WIRE, "candidates": [PAIR_WIRE]}),
    "consolidation": (
        ConsolidationState((ConsolidationPair(MemoryState.of(M2), relation_state().candidates[0]),)),
        {"pairs": [{"new_memory": M2_WIRE, "candidate": PAIR_WIRE}]},
    ),
    "routing": (RoutingState(Q), {"query": Q}),
    "scoring": (
        traversal_state(),
        {
            "query": Q,
            "evidence": [{**M1_TEMPORAL, "similarity": 0.0, "lexical_overlap": 0.1667}],
            "candidates": [
                {
                    **M2_TEMPORAL,
                    "view": "causal",
                    "label": "causes",
                    "source": "m1",
                    "target": "m2",
                    "edge_weight": 0.9,
                    "similarity": 0.8,
                    "lexical_overlap": 0.25,
                }
            ],
        },
    ),
    "assessment": (
        StoppingState(Q, traversal_state().evidence, 1, 5),
        {
            "query": Q,
            "evidence": [{**M1_TEMPORAL, "similarity": 0.0, "lexical_overlap": 0.1667}],
            "depth": 1,
            "max_depth": 5,
        },
    ),
}


@pytest.mark.parametrize("purpose", sorted(GOLDEN))
def test_wire_json_of_each_purpose_is_pinned(purpose: str) -> None:
    state, expected = GOLDEN[purpose]
    wire = state.to_wire()
    assert json.dumps(wire) == json.dumps(expected)  # same fields, same values, same order


@pytest.mark.parametrize("purpose", sorted(GOLDEN))
def test_wire_json_parses_back_to_the_same_wire(purpose: str) -> None:
    state, expected = GOLDEN[purpose]
    parsed = parse_state(purpose, expected)  # type: ignore[arg-type]
    assert parsed.to_wire() == expected
    assert type(parsed) is type(state)


def test_every_wire_addition_is_documented() -> None:
    """Fields beyond the paper's (B.1-B.5) appear in WIRE_ADDITIONS."""
    paper = {"observation", "new_memory", "candidates", "query", "evidence", "depth", "pairs", "candidate"}
    paper |= {"id", "content", "timestamp", "entities", "timestamp_role", "temporal_references"}
    paper |= {"view", "label", "source", "target", "expression", "start", "end", "precision"}
    documented = {k.rsplit(".", 1)[-1] for k in WIRE_ADDITIONS}

    def keys(value: object) -> set[str]:
        if isinstance(value, Mapping):
            return set(value) | {k for v in value.values() for k in keys(v)}
        if isinstance(value, list):
            return {k for v in value for k in keys(v)}
        return set()

    for _, expected in GOLDEN.values():
        assert keys(expected) - paper <= documented


def test_decision_keys_are_a_closed_literal_matching_the_catalog() -> None:
    assert set(get_args(DecisionKey)) == catalog.DECISION_KEYS


def test_a_missing_or_mistyped_field_is_an_error() -> None:
    _, wire = GOLDEN["relations"]
    cand = {k: v for k, v in wire["candidates"][0].items() if k != "similarity"}
    with pytest.raises(InvalidInput, match="similarity"):
        parse_state("relations", {"new_memory": M2_WIRE, "candidates": [cand]})
    with pytest.raises(InvalidInput, match="depth"):
        parse_state("assessment", {"query": Q, "evidence": [], "depth": "1", "max_depth": 3})
    with pytest.raises(InvalidInput, match="timestamp"):
        parse_state("typing", {"observation": "x", "speaker": None, "timestamp": "yesterday"})


def test_feature_sources_answer_by_id_and_refuse_unknown_ids() -> None:
    src = source()
    assert src.cosine("m1", "m2") == pytest.approx(0.6)
    assert src.cosine(QUERY, "m2") == pytest.approx(0.8)
    assert src.cosine("m2", QUERY) == src.cosine(QUERY, "m2")
    assert 0.0 < src.lexical("m1", "m2") <= 1.0
    with pytest.raises(InvalidInput):
        src.cosine("m1", "nope")
    wire = WireFeatures.of(relation_state())
    assert wire.cosine("m1", "m2") == pytest.approx(0.6)
    with pytest.raises(InvalidInput):
        wire.cosine(QUERY, "m1")  # a relation state carries no query signal


def test_builtin_reads_signals_from_the_feature_source_not_the_json() -> None:
    """With a FeatureSource, the builtin's similarity comes from it; the JSON keys are context only."""
    state = relation_state()
    qs = catalog.relation_questions(0, alias=False, implicit_time=False)
    near = EmbeddingFeatures.of([M1, M2])
    far = EmbeddingFeatures({"m1": unit(1.0, 0.0, 0.0), "m2": unit(-1.0, 0.0, 0.0)}, {"m1": "a", "m2": "b"})
    a = BuiltinController().decide(Batch.of(state, qs, "relations", features=near))
    b = BuiltinController().decide(Batch.of(state, qs, "relations", features=far))
    assert a.noul("pair_0_semantic") != b.noul("pair_0_semantic")
    # no source: the documented signal fields of the state, the same numbers as near (4 decimals)
    c = BuiltinController().decide(Batch(state=state.to_wire(), questions=qs))
    assert c.noul("pair_0_semantic") == pytest.approx(a.noul("pair_0_semantic"), abs=1e-3)


def test_the_paths_send_typed_states_and_the_wire_is_their_to_wire(tmp_path: Any) -> None:
    ctl = Recorder()
    profile = Profile.builtin().with_(write__consolidation="inline", write__consolidate_every=2)
    mem = Memory(SQLiteStore.open(tmp_path / "m.db"), HashingEmbedder(64), ctl, profile=profile)
    mem.add(M1.content, user="u", speaker="Mira", at=T1, session="s1")
    mem.add(M2.content, user="u", speaker="Mira", at=T2, session="s2")
    mem.search(Q, user="u", k=3)
    by_purpose: dict[str, set[str]] = {}
    for batch in ctl.batches:
        if batch.typed is not None:
            assert batch.state == batch.typed.to_wire()
        by_purpose.setdefault(batch.purpose, set()).update(batch.state)
    assert by_purpose == {
        "typing": {"observation", "speaker", "timestamp"},
        "relations": {"new_memory", "candidates"},
        "consolidation": {"pairs"},
        "routing": {"query"},
        "scoring": {"query", "evidence", "candidates"},
        "assessment": {"query", "evidence", "depth", "max_depth"},
    }
    typed = {b.purpose for b in ctl.batches if b.typed is not None}
    assert typed == {"typing", "relations", "consolidation", "routing", "scoring", "assessment"}


def test_a_head_replaces_the_builtin_relevance_decision() -> None:
    """The seam for a learned scorer: a Head sees the typed state, the target and the FeatureSource."""
    seen: list[tuple[str, int | None]] = []

    def relevance(state: object, target: int | None, src: Any) -> float:
        assert isinstance(state, TraversalState)
        assert target is not None
        seen.append((state.candidates[target].memory.id, target))
        return src.cosine(QUERY, state.candidates[target].memory.id)

    ctl = BuiltinController(heads={"traverse.relevance": relevance})
    state = traversal_state()
    batch = Batch.of(state, catalog.traversal_questions(0), "scoring", features=source())
    result = ctl.decide(batch)
    assert result.noul("candidate_0_relevance") == pytest.approx(0.8)
    assert seen == [("m2", 0)]
    plain = BuiltinController().decide(batch)
    assert result.noul("candidate_0_new_information") == plain.noul("candidate_0_new_information")
    broken = BuiltinController(heads={"traverse.relevance": lambda *_: float("nan")})
    with pytest.raises(ControllerError):
        broken.decide(batch)

"""System One's per-candidate signals travel in the typed scoring state, not beside it.

The read path's pool features (``dualmem.read.pool.FEATURES``) are ``TraversalCandidate.signals``:
in the wire JSON every backend receives, read back by ``parse_state``, covered by the Meter's cache
key, and the only input of the builtin's learned relevance head.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from control_support import Recorder
from dualmem.control import catalog
from dualmem.control.builtin import BuiltinController
from dualmem.control.meter import Meter
from dualmem.control.questions import Batch
from dualmem.control.states import TraversalCandidate, TraversalState, parse_state
from dualmem.errors import InvalidInput
from dualmem.memory import Memory
from dualmem.read.pool import FEATURES
from test_states import traversal_state

NAMES = ("vec", "lex", "speaker")


def with_signals(
    state: TraversalState, *rows: tuple[float, ...], names: tuple[str, ...] = NAMES
) -> TraversalState:
    cands = tuple(
        TraversalCandidate(
            c.memory, c.view, c.label, c.source, c.target, c.edge_weight, c.similarity, c.lexical_overlap, row
        )
        for c, row in zip(state.candidates, rows, strict=True)
    )
    return TraversalState(state.query, state.evidence, cands, names)


def test_signals_are_named_in_the_wire_state_and_read_back() -> None:
    state = with_signals(traversal_state(), (0.123456, 1.0, 0.0))
    wire = state.to_wire()
    cand = wire["candidates"][0]  # type: ignore[index]
    assert cand["signals"] == {"vec": 0.1235, "lex": 1.0, "speaker": 0.0}  # type: ignore[index, call-overload]
    assert list(cand)[-1] == "signals"  # type: ignore[call-overload]  # after the documented fields
    back = parse_state("scoring", json.loads(json.dumps(wire)))
    assert isinstance(back, TraversalState)
    assert back.signal_names == NAMES
    assert back.candidates[0].signals == (0.1235, 1.0, 0.0)
    # without signals the wire is the paper's fields plus the documented additions, as before
    assert "signals" not in traversal_state().to_wire()["candidates"][0]  # type: ignore[index, operator]


def test_malformed_signals_are_refused() -> None:
    with pytest.raises(InvalidInput, match="2 signals for 3 signal names"):
        with_signals(traversal_state(), (0.1, 0.2))
    wire = with_signals(traversal_state(), (0.1, 0.2, 0.3)).to_wire()
    bad = json.loads(json.dumps(wire))
    bad["candidates"][0]["signals"]["vec"] = "high"
    with pytest.raises(InvalidInput, match=r"signals\.vec"):
        parse_state("scoring", bad)
    two = json.loads(json.dumps(wire))
    other = dict(two["candidates"][0])
    other["signals"] = {"lex": 0.2, "vec": 0.1, "speaker": 0.3}  # other names' order
    two["candidates"].append(other)
    with pytest.raises(InvalidInput, match="signal names differ"):
        parse_state("scoring", two)


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recorder, list[Batch]]:
    """A real pooled search (MiniLM, SQLite) whose scoring requests are recorded."""
    ctl = Recorder()
    path = Path(tmp_path_factory.mktemp("signals")) / "m.db"
    with Memory.open(path, controller=ctl, answerer=None) as mem:
        s = mem.scope("mira")
        s.add("Mira: My old bicycle broke.", speaker="Mira", at="2024-05-14T10:00:00Z")
        s.add("Jonna helped me pick the new one, a green Bianchi.", speaker="Mira", at="2024-05-16T10:00:00Z")
        s.add("We talked about the weather in Turin.", speaker="Jonna", at="2024-05-17T10:00:00Z")
        ctl.batches.clear()
        mem.search("Who helped Mira choose her new bicycle?", user="mira", k=3)
    return ctl, [b for b in ctl.batches if b.purpose == "scoring"]


def test_every_scoring_state_of_a_pooled_search_carries_the_pool_features(
    scored: tuple[Recorder, list[Batch]],
) -> None:
    _, batches = scored
    assert batches
    for batch in batches:
        state = batch.typed
        assert isinstance(state, TraversalState)
        assert state.signal_names == FEATURES
        assert all(len(c.signals) == len(FEATURES) for c in state.candidates)
        # what a remote backend receives: the same signals, named, in the wire JSON
        for c in batch.state["candidates"]:  # type: ignore[union-attr]
            assert list(c["signals"]) == list(FEATURES)  # type: ignore[call-overload, index]


def test_the_builtin_reads_relevance_from_the_signals_alone(scored: tuple[Recorder, list[Batch]]) -> None:
    _, batches = scored
    batch = batches[0]
    ctl = BuiltinController()
    typed = ctl.decide(batch)
    # the same decision from the JSON alone (no typed state, no FeatureSource): the 4-decimal signals
    remote = ctl.decide(Batch(state=batch.state, questions=batch.questions, purpose="scoring"))
    for name in batch.questions:
        if name.endswith("_relevance"):
            assert remote.noul(name) == pytest.approx(typed.noul(name), abs=0.02)
    # without signals the learned head has nothing to read: the hand-set head answers instead
    state = batch.typed
    assert isinstance(state, TraversalState)
    bare = TraversalState(
        state.query,
        state.evidence,
        tuple(
            TraversalCandidate(
                c.memory, c.view, c.label, c.source, c.target, c.edge_weight, c.similarity, c.lexical_overlap
            )
            for c in state.candidates
        ),
    )
    plain = ctl.decide(Batch.of(bare, batch.questions, "scoring", features=batch.features))
    names = [n for n in batch.questions if n.endswith("_relevance")]
    assert [plain.noul(n) for n in names] != [typed.noul(n) for n in names]


def test_the_meter_cache_tells_states_apart_by_their_signals() -> None:
    """A cached answer is never served for a state whose signals changed (e.g. after new adds)."""
    meter = Meter(BuiltinController(), cache_size=16)
    questions = catalog.traversal_questions(0)
    row = tuple(0.9 if name.startswith(("vec", "lex")) else 0.0 for name in FEATURES)
    low = tuple(0.0 for _ in FEATURES)
    a = meter.ask(Batch.of(with_signals(traversal_state(), row, names=FEATURES), questions, "scoring"))
    b = meter.ask(Batch.of(with_signals(traversal_state(), low, names=FEATURES), questions, "scoring"))
    assert a.result.noul("candidate_0_relevance") != b.result.noul("candidate_0_relevance")
    again = meter.ask(Batch.of(with_signals(traversal_state(), row, names=FEATURES), questions, "scoring"))
    assert again.result == a.result

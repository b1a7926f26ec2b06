"""The cheaper pieces of one search (issue 48, cost): each gives what the plain version gave.

- a batch made by ``Batch.of`` renders its wire state only when something reads it: the builtin
  decider (in-process, no answer cache) never does, so a search renders no scoring state;
- the version pass reads one decision key (``decisions_of(key=)``), and only of the results that
  share a slot with another;
- the scoring questions are built once per candidate index.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import pickle
from pathlib import Path
from types import SimpleNamespace

import pytest

from dualmem import Memory
from dualmem.control import catalog
from dualmem.control.calibration import Recorder
from dualmem.control.questions import Batch
from dualmem.control.scripted import AutoController
from dualmem.control.states import TraversalState, TypingState
from dualmem.embed import Embedder
from dualmem.plane.base import Decision
from dualmem.read.loop import _traversal_questions
from dualmem.read.versions import VersionRule, order_versions
from dualmem.types import Evidence, Node, Tenant

TURNS = [
    "I adopted a rescue dog called Biscuit last spring.",
    "Biscuit loves the beach near Brighton.",
    "My sister Ana visited us in June and we went hiking.",
    "I started a pottery class on Tuesdays.",
    "The pottery teacher says my bowls are getting better.",
]


class _Counting:
    """A typed state that counts its renderings."""

    def __init__(self, state: TypingState) -> None:
        self.state = state
        self.rendered = 0

    def to_wire(self) -> dict[str, object]:
        self.rendered += 1
        return self.state.to_wire()  # type: ignore[return-value]


def _typing_state() -> TypingState:
    return TypingState.of(Node(id="n", tenant=Tenant("u"), content="I moved to Leeds", at=None))


def test_a_batch_renders_its_state_once_and_only_when_read() -> None:
    counting = _Counting(_typing_state())
    batch = Batch.of(counting, catalog.typing_questions(), "typing")  # type: ignore[arg-type]
    assert counting.rendered == 0
    eager = Batch(_typing_state().to_wire(), catalog.typing_questions(), "typing")
    assert batch.state == eager.state
    assert batch.state is batch.state
    assert counting.rendered == 1
    assert batch == eager
    assert repr(batch) == repr(eager)


def test_a_lazy_batch_is_a_frozen_dataclass_that_replaces_and_pickles() -> None:
    batch = Batch.of(_typing_state(), catalog.typing_questions(), "typing")
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.state = {}  # type: ignore[misc]
    other = dataclasses.replace(batch, purpose="other")
    assert (other.state, other.purpose, other.typed) == (batch.state, "other", batch.typed)
    fresh = Batch.of(_typing_state(), catalog.typing_questions(), "typing")
    assert pickle.loads(pickle.dumps(fresh)) == batch
    assert [f.name for f in dataclasses.fields(Batch)] == [
        "state",
        "questions",
        "purpose",
        "typed",
        "features",
    ]


def test_the_builtin_search_renders_no_scoring_state(
    tmp_path: Path, hashing: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Memory.open(tmp_path / "m.db", embedder=hashing) as mem:
        s = mem.scope("u")
        for text in TURNS:
            s.add(text, speaker="user")
        before = s.search("Where does Biscuit like to go?", k=3)

        def refuse(self: TraversalState) -> object:
            raise AssertionError("the builtin decider rendered a scoring state")

        monkeypatch.setattr(TraversalState, "to_wire", refuse)
        after = s.search("Where does Biscuit like to go?", k=3)
    assert [(e.node.id, e.score) for e in after.evidence] == [(e.node.id, e.score) for e in before.evidence]
    assert before.trace.calls_by_purpose.get("scoring", 0) >= 1


def test_a_controller_that_reads_the_state_gets_what_an_eager_batch_holds(
    tmp_path: Path, hashing: Embedder
) -> None:
    recorder = Recorder(AutoController(seed=3))
    with Memory.open(tmp_path / "m.db", embedder=hashing, controller=recorder, profile="dualmem") as mem:
        s = mem.scope("u")
        for text in TURNS[:3]:
            s.add(text, speaker="user")
        s.search("Where does Biscuit like to go?", k=3)
    scoring = [(b, r) for b, r in recorder.pairs if b.purpose == "scoring"]
    assert scoring
    for batch, result in recorder.pairs:
        assert batch.typed is not None
        eager = Batch(batch.typed.to_wire(), batch.questions, batch.purpose)
        assert batch.state == eager.state
        assert AutoController(seed=3).decide(eager) == result


def test_scoring_questions_are_the_catalog_s_per_index() -> None:
    asked = ("relevance", "novelty")
    built = _traversal_questions(7, asked)
    expected = {
        name: q
        for i in range(7)
        for name, q in catalog.traversal_questions(i).items()
        if name.removeprefix(f"candidate_{i}_") in asked
    }
    assert dict(built) == expected
    assert list(built) == list(expected)


class _Log:
    """A decision log that records which nodes' decisions were read."""

    def __init__(self, decisions: list[Decision]) -> None:
        self.decisions = decisions
        self.read: list[str] = []

    def decisions_of(self, node_id: str, *, key: str | None = None) -> list[Decision]:
        self.read.append(node_id)
        return [d for d in self.decisions if d.node_id == node_id and (key is None or d.key == key)]


def _evidence(i: int, text: str, score: float) -> Evidence:
    at = dt.datetime(2024, 1, 1 + i, tzinfo=dt.UTC)
    return Evidence(Node(id=f"n{i}", tenant=Tenant("u"), content=text, at=at, speaker="user"), score)


def test_the_version_pass_reads_decisions_only_where_two_results_share_a_slot() -> None:
    """A recorded update can only apply between two of the best results that state one slot: the
    others' decisions are not read, and the order is what reading them all gave."""
    scored = [
        _evidence(0, "I live in Berlin.", 0.9),
        _evidence(1, "My phone is an iPhone.", 0.8),
        _evidence(2, "I moved to Hamburg last month.", 0.7),
        _evidence(3, "The weather was nice.", 0.6),
    ]
    log = _Log([Decision("n2", "relations", "pair_0_supersedes", "relation.supersedes", 0.5, other_id="n0")])
    store = SimpleNamespace(log=log)
    rule = VersionRule(asks_past=False, factor=0.5, window=10, likely=0.4)
    out = order_versions({e.node.id: e for e in scored}, store, Tenant("u"), rule)  # type: ignore[arg-type]
    assert sorted(log.read) == ["n0", "n2"]  # the two "home" memories, not the phone nor the weather
    ranked = sorted(out.values(), key=lambda e: (-e.score, e.node.id))
    assert [e.node.id for e in ranked][:2] == ["n2", "n0"]  # the likely update first

"""The cheaper pieces of one search (issue 48, cost): each gives what the plain version gave.

- a batch made by ``Batch.of`` renders its wire state only when something reads it: the builtin
  decider (in-process, no answer cache) never does, so a search renders no scoring state;
- the version pass reads one decision key (``decisions_of(key=)``);
- the scoring questions are built once per candidate index.
"""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

from dualmem import Memory
from dualmem.control import catalog
from dualmem.control.calibration import Recorder
from dualmem.control.questions import Batch
from dualmem.control.scripted import AutoController
from dualmem.control.states import TraversalState, TypingState
from dualmem.embed import Embedder
from dualmem.read.loop import _traversal_questions
from dualmem.types import Node, Tenant

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

"""The write path asks only the relation questions whose answers it uses (issue 48, item 3).

Each relation view question (semantic, caused_by / causes, same_episode and the time Choice, alias)
makes edges of one view (``QUESTION_VIEWS``); it is asked only when the profile stores that view
(``write.views``). ``relation.supersedes`` is asked whatever the views: its ``superseded_by`` edge is
structural, and its decisions record which candidates were judged. What is not asked is not recorded:
the decision log (``inspect``) shows exactly the questions asked.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest

from dualmem import Memory, Profile
from dualmem.control import catalog
from dualmem.control.builtin import BuiltinController
from dualmem.control.calibration import Recorder
from dualmem.control.meter import Meter
from dualmem.control.questions import Answer, BatchResult, Choice, ChoiceAnswer, Noul, NoulAnswer
from dualmem.control.scripted import ScriptedController
from dualmem.embed import Embedder
from dualmem.types import VIEWS, Node, Tenant
from dualmem.write.backfill import backfill_views
from dualmem.write.candidates import Candidate
from dualmem.write.relations import QUESTION_VIEWS, inferred_edges, relation_batch

TURNS = [
    ("user", "I live in Berlin, in a small flat in Kreuzberg.", "2024-01-10T10:00:00Z"),
    ("assistant", "Kreuzberg is lively; the canal is lovely in spring.", "2024-01-10T10:00:00Z"),
    ("user", "Anna from Berlin recommended a weekend in Rome.", "2024-02-11T10:00:00Z"),
    ("user", "The flight to Rome was cancelled because of the storm.", "2024-02-12T10:00:00Z"),
    ("user", "We finally moved to Hamburg last month, the new flat has a balcony.", "2024-03-10T10:00:00Z"),
]

EVERY_KEY = set(QUESTION_VIEWS) | {"relation.supersedes"}


def _asked(profile: Profile, tmp_path: Path, hashing: Embedder) -> tuple[set[str], set[str]]:
    """The relation keys asked while writing TURNS under ``profile``, and those recorded."""
    recorder = Recorder(BuiltinController())
    profile = profile.with_(write__consolidation="off")
    with Memory.open(tmp_path / "m.db", embedder=hashing, controller=recorder, profile=profile) as mem:
        s = mem.scope("u")
        ids = [s.add(text, speaker=who, at=at, session="s1") for who, text, at in TURNS]
        recorded = {d.key for i in ids for d in s.inspect(i).decisions if d.purpose == "relations"}
    asked = {
        q.key for batch, _ in recorder.pairs if batch.purpose == "relations" for q in batch.questions.values()
    }
    return asked, recorded


def test_the_builtin_profile_asks_no_view_question(tmp_path: Path, hashing: Embedder) -> None:
    asked, recorded = _asked(Profile.builtin(), tmp_path, hashing)
    assert asked == {"relation.supersedes"}
    assert recorded == asked  # the log claims no question that was not asked


def test_a_profile_storing_causal_asks_the_causal_questions(tmp_path: Path, hashing: Embedder) -> None:
    asked, recorded = _asked(Profile.builtin().with_(write__views=("causal",)), tmp_path, hashing)
    assert asked == {"relation.supersedes", "relation.caused_by", "relation.causes"}
    assert recorded == asked


def test_the_paper_profile_asks_every_question(tmp_path: Path, hashing: Embedder) -> None:
    asked, recorded = _asked(Profile.paper(), tmp_path, hashing)
    assert asked == EVERY_KEY  # alias (no shared id) and time (equal timestamps) arise in TURNS
    assert recorded == asked


@pytest.mark.parametrize("views", [(), ("semantic",), ("temporal",), ("entity",), VIEWS])
def test_a_batch_holds_each_pair_s_questions_of_the_views(views: tuple[str, ...]) -> None:
    at = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    node = Node(id="n", tenant=Tenant("u"), content="Anna moved", at=at, entities=("anna",))
    others = [
        Node(id="a", tenant=Tenant("u"), content="Bob moved", at=at, entities=("bob",)),
        Node(id="b", tenant=Tenant("u"), content="Anna left", at=at, entities=("anna",)),
    ]
    cands = [Candidate(others[0], 1.0, 0.5, ()), Candidate(others[1], 0.9, 0.5, ("anna",))]
    batch = relation_batch(node, cands, views)
    full = catalog.relation_questions(0, alias=True, implicit_time=True)
    full |= catalog.relation_questions(1, alias=False, implicit_time=True)
    kept = {n for n, q in full.items() if q.key not in QUESTION_VIEWS or QUESTION_VIEWS[q.key] in views}
    assert set(batch.questions) == kept
    assert {f"pair_{i}_supersedes" for i in range(2)} <= kept  # every candidate is judged
    assert dict(relation_batch(node, cands).questions) == full  # no views given: every question


def test_each_question_makes_edges_of_its_view_only() -> None:
    """QUESTION_VIEWS says truly which view a question's answer makes edges of: each question of a
    full batch answered yes on its own (the time Choice with each label) gives an edge of that view."""
    node = Node(id="n", tenant=Tenant("u"), content="x", at=None, entities=("anna",))
    cands = [
        Candidate(Node(id="a", tenant=Tenant("u"), content="y", at=None, entities=("bob",)), 1.0, 0.5, ())
    ]
    batch = relation_batch(node, cands)
    assert {q.key for q in batch.questions.values()} == EVERY_KEY
    time_q = batch.questions["pair_0_time"]
    assert isinstance(time_q, Choice)
    answers: list[tuple[str, Answer]] = [
        (name, NoulAnswer(score=1.0)) for name, q in batch.questions.items() if isinstance(q, Noul)
    ]
    answers += [
        ("pair_0_time", ChoiceAnswer(label=label, distribution={label: 1.0}))
        for label in time_q.labels
        if label != "unknown"
    ]
    for name, answer in answers:
        question = batch.questions[name]
        one = dataclasses.replace(batch, questions={name: question})
        edges = inferred_edges(node, cands, one, BatchResult(answers={name: answer}), 0.5)
        if question.key == "relation.supersedes":
            assert edges == []
        else:
            assert [e.view for e in edges] == [QUESTION_VIEWS[question.key]], name


def test_backfill_asks_only_the_views_it_adds(tmp_path: Path, hashing: Embedder) -> None:
    profile = Profile.builtin().with_(write__consolidation="off")
    with Memory.open(tmp_path / "m.db", embedder=hashing, profile=profile) as mem:
        s = mem.scope("u")
        for who, text, at in TURNS:
            s.add(text, speaker=who, at=at, session="s1")
        ctl = ScriptedController({"relation.time": "unknown"}, default=0.9)
        semantic = dataclasses.replace(profile.write, views=("semantic",))
        report = backfill_views(mem.store, Meter(ctl), semantic, None)
    keys = {q.key for batch in ctl.batches for q in batch.questions.values()}
    assert keys == {"relation.semantic", "relation.supersedes"}
    assert report.edges["semantic"] > 0

"""Versions at read time (dualmem.read.versions): the current version answers, history asks the old one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dualmem import Memory, Profile
from dualmem.embed import Embedder
from dualmem.memory import Filter

NOTES = [
    ("Harvest orchestrates jobs with Airflow.", "2024-03-01T10:00:00Z"),
    ("The harvest repo's CI runs on GitHub Actions.", "2024-03-02T10:00:00Z"),
    ("User prefers dark mode in every editor.", "2024-03-03T10:00:00Z"),
    ("Standup is at 9:30 on weekdays.", "2024-03-04T10:00:00Z"),
    ("User's laptop is a ThinkPad X1.", "2024-03-05T10:00:00Z"),
]
#: shares no word with the question "Which orchestrator does harvest use?"
PORTED = "DAGs got ported to Dagster last sprint."


@pytest.fixture
def mem(minilm: Embedder, tmp_path: Path) -> Iterator[tuple[Memory, str, str]]:
    with Memory.open(tmp_path / "m.db", embedder=minilm, answerer=None) as m:
        s = m.scope("u")
        ids = [s.add(t, speaker="agent", at=at) for t, at in NOTES]
        new = s.update(ids[0], PORTED, at="2024-04-15T10:00:00Z")  # a new version: the old one ends
        yield m, ids[0], new


def test_the_current_version_is_found_through_the_stale_hit(mem: tuple[Memory, str, str]) -> None:
    m, old, new = mem
    assert m.get(old, user="u").valid_to is not None
    found = m.search("Which orchestrator does harvest use?", user="u", k=5).evidence
    ids = [e.node.id for e in found]
    assert ids[0] == new, [e.node.content for e in found]
    assert old in ids  # the history is still there, below the update
    assert ids.index(old) > 0
    assert found[ids.index(old)].score < found[0].score


def test_a_question_about_the_past_gets_the_old_version_first(mem: tuple[Memory, str, str]) -> None:
    m, old, new = mem
    found = m.search("Which orchestrator did harvest use before?", user="u", k=5).evidence
    ids = [e.node.id for e in found]
    assert ids[0] == old, [e.node.content for e in found]
    assert new in ids


def test_a_filter_never_lets_another_version_in(mem: tuple[Memory, str, str]) -> None:
    m, _, new = mem
    only_march = Filter(until="2024-03-31T00:00:00Z")  # the update was observed in April
    found = m.search("Which orchestrator does harvest use?", user="u", k=5, where=only_march).evidence
    assert new not in [e.node.id for e in found]


def test_the_paper_profile_ranks_versions_as_scored(minilm: Embedder, tmp_path: Path) -> None:
    with Memory.open(tmp_path / "p.db", embedder=minilm, answerer=None, profile=Profile.paper()) as m:
        s = m.scope("u")
        ids = [s.add(t, speaker="agent", at=at) for t, at in NOTES]
        new = s.update(ids[0], PORTED)
        found = s.search("Which orchestrator does harvest use?", k=5).evidence
        assert found[0].node.id != new  # no version rule: the matching old text wins


def test_a_likely_update_answers_before_what_it_probably_replaced(minilm: Embedder, tmp_path: Path) -> None:
    """``read.likely_update``: a write judged an update below the write's threshold (no supersession
    stored) still ranks above the older result when both answer the query."""
    from dualmem.control.scripted import ScriptedController

    path = tmp_path / "l.db"
    table = {
        "relation.supersedes": 0.5,
        "relation.time": "unknown",
        "consolidate.representation": "uncertain",
    }
    writer = ScriptedController(table, default=0.1)  # type: ignore[arg-type]
    with Memory.open(path, embedder=minilm, controller=writer, answerer=None, profile=Profile.dualmem()) as m:
        s = m.scope("u")
        for t, at in NOTES[1:]:
            s.add(t, speaker="agent", at=at)
        old = s.add(NOTES[0][0], speaker="agent", at="2024-02-01T10:00:00Z")
        new = s.add(
            "Harvest's jobs are orchestrated by Dagster now.", speaker="agent", at="2024-04-01T10:00:00Z"
        )
        assert s.get(old).valid_to is None  # 0.5 is below the write's threshold: nothing superseded
    query = "Which orchestrator does harvest use?"
    ranks = {}
    for likely in (None, 0.4):
        profile = Profile.builtin().with_(read__likely_update=likely)
        with Memory.open(path, embedder=minilm, answerer=None, profile=profile) as m:
            ids = [e.node.id for e in m.search(query, user="u", k=5).evidence]
        ranks[likely] = (ids.index(new), ids.index(old))
    assert ranks[0.4][0] < ranks[0.4][1]  # the likely update first
    # both notes state one slot (harvest · orchestrator): a question about it puts the newest first
    # even without the judgement (read.versions, slot rule)
    assert ranks[None][0] < ranks[None][1]

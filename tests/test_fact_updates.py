"""Write decisions feed the read path: an update supersedes the fact it replaces.

Each case stores an older fact, unrelated turns, then an update by the same speaker; the write of
the update (the builtin decider's ``relation.supersedes``) marks the older fact superseded
(``valid_to`` and a ``superseded_by`` edge), and "... now?" finds the update first with the older
version after it, marked. A question about the past still finds the older fact first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dualmem import Memory
from dualmem.embed import Embedder

FILLER = [
    ("user", "Can you help me plan a weekend in Rome?"),
    ("assistant", "Sure: day one the Colosseum and the Forum, day two the Vatican Museums, then Trastevere."),
    ("user", "What is a quick pasta recipe for two?"),
    ("assistant", "Cacio e pepe: pecorino, black pepper and a ladle of pasta water, tossed off the heat."),
]

CASES = [
    # (speaker, old fact, update, question now, question about the past)
    (
        "user",
        "I live in Berlin, in a small flat in Kreuzberg.",
        "We finally moved to Hamburg last month, the new flat has a balcony.",
        "Where do I live now?",
        "Where did I live before?",
    ),
    (
        "user",
        "I work as a nurse at St. Mary's hospital, mostly night shifts.",
        "I just started a new job at the city clinic, day shifts only.",
        "Where do I work now?",
        "Where did I use to work?",
    ),
    (
        "user",
        "I'm vegetarian, so no meat or fish for me, please.",
        "I've started eating fish again, salmon twice a week.",
        "Do I eat fish these days?",
        "Did I use to be vegetarian?",
    ),
    (
        "Mira",
        "Mira: I live in Lisbon, close to the river.",
        "Mira: I moved to Porto in June, my new place is near the old town.",
        "Where does Mira live now?",
        "Where did Mira live before?",
    ),
]


@pytest.mark.parametrize(
    ("speaker", "old", "new", "now", "past"), CASES, ids=["city", "job", "diet", "named"]
)
def test_the_latest_fact_ranks_first_and_the_old_one_is_marked(
    minilm: Embedder, tmp_path: Path, speaker: str, old: str, new: str, now: str, past: str
) -> None:
    with Memory.open(tmp_path / "m.db", embedder=minilm, answerer=None) as mem:
        s = mem.scope("u")
        old_id = s.add(old, speaker=speaker, at="2024-01-10T10:00:00Z")
        for i, (who, text) in enumerate(FILLER):
            s.add(text, speaker=who if speaker == "user" else speaker, at=f"2024-02-1{i}T10:00:00Z")
        new_id = s.add(new, speaker=speaker, at="2024-03-10T10:00:00Z")
        assert s.get(old_id).valid_to is not None  # superseded when the update was written
        assert s.consolidate().superseded == ()  # nothing left for a consolidation pass
        assert s.get(new_id).valid_to is None
        assert any(e.label == "superseded_by" and e.target == new_id for e in s.inspect(old_id).edges)
        found = s.search(now, k=5).evidence
        ids = [e.node.id for e in found]
        assert ids[0] == new_id, [e.node.content for e in found]
        assert old_id in ids  # the history is still there, below the update
        assert found[ids.index(old_id)].node.valid_to is not None
        history = s.search(past, k=5).evidence
        assert history[0].node.id == old_id, [e.node.content for e in history]


def test_someone_elses_move_supersedes_nothing(minilm: Embedder, tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", embedder=minilm, answerer=None) as mem:
        s = mem.scope("u")
        mine = s.add(
            "I live in Berlin, in a small flat in Kreuzberg.", speaker="user", at="2024-01-10T10:00:00Z"
        )
        s.add("My sister moved to Paris last month.", speaker="user", at="2024-03-10T10:00:00Z")
        s.add("Jon: I moved to Rome in May.", speaker="Jon", at="2024-03-11T10:00:00Z")
        assert s.consolidate().superseded == ()
        assert s.get(mine).valid_to is None


def test_a_reply_that_disagrees_supersedes_nothing(minilm: Embedder, tmp_path: Path) -> None:
    """A preference the other speaker (the assistant) answers with the opposite taste words is a
    reply, not an update: the user's words stay current (the pair is from the agent-chat corpus,
    where the hand-set contradiction head used to supersede the user's turn)."""
    import json

    corpus = Path(__file__).resolve().parents[1] / "bench" / "agentchat" / "src" / "persona-06.json"
    turns = json.loads(corpus.read_text(encoding="utf-8"))["sessions"][0]["turns"]
    with Memory.open(tmp_path / "m.db", embedder=minilm, answerer=None) as mem:
        s = mem.scope("u")
        mine = s.add(turns[4]["text"], speaker="user", at="2024-01-10T10:00:00Z")
        s.add(turns[5]["text"], speaker="assistant", at="2024-01-10T10:01:00Z")
        assert s.consolidate().superseded == ()
        assert s.get(mine).valid_to is None

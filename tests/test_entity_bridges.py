"""research.entity_bridges: which evidence pairs an entity set links (speakers never link)."""

from __future__ import annotations

from research.entity_bridges import bridges, entity_sets

from dualmem.conversations import QA, Conversation
from dualmem.types import Observation


def test_a_phrase_is_two_adjacent_entities() -> None:
    sets = entity_sets("Mira joined a support group for parents.", "Mira")
    assert "support group" in sets["phrases"]
    assert "support group" not in sets["uncapped"]
    assert sets["stored"] <= sets["uncapped"]


def test_pairs_are_linked_by_a_shared_entity_never_by_a_speaker() -> None:
    turns = [
        ("D1", "Mira", "I started a pottery class."),
        ("D2", "Jon", "The pottery bowl came out of the kiln."),
        ("D3", "Mira", "Bought figs at the market."),
        *((f"F{i}", "Ann", f"Filler line number {i} about weather.") for i in range(20)),
    ]
    obs = tuple(Observation(text, speaker=s, session="s1", turn_id=t) for t, s, text in turns)
    questions = (
        QA("What did Mira make at her class?", None, ("D1", "D2"), 1),
        QA("What did Mira do?", None, ("D1", "D3"), 1),  # only her name in common
    )
    out = bridges(Conversation("c", obs, questions))
    assert out["stored"] == (2, 1, 0)  # the pottery pair, not the speaker pair

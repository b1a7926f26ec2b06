"""A fact at the end of a long message is found (the lexical side indexes the whole text)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dualmem import Memory
from dualmem.embed import Embedder

FILLER = (
    "We talked about the weather, the traffic on the ring road, a film we both liked, the price of "
    "groceries, and how the garden looks after the rain. "
)


@pytest.mark.slow
def test_a_fact_at_the_end_of_a_2000_word_message_is_found(minilm: Embedder, tmp_path: Path) -> None:
    long = FILLER * (2100 // len(FILLER.split())) + "The spare key is hidden under the blue flowerpot."
    assert len(long.split()) > 2000
    with Memory.open(tmp_path / "m.db", embedder=minilm, answerer=None) as mem:
        for i in range(30):
            mem.add(f"Short note {i}: {FILLER}", user="u", speaker="Ana", session="s1")
        target = mem.add(long, user="u", speaker="Assistant", session="s1")
        found = mem.search("Where is the spare key hidden?", user="u", k=5)
    assert target in [e.node.id for e in found.evidence]

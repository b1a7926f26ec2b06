"""User-assistant transcripts (issue 27): roles for speakers, no names in questions, long answers.

With the packaged scorer (fitted on LoCoMo dev and the agent-chat dev corpus), a turn that only
asks a question must not outrank the turn that answers it, "what did you suggest" finds the
assistant's words and "what do I ..." the user's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dualmem import Memory
from dualmem.embed import Embedder

TURNS = [
    ("user", "Can you help me set up a practice routine? I want to get better over the summer."),
    ("assistant", "Happy to help! What type of music do you play, and on which instrument?"),
    ("user", "Mostly jazz piano, plus some bossa nova with friends on weekends."),
    (
        "assistant",
        "Great. Here is a weekly plan:\n\n1. **Scales** (10 min): all 12 major scales, hands together.\n"
        "2. **Voicings** (15 min): rootless voicings on ii-V-I in every key.\n"
        "3. **Repertoire** (20 min): learn *Autumn Leaves* and *Blue Bossa* by ear.\n\n"
        "For ear training I suggest the free app Functional Ear Trainer, ten minutes a day.",
    ),
    ("user", "What kind of music theory book should a beginner start with?"),
    ("assistant", "The Jazz Theory Book by Mark Levine is the standard; start with chapters 1 to 4."),
    ("user", "Also, my landlord says the building's heating will be off next week."),
    ("assistant", "Keep the piano away from the window and watch the humidity while the heating is off."),
]


@pytest.fixture
def mem(minilm: Embedder, tmp_path: Path) -> Iterator[Memory]:
    with Memory.open(tmp_path / "chat.db", embedder=minilm, answerer=None) as m:
        m.add_many(
            [
                {"text": t, "speaker": s, "at": f"2024-05-10T10:{i:02d}:00Z", "session": "s1"}
                for i, (s, t) in enumerate(TURNS)
            ],
            user="u",
        )
        yield m


def _rank(mem: Memory, query: str) -> list[str]:
    return [e.node.content for e in mem.search(query, user="u", k=8).evidence]


def test_the_answer_outranks_the_question_it_answers(mem: Memory) -> None:
    ranked = _rank(mem, "What type of music do I play?")
    answer, question = TURNS[2][1], TURNS[1][1]
    assert ranked.index(answer) < ranked.index(question), ranked


def test_you_suggested_finds_the_assistants_words(mem: Memory) -> None:
    ranked = _rank(mem, "Which ear training app did you suggest?")
    assert ranked[0] == TURNS[3][1], ranked


def test_what_i_said_finds_the_users_words(mem: Memory) -> None:
    ranked = _rank(mem, "What did I say about the heating?")
    assert ranked[0] == TURNS[6][1], ranked

"""The agent-chat dev corpus (bench/agentchat): haystacks built from their sources, message queries sound.

A ``message`` question is the user's next turn after the last session (what the read hook sends);
its evidence names the earlier persona turns it builds on, all inside the haystack it is asked of.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench_scripts import load_bench
from dualmem.conversations import load_conversations

CORPUS = Path(__file__).resolve().parents[1] / "bench" / "agentchat"
PERSONAS = sorted((CORPUS / "src").glob("persona-*.json"))

build = load_bench("agentchat/build.py")


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_there_are_sixteen_personas() -> None:
    assert len(PERSONAS) == 16


@pytest.mark.parametrize("src", PERSONAS, ids=[p.stem for p in PERSONAS])
def test_the_committed_haystack_is_what_build_writes(src: Path) -> None:
    fillers = _json(CORPUS / "src" / "fillers.json")
    built = build.haystack(_json(src), fillers, 14)
    assert _json(CORPUS / "haystacks" / src.name) == built


@pytest.mark.parametrize("src", PERSONAS, ids=[p.stem for p in PERSONAS])
def test_message_queries_build_on_earlier_turns_of_their_haystack(src: Path) -> None:
    (conv,) = load_conversations(CORPUS / "haystacks" / src.name)
    messages = [q for q in conv.questions if q.category == "message"]
    assert 5 <= len(messages) <= 6
    position = {o.turn_id: n for n, o in enumerate(conv.observations)}
    last = conv.observations[-1].at
    assert conv.skipped_evidence == 0
    for qa in messages:
        assert 1 <= len(qa.evidence) <= 3, qa.question
        assert len(set(qa.evidence)) == len(qa.evidence), qa.question
        for turn_id in qa.evidence:
            assert turn_id in position, (qa.question, turn_id)
            assert not turn_id.startswith("f"), (qa.question, turn_id)  # a persona turn, not a filler
            assert conv.observations[position[turn_id]].at <= last, (qa.question, turn_id)
        assert qa.answer, qa.question
        # the user's next message is not itself stored in the memory
        assert all(o.content != qa.question for o in conv.observations)

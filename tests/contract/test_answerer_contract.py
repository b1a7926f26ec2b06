"""The Answerer contract: every System-Two implementation passes these tests.

Run against the offline extractive answerer and the OpenAI-compatible chat answerer, the latter over a
real local HTTP server (``tests/fakes``) scripted as a faithful model: it answers with a memory line
that shares a word with the question, and otherwise declines in its own words.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from dualmem.errors import DualmemError, RuntimeFailure
from dualmem.reason import ABSTAIN_TEXT, Answerer, Draft, create_answerer
from dualmem.types import Evidence, Node, TemporalRef, Tenant
from fakes.openai_server import FakeOpenAIServer, chat_text, prompt_text

TENANT = Tenant("u")
_STOP = {"what", "when", "where", "which", "who", "whom", "does", "did", "the", "and", "why", "how", "with"}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.casefold()) if len(w) > 2 and w not in _STOP}


def faithful_model(request: dict[str, Any]) -> dict[str, Any]:
    """A stand-in LLM that follows the system prompt: quote a supporting memory or decline."""
    prompt = prompt_text(request)
    question = prompt.rsplit("Question:", 1)[-1]
    topic = _words(question) - {"mira", "jon"}
    for line in prompt.splitlines():
        if line.startswith("    ") and "time references:" not in line and topic & _words(line):
            return chat_text(line.strip(), request=request)
    return chat_text("the memory does NOT contain the answer", request=request)  # its own casing


def _node(i: int, content: str, *, day: int, speaker: str = "Mira", refs: Sequence[TemporalRef] = ()) -> Node:
    at = dt.datetime(2024, 5, day, 10, tzinfo=dt.UTC)
    return Node(id=f"n{i}", tenant=TENANT, content=content, at=at, speaker=speaker, temporal_refs=tuple(refs))


YESTERDAY = TemporalRef("yesterday", dt.date(2024, 5, 15), dt.date(2024, 5, 15), "day")
EVIDENCE = (
    Evidence(_node(1, "Mira: My old bicycle broke.", day=14), 0.9),
    Evidence(
        _node(
            2, "Mira: I bought a new bicycle yesterday because my old one broke.", day=16, refs=[YESTERDAY]
        ),
        0.8,
        temporal_refs=(YESTERDAY,),
    ),
    Evidence(_node(3, "Jon: I went hiking in the Alps in July.", day=20, speaker="Jon"), 0.3),
)
SUPPORTED = "Why did Mira buy a new bicycle?"
UNSUPPORTED = "What is the name of Mira's cat?"


@pytest.fixture(params=["extractive", "chat"])
def answerer(request: pytest.FixtureRequest) -> Iterator[Answerer]:
    if request.param == "extractive":
        yield create_answerer("extractive")
        return
    with FakeOpenAIServer(chat=faithful_model) as server:
        chat = create_answerer("chat", base_url=server.base_url, model="fake-model")
        yield chat
        chat.close()  # type: ignore[attr-defined]


def test_is_an_answerer_with_a_name(answerer: Answerer) -> None:
    assert isinstance(answerer, Answerer)
    assert isinstance(answerer.name, str)
    assert answerer.name


def test_answers_a_supported_question_from_the_evidence(answerer: Answerer) -> None:
    draft = answerer.answer(SUPPORTED, EVIDENCE)
    assert isinstance(draft, Draft)
    assert not draft.abstained
    assert isinstance(draft.text, str)
    assert draft.text.strip()
    assert draft.text != ABSTAIN_TEXT
    assert "bicycle" in draft.text
    assert draft.used
    assert set(draft.used) <= {e.node.id for e in EVIDENCE}  # never cites what it was not shown


@pytest.mark.parametrize(
    ("question", "evidence"), [(UNSUPPORTED, EVIDENCE), (SUPPORTED, ()), (UNSUPPORTED, ())], ids=str
)
def test_abstains_in_one_canonical_way(
    answerer: Answerer, question: str, evidence: tuple[Evidence, ...]
) -> None:
    draft = answerer.answer(question, evidence)
    assert draft.abstained
    assert draft.text == ABSTAIN_TEXT
    assert draft.used == ()


def test_is_deterministic_and_leaves_its_input_alone(answerer: Answerer) -> None:
    evidence = list(EVIDENCE)
    first = answerer.answer(SUPPORTED, evidence)
    second = answerer.answer(SUPPORTED, evidence)
    assert (first.text, first.abstained, first.used) == (second.text, second.abstained, second.used)
    assert evidence == list(EVIDENCE)


def test_token_counts_are_absent_or_non_negative(answerer: Answerer) -> None:
    draft = answerer.answer(SUPPORTED, EVIDENCE)
    for count in (draft.input_tokens, draft.output_tokens):
        assert count is None or (isinstance(count, int) and count >= 0)


def test_takes_any_unicode_and_many_memories(answerer: Answerer) -> None:
    many = [
        Evidence(
            _node(100 + i, f"Mira: note {i} — café ☕ naïve 東京 bicycle lane {i}.", day=1 + i % 28), 0.5
        )
        for i in range(60)
    ]
    draft = answerer.answer("Which bicycle lane did Mira note? ✨", many)
    assert isinstance(draft, Draft)
    assert draft.text.strip()
    assert set(draft.used) <= {e.node.id for e in many}


def test_failures_are_runtime_errors_never_answers() -> None:
    """A remote answerer whose endpoint fails raises a RuntimeFailure; it never makes up a Draft."""
    with FakeOpenAIServer(chat=faithful_model) as server:
        chat = create_answerer("chat", base_url=server.base_url, model="fake-model")
        server.fail(500, times=10)
        with pytest.raises(RuntimeFailure) as info:
            chat.answer(SUPPORTED, EVIDENCE)
        assert isinstance(info.value, DualmemError)
        chat.close()  # type: ignore[attr-defined]

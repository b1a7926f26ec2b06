"""ChatAnswerer and ChatClient against a local fake OpenAI-compatible server."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from dualmem.control.retry import RetryPolicy
from dualmem.errors import AnswererError
from dualmem.reason.base import Answerer
from dualmem.reason.chat_client import ChatClient, ChatCompletion
from dualmem.reason.openai_chat import ABSTAIN_TEXT, ChatAnswerer, build_messages, is_abstention
from dualmem.types import Evidence, Node, TemporalRef, Tenant
from fakes.openai_server import FakeOpenAIServer, Reply, chat_text, prompt_text

TENANT = Tenant("u1")


def _evidence() -> list[Evidence]:
    m1 = Node(
        id="m1",
        tenant=TENANT,
        content="Mira: My old bicycle broke.",
        at=dt.datetime(2024, 5, 14, 10, 0, tzinfo=dt.UTC),
        speaker="Mira",
    )
    yesterday = TemporalRef("yesterday", dt.date(2024, 5, 15), dt.date(2024, 5, 15), "day")
    last_week = TemporalRef("last week", dt.date(2024, 5, 6), dt.date(2024, 5, 12), "week")
    m2 = Node(
        id="m2",
        tenant=TENANT,
        content="Mira: I bought a new bicycle yesterday because my old one broke last week.",
        at=dt.datetime(2024, 5, 16, tzinfo=dt.UTC),
        speaker="Mira",
        temporal_refs=(yesterday,),
    )
    return [Evidence(node=m1, score=0.9), Evidence(node=m2, score=0.8, temporal_refs=(yesterday, last_week))]


QUESTION = "When did Mira buy a new bicycle, and why?"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as s:
        yield s


def test_prompt_shows_observation_dates_speakers_and_grounded_references() -> None:
    system, user = build_messages(QUESTION, _evidence())
    assert system["role"] == "system"
    assert user["role"] == "user"
    assert ABSTAIN_TEXT in system["content"]
    assert "not necessarily when the event happened" in system["content"]
    text = user["content"]
    assert "observed on 14 May 2024, 10:00 UTC; speaker: Mira" in text
    assert "observed on 16 May 2024; speaker: Mira" in text
    assert "Mira: My old bicycle broke." in text
    assert "'yesterday' = 15 May 2024 (day)" in text
    assert "'last week' = 6 May 2024 to 12 May 2024 (week)" in text
    assert text.rstrip().endswith(f"Question: {QUESTION}")
    assert text.index("My old bicycle") < text.index("bought a new bicycle")  # evidence order kept


def test_prompt_without_evidence_or_dates() -> None:
    node = Node(id="x", tenant=TENANT, content="Something happened.", at=None)
    _, user = build_messages("What?", [Evidence(node=node, score=1.0)])
    assert "observed on an unknown date; speaker: unknown" in user["content"]
    _, empty = build_messages("What?", [])
    assert "(no memories)" in empty["content"]


def test_answer_round_trip(server: FakeOpenAIServer) -> None:
    server.chat = lambda request: chat_text("  On 15 May 2024, because her old one broke.\n", request=request)
    answerer = ChatAnswerer(base_url=server.base_url, model="fake-model", api_key="sk-x", max_tokens=64)
    assert isinstance(answerer, Answerer)
    assert answerer.name == "chat"
    draft = answerer.answer(QUESTION, _evidence())
    assert draft.text == "On 15 May 2024, because her old one broke."
    assert not draft.abstained
    assert draft.used == ("m1", "m2")
    (request,) = server.chat_requests()
    assert request.json["model"] == "fake-model"
    assert (request.json["max_tokens"], request.json["temperature"]) == (64, 0.0)
    assert request.headers["Authorization"] == "Bearer sk-x"
    assert request.json["messages"] == build_messages(QUESTION, _evidence())
    assert draft.input_tokens == len(prompt_text(request.json)) // 4 + 1
    assert draft.output_tokens == 9


@pytest.mark.parametrize(
    ("reply", "abstained"),
    [
        (ABSTAIN_TEXT, True),
        ("the memory does not contain the answer", True),
        ("  The memory does not contain the answer.  Sorry!", True),
        ("The memory does not say.", False),
        ("Paris.", False),
    ],
)
def test_abstention(server: FakeOpenAIServer, reply: str, abstained: bool) -> None:
    server.chat = lambda request: chat_text(reply, request=request)
    draft = ChatAnswerer(base_url=server.base_url, model="m").answer(QUESTION, _evidence())
    assert draft.abstained is abstained
    assert is_abstention(reply) is abstained
    if abstained:
        assert draft.text == ABSTAIN_TEXT
        assert draft.used == ()


def _fast(server: FakeOpenAIServer, **kwargs: Any) -> ChatAnswerer:
    client = ChatClient(
        base_url=server.base_url, model="m", retry=RetryPolicy(attempts=2, backoff_s=0.0), **kwargs
    )
    return ChatAnswerer.from_client(client, max_tokens=32)


def test_server_errors_are_answerer_errors_after_bounded_retries(server: FakeOpenAIServer) -> None:
    server.fail(502, times=5)
    with pytest.raises(AnswererError, match="502") as info:
        _fast(server).answer(QUESTION, _evidence())
    assert len(server.requests) == 2
    assert "\n" not in info.value.one_line()


@pytest.mark.parametrize(
    "reply",
    [
        Reply(raw=b"<html>oops</html>"),
        Reply({"choices": []}),
        Reply({"choices": [{"message": {"content": None}}]}),
        Reply({"error": {"message": "bad model"}}, status=404),
    ],
)
def test_malformed_replies_are_answerer_errors(server: FakeOpenAIServer, reply: Reply) -> None:
    server.queue(reply)
    with pytest.raises(AnswererError):
        _fast(server).answer(QUESTION, _evidence())


def test_timeouts_are_answerer_errors(server: FakeOpenAIServer) -> None:
    server.queue(Reply({}, delay=0.5), times=2)
    with pytest.raises(AnswererError, match="timed out"):
        _fast(server, timeout=0.1).answer(QUESTION, _evidence())


def test_chat_client_complete_over_a_mock_transport() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=chat_text("yes"))

    with ChatClient(
        base_url="http://llm.invalid/v1/", model="judge", transport=httpx.MockTransport(handler)
    ) as c:
        out = c.complete([{"role": "user", "content": "Is it?"}], max_tokens=5, temperature=0.3)
    assert out == ChatCompletion("yes", 1, 1)
    assert seen == [
        {
            "model": "judge",
            "messages": [{"role": "user", "content": "Is it?"}],
            "max_tokens": 5,
            "temperature": 0.3,
        }
    ]

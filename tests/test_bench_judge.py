"""LLM-as-a-judge over a local fake OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dualmem.bench.judge import BinaryJudge, ContinuousJudge, JudgeError, parse_binary, parse_score
from dualmem.control.retry import RetryPolicy
from dualmem.reason.chat_client import ChatClient
from fakes.openai_server import FakeOpenAIServer, Reply, chat_text, prompt_text


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as s:
        yield s


def _client(server: FakeOpenAIServer) -> ChatClient:
    return ChatClient(
        base_url=server.base_url,
        model="judge-model",
        timeout=5.0,
        retry=RetryPolicy(attempts=1),
        error=JudgeError,
    )


@pytest.mark.parametrize(
    ("reply", "label"),
    [("CORRECT", "CORRECT"), ("wrong", "WRONG"), ("**CORRECT**.", "CORRECT"), ("Label: INCORRECT", "WRONG")],
)
def test_parse_binary(reply: str, label: str) -> None:
    assert parse_binary(reply) == label


@pytest.mark.parametrize("reply", ["", "Yes", "CORRECT or WRONG", "Correctness: high"])
def test_parse_binary_rejects(reply: str) -> None:
    with pytest.raises(JudgeError):
        parse_binary(reply)


@pytest.mark.parametrize(
    ("reply", "value"), [("SCORE: 0.8", 0.8), ("score=1", 1.0), ("SCORE: 0", 0.0), ("SCORE: .25\n", 0.25)]
)
def test_parse_score(reply: str, value: float) -> None:
    assert parse_score(reply) == value


@pytest.mark.parametrize(
    "reply", ["0.8", "SCORE: 1.5", "SCORE: -0.1", "SCORE: 0.2 SCORE: 0.9", "SCORE: high"]
)
def test_parse_score_rejects(reply: str) -> None:
    with pytest.raises(JudgeError):
        parse_score(reply)


def test_binary_judge_round_trip(server: FakeOpenAIServer) -> None:
    def respond(request: dict[str, Any]) -> dict[str, Any]:
        text = prompt_text(request)
        verdict = "CORRECT" if "Generated answer: 15 May 2024" in text else "WRONG"
        return chat_text(verdict, request=request)

    server.chat = respond
    judge = BinaryJudge(_client(server))
    good = judge.judge(question="When?", gold="15 May 2024", generated="15 May 2024")
    bad = judge.judge(question="When?", gold="15 May 2024", generated="last year")
    assert (good.score, good.label) == (1.0, "CORRECT")
    assert (bad.score, bad.label) == (0.0, "WRONG")
    assert good.input_tokens is not None
    sent = server.chat_requests()[0].json
    assert sent["model"] == "judge-model"
    assert sent["temperature"] == 0.0
    assert "Reference answer: 15 May 2024" in prompt_text(sent)


def test_binary_judge_malformed_reply_is_an_error(server: FakeOpenAIServer) -> None:
    server.chat = lambda request: chat_text("I think it is fine", request=request)
    with pytest.raises(JudgeError, match="neither CORRECT nor WRONG"):
        BinaryJudge(_client(server)).judge(question="q", gold="a", generated="b")


def test_continuous_judge(server: FakeOpenAIServer) -> None:
    server.chat = lambda request: chat_text("SCORE: 0.75", request=request)
    v = ContinuousJudge(_client(server)).judge(question="q", gold="a", generated="b")
    assert v.score == 0.75
    assert v.label is None
    server.chat = lambda request: chat_text("SCORE: 7", request=request)
    with pytest.raises(JudgeError, match="outside"):
        ContinuousJudge(_client(server)).judge(question="q", gold="a", generated="b")


def test_endpoint_failure_is_a_judge_error(server: FakeOpenAIServer) -> None:
    server.queue(Reply({"error": {"message": "bad key"}}, status=401))
    with pytest.raises(JudgeError):
        BinaryJudge(_client(server)).judge(question="q", gold="a", generated="b")

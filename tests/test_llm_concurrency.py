"""Issue 12, finding 2 (concurrency): requests in flight fit the server; queue-full replies back off.

Against a local fake server that processes one request at a time and refuses a long queue with
503/429 + ``Retry-After``, as llama.cpp (or a proxy in front of it) does.
"""

from __future__ import annotations

import httpx
import pytest

from dualmem.control.config import LLMConfig
from dualmem.control.llm import LLMController
from dualmem.control.questions import Batch, Noul
from dualmem.errors import ControllerError
from dualmem.http import RetryPolicy, TransientStatus, call_with_retry, post_json, retry_after_s
from fakes.openai_server import FakeOpenAIServer, LlamaCpp, Reply

NOUL = Noul("typing.episodic", "Does observation describe an event?", "An event.", "No event.")
BATCH = Batch(state={"observation": "x"}, questions={f"q{i}": NOUL for i in range(8)})


def test_default_concurrency_is_one_for_a_local_server() -> None:
    assert LLMConfig(base_url="http://127.0.0.1:8080/v1", model="m").concurrency == 1
    assert LLMConfig(base_url="https://api.example.com/v1", model="m").concurrency == 4
    assert LLMConfig(base_url="http://127.0.0.1:8080/v1", model="m", max_concurrency=3).concurrency == 3
    assert LLMController(base_url="http://localhost:1/v1", model="m").concurrency == 1


def test_a_local_server_sees_one_request_at_a_time() -> None:
    with FakeOpenAIServer(llama=LlamaCpp(serial=False, latency=0.05)) as server:
        cfg = LLMConfig(base_url=server.base_url, model="m", debias="none")
        LLMController.from_config(cfg).decide(BATCH)
    assert server.max_in_flight == 1
    assert len(server.chat_requests()) == 8


def test_max_concurrency_is_honoured() -> None:
    with FakeOpenAIServer(llama=LlamaCpp(serial=False, latency=0.2)) as server:
        cfg = LLMConfig(base_url=server.base_url, model="m", debias="none", max_concurrency=4)
        LLMController.from_config(cfg).decide(BATCH)
    assert 1 < server.max_in_flight <= 4


@pytest.mark.parametrize("status", [429, 503])
def test_queue_full_replies_back_off_and_succeed(status: int) -> None:
    llama = LlamaCpp(latency=0.05, max_queue=1, busy_status=status, retry_after="0")
    with FakeOpenAIServer(llama=llama) as server:
        ctl = LLMController(
            base_url=server.base_url, model="m", debias="none", concurrency=4,
            retry=RetryPolicy(attempts=30, backoff_s=0.01, max_backoff_s=0.05),
        )  # fmt: skip
        result = ctl.decide(BATCH)
    assert set(result.answers) == set(BATCH.questions)
    assert server.refused  # the queue really was full, and those requests were tried again


def test_retry_after_is_honoured_and_capped() -> None:
    sleeps: list[float] = []
    calls = iter(
        [TransientStatus(503, "busy", retry_after=1.5), TransientStatus(429, "busy", retry_after=99.0)]
    )

    def flaky() -> str:
        exc = next(calls, None)
        if exc is not None:
            raise exc
        return "ok"

    policy = RetryPolicy(attempts=3, backoff_s=0.1, max_retry_after_s=5.0)
    assert call_with_retry(flaky, policy, retry_on=(TransientStatus,), sleep=sleeps.append) == "ok"
    assert sleeps == [1.5, 5.0]  # at least the server's wait, at most the cap


def test_a_wait_past_the_deadline_ends_the_retries() -> None:
    sleeps: list[float] = []

    def busy() -> str:
        raise TransientStatus(503, "busy", retry_after=10.0)

    with pytest.raises(TransientStatus):
        call_with_retry(busy, RetryPolicy(attempts=5), retry_on=(TransientStatus,), sleep=sleeps.append,
                        deadline=1.0, clock=lambda: 0.0)  # fmt: skip
    assert sleeps == []


def test_retry_after_header_forms() -> None:
    assert retry_after_s("3") == 3.0
    assert retry_after_s(None) is None
    assert retry_after_s("soon") is None
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480.0 - 2.0) == pytest.approx(2.0)


def test_post_json_reads_the_header_from_a_real_reply() -> None:
    with FakeOpenAIServer() as server:
        server.queue(Reply({"error": {"message": "busy"}}, status=503, headers={"Retry-After": "0"}), times=2)
        with httpx.Client() as client:
            body = post_json(
                client,
                server.base_url + "/chat/completions",
                {"model": "m", "messages": []},
                policy=RetryPolicy(attempts=3, backoff_s=0.0),
                error=ControllerError,
                timeout_error=ControllerError,
            )
    assert body["choices"]
    assert len(server.requests) == 3

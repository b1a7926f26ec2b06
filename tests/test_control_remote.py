"""Remote System-One backends: retries, the logprob LLM controller, and Jev through typesafe-sdk.

Network edges only: a local fake OpenAI server, the jevcompat reference mock, and mock transports.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest

from dualmem.control.jev import JevController
from dualmem.control.llm import MISSING_MARGIN, LLMController, read_option_probs
from dualmem.control.questions import Batch, Choice, Controller, Noul, Score
from dualmem.control.retry import RetryPolicy, call_with_retry, post_json
from dualmem.errors import ConfigError, ControllerError, ControllerTimeout
from fakes.jev_mock import JevMock, MockConfig
from fakes.openai_server import FakeOpenAIServer, Reply, chat_logprobs, hashed_logprobs, prompt_text

FAST = RetryPolicy(attempts=3, backoff_s=0.0)

NOUL = Noul("typing.episodic", "Does observation describe an event?", "A specific event.", "No event.")
CHOICE = Choice(
    "relation.time",
    "How does candidates[0]'s event relate in time to new_memory's?",
    (("before", "earlier"), ("after", "later"), ("unknown", "cannot tell")),
    target=0,
)
SCORE = Score(
    "traverse.relevance", "How relevant is candidates[0] to query?", ("none", "some", "high"), target=0
)
STATE = {"observation": "Mira: I bought a new bicycle yesterday.", "speaker": "Mira", "timestamp": None}
BATCH = Batch(
    state=STATE, questions={"episodic": NOUL, "pair_0_time": CHOICE, "candidate_0_relevance": SCORE}
)


# ------------------------------------------------------------------ retry


def test_backoff_doubles_and_is_capped() -> None:
    policy = RetryPolicy(attempts=5, backoff_s=0.1, max_backoff_s=0.3)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == pytest.approx([0.1, 0.2, 0.3, 0.3])


def test_jitter_is_deterministic_and_bounded() -> None:
    policy = RetryPolicy(backoff_s=1.0, max_backoff_s=8.0, jitter=0.5, seed=7)
    delays = [policy.delay(n) for n in (1, 2, 3)]
    assert delays == [
        RetryPolicy(backoff_s=1.0, max_backoff_s=8.0, jitter=0.5, seed=7).delay(n) for n in (1, 2, 3)
    ]
    for n, d in zip((1, 2, 3), delays, strict=True):
        assert 0.5 * 2 ** (n - 1) <= d <= 2 ** (n - 1)
    assert delays != [
        RetryPolicy(backoff_s=1.0, max_backoff_s=8.0, jitter=0.5, seed=8).delay(n) for n in (1, 2, 3)
    ]


@pytest.mark.parametrize("kwargs", [{"attempts": 0}, {"backoff_s": -1.0}, {"jitter": 1.5}])
def test_bad_policies_are_config_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        RetryPolicy(**kwargs)


def test_call_with_retry_retries_only_listed_errors() -> None:
    calls: list[int] = []
    sleeps: list[float] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("down")
        return "up"

    policy = RetryPolicy(attempts=3, backoff_s=0.5)
    assert call_with_retry(flaky, policy, retry_on=(ConnectionError,), sleep=sleeps.append) == "up"
    assert sleeps == [0.5, 1.0]

    calls.clear()
    with pytest.raises(ConnectionError):
        call_with_retry(flaky, RetryPolicy(attempts=2), retry_on=(ConnectionError,), sleep=sleeps.append)
    assert len(calls) == 2

    def broken() -> str:
        calls.append(1)
        raise KeyError("no")

    calls.clear()
    with pytest.raises(KeyError):
        call_with_retry(broken, policy, retry_on=(ConnectionError,), sleep=sleeps.append)
    assert len(calls) == 1


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as s:
        yield s


def _post(server: FakeOpenAIServer, *, timeout: float = 5.0, attempts: int = 3) -> dict[str, Any]:
    with httpx.Client(timeout=timeout) as client:
        return post_json(
            client,
            server.base_url + "/chat/completions",
            {"model": "m", "messages": []},
            policy=RetryPolicy(attempts=attempts, backoff_s=0.0),
            error=ControllerError,
            timeout_error=ControllerTimeout,
        )


def test_post_json_retries_transient_statuses(server: FakeOpenAIServer) -> None:
    server.fail(503, times=1)
    server.fail(429, times=1)
    assert _post(server)["choices"]
    assert len(server.requests) == 3


def test_post_json_gives_up_after_the_attempts(server: FakeOpenAIServer) -> None:
    server.fail(500, times=5)
    with pytest.raises(ControllerError, match="after 3 attempt") as info:
        _post(server)
    assert len(server.requests) == 3
    assert "\n" not in str(info.value)


def test_post_json_does_not_retry_client_errors(server: FakeOpenAIServer) -> None:
    server.fail(401, times=5)
    with pytest.raises(ControllerError, match="HTTP 401"):
        _post(server)
    assert len(server.requests) == 1


def test_post_json_timeout(server: FakeOpenAIServer) -> None:
    server.queue(Reply({"ok": True}, delay=0.6), times=2)
    with pytest.raises(ControllerTimeout, match="timed out after 2"):
        _post(server, timeout=0.15, attempts=2)
    assert len(server.requests) == 2


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]"])
def test_post_json_malformed_bodies(server: FakeOpenAIServer, raw: bytes) -> None:
    server.queue(Reply(raw=raw))
    with pytest.raises(ControllerError, match="not"):
        _post(server)


def test_post_json_connection_refused() -> None:
    with httpx.Client() as client, pytest.raises(ControllerError, match="unreachable"):
        post_json(
            client,
            "http://127.0.0.1:9/v1/x",
            {},
            policy=RetryPolicy(attempts=2, backoff_s=0.0),
            error=ControllerError,
            timeout_error=ControllerTimeout,
        )


# ------------------------------------------------------------------ LLM controller (logprobs)


def _letters_responder(table: dict[str, dict[str, float]]) -> Any:
    """Answer with the top logprobs of the first table entry whose key is in the prompt."""

    def respond(request: dict[str, Any]) -> dict[str, Any]:
        text = prompt_text(request)
        for needle, top in table.items():
            if needle in text:
                return chat_logprobs(top, request=request)
        return chat_logprobs({"zzz": -0.1}, request=request)

    return respond


def _llm(server: FakeOpenAIServer, **kwargs: Any) -> LLMController:
    """One forward pass per question (no debiasing): these tests pin how logprobs are read."""
    kwargs.setdefault("debias", "none")
    return LLMController(base_url=server.base_url, model="fake-model", retry=FAST, **kwargs)


def test_llm_is_a_controller(server: FakeOpenAIServer) -> None:
    assert isinstance(_llm(server), Controller)


def test_llm_reads_each_question_from_option_logprobs(server: FakeOpenAIServer) -> None:
    server.chat = _letters_responder(
        {
            "event?": {" A": math.log(0.3), "A": math.log(0.3), "b": math.log(0.2), "The": math.log(0.2)},
            "relate in time": {"B": math.log(0.6), "A": math.log(0.2), "C": math.log(0.2)},
            "How relevant": {"0": math.log(0.1), "1": math.log(0.1), "2": math.log(0.8)},
        }
    )
    with _llm(server, api_key="sk-test") as ctl:
        result = ctl.decide(BATCH)
    assert result.noul("episodic") == pytest.approx(0.6 / 0.8)  # " A" + "A" summed, "b" case-folded
    choice = result.choice("pair_0_time")
    assert choice.label == "after"
    assert dict(choice.distribution) == pytest.approx({"before": 0.2, "after": 0.6, "unknown": 0.2})
    score = result.score("candidate_0_relevance")
    assert score.distribution == pytest.approx((0.1, 0.1, 0.8))
    assert score.value == pytest.approx(1.7)
    assert result.usage.output_tokens == 3
    assert result.usage.input_tokens == sum(len(prompt_text(r.json)) // 4 + 1 for r in server.chat_requests())


def test_llm_request_shape(server: FakeOpenAIServer) -> None:
    server.chat = _letters_responder({"": {"A": -0.1, "B": -2.0, "C": -3.0, "0": -1.0, "1": -1.0, "2": -1.0}})
    _llm(server, api_key="sk-test").decide(BATCH)
    requests = server.chat_requests()
    assert len(requests) == 3
    for r in requests:
        body = r.json
        assert body["model"] == "fake-model"
        assert (body["max_tokens"], body["temperature"], body["logprobs"], body["top_logprobs"]) == (
            1,
            0,
            True,
            20,
        )
        assert r.headers["Authorization"] == "Bearer sk-test"
        text = prompt_text(body)
        assert json.dumps(STATE, ensure_ascii=False) in text
        for name in BATCH.questions:
            assert name not in text  # names are bookkeeping, not model input
    by_question = {
        q.instructions: [r for r in requests if q.instructions in prompt_text(r.json)]
        for q in (NOUL, CHOICE, SCORE)
    }
    assert all(len(found) == 1 for found in by_question.values())
    choice_text = prompt_text(by_question[CHOICE.instructions][0].json)
    assert "A. before: earlier" in choice_text
    assert "C. unknown: cannot tell" in choice_text
    score_text = prompt_text(by_question[SCORE.instructions][0].json)
    assert "0. none" in score_text
    assert "2. high" in score_text


def test_llm_missing_options_get_the_floor() -> None:
    body = chat_logprobs({"A": -0.5, "The": -3.0})
    p_a, p_b = read_option_probs(body, ("A", "B"))
    floor = -3.0 - MISSING_MARGIN
    assert p_a == pytest.approx(math.exp(-0.5) / (math.exp(-0.5) + math.exp(floor)))
    assert p_a + p_b == pytest.approx(1.0)


def test_llm_no_option_token_is_an_error(server: FakeOpenAIServer) -> None:
    server.chat = _letters_responder({"": {"Yes": -0.1, "No": -2.0}})
    with pytest.raises(ControllerError, match="none of the option tokens"):
        _llm(server).decide(Batch(state=STATE, questions={"episodic": NOUL}))


@pytest.mark.parametrize(
    "body",
    [
        {"choices": []},
        {"choices": [{"message": {"content": "A"}}]},
        {"choices": [{"logprobs": {"content": [{"top_logprobs": []}]}}]},
        {"choices": [{"logprobs": {"content": [{"top_logprobs": [{"token": "A"}]}]}}]},
    ],
)
def test_llm_malformed_answers_are_errors(server: FakeOpenAIServer, body: dict[str, Any]) -> None:
    server.chat = lambda _request: body
    with pytest.raises(ControllerError, match="top_logprobs"):
        _llm(server).decide(Batch(state=STATE, questions={"episodic": NOUL}))


def test_llm_questions_run_concurrently(server: FakeOpenAIServer) -> None:
    barrier = threading.Barrier(4, timeout=5)

    def respond(request: dict[str, Any]) -> dict[str, Any] | Reply:
        try:
            barrier.wait()  # passes only if four requests are in flight at once
        except threading.BrokenBarrierError:
            return Reply({"error": "not concurrent"}, status=400)
        return chat_logprobs({"A": -0.2, "B": -1.8}, request=request)

    server.chat = respond
    questions = {f"q{i}": Noul(f"k{i}", f"Question {i}?", "t", "f") for i in range(4)}
    result = _llm(server, concurrency=4).decide(Batch(state=STATE, questions=questions))
    assert set(result.answers) == set(questions)


def test_llm_http_errors_are_bounded(server: FakeOpenAIServer) -> None:
    server.fail(500, times=10)
    with pytest.raises(ControllerError, match="500"):
        _llm(server, concurrency=1).decide(Batch(state=STATE, questions={"episodic": NOUL}))
    assert len(server.requests) == FAST.attempts


def test_llm_timeout(server: FakeOpenAIServer) -> None:
    server.queue(Reply({}, delay=0.6), times=2)
    ctl = _llm(server, timeout=0.15)
    ctl.retry = RetryPolicy(attempts=2, backoff_s=0.0)
    with pytest.raises(ControllerTimeout):
        ctl.decide(Batch(state=STATE, questions={"episodic": NOUL}))


def test_llm_refuses_questions_it_cannot_ask_in_one_token(server: FakeOpenAIServer) -> None:
    many = Score("k", "?", tuple(str(i) for i in range(11)))
    with pytest.raises(ControllerError, match="more than 10"):
        _llm(server).decide(Batch(state=STATE, questions={"s": many}))
    assert server.requests == []


def test_llm_over_a_mock_transport() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/chat/completions"
        return httpx.Response(200, json=chat_logprobs({"A": math.log(0.25), "B": math.log(0.75)}))

    ctl = LLMController(
        base_url="http://llm.invalid/v1", model="m", debias="none", transport=httpx.MockTransport(handler)
    )
    assert ctl.decide(Batch(state={}, questions={"n": NOUL})).noul("n") == pytest.approx(0.25)


# ------------------------------------------------------------------ Jev via typesafe-sdk: jevcompat mock


def test_jev_round_trip_against_the_reference_mock() -> None:
    with JevMock(MockConfig(key="sekret")) as mock, JevController(api_key="sekret", base_url=mock.url) as ctl:
        assert isinstance(ctl, Controller)
        result = ctl.decide(BATCH)
        again = ctl.decide(BATCH)
    assert set(result.answers) == set(BATCH.questions)
    assert 0.0 <= result.noul("episodic") <= 1.0
    assert set(result.choice("pair_0_time").distribution) == {"before", "after", "unknown"}
    assert len(result.score("candidate_0_relevance").distribution) == 3
    assert result == again  # the mock is deterministic
    assert (result.usage.input_tokens or 0) > 0
    assert result.usage.output_tokens == 2 * len(BATCH.questions)


def test_jev_wrong_key_fails_once() -> None:
    with JevMock(MockConfig(key="sekret")) as mock:
        ctl = JevController(api_key="wrong", base_url=mock.url, retry=FAST)
        with pytest.raises(ControllerError, match="TypeSafeAuthenticationError"):
            ctl.decide(BATCH)


def test_jev_rate_limits_are_retried() -> None:
    with JevMock(MockConfig(busy_every=2)) as mock:
        ctl = JevController(api_key="k", base_url=mock.url, retry=FAST)
        first = ctl.decide(BATCH)
        second = ctl.decide(BATCH)  # the mock's 2nd request is a 429 with Retry-After: 0
    assert first == second


@pytest.mark.parametrize(
    "fault",
    [
        "noul-range",
        "choice-sum",
        "first-question-only",
        "boolean-type",
        "score-keys-1-based",
        "xssi-200",
        "no-usage",
        "wrong-route",
        "reject-jev-latest",
    ],
)
def test_jev_faulty_servers_are_controller_errors(fault: str) -> None:
    with JevMock(MockConfig(faults=frozenset({fault}))) as mock:
        ctl = JevController(api_key="k", base_url=mock.url, retry=FAST)
        with pytest.raises(ControllerError) as info:
            ctl.decide(BATCH)
    assert "\n" not in str(info.value)
    assert not isinstance(info.value, ControllerTimeout)


def test_jev_needs_an_explicit_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "from-env")
    with pytest.raises(ConfigError, match="API key"):
        JevController()


# ------------------------------------------------------------------ Jev via typesafe-sdk: mock transport


class Recorder:
    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return self.reply(request) if callable(self.reply) else self.reply


def _jev(recorder: Recorder, retry: RetryPolicy = FAST, **kwargs: Any) -> JevController:
    return JevController(
        api_key="k",
        base_url="http://jev.invalid",
        retry=retry,
        transport=httpx2.MockTransport(recorder),
        **kwargs,
    )


OK_BODY = {
    "model": "jev-test",
    "answers": {
        "episodic": {"type": "noul", "noul": 0.8},
        "pair_0_time": {
            "type": "choice",
            "choice": "before",
            "confidence": 0.5,
            "probabilities": {"before": 0.7, "after": 0.2, "unknown": 0.1},
        },
        "candidate_0_relevance": {
            "type": "score",
            "score": 1.5,
            "confidence": 0.4,
            "legend": {"0": "none", "1": "some", "2": "high"},
            "probabilities": {"0": 0.1, "1": 0.3, "2": 0.6},
        },
    },
    "usage": {"input_tokens": 321, "output_tokens": 7},
}


def test_jev_request_and_answer_mapping() -> None:
    recorder = Recorder(httpx2.Response(200, json=OK_BODY))
    result = _jev(recorder, model="jev-test").decide(BATCH)
    (request,) = recorder.requests
    assert request.url.path == "/v1/systemone"
    assert request.headers["Authorization"] == "Bearer k"
    sent = json.loads(request.content)
    assert sent["model"] == "jev-test"
    assert sent["state"] == STATE
    assert list(sent["questions"]) == list(BATCH.questions)  # the ids we were given
    assert sent["questions"]["episodic"] == {
        "type": "noul",
        "instructions": NOUL.instructions,
        "criteria": {"true": NOUL.true, "false": NOUL.false},
    }
    assert sent["questions"]["pair_0_time"]["criteria"] == {
        "before": "earlier",
        "after": "later",
        "unknown": "cannot tell",
    }
    assert sent["questions"]["candidate_0_relevance"]["criteria"] == ["none", "some", "high"]
    assert result.noul("episodic") == 0.8
    assert result.choice("pair_0_time").label == "before"
    assert result.score("candidate_0_relevance").distribution == (0.1, 0.3, 0.6)
    assert result.score("candidate_0_relevance").value == 1.5
    assert (result.usage.input_tokens, result.usage.output_tokens) == (321, 7)


def test_jev_server_errors_are_retried_a_bounded_number_of_times() -> None:
    recorder = Recorder(httpx2.Response(500, json={"detail": "boom"}))
    with pytest.raises(ControllerError, match="500"):
        _jev(recorder, retry=RetryPolicy(attempts=4, backoff_s=0.0)).decide(BATCH)
    assert len(recorder.requests) == 4


def test_jev_client_errors_are_not_retried() -> None:
    recorder = Recorder(httpx2.Response(422, json={"detail": [{"loc": ["body"], "msg": "bad", "type": "x"}]}))
    with pytest.raises(ControllerError, match="422"):
        _jev(recorder).decide(BATCH)
    assert len(recorder.requests) == 1


def test_jev_timeouts() -> None:
    def timeout(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("slow", request=request)

    recorder = Recorder(timeout)
    with pytest.raises(ControllerTimeout, match="timed out"):
        _jev(recorder, retry=RetryPolicy(attempts=2, backoff_s=0.0)).decide(BATCH)
    assert len(recorder.requests) == 2


def test_jev_mistyped_answer_is_an_error() -> None:
    body = json.loads(json.dumps(OK_BODY))
    body["answers"]["pair_0_time"] = {"type": "noul", "noul": 0.5}
    with pytest.raises(ControllerError, match="expected a choice"):
        _jev(Recorder(httpx2.Response(200, json=body))).decide(BATCH)


def test_jev_retry_budget_is_bounded_in_time() -> None:
    recorder = Recorder(httpx2.Response(503, json={"detail": "busy"}))
    start = time.monotonic()
    with pytest.raises(ControllerError):
        _jev(recorder, retry=RetryPolicy(attempts=3, backoff_s=0.05, max_backoff_s=0.05)).decide(BATCH)
    assert len(recorder.requests) == 3
    assert time.monotonic() - start < 2.0


def test_jev_rounded_distributions_are_renormalised() -> None:
    body = json.loads(json.dumps(OK_BODY))
    body["answers"]["pair_0_time"]["probabilities"] = {"before": 0.702, "after": 0.201, "unknown": 0.101}
    result = _jev(Recorder(httpx2.Response(200, json=body))).decide(BATCH)
    dist = result.choice("pair_0_time").distribution
    assert sum(dist.values()) == pytest.approx(1.0)
    assert dist["before"] == pytest.approx(0.702 / 1.004)


# ------------------------------------------------------------------ decide_many: a write batch's requests


def _typing_batches() -> list[Batch]:
    from dualmem.control import catalog

    texts = ["I love sushi.", "My old bicycle broke yesterday.", "How to brew tea: boil, then steep."]
    return [
        Batch(state={"observation": t}, questions=catalog.typing_questions(), purpose="typing") for t in texts
    ]


def test_llm_decide_many_equals_one_by_one(server: FakeOpenAIServer) -> None:
    server.chat = hashed_logprobs
    batches = _typing_batches()
    with _llm(server) as ctl:
        many = ctl.decide_many(batches)
        server.requests.clear()
        single = [ctl.decide(b) for b in batches]
    assert many == single
    assert len(single) == 3


def test_jev_decide_many_equals_one_by_one() -> None:
    batches = _typing_batches()
    with JevMock(MockConfig()) as mock, JevController(api_key="k", base_url=mock.url) as ctl:
        assert ctl.decide_many(batches) == [ctl.decide(b) for b in batches]


def test_meter_uses_decide_many_and_counts_each_batch(server: FakeOpenAIServer) -> None:
    from dualmem.control.meter import Meter

    server.chat = hashed_logprobs
    with _llm(server) as ctl:
        meter = Meter(ctl)
        meter.ask_many(_typing_batches())
    assert meter.stats.calls_for("typing") == 3
    assert len(server.chat_requests()) == 12  # one forward pass per question

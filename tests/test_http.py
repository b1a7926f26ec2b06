"""The one HTTP client (dualmem.http.JSONClient) and the three backends that share it.

A real local OpenAI-compatible server (tests/fakes) at the network edge: each backend recovers
from scripted transient failures within its retry budget and fails at once on a 4xx.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dualmem.control.llm import LLMController
from dualmem.embed import OpenAIEmbedder
from dualmem.errors import AnswererError, ControllerError, EmbedderError, RuntimeFailure
from dualmem.http import JSONClient, RetryPolicy
from dualmem.reason.chat_client import ChatClient
from fakes.openai_server import FakeOpenAIServer, Reply

FAST = RetryPolicy(attempts=3, backoff_s=0.0)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def test_json_client_posts_and_joins_paths(server: FakeOpenAIServer) -> None:
    with JSONClient(server.base_url + "/", api_key="k", retry=FAST) as client:
        assert client.url("/embeddings") == server.base_url + "/embeddings"
        body = client.post("embeddings", {"model": "m", "input": ["a"]})
    assert isinstance(body["data"], list)
    assert server.requests[-1].headers["Authorization"] == "Bearer k"


def test_json_client_retries_transient_statuses(server: FakeOpenAIServer) -> None:
    server.fail(503, times=2)
    with JSONClient(server.base_url, retry=FAST) as client:
        client.post("embeddings", {"model": "m", "input": ["a"]})
    assert len(server.requests) == 3


def test_json_client_gives_up_with_the_callers_error(server: FakeOpenAIServer) -> None:
    server.fail(429, times=3)
    client = JSONClient(server.base_url, retry=FAST, error=EmbedderError)
    with client, pytest.raises(EmbedderError, match="after 3 attempt"):
        client.post("embeddings", {"model": "m", "input": ["a"]})


def test_json_client_does_not_retry_a_4xx(server: FakeOpenAIServer) -> None:
    server.fail(401)
    with JSONClient(server.base_url, retry=FAST) as client, pytest.raises(RuntimeFailure, match="HTTP 401"):
        client.post("embeddings", {"model": "m", "input": ["a"]})
    assert len(server.requests) == 1


def test_json_client_connect_errors_are_typed() -> None:
    with FakeOpenAIServer() as fake:
        base = fake.base_url
    client = JSONClient(base, retry=FAST, error=AnswererError)  # the server is gone
    with client, pytest.raises(AnswererError, match="unreachable"):
        client.post("chat/completions", {})


def test_json_client_timeouts_use_the_timeout_error(server: FakeOpenAIServer) -> None:
    server.queue(Reply({"data": []}, delay=0.5), times=2)
    client = JSONClient(
        server.base_url,
        timeout=0.1,
        retry=RetryPolicy(attempts=2, backoff_s=0.0),
        timeout_error=EmbedderError,
    )
    with client, pytest.raises(EmbedderError, match="timed out after 2"):
        client.post("embeddings", {})


def test_embedder_retries_through_the_shared_client(server: FakeOpenAIServer) -> None:
    server.fail(500, times=2)
    with OpenAIEmbedder(model="fake-embed", base_url=server.base_url, dim=8, retry=FAST) as embedder:
        assert embedder.embed(["hello"]).shape == (1, 8)
    assert len(server.requests) == 3


def test_embedder_without_retries_fails_on_the_first_500(server: FakeOpenAIServer) -> None:
    server.fail(500)
    one = RetryPolicy(attempts=1)
    embedder = OpenAIEmbedder(model="fake-embed", base_url=server.base_url, dim=8, retry=one)
    with embedder, pytest.raises(EmbedderError, match="HTTP 500"):
        embedder.embed(["hello"])


def test_controller_and_answerer_share_the_client(server: FakeOpenAIServer) -> None:
    server.fail(502, times=2)
    with ChatClient(base_url=server.base_url, model="fake-model", retry=FAST) as chat:
        assert chat.complete([{"role": "user", "content": "hi"}], max_tokens=5, temperature=0).text
    controller = LLMController(base_url=server.base_url, model="fake-model", retry=FAST)
    with controller:
        assert isinstance(controller._http, JSONClient)
        assert controller.url == server.base_url + "/chat/completions"
    server.fail(400)
    chat = ChatClient(base_url=server.base_url, model="fake-model", retry=FAST, error=ControllerError)
    with chat, pytest.raises(ControllerError, match="HTTP 400"):
        chat.complete([{"role": "user", "content": "hi"}], max_tokens=5, temperature=0)

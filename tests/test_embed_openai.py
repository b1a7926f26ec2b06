"""OpenAIEmbedder against httpx.MockTransport: the network edge only."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import numpy as np
import pytest

from dualmem.embed import Embedder, OpenAIEmbedder
from dualmem.errors import EmbedderError


def _vector(text: str, dim: int) -> list[float]:
    """A deterministic, non-normalised vector per text."""
    return [float(len(text) + i + 1) for i in range(dim)]


class FakeServer:
    """Answers like the OpenAI embeddings endpoint (items deliberately out of order)."""

    def __init__(self, dim: int = 6) -> None:
        self.dim = dim
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = json.loads(request.content)
        items = [
            {"object": "embedding", "index": i, "embedding": _vector(t, self.dim)}
            for i, t in enumerate(body["input"])
        ]
        return httpx.Response(200, json={"object": "list", "data": items[::-1], "model": body["model"]})

    def inputs(self) -> list[list[str]]:
        return [json.loads(request.content)["input"] for request in self.requests]


def _embedder(
    handler: Callable[[httpx.Request], httpx.Response],
    *,
    api_key: str | None = None,
    dim: int | None = None,
    batch_size: int = 128,
) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        model="text-embedding-3-small",
        base_url="http://test/v1/",
        api_key=api_key,
        dim=dim,
        batch_size=batch_size,
        transport=httpx.MockTransport(handler),
    )


def test_success_normalises_and_keeps_order() -> None:
    server = FakeServer()
    embedder = _embedder(server, api_key="sk-test", dim=6)
    assert isinstance(embedder, Embedder)
    assert embedder.name == "openai:text-embedding-3-small"
    out = embedder.embed(["a", "bbb", "cc"])
    assert out.shape == (3, 6)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    expected = np.array([_vector(t, 6) for t in ["a", "bbb", "cc"]], dtype=np.float32)
    np.testing.assert_allclose(out, expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=1e-6)
    request = server.requests[0]
    assert request.method == "POST"
    assert str(request.url) == "http://test/v1/embeddings"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert json.loads(request.content)["model"] == "text-embedding-3-small"


def test_no_api_key_sends_no_authorization() -> None:
    server = FakeServer()
    _embedder(server, dim=6).embed(["x"])
    assert "authorization" not in server.requests[0].headers


def test_dim_discovered_from_first_reply() -> None:
    server = FakeServer(dim=5)
    embedder = _embedder(server)
    assert embedder.embed(["hello", "world"]).shape == (2, 5)
    assert embedder.dim == 5
    assert len(server.requests) == 1


def test_dim_read_first_sends_one_probe() -> None:
    server = FakeServer(dim=7)
    embedder = _embedder(server)
    assert embedder.dim == 7
    assert embedder.dim == 7
    assert len(server.requests) == 1
    assert embedder.embed([]).shape == (0, 7)
    assert len(server.requests) == 1


def test_batches_are_split() -> None:
    server = FakeServer()
    texts = [f"text {i}" * (i % 3 + 1) for i in range(7)]
    out = _embedder(server, batch_size=3, dim=6).embed(texts)
    assert server.inputs() == [texts[0:3], texts[3:6], texts[6:7]]
    single = _embedder(FakeServer(), dim=6).embed(texts)
    np.testing.assert_allclose(out, single, atol=1e-7)


def test_http_500_raises() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, text="internal\nerror")

    with pytest.raises(EmbedderError, match="HTTP 500: internal error") as caught:
        _embedder(handler, dim=6).embed(["x"])
    assert "\n" not in caught.value.one_line()


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"data": "nope"}',
        b'{"data": [{"index": 0, "embedding": ["a"]}]}',
        b'{"data": []}',
        b'{"data": [{"index": 0, "embedding": [1.0, 2.0]}, {"index": 0, "embedding": [1.0, 2.0]}]}',
        b'{"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": []}]}',
        b'{"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]}',
    ],
)
def test_malformed_body_raises(body: bytes) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    with pytest.raises(EmbedderError):
        _embedder(handler).embed(["x", "y"])


def test_wrong_width_against_given_dim_raises() -> None:
    with pytest.raises(EmbedderError, match="expected 4"):
        _embedder(FakeServer(dim=6), dim=4).embed(["x"])


def test_timeout_and_transport_errors_raise() -> None:
    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(EmbedderError, match="timed out"):
        _embedder(timeout, dim=6).embed(["x"])
    with pytest.raises(EmbedderError, match="refused"):
        _embedder(refused, dim=6).embed(["x"])


def test_context_manager_closes() -> None:
    with _embedder(FakeServer(), dim=6) as embedder:
        embedder.embed(["x"])
    with pytest.raises(RuntimeError):
        embedder.embed(["x"])

"""The Embedder contract: every embedder must pass this whole file.

An embedder is done when it is added to ``EMBEDDERS`` (and, when it can fail at run time, to
``BROKEN``) and everything here passes: MiniLM ONNX (the real model), hashing, the OpenAI-compatible
client against a real local server (tests/fakes), and the LRU cache wrapping each of the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from dualmem.embed import (
    CachedEmbedder,
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    MultilingualEmbedder,
    OpenAIEmbedder,
)
from dualmem.errors import DualmemError, EmbedderError
from dualmem.http import RetryPolicy
from fakes.openai_server import FakeOpenAIServer

TEXTS = [
    "My old bicycle broke.",
    "Caroline went to an LGBTQ support group yesterday.",
    "ok",
    "Melanie is planning a camping trip with her kids next month, somewhere near the lake.",
    "Zoë's café in Zürich serves 東京-style ramen",
]
LONG = "the lake was calm and the kids swam until sunset " * 600  # ~6000 words
#: rows of one text embedded alone and inside a padded batch agree to this much
ATOL = 1e-4
NO_RETRY = RetryPolicy(attempts=1)

Factory = Callable[[], Embedder]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(batch_size=2)  # small batches: the contract crosses batch boundaries


def _openai(server: FakeOpenAIServer) -> OpenAIEmbedder:
    return OpenAIEmbedder(model="fake-embed", base_url=server.base_url, dim=8, batch_size=2, retry=NO_RETRY)


@pytest.fixture(
    params=[
        *("minilm", "hashing", "openai", "multilingual"),
        *("cached-minilm", "cached-hashing", "cached-openai", "cached-multilingual"),
    ]
)
def embedder(request: pytest.FixtureRequest, server: FakeOpenAIServer, minilm: MiniLMEmbedder) -> Embedder:
    kind = str(request.param)
    made: dict[str, Factory] = {
        "minilm": lambda: minilm,
        "hashing": lambda: HashingEmbedder(64),
        "openai": lambda: _openai(server),
        "multilingual": lambda: MultilingualEmbedder(batch_size=2),
    }
    if kind.startswith("cached-"):
        return CachedEmbedder(made[kind.removeprefix("cached-")](), size=3)  # small: evictions happen
    return made[kind]()


def test_satisfies_the_protocol(embedder: Embedder) -> None:
    assert isinstance(embedder, Embedder)
    assert isinstance(embedder.name, str)
    assert embedder.name
    assert isinstance(embedder.dim, int)
    assert embedder.dim >= 2


def test_shape_dtype_and_unit_norm(embedder: Embedder) -> None:
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), embedder.dim)
    assert vectors.dtype == np.float32
    assert np.all(np.isfinite(vectors))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_batch(embedder: Embedder) -> None:
    empty = embedder.embed([])
    assert empty.shape == (0, embedder.dim)
    assert empty.dtype == np.float32


def test_empty_text_is_a_unit_or_zero_row(embedder: Embedder) -> None:
    (row,) = embedder.embed([""])
    assert float(np.linalg.norm(row)) == pytest.approx(1.0, abs=1e-5) or not row.any()


def test_deterministic(embedder: Embedder) -> None:
    np.testing.assert_allclose(embedder.embed(TEXTS), embedder.embed(TEXTS), atol=1e-6)


def test_order_preserving_and_duplicates(embedder: Embedder) -> None:
    forward = embedder.embed(TEXTS)
    backward = embedder.embed(TEXTS[::-1])
    np.testing.assert_allclose(forward, backward[::-1], atol=ATOL)
    twice = embedder.embed([TEXTS[0], TEXTS[1], TEXTS[0]])
    np.testing.assert_allclose(twice[0], twice[2], atol=1e-6)


def test_batch_independence(embedder: Embedder) -> None:
    batch = embedder.embed(TEXTS)
    for text, row in zip(TEXTS, batch, strict=True):
        np.testing.assert_allclose(embedder.embed([text])[0], row, atol=ATOL, err_msg=text)


def test_long_text_is_embedded_not_refused(embedder: Embedder) -> None:
    (row,) = embedder.embed([LONG])
    assert np.all(np.isfinite(row))
    assert float(np.linalg.norm(row)) == pytest.approx(1.0, abs=1e-5)


def test_similar_texts_are_closer_than_unrelated(embedder: Embedder) -> None:
    if embedder.name.startswith("openai:"):
        pytest.skip("the fake server's vectors are hashes, not a model")
    a, b, c = embedder.embed(["my old bicycle broke", "my bicycle broke down", "quarterly revenue grew"])
    assert float(a @ b) > float(a @ c)


def test_one_str_is_refused(embedder: Embedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed("one text")  # type: ignore[arg-type]


# --- run-time failures are EmbedderErrors -------------------------------------------------------


def _broken_minilm(tmp_path: Path) -> Embedder:
    return MiniLMEmbedder(model_path=tmp_path / "missing.onnx")


def _broken_openai(server: FakeOpenAIServer) -> Embedder:
    server.fail(500)  # one request (no retries), one failure: nothing is left queued
    return _openai(server)


@pytest.fixture(params=["minilm", "openai", "cached-minilm", "cached-openai"])
def broken(request: pytest.FixtureRequest, server: FakeOpenAIServer, tmp_path: Path) -> Embedder:
    kind = str(request.param)
    inner = _broken_minilm(tmp_path) if kind.endswith("minilm") else _broken_openai(server)
    return CachedEmbedder(inner) if kind.startswith("cached-") else inner


def test_failures_are_typed(broken: Embedder) -> None:
    with pytest.raises(EmbedderError) as info:
        broken.embed(["hello"])
    assert isinstance(info.value, DualmemError)
    assert "\n" not in info.value.one_line()


def test_minilm_truncates_at_max_length(minilm: MiniLMEmbedder) -> None:
    # beyond max_length tokens, more text cannot change the vector
    a, b = minilm.embed([LONG, LONG + " and then a thunderstorm scattered every boat"])
    np.testing.assert_allclose(a, b, atol=1e-6)

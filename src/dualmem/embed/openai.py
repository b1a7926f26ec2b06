"""Embeddings from any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

The request goes through :class:`dualmem.http.JSONClient` (bounded retries on timeouts, connection
errors, 408/429 and 5xx). Rows are L2-normalised. Every failure (HTTP status, transport error,
timeout, malformed body, wrong count or width) raises :class:`~dualmem.errors.EmbedderError`;
nothing is ever turned into an empty result.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pydantic

from dualmem._closing import Closing
from dualmem.embed.base import Matrix, normalize
from dualmem.errors import ConfigError, EmbedderError
from dualmem.http import JSONClient, RetryPolicy

if TYPE_CHECKING:  # httpx is imported with the client (a search does not need it)
    import httpx

__all__ = ["OpenAIEmbedder"]

_PROBE = "dimension probe"


class _Item(pydantic.BaseModel):
    index: int
    embedding: list[float]


class _Reply(pydantic.BaseModel):
    data: list[_Item]


class OpenAIEmbedder(Closing):
    """``name`` is ``openai:{model}``; ``dim`` is discovered from the first reply when not given
    (reading ``dim`` before any call sends one short probe request)."""

    def __init__(  # noqa: PLR0913 - keyword-only: the endpoint, batching and the HTTP policy
        self,
        *,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 128,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not model:
            raise ConfigError(
                "an OpenAI embedder needs a model name", hint="e.g. openai:text-embedding-3-small"
            )
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}", hint="use e.g. 128")
        if dim is not None and dim < 1:
            raise ConfigError(f"dim must be >= 1, got {dim}", hint="leave it out to discover it")
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = base_url.rstrip("/")
        self.batch_size = batch_size
        self._client = JSONClient(
            self.base_url,
            api_key=api_key,
            timeout=timeout,
            retry=retry,
            transport=transport,
            error=EmbedderError,
        )
        self._dim = dim
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed([_PROBE])
        assert self._dim is not None
        return self._dim

    @dim.setter
    def dim(self, value: int) -> None:
        self._dim = value

    @property
    def declared_dim(self) -> int | None:
        """The dimension if known without a request (given, or seen in a reply); else ``None``."""
        return self._dim

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r})"

    def close(self) -> None:
        self._client.close()

    def embed(self, texts: Sequence[str]) -> Matrix:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._request(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)
        ]
        return normalize(np.concatenate(parts, axis=0))

    def _request(self, batch: list[str]) -> Matrix:
        where = self._client.url("embeddings")
        body = self._client.post(
            "embeddings", {"model": self.model, "input": list(batch), "encoding_format": "float"}
        )
        try:
            reply = _Reply.model_validate(body)
        except pydantic.ValidationError as exc:
            raise EmbedderError(
                f"{where} sent a malformed embeddings reply: {exc.error_count()} errors"
            ) from exc
        return self._matrix(reply, len(batch), where)

    def _matrix(self, reply: _Reply, count: int, where: str) -> Matrix:
        items = sorted(reply.data, key=lambda item: item.index)
        if [item.index for item in items] != list(range(count)):
            raise EmbedderError(f"{where} returned {len(items)} embeddings for {count} inputs")
        widths = {len(item.embedding) for item in items}
        if len(widths) != 1 or 0 in widths:
            raise EmbedderError(f"{where} returned embeddings of widths {sorted(widths)}")
        (width,) = widths
        with self._lock:
            if self._dim is None:
                self._dim = width
        if width != self._dim:
            raise EmbedderError(f"{where} returned {width}-dim embeddings, expected {self._dim}")
        return np.asarray([item.embedding for item in items], dtype=np.float32)

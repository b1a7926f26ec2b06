"""Embeddings from any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint (sync httpx).

Rows are L2-normalised. Every failure (HTTP status, transport error, timeout, malformed body,
wrong count or width) raises :class:`~dualmem.errors.EmbedderError`; nothing is ever turned into
an empty result.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import TracebackType

import httpx
import numpy as np
import pydantic

from dualmem.embed.base import Matrix, normalize
from dualmem.errors import ConfigError, EmbedderError

__all__ = ["OpenAIEmbedder"]

_PROBE = "dimension probe"
_SNIPPET = 200


class _Item(pydantic.BaseModel):
    index: int
    embedding: list[float]


class _Reply(pydantic.BaseModel):
    data: list[_Item]


class OpenAIEmbedder:
    """``name`` is ``openai:{model}``; ``dim`` is discovered from the first reply when not given
    (reading ``dim`` before any call sends one short probe request)."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 128,
        timeout: float = 30.0,
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
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
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

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r})"

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

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
        where = f"{self.base_url}/embeddings"
        try:
            response = self._client.post(
                "/embeddings", json={"model": self.model, "input": batch, "encoding_format": "float"}
            )
        except httpx.TimeoutException as exc:
            raise EmbedderError(f"{where} timed out", hint="raise the timeout or check the server") from exc
        except httpx.HTTPError as exc:
            raise EmbedderError(f"{where} failed: {exc}", hint="check base_url and the network") from exc
        if response.is_error:
            body = " ".join(response.text.split())[:_SNIPPET]
            raise EmbedderError(
                f"{where} answered HTTP {response.status_code}: {body}",
                hint="check the model name and api key",
            )
        try:
            reply = _Reply.model_validate_json(response.content)
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

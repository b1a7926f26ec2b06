"""A small synchronous client for OpenAI-compatible chat endpoints (OpenAI, vLLM, Ollama, llama.cpp).

``base_url`` is the API root including the version, as in the OpenAI SDK: ``https://api.openai.com/v1``,
``http://localhost:11434/v1``. The HTTP call and its bounded retries are :class:`dualmem.http.JSONClient`,
shared with the logprob controller and the embeddings client.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dualmem._closing import Closing
from dualmem.errors import AnswererError, RuntimeFailure
from dualmem.http import JSONClient, OverJSONClient, RetryPolicy
from dualmem.types import JSONValue

if TYPE_CHECKING:  # httpx is imported with the client (a search does not need it)
    import httpx

__all__ = ["ChatClient", "ChatCompletion", "completion_text", "completion_usage"]


@dataclass(frozen=True, slots=True)
class ChatCompletion:
    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None


class ChatClient(OverJSONClient, Closing):
    """POSTs ``/chat/completions`` and returns the first choice's text and the token usage.

    Failures raise ``error`` (default ``AnswererError``) with one line, chained; timeouts raise
    ``timeout_error`` (default: ``error``).
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        error: type[RuntimeFailure] = AnswererError,
    ) -> None:
        self.model = model
        self.error = error
        self._http = JSONClient(
            base_url, api_key=api_key, timeout=timeout, retry=retry, transport=transport, error=error
        )
        self.url = self._http.url("chat/completions")

    def complete(
        self, messages: Sequence[dict[str, str]], *, max_tokens: int, temperature: float
    ) -> ChatCompletion:
        wire: list[JSONValue] = [{str(k): str(v) for k, v in m.items()} for m in messages]
        body = self.request(
            {"model": self.model, "messages": wire, "max_tokens": max_tokens, "temperature": temperature}
        )
        input_tokens, output_tokens = completion_usage(body)
        return ChatCompletion(completion_text(body, self.error), input_tokens, output_tokens)

    def request(self, payload: dict[str, JSONValue]) -> dict[str, JSONValue]:
        """POST a raw chat-completions payload; returns the decoded JSON object."""
        return self._http.post("chat/completions", payload)

    def close(self) -> None:
        self._http.close()


def _first_choice(body: dict[str, JSONValue], error: type[RuntimeFailure]) -> dict[str, JSONValue]:
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise error("chat completion has no choices")
    return choices[0]


def completion_text(body: dict[str, JSONValue], error: type[RuntimeFailure]) -> str:
    """The first choice's message content, or ``error``."""
    message = _first_choice(body, error).get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise error("chat completion has no message content")
    return content


def completion_usage(body: dict[str, JSONValue]) -> tuple[int | None, int | None]:
    """(prompt_tokens, completion_tokens) when the server reports them."""
    usage = body.get("usage")
    if not isinstance(usage, dict):
        return None, None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return (
        prompt if isinstance(prompt, int) and not isinstance(prompt, bool) else None,
        completion if isinstance(completion, int) and not isinstance(completion, bool) else None,
    )

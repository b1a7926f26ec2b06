"""A real local HTTP server speaking the OpenAI API, scripted per route by plain Python callables.

Routes: ``POST /v1/chat/completions`` (text replies, or one-token replies with ``top_logprobs``),
``POST /v1/embeddings`` and ``GET /v1/models``. Each POST route calls a responder with the decoded
request JSON; it returns the response JSON (a dict) or a ``Reply`` (status, delay, raw bytes).
``queue`` scripts failures for the next requests. Every request is recorded in ``requests``.

    with FakeOpenAIServer(chat=lambda req: chat_text("Paris")) as server:
        client = ChatClient(base_url=server.base_url, model="fake")

``llama=LlamaCpp(...)`` makes the chat route behave like llama.cpp's OpenAI-compatible server (all
off by default, so the plain server keeps its behaviour): one request processed at a time, the
others waiting in a queue (``serial``, ``latency`` seconds each); a queue longer than ``max_queue``
answered 503 (or 429) with ``Retry-After``; a prompt longer than ``n_ctx`` tokens (estimated as
``len(text) // 4 + 1``) answered HTTP 400 with llama-cpp-python's ``context_length_exceeded`` body
(or llama.cpp's ``exceed_context_size_error``); ``GET /props`` reporting ``n_ctx`` when
``advertise_ctx``. :func:`position_biased` is a responder with a strong first-option bias whose
option tokens come without a leading space.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import string
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakes.serving import ServedInThread

__all__ = [
    "DEFAULT_TOKENS",
    "FakeOpenAIServer",
    "LlamaCpp",
    "Recorded",
    "Reply",
    "Responder",
    "chat_logprobs",
    "chat_text",
    "hashed_embeddings",
    "hashed_logprobs",
    "position_biased",
    "prompt_text",
    "prompt_tokens",
    "shown_options",
]


@dataclass(frozen=True)
class Reply:
    """A scripted HTTP reply: JSON ``body`` (or ``raw`` bytes), a status, an optional delay first."""

    body: Any = None
    status: int = 200
    raw: bytes | None = None
    delay: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: Mapping[str, str]
    json: Any


Responder = Callable[[dict[str, Any]], "dict[str, Any] | Reply"]

#: tokens the default logprob responder spreads its probability over
DEFAULT_TOKENS: tuple[str, ...] = tuple(string.ascii_uppercase[:12]) + tuple(string.digits)


def prompt_text(request: Mapping[str, Any]) -> str:
    """All message contents of a chat request, joined by newlines."""
    return "\n".join(str(m.get("content", "")) for m in request.get("messages", []))


def prompt_tokens(request: Mapping[str, Any]) -> int:
    """The fake's token count of a chat request's prompt (``len(text) // 4 + 1``)."""
    return len(prompt_text(request)) // 4 + 1


@dataclass(frozen=True)
class LlamaCpp:
    """How much the chat route behaves like llama.cpp's server (see the module doc)."""

    serial: bool = True
    latency: float = 0.0
    n_ctx: int | None = None
    ctx_error: str = "llama-cpp-python"  # or "llama.cpp"
    advertise_ctx: bool = False
    max_queue: int | None = None
    busy_status: int = 503
    retry_after: str | None = "0"


_OPTION = re.compile(r"^([A-Z0-9])\. (.*)$", re.M)


def shown_options(request: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ``(token, text)`` option lines of a logprob prompt, in the order shown."""
    return _OPTION.findall(prompt_text(request).split("Options:", 1)[-1])


def position_biased(truth: Callable[[str, str], float], *, bias: float = 4.0) -> Responder:
    """Logits ``truth(prompt, option_text)`` plus ``bias`` for whichever option is shown first.

    Tokens are listed without a leading space (``"A"``, not ``" A"``), as llama.cpp's Qwen does.
    """

    def respond(request: dict[str, Any]) -> dict[str, Any]:
        text = prompt_text(request)
        options = shown_options(request)
        logits = {tok: truth(text, body) + (bias if i == 0 else 0.0) for i, (tok, body) in enumerate(options)}
        logits["The"] = -6.0
        norm = math.log(sum(math.exp(v) for v in logits.values()))
        return chat_logprobs({t: v - norm for t, v in logits.items()}, request=request)

    return respond


def _usage(request: Mapping[str, Any], completion_tokens: int) -> dict[str, int]:
    prompt = prompt_tokens(request)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
    }


def chat_text(
    text: str, *, request: Mapping[str, Any] | None = None, model: str = "fake-model"
) -> dict[str, Any]:
    """A chat completion whose first choice says ``text``."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": _usage(request or {}, max(1, len(text.split()))),
    }


def chat_logprobs(
    top: Mapping[str, float], *, request: Mapping[str, Any] | None = None, model: str = "fake-model"
) -> dict[str, Any]:
    """A one-token chat completion: the most likely token of ``top`` (token -> logprob) and the list."""
    ordered = sorted(top.items(), key=lambda kv: -kv[1])
    chosen = ordered[0][0] if ordered else ""
    entries = [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in ordered]
    body = chat_text(chosen, request=request, model=model)
    body["choices"][0]["finish_reason"] = "length"
    body["choices"][0]["logprobs"] = {
        "content": [{"token": chosen, "logprob": ordered[0][1] if ordered else 0.0, "top_logprobs": entries}]
    }
    body["usage"] = _usage(request or {}, 1)
    return body


def hashed_logprobs(request: Mapping[str, Any], tokens: Iterable[str] = DEFAULT_TOKENS) -> dict[str, Any]:
    """Deterministic logprobs from a hash of the prompt text: same prompt, same answer."""
    text = prompt_text(request)
    logits = {t: _unit(f"{text}\x00{t}") * 6.0 for t in tokens}
    norm = math.log(sum(math.exp(x) for x in logits.values()))
    k = int(request.get("top_logprobs") or 20)
    top = dict(sorted(((t, x - norm) for t, x in logits.items()), key=lambda kv: -kv[1])[:k])
    return chat_logprobs(top, request=request)


def _unit(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def hashed_embeddings(request: Mapping[str, Any]) -> dict[str, Any]:
    """Deterministic unit vectors (``dimensions`` or 8 of them) from a hash of each input."""
    inputs = request.get("input", [])
    inputs = [inputs] if isinstance(inputs, str) else list(inputs)
    dims = int(request.get("dimensions") or 8)
    data = []
    for i, text in enumerate(inputs):
        vec = [_unit(f"{text}\x00{d}") - 0.5 for d in range(dims)]
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        data.append({"object": "embedding", "index": i, "embedding": [v / norm for v in vec]})
    tokens = sum(len(str(t).split()) for t in inputs)
    return {
        "object": "list",
        "data": data,
        "model": request.get("model", "fake-embed"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def default_chat(request: dict[str, Any]) -> dict[str, Any] | Reply:
    """Logprobs for one-token logprob requests (over the option tokens the prompt shows, as a model
    that follows the format would: a short ``top_logprobs`` list always holds some), otherwise a
    fixed text reply."""
    if request.get("logprobs") and request.get("max_tokens") == 1:
        shown = [tok for tok, _ in shown_options(request)]
        return hashed_logprobs(request, shown or DEFAULT_TOKENS)
    return chat_text("fake answer", request=request)


class FakeOpenAIServer(ServedInThread):
    """An OpenAI-compatible server on 127.0.0.1 (a free port) in a background thread."""

    def __init__(
        self,
        *,
        chat: Responder = default_chat,
        embeddings: Responder = hashed_embeddings,
        models: Iterable[str] = ("fake-model", "fake-embed"),
        llama: LlamaCpp | None = None,
    ) -> None:
        self.chat = chat
        self.embeddings = embeddings
        self.models = tuple(models)
        self.llama = llama
        self.requests: list[Recorded] = []
        self.refused: list[Recorded] = []  # chat requests answered 400 (context) or busy
        self.max_in_flight = 0  # the most chat requests being processed at once
        self._in_flight = 0
        self._waiting = 0
        self._slot = threading.Lock()  # the one processing slot of a serial server
        self._queued: deque[Reply] = deque()
        self._lock = threading.Lock()
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        super().__init__(server)

    @property
    def base_url(self) -> str:
        """The API root clients take as ``base_url`` (with ``/v1``)."""
        return self.url + "/v1"

    def queue(self, reply: Reply, *, times: int = 1) -> None:
        """Answer the next ``times`` requests (any route) with ``reply`` before the responders."""
        with self._lock:
            self._queued.extend([reply] * times)

    def fail(self, status: int = 500, *, times: int = 1, delay: float = 0.0) -> None:
        self.queue(
            Reply({"error": {"message": f"scripted failure {status}"}}, status=status, delay=delay),
            times=times,
        )

    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path == "/v1/chat/completions"]

    def _dispatch(self, method: str, path: str, headers: Mapping[str, str], body: Any) -> Reply:
        with self._lock:
            self.requests.append(Recorded(method, path, dict(headers), body))
            queued = self._queued.popleft() if self._queued else None
        if queued is not None:
            return queued
        if method == "GET" and path == "/props" and self.llama is not None and self.llama.advertise_ctx:
            return Reply({"default_generation_settings": {"n_ctx": self.llama.n_ctx}, "total_slots": 1})
        if (method, path) == ("POST", "/v1/chat/completions") and self.llama is not None:
            return self._llama_chat(Recorded(method, path, dict(headers), body))
        route = {
            ("POST", "/v1/chat/completions"): self.chat,
            ("POST", "/v1/embeddings"): self.embeddings,
        }.get((method, path))
        if method == "GET" and path == "/v1/models":
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models]
            return Reply({"object": "list", "data": data})
        if route is None:
            return Reply({"error": {"message": f"no route {method} {path}"}}, status=404)
        if not isinstance(body, dict):
            return Reply({"error": {"message": "body must be a JSON object"}}, status=400)
        out = route(body)
        return out if isinstance(out, Reply) else Reply(out)

    def _llama_chat(self, recorded: Recorded) -> Reply:
        llama = self.llama
        assert llama is not None
        body = recorded.json
        if not isinstance(body, dict):
            return Reply({"error": {"message": "body must be a JSON object"}}, status=400)
        with self._lock:
            if llama.max_queue is not None and self._waiting >= llama.max_queue:
                self.refused.append(recorded)
                headers = {"Retry-After": llama.retry_after} if llama.retry_after is not None else {}
                msg = {"error": {"code": llama.busy_status, "message": "server busy: queue is full"}}
                return Reply(msg, status=llama.busy_status, headers=headers)
            self._waiting += 1
        slot = self._slot if llama.serial else threading.Lock()
        with slot:
            with self._lock:
                self._waiting -= 1
                self._in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self._in_flight)
            try:
                if llama.latency:
                    time.sleep(llama.latency)
                tokens = prompt_tokens(body) + int(body.get("max_tokens") or 0)
                if llama.n_ctx is not None and tokens > llama.n_ctx:
                    with self._lock:
                        self.refused.append(recorded)
                    return Reply(_context_error(llama, body), status=400)
                out = self.chat(body)
                return out if isinstance(out, Reply) else Reply(out)
            finally:
                with self._lock:
                    self._in_flight -= 1


def _context_error(llama: LlamaCpp, body: Mapping[str, Any]) -> dict[str, Any]:
    prompt = prompt_tokens(body)
    completion = int(body.get("max_tokens") or 0)
    if llama.ctx_error == "llama.cpp":
        return {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": prompt,
                "n_ctx": llama.n_ctx,
            }
        }
    return {
        "error": {
            "message": (
                f"This model's maximum context length is {llama.n_ctx} tokens. However, you requested "
                f"{prompt + completion} tokens ({prompt} in the messages, {completion} in the completion). "
                "Please reduce the length of the messages or completion."
            ),
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def _handler_for(fake: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._serve(None)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = raw.decode(errors="replace")
            self._serve(body)

        def _serve(self, body: Any) -> None:
            reply = fake._dispatch(self.command, self.path, dict(self.headers), body)
            if reply.delay:
                time.sleep(reply.delay)
            payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

    return Handler

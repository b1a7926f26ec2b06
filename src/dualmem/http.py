"""The one JSON-over-HTTP client of dualmem's remote backends, with bounded retries.

The embeddings client (:class:`dualmem.embed.OpenAIEmbedder`), the logprob controller
(:mod:`dualmem.control.llm`) and the chat answerer (:mod:`dualmem.reason.chat_client`) all POST
through :class:`JSONClient` / :func:`post_json`. Only transient failures are retried: timeouts,
connection errors, HTTP 408/429 and 5xx. A 4xx (bad request, bad key, unknown model) fails at
once: sending it again cannot help. Every failure is the caller's ``RuntimeFailure`` subclass,
one line, chained to the httpx error.
"""

from __future__ import annotations

import email.utils
import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from dualmem._closing import Closing
from dualmem.errors import ConfigError, RuntimeFailure

if TYPE_CHECKING:  # httpx (~0.1 s to import) is loaded by the first client or request
    import httpx

    from dualmem.types import JSONValue

__all__ = [
    "TRANSIENT_STATUSES",
    "Classifier",
    "JSONClient",
    "OverJSONClient",
    "RetryPolicy",
    "TransientStatus",
    "call_with_retry",
    "post_json",
    "retry_after_s",
]

T = TypeVar("T")

#: HTTP statuses worth another try: request timeout, rate limit, server errors.
TRANSIENT_STATUSES = frozenset({408, 429, *range(500, 600)})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently to retry a transient failure.

    ``attempts`` counts every try (1 = no retry). The wait before try ``n + 1`` is
    ``min(max_backoff_s, backoff_s * 2 ** (n - 1))``, less a deterministic fraction of at most
    ``jitter`` of it (derived from ``seed`` and ``n``, so runs are reproducible).
    """

    attempts: int = 3
    backoff_s: float = 0.2
    max_backoff_s: float = 2.0
    jitter: float = 0.0
    seed: int = 0
    max_retry_after_s: float = 30.0  # the longest ``Retry-After`` wait honoured

    def __post_init__(self) -> None:
        if not isinstance(self.attempts, int) or self.attempts < 1:
            raise ConfigError(f"retry attempts must be a positive integer, got {self.attempts!r}")
        if not (self.backoff_s >= 0 and self.max_backoff_s >= 0):
            raise ConfigError("retry backoff_s and max_backoff_s must be non-negative")
        if not 0.0 <= self.jitter <= 1.0:
            raise ConfigError(f"retry jitter must be in [0, 1], got {self.jitter}")
        if not self.max_retry_after_s >= 0:
            raise ConfigError("retry max_retry_after_s must be non-negative")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed try number ``attempt`` (1-based)."""
        base = min(self.max_backoff_s, self.backoff_s * 2.0 ** (attempt - 1))
        if self.jitter == 0.0 or base == 0.0:
            return base
        fraction = random.Random(self.seed * 1_000_003 + attempt).random()
        return base * (1.0 - self.jitter * fraction)


class TransientStatus(Exception):
    """An HTTP response whose status is worth retrying (raised and caught inside ``post_json``).

    ``retry_after`` is the server's ``Retry-After`` in seconds, when it sent one.
    """

    def __init__(self, status: int, body: str, retry_after: float | None = None) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body
        self.retry_after = retry_after


class _DeadlinePassed(Exception):
    """The next try would start after the deadline (raised and caught inside ``post_json``)."""


#: maps a non-2xx reply (status, body text) to a specific error, or None for the generic one
Classifier = Callable[[int, str], BaseException | None]


def retry_after_s(value: str | None, *, now: float | None = None) -> float | None:
    """A ``Retry-After`` header as seconds to wait: delta-seconds or an HTTP date; None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def call_with_retry(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    retry_on: tuple[type[BaseException], ...],
    sleep: Callable[[float], None] = time.sleep,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Call ``fn`` until it returns, at most ``policy.attempts`` times.

    Exceptions of a ``retry_on`` type are retried after the policy's backoff (or the exception's
    ``retry_after``, when it has one and asks for longer, up to ``policy.max_retry_after_s``); the
    last one is re-raised when the attempts run out or the wait would pass ``deadline``. Any other
    exception propagates at once.
    """
    attempt = 1
    while True:
        try:
            return fn()
        except retry_on as exc:
            if attempt >= policy.attempts:
                raise
            wait = policy.delay(attempt)
            asked = getattr(exc, "retry_after", None)
            if isinstance(asked, int | float):
                wait = max(wait, min(float(asked), policy.max_retry_after_s))
            if deadline is not None and clock() + wait >= deadline:
                raise
            sleep(wait)
            attempt += 1


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def post_json(  # noqa: PLR0913 (keyword-only options of one request)
    client: httpx.Client,
    url: str,
    payload: Mapping[str, JSONValue],
    *,
    policy: RetryPolicy,
    error: type[RuntimeFailure],
    timeout_error: type[RuntimeFailure],
    deadline: float | None = None,
    classify: Classifier | None = None,
) -> dict[str, JSONValue]:
    """POST ``payload`` as JSON and return the decoded JSON object, with bounded retries.

    Raises ``timeout_error`` when the last try timed out or ``deadline`` (``time.monotonic()``)
    passed, ``error`` for everything else (connection failures, non-2xx statuses, a body that is not
    a JSON object); one line, chained. ``classify(status, body)`` may turn a failing reply into a
    more specific exception (e.g. a context-length error), raised as it is.
    """
    import httpx

    tries = [0]

    def once() -> httpx.Response:
        return _post_once(client, url, payload, deadline, classify, tries)

    try:
        response = call_with_retry(
            once, policy, retry_on=(httpx.TransportError, TransientStatus), deadline=deadline
        )
    except _DeadlinePassed:
        raise timeout_error(f"{url} ran out of time after {tries[0]} attempt(s)") from None
    except httpx.TimeoutException as exc:
        raise timeout_error(f"{url} timed out after {tries[0]} attempt(s)") from exc
    except httpx.TransportError as exc:
        raise error(f"{url} unreachable: {type(exc).__name__}: {_short(str(exc))}") from exc
    except TransientStatus as exc:
        raise error(f"{url} failed after {tries[0]} attempt(s): {exc}") from exc
    return _json_object(response, url, error, classify)


def _post_once(
    client: httpx.Client,
    url: str,
    payload: Mapping[str, JSONValue],
    deadline: float | None,
    classify: Classifier | None,
    tries: list[int],
) -> httpx.Response:
    """One try of :func:`post_json` (counted in ``tries``, once the deadline allows it): a transient
    status is raised (to retry), any other reply returned."""
    import httpx

    timeout: httpx.Timeout | None = None
    if deadline is not None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _DeadlinePassed()
        configured = client.timeout.read
        timeout = httpx.Timeout(min(left, configured) if configured is not None else left)
    tries[0] += 1
    if timeout is None:
        response = client.post(url, json=payload)
    else:
        response = client.post(url, json=payload, timeout=timeout)
    if response.status_code in TRANSIENT_STATUSES and _classified(classify, response) is None:
        after = retry_after_s(response.headers.get("Retry-After"))
        raise TransientStatus(response.status_code, _short(response.text), after)
    return response


def _json_object(
    response: httpx.Response, url: str, error: type[RuntimeFailure], classify: Classifier | None
) -> dict[str, JSONValue]:
    """The JSON object of a final reply, or the error a failing or non-object reply is."""
    if not response.is_success:
        special = _classified(classify, response)
        if special is not None:
            raise special
        raise error(f"{url} answered HTTP {response.status_code}: {_short(response.text)}")
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{url} answered a body that is not JSON: {_short(response.text)}") from exc
    if not isinstance(body, dict):
        raise error(f"{url} answered JSON that is not an object")
    return body


def _classified(classify: Classifier | None, response: httpx.Response) -> BaseException | None:
    if classify is None or response.is_success:
        return None
    return classify(response.status_code, response.text)


class JSONClient(Closing):
    """An ``httpx.Client`` bound to an API root, a retry policy and the caller's error types.

    ``post(path, payload)`` returns the decoded JSON object of a 2xx reply; see :func:`post_json`
    for what is retried and raised. ``api_key`` becomes a bearer ``Authorization`` header. The client
    opens no connection until the first request. Thread-safe (one ``httpx.Client``).
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        error: type[RuntimeFailure] = RuntimeFailure,
        timeout_error: type[RuntimeFailure] | None = None,
    ) -> None:
        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.error = error
        self.timeout_error = timeout_error or error
        self._http = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    def post(
        self,
        path: str,
        payload: Mapping[str, JSONValue],
        *,
        deadline: float | None = None,
        classify: Classifier | None = None,
    ) -> dict[str, JSONValue]:
        """POST ``payload`` to ``base_url/path``; the reply's JSON object (see :func:`post_json`)."""
        return post_json(
            self._http,
            self.url(path),
            payload,
            policy=self.retry,
            error=self.error,
            timeout_error=self.timeout_error,
            deadline=deadline,
            classify=classify,
        )

    def get_json(self, url: str, *, timeout: float) -> dict[str, JSONValue] | None:
        """GET an absolute ``url`` once (no retries): its JSON object, or None on any failure.

        For optional metadata (a server's context size): a server without the route is not an error.
        """
        import httpx

        try:
            response = self._http.get(url, timeout=timeout)
            body = response.json() if response.is_success else None
        except (httpx.HTTPError, json.JSONDecodeError, UnicodeDecodeError):
            return None
        return body if isinstance(body, dict) else None

    def close(self) -> None:
        self._http.close()


class OverJSONClient:
    """For a class that talks through a :class:`JSONClient` held as ``_http``: ``retry``, that
    client's retry policy, read and set through it."""

    _http: JSONClient

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy of the HTTP client (settable)."""
        return self._http.retry

    @retry.setter
    def retry(self, policy: RetryPolicy) -> None:
        self._http.retry = policy

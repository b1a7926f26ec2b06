"""System One on hosted Jev, or any Jev-compatible server, through the official ``typesafe-sdk``.

A dualmem batch maps one-to-one onto ``POST /v1/systemone``: the state is sent as a JSON object,
each question under the name it has in the batch (names are bookkeeping, not model input).

Configuration is explicit: the SDK would fall back to ``TYPESAFE_API_KEY``, ``TYPESAFE_BASE_URL``
and ``TYPESAFE_DEFAULT_MODEL`` when an option is missing, so this backend always passes all three
(an adapter reads the environment and hands the key in). Retries are the SDK's own, bounded by our
``RetryPolicy`` (``attempts - 1`` retries of timeouts, connection errors, 408, 429 and 5xx); there
is no second retry loop around them. Request bodies go uncompressed, which every server can read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, assert_never

from dualmem.errors import ConfigError

try:
    import httpx2
    import typesafe_sdk as ts
    from typesafe_sdk.constants import DEFAULT_BASE_URL, DEFAULT_MODEL
except ImportError as exc:  # an optional extra (dualmem[jev])
    raise ConfigError(
        f"the jev backend needs typesafe-sdk and httpx2, which are not installed ({exc.name or exc})",
        hint="pip install 'dualmem[jev]'",
    ) from exc

from dualmem.control import questions as q
from dualmem.control.base import BaseController
from dualmem.control.config import JevConfig
from dualmem.errors import ControllerError, ControllerTimeout
from dualmem.http import RetryPolicy

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL", "SUM_SLACK", "JevController", "sdk_question", "sdk_retry"]

#: a returned distribution summing to within this of 1 is renormalised (servers round their floats)
SUM_SLACK = 0.01


class JevController(BaseController):
    """A System-One backend calling ``TypeSafeClient.system_one``.

    Pass either ``api_key`` (and optionally ``base_url``, ``transport``) or a ready ``client``.
    """

    name = "jev"

    def __init__(  # noqa: PLR0913 (keyword-only settings, the same as JevConfig's)
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        model: str = DEFAULT_MODEL,
        timeout: float = 15.0,
        retry: RetryPolicy | None = None,
        concurrency: int = 4,
        transport: httpx2.BaseTransport | None = None,
        client: ts.TypeSafeClient | None = None,
    ) -> None:
        self.model = model
        self.concurrency = max(1, concurrency)  # requests in flight for decide_many / decide_each
        self._retry = sdk_retry(retry) if retry is not None else None
        if client is not None:
            self._client = client
            return
        if not api_key:
            raise ConfigError(
                "the jev backend needs an API key", hint="pass api_key=... (adapters read TYPESAFE_API_KEY)"
            )
        try:
            self._client = ts.TypeSafeClient(
                api_key=api_key,
                base_url=base_url or DEFAULT_BASE_URL,
                model=model,
                retry=self._retry or sdk_retry(RetryPolicy()),
                timeout=timeout,
                transport=transport,
                compression=False,
            )
        except ts.TypeSafeError as exc:
            raise ConfigError(f"invalid jev settings: {exc}") from exc

    @classmethod
    def from_config(
        cls, config: JevConfig, *, transport: httpx2.BaseTransport | None = None
    ) -> JevController:
        """A controller from a :class:`~dualmem.control.config.JevConfig` (None: the SDK default)."""
        return cls(
            api_key=config.api_key,
            base_url=config.base_url,
            model=config.model or DEFAULT_MODEL,
            timeout=config.timeout_s,
            retry=config.retry,
            concurrency=config.concurrency,
            transport=transport,
        )

    def decide_each(
        self, batches: Sequence[q.Batch], *, timeout: float | None = None
    ) -> list[q.BatchResult | ControllerError]:
        """Independent requests sent concurrently; each batch's result or its own failure.

        ``timeout`` is enforced by the caller (the Meter); the SDK bounds each try by its own timeout.
        """
        del timeout

        def one(batch: q.Batch) -> q.BatchResult | ControllerError:
            try:
                return self.decide(batch)
            except ControllerError as exc:
                return exc

        if len(batches) <= 1:
            return [one(b) for b in batches]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches))) as pool:
            return list(pool.map(one, batches))

    def decide_many(self, batches: Sequence[q.Batch]) -> list[q.BatchResult]:
        """Independent requests sent concurrently (a write batch's typing or relation requests)."""
        if len(batches) <= 1:
            return [self.decide(b) for b in batches]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches))) as pool:
            return list(pool.map(self.decide, batches))

    def decide(self, batch: q.Batch) -> q.BatchResult:
        questions = {name: sdk_question(asked) for name, asked in batch.questions.items()}
        try:
            response = self._client.system_one(
                state=dict(batch.state), questions=questions, model=self.model, retry=self._retry
            )
        except ts.TypeSafeAPITimeoutError as exc:
            raise ControllerTimeout(f"jev timed out: {_one_line(exc)}") from exc
        except ts.TypeSafeError as exc:
            raise ControllerError(f"jev failed: {type(exc).__name__}: {_one_line(exc)}") from exc
        answers = {
            name: _answer(name, asked, response.answers.get(name)) for name, asked in batch.questions.items()
        }
        usage = q.Usage(response.usage.input_tokens, response.usage.output_tokens)
        return q.validate_result(batch, q.BatchResult(answers=answers, usage=usage), self.name)

    def close(self) -> None:
        self._client.close()


def sdk_retry(policy: RetryPolicy) -> ts.RetryPolicy:
    """Our retry policy as the SDK's: the SDK runs the (bounded) retry loop."""
    return ts.RetryPolicy(
        max_retries=policy.attempts - 1,
        backoff_initial=policy.backoff_s,
        backoff_max=policy.max_backoff_s,
        backoff_jitter=policy.jitter,
    )


def sdk_question(question: q.Question) -> ts.Noul | ts.Choice | ts.Score:
    """One dualmem question as an SDK question object (the wire shape of ``/v1/systemone``)."""
    match question:
        case q.Noul():
            return ts.Noul(
                instructions=question.instructions, criteria={"true": question.true, "false": question.false}
            )
        case q.Choice():
            return ts.Choice(instructions=question.instructions, criteria=dict(question.options))
        case q.Score():
            return ts.Score(instructions=question.instructions, criteria=list(question.levels))
        case _:
            assert_never(question)


def _answer(name: str, question: q.Question, raw: Any) -> q.Answer:
    """Translate one SDK answer; a missing or mistyped one is a ``ControllerError``."""
    match question, raw:
        case q.Noul(), ts.NoulAnswer():
            return q.NoulAnswer(score=float(raw.noul))
        case q.Choice(), ts.ChoiceAnswer():
            labels = list(raw.probabilities)
            probs = _renormalised([float(raw.probabilities[lb]) for lb in labels])
            return q.ChoiceAnswer(label=raw.choice, distribution=dict(zip(labels, probs, strict=True)))
        case q.Score(), ts.ScoreAnswer():
            dist = _renormalised(_levels(name, question, raw.probabilities))
            return q.ScoreAnswer(value=float(raw.score), distribution=tuple(dist))
    got = "no answer" if raw is None else f"a {type(raw).__name__}"
    raise ControllerError(f"jev gave {name!r} {got}, expected a {question.kind}")


def _levels(name: str, question: q.Score, probabilities: Mapping[int, float]) -> list[float]:
    levels = range(len(question.levels))
    if set(probabilities) != set(levels):
        raise ControllerError(f"jev answered {name!r} with score levels {sorted(probabilities)}")
    return [float(probabilities[i]) for i in levels]


def _renormalised(probs: list[float]) -> list[float]:
    """Absorb rounding (a sum within ``SUM_SLACK`` of 1); anything further off is left for validation."""
    total = sum(probs)
    return [p / total for p in probs] if abs(total - 1.0) <= SUM_SLACK else probs


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]

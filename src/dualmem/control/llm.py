"""System One from any OpenAI-compatible chat endpoint, read by single-token logprobs.

Each question is one forward pass: the prompt shows the JSON state, the question's instructions and
its options, each behind a one-character token (Noul: ``A``/``B`` for yes/no; Choice: ``A``, ``B``,
``C``...; Score: ``0`` .. ``L-1``). The request asks for ``max_tokens=1, temperature=0,
logprobs=true, top_logprobs=20`` and the answer is the softmax over the option tokens' logprobs.

Reading the logprobs: tokens are normalised (whitespace stripped, case-folded) and duplicates
(``" A"`` and ``"A"``) are summed. An option absent from the top 20 has a logprob below every
listed token, so it gets the least listed logprob minus ``MISSING_MARGIN`` (1 nat). If no option
token is listed at all the question fails with ``ControllerError``: no guessing, no parsing of free
text. Works with OpenAI, vLLM, Ollama and llama.cpp servers that return ``top_logprobs``.

Position bias (``debias="cyclic"``, the default): small models pick the first option whatever it
says. A question of n options is asked n times, the options shifted one place each time, so every
option is shown once in every position; the n log-probabilities of each option are averaged and
renormalised. Whatever log-probability a position adds, every option then gets the same total, so
an additive position bias cancels exactly (for a Noul this is the mean log-odds of the two orders).
Cost: a Noul 2 forward passes, a Choice of n options n, a Score (ordered levels) 1; the passes of one
question share the prompt up to its options, which llama.cpp reuses. ``"both_orders"`` asks a Choice
only as given and reversed (2 passes; its middle options are never shown first, so a first-option
bias is only partly cancelled); ``"none"`` asks once. A per-key calibration (:mod:`calibration`)
may then map Noul scores onto observed frequencies.

Bounded requests: prompts are fitted to the model's context (:mod:`llm_fit`); the context size is
``context_tokens``, else what the server says (llama.cpp ``/props``), else ``DEFAULT_CONTEXT_TOKENS``.
A context-length refusal (HTTP 400) teaches the true size when the body says it, and the refused
questions are split further and asked again, down to ``MAX_SPLITS`` halvings.

Concurrency and time: at most ``concurrency`` requests are in flight (1 for a loopback server);
queue-full replies (429/503) are retried after their ``Retry-After``; ``decide_each(..., timeout=)``
bounds every request, retries included, by the caller's remaining time.
"""

from __future__ import annotations

import json
import math
import re
import string
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, assert_never

from pydantic import BaseModel, Field, ValidationError

from dualmem.control import questions as q
from dualmem.control.base import BaseController
from dualmem.control.config import DEBIAS_MODES, Debias, LLMConfig, is_local_url
from dualmem.control.llm_fit import Group, estimate_tokens, fit_batch
from dualmem.errors import ConfigError, ControllerError, ControllerTimeout
from dualmem.http import JSONClient, OverJSONClient, RetryPolicy
from dualmem.types import JSONValue

if TYPE_CHECKING:  # httpx is imported with the client (a search does not need it)
    import httpx

    from dualmem.control.calibration import Calibration

__all__ = [
    "DEFAULT_CONTEXT_TOKENS",
    "MAX_SPLITS",
    "MISSING_MARGIN",
    "SMALL_PROMPT",
    "SYSTEM_PROMPT",
    "TOP_LOGPROBS",
    "ContextLengthExceeded",
    "LLMController",
    "build_messages",
    "classify_reply",
    "read_option_probs",
]

TOP_LOGPROBS = 20
MISSING_MARGIN = 1.0  # nats below the least likely listed token, for an option not listed
DEFAULT_CONTEXT_TOKENS = 4096
SMALL_PROMPT = 1024  # estimated tokens: a prompt this small is sent without asking the context size
MAX_SPLITS = 4  # a refused prompt is re-fitted to half the budget at most this many times
_HEADROOM = 0.85  # of the context, for the estimate's error

SYSTEM_PROMPT = (
    "You are a fast, careful classifier. You read a JSON state and answer one question about it. "
    "Reply with exactly one option token and nothing else."
)


class ContextLengthExceeded(ControllerError):
    """The server refused a prompt as longer than its context; ``n_ctx`` when the reply says it."""

    code = "controller-context-length"

    def __init__(self, message: str, *, n_ctx: int | None = None) -> None:
        super().__init__(message, hint="raise the server's context (n_ctx) or lower --llm-context")
        self.n_ctx = n_ctx


_CTX_PATTERNS = (
    re.compile(r"maximum context length is (\d+)", re.I),  # llama-cpp-python, OpenAI, vLLM
    re.compile(r"context window of (\d+)", re.I),
    re.compile(r"\"n_ctx\"\s*:\s*(\d+)"),  # llama.cpp server: exceed_context_size_error
)
_CTX_WORDS = re.compile(r"context[ _](length|size|window)|exceed_context|too many tokens|n_ctx", re.I)


def classify_reply(status: int, body: str) -> ControllerError | None:
    """A context-length refusal as :class:`ContextLengthExceeded` (other replies: None)."""
    if status not in (400, 413, 500) or not _CTX_WORDS.search(body):
        return None
    n_ctx = next((int(m.group(1)) for p in _CTX_PATTERNS if (m := p.search(body))), None)
    return ContextLengthExceeded(f"the llm server refused a prompt as too long (HTTP {status})", n_ctx=n_ctx)


@dataclass(frozen=True, slots=True)
class _Ask:
    """One forward pass: a question about a state, its options shown in ``order``."""

    slot: int  # which (batch, question) it answers
    state: Mapping[str, JSONValue]
    question: q.Question
    order: tuple[int, ...]
    splits: int  # how often this question was re-fitted after a refusal
    tokens: int  # the estimated prompt size


class LLMController(OverJSONClient, BaseController):
    """A System-One backend over an OpenAI-compatible ``/chat/completions`` endpoint with logprobs.

    Build it from an :class:`~dualmem.control.config.LLMConfig` (``LLMController.from_config``) or
    with the same settings as keywords.
    """

    name = "llm"
    supports_deadline: ClassVar[bool] = True

    def __init__(  # noqa: PLR0913 (keyword-only settings, the same as LLMConfig's)
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 30.0,
        concurrency: int | None = None,
        retry: RetryPolicy | None = None,
        context_tokens: int | None = None,
        debias: Debias = "cyclic",
        calibration: Calibration | str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if debias not in DEBIAS_MODES:
            raise ConfigError(
                f"unknown llm debias mode {debias!r}", hint=f"use one of {', '.join(DEBIAS_MODES)}"
            )
        self.model = model
        self.concurrency = (
            max(1, concurrency) if concurrency is not None else (1 if is_local_url(base_url) else 4)
        )
        self.debias: Debias = debias
        self.calibration = _load_calibration(calibration)
        self._context = context_tokens
        self._context_known = context_tokens is not None
        self._context_lock = threading.Lock()
        self._http = JSONClient(
            base_url,
            api_key=api_key,
            timeout=timeout,
            retry=retry,
            transport=transport,
            error=ControllerError,
            timeout_error=ControllerTimeout,
        )
        self.url = self._http.url("chat/completions")

    @classmethod
    def from_config(cls, config: LLMConfig, *, transport: httpx.BaseTransport | None = None) -> LLMController:
        return cls(
            base_url=config.base_url,
            model=config.model,
            api_key=config.api_key,
            timeout=config.timeout_s,
            concurrency=config.concurrency,
            retry=config.retry,
            context_tokens=config.context_tokens,
            debias=config.debias,
            calibration=config.calibration,
            transport=transport,
        )

    @property
    def context_tokens(self) -> int:
        """The context size prompts are fitted to (asks the server once, on first use)."""
        with self._context_lock:
            if not self._context_known:
                self._context = self._probe_context()
                self._context_known = True
            return self._context or DEFAULT_CONTEXT_TOKENS

    def _probe_context(self) -> int | None:
        root = self._http.base_url.removesuffix("/v1")
        props = self._http.get_json(f"{root}/props", timeout=min(5.0, self._http_timeout()))
        if props is not None:
            settings = props.get("default_generation_settings")
            for where in (props, settings if isinstance(settings, dict) else {}):
                n = where.get("n_ctx")
                if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                    return n
        return None

    def _http_timeout(self) -> float:
        read = self._http._http.timeout.read
        return read if read is not None else 30.0

    def _learn_context(self, n_ctx: int | None) -> None:
        if n_ctx is not None and n_ctx > 0:
            with self._context_lock:
                if self._context is None or n_ctx < self._context:
                    self._context = n_ctx
                self._context_known = True

    # -- deciding ------------------------------------------------------------------------------
    def decide(self, batch: q.Batch) -> q.BatchResult:
        outcome = self.decide_each([batch])[0]
        if isinstance(outcome, ControllerError):
            raise outcome
        return outcome

    def decide_many(self, batches: Sequence[q.Batch]) -> list[q.BatchResult]:
        """Every question of every batch concurrently, regrouped per batch; the first failure raises."""
        return q.first_failure_raised(self.decide_each(batches))

    def decide_each(
        self, batches: Sequence[q.Batch], *, timeout: float | None = None
    ) -> list[q.BatchResult | ControllerError]:
        """Each batch's result, or the failure of one of its questions; ``timeout`` bounds all of it."""
        for batch in batches:
            for question in batch.questions.values():
                _tokens(question)  # fail before sending anything if a question cannot be asked
        deadline = time.monotonic() + timeout if timeout is not None else None
        slots = [
            (i, name, asked) for i, batch in enumerate(batches) for name, asked in batch.questions.items()
        ]
        index = {(i, name): n for n, (i, name, _) in enumerate(slots)}
        asks = [a for i, b in enumerate(batches) for a in self._plan(b, i, index, splits=0)]
        probs: dict[int, list[tuple[tuple[int, ...], list[float]]]] = {}
        usage: dict[int, list[q.Usage]] = {}
        failed: dict[int, ControllerError] = {}
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="dualmem-llm") as pool:
            while asks:
                outcomes = list(pool.map(lambda a: self._send(a, deadline), asks))
                retry: list[_Ask] = []
                for ask, outcome in zip(asks, outcomes, strict=True):
                    if isinstance(outcome, ContextLengthExceeded) and ask.splits < MAX_SPLITS:
                        retry.append(ask)
                    elif isinstance(outcome, ControllerError):
                        failed.setdefault(ask.slot, outcome)
                    else:
                        probs.setdefault(ask.slot, []).append((ask.order, outcome[0]))
                        usage.setdefault(ask.slot, []).append(outcome[1])
                for ask in retry:  # asked again in every order: drop this round's other readings
                    probs.pop(ask.slot, None)
                    usage.pop(ask.slot, None)
                asks = self._refit(retry, batches, slots, index)
        return [self._collect(i, b, index, probs, usage, failed) for i, b in enumerate(batches)]

    def _plan(
        self,
        batch: q.Batch,
        i: int,
        index: Mapping[tuple[int, str], int],
        *,
        splits: int,
        only: set[str] | None = None,
    ) -> list[_Ask]:
        questions = {n: asked for n, asked in batch.questions.items() if only is None or n in only}
        if splits == 0 and all(_measure(batch.state, asked) <= SMALL_PROMPT for asked in questions.values()):
            budget = SMALL_PROMPT  # fits any server: no need to know (or ask) the context size
        else:
            budget = int(self.context_tokens * _HEADROOM / 2**splits) - 1
        groups: list[Group] = fit_batch(batch.state, questions, budget=budget, measure=_measure)
        asks: list[_Ask] = []
        for group in groups:
            for name, question in group.questions.items():
                size = _measure(group.state, question)
                for order in self._orders(question):
                    asks.append(_Ask(index[(i, name)], group.state, question, order, splits, size))
        return asks

    def _refit(
        self,
        refused: list[_Ask],
        batches: Sequence[q.Batch],
        slots: Sequence[tuple[int, str, q.Question]],
        index: Mapping[tuple[int, str], int],
    ) -> list[_Ask]:
        """The refused questions planned again at half the budget (each question once, all its orders)."""
        todo: dict[tuple[int, int], set[str]] = {}
        for ask in refused:
            i, name, _ = slots[ask.slot]
            todo.setdefault((i, ask.splits + 1), set()).add(name)
        out: list[_Ask] = []
        for (i, splits), names in sorted(todo.items()):
            out += self._plan(batches[i], i, index, splits=splits, only=names)
        return out

    def passes(self, question: q.Question) -> int:
        """The forward passes (requests) one question costs with this backend's ``debias`` mode."""
        return len(self._orders(question))

    def _orders(self, question: q.Question) -> list[tuple[int, ...]]:
        """The option orders a question is asked in: ``order[position]`` is the option shown there."""
        n = len(_tokens(question))
        forward = tuple(range(n))
        if self.debias == "none" or isinstance(question, q.Score):
            return [forward]
        if self.debias == "cyclic":  # shift s shows option (p + s) mod n at position p
            return [tuple((p + s) % n for p in range(n)) for s in range(n)]
        return [forward, forward[::-1]]

    def _send(self, ask: _Ask, deadline: float | None) -> tuple[list[float], q.Usage] | ControllerError:
        known = self._context
        if known is not None and ask.tokens > known:  # a refusal already taught us: do not send it
            return ContextLengthExceeded(f"the prompt (~{ask.tokens} tokens) exceeds the context ({known})")
        payload: dict[str, JSONValue] = {
            "model": self.model,
            "messages": [
                {"role": m["role"], "content": m["content"]}
                for m in build_messages(ask.state, ask.question, order=ask.order)
            ],
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
        }
        try:
            body = self._http.post("chat/completions", payload, deadline=deadline, classify=classify_reply)
            completion = _parse(body)
            shown = _option_probs(completion.choices[0].logprobs.content[0], _tokens(ask.question))
        except ContextLengthExceeded as exc:
            self._learn_context(exc.n_ctx)  # at once: the asks still queued are not sent in vain
            return exc
        except ControllerError as exc:
            return exc
        probs = [0.0] * len(shown)
        for position, option in enumerate(ask.order):
            probs[option] = shown[position]
        used = completion.usage or _Usage()
        return probs, q.Usage(used.prompt_tokens, used.completion_tokens)

    def _collect(
        self,
        i: int,
        batch: q.Batch,
        index: Mapping[tuple[int, str], int],
        probs: Mapping[int, list[tuple[tuple[int, ...], list[float]]]],
        usage: Mapping[int, list[q.Usage]],
        failed: Mapping[int, ControllerError],
    ) -> q.BatchResult | ControllerError:
        answers: dict[str, q.Answer] = {}
        used: list[q.Usage] = []
        for name, question in batch.questions.items():
            slot = index[(i, name)]
            if slot in failed:
                return failed[slot]
            readings = [p for _, p in sorted(probs[slot], key=lambda t: t[0])]
            answers[name] = self._answer(question, readings)
            used += usage[slot]
        try:
            return q.validate_result(batch, q.BatchResult(answers=answers, usage=_sum_usage(used)), self.name)
        except ControllerError as exc:
            return exc

    def _answer(self, question: q.Question, readings: list[list[float]]) -> q.Answer:
        probs = _combine(readings)
        answer = _to_answer(question, probs)
        if self.calibration is not None and isinstance(answer, q.NoulAnswer):
            return q.NoulAnswer(score=self.calibration.apply(question.key, answer.score))
        return answer

    def close(self) -> None:
        self._http.close()


def _load_calibration(value: Calibration | str | None) -> Calibration | None:
    if value is None or not isinstance(value, str):
        return value
    from dualmem.control.calibration import Calibration

    return Calibration.load(value)


_EPS = 1e-6


def _combine(readings: list[list[float]]) -> list[float]:
    """The option distribution from one or more readings: mean log-probability, renormalised.

    For two options this is the mean log-odds, so an additive position bias cancels exactly.
    """
    if len(readings) == 1:
        return readings[0]
    logs = [
        sum(math.log(min(1.0 - _EPS, max(_EPS, r[j]))) for r in readings) / len(readings)
        for j in range(len(readings[0]))
    ]
    top = max(logs)
    weights = [math.exp(v - top) for v in logs]
    total = sum(weights)
    return [w / total for w in weights]


def _measure(state: Mapping[str, JSONValue], question: q.Question) -> int:
    return sum(estimate_tokens(m["content"]) for m in build_messages(state, question)) + 1


def _tokens(question: q.Question) -> tuple[str, ...]:
    match question:
        case q.Noul():
            return ("A", "B")
        case q.Choice():
            if len(question.options) > len(string.ascii_uppercase):
                raise ControllerError(f"llm backend cannot ask {question.key}: more than 26 options")
            return tuple(string.ascii_uppercase[: len(question.options)])
        case q.Score():
            if len(question.levels) > 10:
                raise ControllerError(f"llm backend cannot ask {question.key}: more than 10 levels")
            return tuple(str(i) for i in range(len(question.levels)))
        case _:
            assert_never(question)


def build_messages(
    state: Mapping[str, JSONValue], question: q.Question, *, order: Sequence[int] | None = None
) -> list[dict[str, str]]:
    """The chat messages for one question: only the state and that question, never its name.

    ``order`` lists the options in the order shown (default: as given); the tokens stay ``A``, ``B``...
    """
    tokens = _tokens(question)
    match question:
        case q.Noul():
            options = [f"Yes: {question.true}", f"No: {question.false}"]
        case q.Choice():
            options = [f"{label}: {desc}" for label, desc in question.options]
        case q.Score():
            options = list(question.levels)
        case _:
            assert_never(question)
    shown = [options[j] for j in (order if order is not None else range(len(options)))]
    lines = [f"{t}. {text}" for t, text in zip(tokens, shown, strict=True)]
    kind = "digit" if isinstance(question, q.Score) else "letter"
    user = (
        f"State (JSON):\n{json.dumps(state, ensure_ascii=False)}\n\n"
        f"Question: {question.instructions}\n\nOptions:\n" + "\n".join(lines) + "\n\n"
        f"Answer with a single {kind}: {', '.join(tokens)}."
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


class _TopLogprob(BaseModel):
    token: str
    logprob: float


class _Position(BaseModel):
    top_logprobs: list[_TopLogprob] = Field(min_length=1)


class _Logprobs(BaseModel):
    content: list[_Position] = Field(min_length=1)


class _Choice(BaseModel):
    logprobs: _Logprobs


class _Usage(BaseModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class _Completion(BaseModel):
    """The part of an OpenAI chat completion this backend reads (extra fields are ignored)."""

    choices: list[_Choice] = Field(min_length=1)
    usage: _Usage | None = None


def _parse(body: Mapping[str, JSONValue]) -> _Completion:
    try:
        return _Completion.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ControllerError(f"llm answer has no readable top_logprobs ({where}: {first['msg']})") from exc


def read_option_probs(body: Mapping[str, JSONValue], tokens: tuple[str, ...]) -> list[float]:
    """Softmax over the option tokens' logprobs in the first generated position (see module doc)."""
    return _option_probs(_parse(body).choices[0].logprobs.content[0], tokens)


def _option_probs(position: _Position, tokens: tuple[str, ...]) -> list[float]:
    listed = [(e.token, e.logprob) for e in position.top_logprobs if not math.isnan(e.logprob)]
    finite = [lp for _, lp in listed if math.isfinite(lp)]
    mass: dict[str, float] = {}
    for token, lp in listed:
        key = token.strip().casefold()
        mass[key] = mass.get(key, 0.0) + math.exp(lp)
    option_lps = [math.log(mass[t.casefold()]) if mass.get(t.casefold(), 0.0) > 0 else None for t in tokens]
    if all(lp is None for lp in option_lps):
        raise ControllerError(f"none of the option tokens {', '.join(tokens)} is among the top logprobs")
    floor = min(finite) - MISSING_MARGIN
    filled = [floor if lp is None else lp for lp in option_lps]
    top = max(filled)
    weights = [math.exp(lp - top) for lp in filled]
    total = sum(weights)
    return [w / total for w in weights]


def _to_answer(question: q.Question, probs: list[float]) -> q.Answer:
    match question:
        case q.Noul():
            return q.NoulAnswer(score=probs[0])
        case q.Choice():
            dist = dict(zip(question.labels, probs, strict=True))
            return q.ChoiceAnswer(label=max(question.labels, key=lambda lb: dist[lb]), distribution=dist)
        case q.Score():
            return q.ScoreAnswer(value=sum(i * p for i, p in enumerate(probs)), distribution=tuple(probs))
        case _:
            assert_never(question)


def _sum_usage(usages: list[q.Usage]) -> q.Usage:
    ins = [u.input_tokens for u in usages if u.input_tokens is not None]
    outs = [u.output_tokens for u in usages if u.output_tokens is not None]
    return q.Usage(input_tokens=sum(ins) if ins else None, output_tokens=sum(outs) if outs else None)

"""System One from any OpenAI-compatible chat endpoint, read by single-token logprobs.

Each question is one forward pass: the prompt shows the JSON state, the question's instructions and
its options, each behind a one-character token (Noul: ``A`` true / ``B`` false; Choice: ``A``, ``B``,
``C``...; Score: ``0`` .. ``L-1``). The request asks for ``max_tokens=1, temperature=0,
logprobs=true, top_logprobs=20`` and the answer is the softmax over the option tokens' logprobs.

Reading the logprobs: tokens are normalised (whitespace stripped, case-folded) and duplicates
(``" A"`` and ``"A"``) are summed. An option absent from the top 20 has a logprob below every
listed token, so it gets the least listed logprob minus ``MISSING_MARGIN`` (1 nat). If no option
token is listed at all the question fails with ``ControllerError``: no guessing, no parsing of free
text. Works with OpenAI, vLLM, Ollama and llama.cpp servers that return ``top_logprobs``.

Questions of a batch run concurrently on a thread pool sharing one :class:`dualmem.http.JSONClient`
(bounded retries on transient failures); each prompt
holds only the state and its own question, so answers cannot depend on the rest of the batch.
"""

from __future__ import annotations

import json
import math
import string
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import assert_never

import httpx
from pydantic import BaseModel, Field, ValidationError

from dualmem.control.base import BaseController
from dualmem.control.questions import (
    Answer,
    Batch,
    BatchResult,
    Choice,
    ChoiceAnswer,
    Noul,
    NoulAnswer,
    Question,
    Score,
    ScoreAnswer,
    Usage,
    validate_result,
)
from dualmem.errors import ControllerError, ControllerTimeout
from dualmem.http import JSONClient, RetryPolicy
from dualmem.types import JSONValue

__all__ = [
    "MISSING_MARGIN",
    "SYSTEM_PROMPT",
    "TOP_LOGPROBS",
    "LLMController",
    "build_messages",
    "read_option_probs",
]

TOP_LOGPROBS = 20
MISSING_MARGIN = 1.0  # nats below the least likely listed token, for an option not listed

SYSTEM_PROMPT = (
    "You are a fast, careful classifier. You read a JSON state and answer one question about it. "
    "Reply with exactly one option token and nothing else."
)


class LLMController(BaseController):
    """A System-One backend over an OpenAI-compatible ``/chat/completions`` endpoint with logprobs."""

    name = "llm"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 30.0,
        concurrency: int = 8,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.model = model
        self.concurrency = max(1, concurrency)
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

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy of the HTTP client (settable)."""
        return self._http.retry

    @retry.setter
    def retry(self, policy: RetryPolicy) -> None:
        self._http.retry = policy

    def decide(self, batch: Batch) -> BatchResult:
        return self.decide_many([batch])[0]

    def decide_many(self, batches: Sequence[Batch]) -> list[BatchResult]:
        """Every question of every batch concurrently (one forward pass each), regrouped per batch."""
        for batch in batches:
            for question in batch.questions.values():
                _tokens(question)  # fail before sending anything if a question cannot be asked
        items = [(i, name, q) for i, batch in enumerate(batches) for name, q in batch.questions.items()]
        workers = min(self.concurrency, len(items)) or 1
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dualmem-llm") as pool:
            futures = [pool.submit(self._ask, batches[i].state, q) for i, _, q in items]
            results = [f.result() for f in futures]
        out: list[BatchResult] = []
        for i, batch in enumerate(batches):
            mine = [(name, r) for (j, name, _), r in zip(items, results, strict=True) if j == i]
            answers = {name: answer for name, (answer, _) in mine}
            usage = _sum_usage([u for _, (_, u) in mine])
            out.append(validate_result(batch, BatchResult(answers=answers, usage=usage), self.name))
        return out

    def _ask(self, state: Mapping[str, JSONValue], question: Question) -> tuple[Answer, Usage]:
        payload: dict[str, JSONValue] = {
            "model": self.model,
            "messages": [
                {"role": m["role"], "content": m["content"]} for m in build_messages(state, question)
            ],
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
        }
        body = self._http.post("chat/completions", payload)
        completion = _parse(body)
        probs = _option_probs(completion.choices[0].logprobs.content[0], _tokens(question))
        usage = completion.usage or _Usage()
        return _to_answer(question, probs), Usage(usage.prompt_tokens, usage.completion_tokens)

    def close(self) -> None:
        self._http.close()


def _tokens(question: Question) -> tuple[str, ...]:
    match question:
        case Noul():
            return ("A", "B")
        case Choice():
            if len(question.options) > len(string.ascii_uppercase):
                raise ControllerError(f"llm backend cannot ask {question.key}: more than 26 options")
            return tuple(string.ascii_uppercase[: len(question.options)])
        case Score():
            if len(question.levels) > 10:
                raise ControllerError(f"llm backend cannot ask {question.key}: more than 10 levels")
            return tuple(str(i) for i in range(len(question.levels)))
        case _:
            assert_never(question)


def build_messages(state: Mapping[str, JSONValue], question: Question) -> list[dict[str, str]]:
    """The chat messages for one question: only the state and that question, never its name."""
    tokens = _tokens(question)
    match question:
        case Noul():
            lines = [f"A. Yes: {question.true}", f"B. No: {question.false}"]
        case Choice():
            lines = [
                f"{t}. {label}: {desc}" for t, (label, desc) in zip(tokens, question.options, strict=True)
            ]
        case Score():
            lines = [f"{t}. {level}" for t, level in zip(tokens, question.levels, strict=True)]
        case _:
            assert_never(question)
    kind = "digit" if isinstance(question, Score) else "letter"
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


def _to_answer(question: Question, probs: list[float]) -> Answer:
    match question:
        case Noul():
            return NoulAnswer(score=probs[0])
        case Choice():
            dist = dict(zip(question.labels, probs, strict=True))
            return ChoiceAnswer(label=max(question.labels, key=lambda lb: dist[lb]), distribution=dist)
        case Score():
            return ScoreAnswer(value=sum(i * p for i, p in enumerate(probs)), distribution=tuple(probs))
        case _:
            assert_never(question)


def _sum_usage(usages: list[Usage]) -> Usage:
    ins = [u.input_tokens for u in usages if u.input_tokens is not None]
    outs = [u.output_tokens for u in usages if u.output_tokens is not None]
    return Usage(input_tokens=sum(ins) if ins else None, output_tokens=sum(outs) if outs else None)

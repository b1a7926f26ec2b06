"""Accounting around a System-One backend: calls, questions, latency, tokens, timeout, cache.

The write and read paths never call a backend directly: they go through a ``Meter`` so every
request is counted per purpose (typing, relations, routing, assessment, scoring, consolidation)
and the control-overhead bounds of paper §3.3 can be asserted.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

from dualmem.control.questions import Batch, BatchResult, Controller, validate_result
from dualmem.errors import ControllerError, ControllerTimeout

__all__ = ["CallCounts", "ControllerStats", "Decided", "Meter"]


@dataclass(slots=True)
class CallCounts:
    calls: int = 0
    questions: int = 0
    failures: int = 0
    cache_hits: int = 0
    latency_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0

    def to_json(self) -> dict[str, float]:
        return {
            "calls": self.calls,
            "questions": self.questions,
            "failures": self.failures,
            "cache_hits": self.cache_hits,
            "latency_s": round(self.latency_s, 6),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }


@dataclass(slots=True)
class ControllerStats:
    backend: str
    by_purpose: dict[str, CallCounts] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(c.calls for c in self.by_purpose.values())

    def calls_for(self, purpose: str) -> int:
        counts = self.by_purpose.get(purpose)
        return counts.calls if counts else 0

    def to_json(self) -> dict[str, object]:
        return {
            "backend": self.backend,
            "calls": self.calls,
            "by_purpose": {k: v.to_json() for k, v in sorted(self.by_purpose.items())},
        }


@dataclass(frozen=True, slots=True)
class Decided:
    """A validated result with the backend name and the request's wall time."""

    result: BatchResult
    backend: str
    latency_ms: float
    cached: bool = False


class Meter:
    """Wraps a Controller with accounting, an optional wall-clock timeout and an optional LRU cache.

    ``timeout_s`` bounds each request from the caller's side (the request runs on a worker thread;
    remote backends also carry their own HTTP timeouts). ``cache_size`` > 0 caches answers by the
    exact batch content (state and questions), which pays off for repeated queries.
    """

    def __init__(
        self, controller: Controller, *, timeout_s: float | None = None, cache_size: int = 0
    ) -> None:
        self.controller = controller
        self.timeout_s = timeout_s
        self.cache_size = cache_size
        self._cache: OrderedDict[str, BatchResult] = OrderedDict()
        self._pool: ThreadPoolExecutor | None = None
        self.stats = ControllerStats(backend=controller.name)

    @property
    def backend(self) -> str:
        return self.controller.name

    def ask(self, batch: Batch) -> Decided:
        """One request. Raises ``ControllerError`` (or ``ControllerTimeout``); never a partial result."""
        return self.ask_many([batch])[0]

    def ask_many(self, batches: Sequence[Batch]) -> list[Decided]:
        """Several independent requests; a backend with ``decide_many`` may run them concurrently.

        Each batch still counts as one request of its purpose.
        """
        out: list[Decided | None] = [None] * len(batches)
        todo: list[int] = []
        keys: list[str | None] = []
        for i, batch in enumerate(batches):
            key = _cache_key(batch) if self.cache_size else None
            keys.append(key)
            if key is not None and key in self._cache:
                self._cache.move_to_end(key)
                self._count(batch, 0.0, None, hit=True)
                out[i] = Decided(self._cache[key], self.backend, 0.0, cached=True)
            else:
                todo.append(i)
        if todo:
            started = time.perf_counter()
            try:
                results = self._run([batches[i] for i in todo])
            except ControllerError:
                for i in todo:
                    self._count(batches[i], 0.0, None, failed=True)
                raise
            elapsed = (time.perf_counter() - started) / len(todo)
            for i, result in zip(todo, results, strict=True):
                validate_result(batches[i], result, self.backend)
                self._count(batches[i], elapsed, result)
                out[i] = Decided(result, self.backend, elapsed * 1000.0)
                key = keys[i]
                if key is not None:
                    self._cache[key] = result
                    while len(self._cache) > self.cache_size:
                        self._cache.popitem(last=False)
        return [d for d in out if d is not None]

    @property
    def cached_answers(self) -> int:
        """How many controller answers the cache holds now."""
        return len(self._cache)

    def clear_cache(self) -> None:
        """Drop cached answers (after a forget, so no answer about a forgotten memory survives)."""
        self._cache.clear()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def _run(self, batches: list[Batch]) -> list[BatchResult]:
        def call() -> list[BatchResult]:
            many = getattr(self.controller, "decide_many", None)
            if many is not None and len(batches) > 1:
                return list(many(batches))
            return [self.controller.decide(b) for b in batches]

        if self.timeout_s is None:
            return call()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dualmem-s1")
        future = self._pool.submit(call)
        try:
            return future.result(timeout=self.timeout_s * len(batches))
        except FutureTimeout:
            future.cancel()
            # the worker may still be busy: give later calls a fresh one
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
            raise ControllerTimeout(
                f"{self.backend} did not answer within {self.timeout_s:g} s", hint="raise the timeout"
            ) from None

    def _count(
        self,
        batch: Batch,
        latency_s: float,
        result: BatchResult | None,
        *,
        hit: bool = False,
        failed: bool = False,
    ) -> None:
        counts = self.stats.by_purpose.setdefault(batch.purpose or "other", CallCounts())
        if hit:
            counts.cache_hits += 1
            return
        counts.calls += 1
        counts.questions += len(batch.questions)
        if failed:
            counts.failures += 1
            return
        counts.latency_s += latency_s
        if result is not None:
            counts.input_tokens += result.usage.input_tokens or 0
            counts.output_tokens += result.usage.output_tokens or 0


def _cache_key(batch: Batch) -> str:
    payload = {
        "state": batch.state,
        "questions": {name: repr(q) for name, q in sorted(batch.questions.items())},
    }
    raw = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.blake2b(raw, digest_size=16).hexdigest()

"""Accounting around a System-One backend: calls, questions, latency, tokens, timeout, cache.

The write and read paths never call a backend directly: they go through a ``Meter`` so every
request is counted per purpose (typing, relations, routing, assessment, scoring, consolidation)
and the control-overhead bounds of paper §3.3 can be asserted.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dualmem.control.questions import Batch, BatchResult, Controller, first_failure_raised, validate_result
from dualmem.errors import ConfigError, ControllerError, ControllerTimeout
from dualmem.types import fields_json

if TYPE_CHECKING:
    from dualmem.control.calibration import Calibration

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
        return fields_json(self, latency_s=round(self.latency_s, 6))


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
    remote backends also carry their own HTTP timeouts); a backend that ``runs_inline`` (the builtin
    decider: in-process, no I/O) is called on the caller's thread and not bounded. ``cache_size`` > 0
    caches answers by the exact batch content (state and questions), which pays off for repeated
    queries. ``calibration`` (a profile's per-backend calibration, ``control/calibration.py``) maps
    every Noul answer.

    Thread-safe: the foreground and the background consolidation thread share one meter. Its cache,
    counters and worker pool are guarded by one lock, never held while the controller works.
    """

    def __init__(
        self,
        controller: Controller,
        *,
        timeout_s: float | None = None,
        cache_size: int = 0,
        calibration: Calibration | None = None,
    ) -> None:
        self.controller = controller
        self.calibration = _checked(calibration, controller)
        self.timeout_s = timeout_s
        self.cache_size = cache_size
        self._cache: OrderedDict[str, BatchResult] = OrderedDict()
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self.stats = ControllerStats(backend=controller.name)

    @property
    def backend(self) -> str:
        return self.controller.name

    def ask(self, batch: Batch, *, timeout: float | None = None) -> Decided:
        """One request. Raises ``ControllerError`` (or ``ControllerTimeout``); never a partial result.

        ``timeout`` is the caller's remaining time in seconds (the read path's budget): the request
        gets the lesser of it and the meter's own ``timeout_s``.
        """
        return self.ask_many([batch], timeout=timeout)[0]

    def ask_many(self, batches: Sequence[Batch], *, timeout: float | None = None) -> list[Decided]:
        """Several independent requests; a backend with ``decide_each`` may run them concurrently.

        Each batch still counts as one request of its purpose. The first failure is raised.
        """
        return first_failure_raised(self.ask_each(batches, timeout=timeout))

    def ask_each(
        self, batches: Sequence[Batch], *, timeout: float | None = None
    ) -> list[Decided | ControllerError]:
        """Like :meth:`ask_many`, but each batch's own failure in its place (one voids no other)."""
        out: list[Decided | ControllerError | None] = [None] * len(batches)
        todo: list[int] = []
        keys = [_cache_key(batch) if self.cache_size else None for batch in batches]
        with self._lock:
            for i, batch in enumerate(batches):
                key = keys[i]
                hit = self._cache.get(key) if key is not None else None
                if key is not None and hit is not None:
                    self._cache.move_to_end(key)
                    self._count(batch, 0.0, None, hit=True)
                    out[i] = Decided(hit, self.backend, 0.0, cached=True)
                else:
                    todo.append(i)
        if todo:
            self._decide([batches[i] for i in todo], [keys[i] for i in todo], todo, out, timeout)
        return [d for d in out if d is not None]

    def _decide(
        self,
        batches: list[Batch],
        keys: list[str | None],
        slots: list[int],
        out: list[Decided | ControllerError | None],
        timeout: float | None,
    ) -> None:
        started = time.perf_counter()
        outcomes = self._run(batches, timeout)
        elapsed = (time.perf_counter() - started) / len(batches)
        checked: list[BatchResult | ControllerError] = []
        for batch, outcome in zip(batches, outcomes, strict=True):
            if isinstance(outcome, BatchResult):
                try:
                    validate_result(batch, outcome, self.backend)
                    if self.calibration is not None:
                        outcome = self.calibration.calibrate(batch, outcome)
                except ControllerError as exc:
                    outcome = exc
            checked.append(outcome)
        with self._lock:
            for batch, key, slot, outcome in zip(batches, keys, slots, checked, strict=True):
                if isinstance(outcome, ControllerError):
                    self._count(batch, 0.0, None, failed=True)
                    out[slot] = outcome
                    continue
                self._count(batch, elapsed, outcome)
                out[slot] = Decided(outcome, self.backend, elapsed * 1000.0)
                if key is not None:
                    self._cache[key] = outcome
                    while len(self._cache) > self.cache_size:
                        self._cache.popitem(last=False)

    @property
    def cached_answers(self) -> int:
        """How many controller answers the cache holds now."""
        with self._lock:
            return len(self._cache)

    def clear_cache(self) -> None:
        """Drop cached answers (after a forget, so no answer about a forgotten memory survives)."""
        with self._lock:
            self._cache.clear()

    def snapshot(self) -> ControllerStats:
        """A consistent copy of the counters (safe to read while other threads are counting)."""
        with self._lock:
            return copy.deepcopy(self.stats)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _run(self, batches: list[Batch], timeout: float | None) -> list[BatchResult | ControllerError]:
        own = self.timeout_s * len(batches) if self.timeout_s is not None else None
        limit = min((t for t in (own, timeout) if t is not None), default=None)
        if limit is not None and limit <= 0:
            return [ControllerTimeout(f"{self.backend}: no time left for the request")] * len(batches)
        each = getattr(self.controller, "decide_each", None)
        if each is not None and getattr(self.controller, "supports_deadline", False):
            return _each(each, batches, limit)  # the backend bounds its own requests

        def call() -> list[BatchResult | ControllerError]:
            if each is not None:
                return _each(each, batches, limit)
            results: list[BatchResult | ControllerError] = []
            for batch in batches:
                try:
                    results.append(self.controller.decide(batch))
                except ControllerError as exc:
                    results.append(exc)
            return results

        if limit is None or getattr(self.controller, "runs_inline", False):
            return call()  # nothing to bound, or an in-process decider that needs no watchdog
        return self._watched(call, limit, len(batches))

    def _watched(
        self, call: Callable[[], list[BatchResult | ControllerError]], limit: float, n: int
    ) -> list[BatchResult | ControllerError]:
        """``call()`` on the worker thread, or ``n`` timeouts when it takes longer than ``limit`` s."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dualmem-s1")
            pool = self._pool
        future = pool.submit(call)
        try:
            return future.result(timeout=limit)
        except FutureTimeout:
            future.cancel()
            # the worker may still be busy: give later calls a fresh one
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)
            failure = ControllerTimeout(
                f"{self.backend} did not answer within {limit:g} s", hint="raise the timeout"
            )
            return [failure] * n

    def _count(
        self,
        batch: Batch,
        latency_s: float,
        result: BatchResult | None,
        *,
        hit: bool = False,
        failed: bool = False,
    ) -> None:
        """Update the counters; the caller holds ``self._lock``."""
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


def _checked(calibration: Calibration | None, controller: Controller) -> Calibration | None:
    """A profile's calibration, refused when fitted for another backend or when the controller
    already applies one of its own (``LLMConfig.calibration``: scores would be mapped twice)."""
    if calibration is None:
        return None
    if controller.name != calibration.backend:
        raise ConfigError(
            f"the profile's calibration is for the {calibration.backend} backend, not {controller.name}",
            hint="use that backend, or a profile without calibration",
        )
    if getattr(controller, "calibration", None) is not None:
        raise ConfigError(
            "the controller has a calibration of its own and the profile has another",
            hint="pass the calibration one way: in the profile, or as --llm-calibration / LLMConfig",
        )
    return calibration


def _each(
    each: Callable[..., Sequence[BatchResult | ControllerError]], batches: list[Batch], limit: float | None
) -> list[BatchResult | ControllerError]:
    """``decide_each``; a failure of the whole call (a question it cannot ask) is every batch's."""
    try:
        return list(each(batches, timeout=limit))
    except ControllerError as exc:
        return [exc] * len(batches)


def _cache_key(batch: Batch) -> str:
    payload = {
        "state": batch.state,
        "questions": {name: repr(q) for name, q in sorted(batch.questions.items())},
    }
    raw = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.blake2b(raw, digest_size=16).hexdigest()

"""A small base class for System-One controllers: the defaults every backend would repeat.

A controller needs only ``name`` and ``decide`` (the :class:`~dualmem.control.questions.Controller`
protocol). Subclassing :class:`BaseController` adds ``decide_many`` (one ``decide`` per batch, in
order; a remote backend overrides it to send the batches concurrently), ``decide_each`` (every
batch's result or its own failure, so one failed batch does not void the others), a no-op
``close`` (a backend holding an HTTP client overrides it) and use as a context manager.

Deadlines: a backend whose ``supports_deadline`` is True bounds ``decide_each(..., timeout=s)``
itself (every request and retry within ``s`` seconds); for the others the
:class:`~dualmem.control.meter.Meter` enforces the timeout from outside, on a worker thread. A
backend whose ``runs_inline`` is True (in-process, bounded, no I/O: the builtin decider) needs no
such watchdog: the Meter calls it on the caller's thread, sparing each request a thread hop.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from dualmem._closing import Closing
from dualmem.control.questions import Batch, BatchResult
from dualmem.errors import ControllerError

__all__ = ["BaseController"]


class BaseController(Closing, ABC):
    """Default ``decide_many``, ``close`` and context management over an abstract ``decide``."""

    name: str
    #: True when ``decide_each`` honours its ``timeout`` itself
    supports_deadline: ClassVar[bool] = False
    #: True when ``decide`` is in-process, bounded and does no I/O: run on the caller's thread
    runs_inline: ClassVar[bool] = False

    @abstractmethod
    def decide(self, batch: Batch) -> BatchResult:
        """Answer every question of ``batch`` or raise ``ControllerError``."""

    def decide_many(self, batches: Sequence[Batch]) -> list[BatchResult]:
        """Independent batches, answered one after the other."""
        return [self.decide(b) for b in batches]

    def decide_each(
        self, batches: Sequence[Batch], *, timeout: float | None = None
    ) -> list[BatchResult | ControllerError]:
        """Each batch's result or the ``ControllerError`` it raised, in order.

        ``timeout`` is the caller's remaining time; this default does not bound itself by it (see
        ``supports_deadline``).
        """
        del timeout  # enforced by the Meter for backends that do not bound themselves
        out: list[BatchResult | ControllerError] = []
        for batch in batches:
            try:
                out.append(self.decide(batch))
            except ControllerError as exc:
                out.append(exc)
        return out

    def close(self) -> None:
        """Release what the controller holds (nothing here)."""

"""A small base class for System-One controllers: the defaults every backend would repeat.

A controller needs only ``name`` and ``decide`` (the :class:`~dualmem.control.questions.Controller`
protocol). Subclassing :class:`BaseController` adds ``decide_many`` (one ``decide`` per batch, in
order; a remote backend overrides it to send the batches concurrently), a no-op ``close`` (a
backend holding an HTTP client overrides it) and use as a context manager.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from types import TracebackType
from typing import Self

from dualmem.control.questions import Batch, BatchResult

__all__ = ["BaseController"]


class BaseController(ABC):
    """Default ``decide_many``, ``close`` and context management over an abstract ``decide``."""

    name: str

    @abstractmethod
    def decide(self, batch: Batch) -> BatchResult:
        """Answer every question of ``batch`` or raise ``ControllerError``."""

    def decide_many(self, batches: Sequence[Batch]) -> list[BatchResult]:
        """Independent batches, answered one after the other."""
        return [self.decide(b) for b in batches]

    def close(self) -> None:  # noqa: B027 (a default, not an abstract method)
        """Release what the controller holds (nothing here)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

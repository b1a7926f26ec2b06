"""A tiny progress line on a text stream (stderr by default); silent when disabled."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """``label  done/total  elapsed`` redrawn in place at most every ``interval`` seconds."""

    def __init__(
        self,
        label: str,
        total: int,
        *,
        enabled: bool = True,
        stream: TextIO | None = None,
        interval: float = 0.2,
    ) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self._start = time.perf_counter()
        self._last = 0.0
        self._drawn = -1

    def update(self, n: int = 1) -> None:
        self.done += n
        now = time.perf_counter()
        if self.enabled and (now - self._last >= self.interval or self.done >= self.total):
            self._last = now
            self._draw(now)

    def set(self, done: int) -> None:
        self.update(done - self.done)

    def close(self) -> None:
        if self.enabled:
            if self._drawn != self.done:
                self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()

    def _draw(self, now: float) -> None:
        self._drawn = self.done
        self.stream.write(f"\r{self.label}  {self.done}/{self.total}  {now - self._start:6.1f}s")
        self.stream.flush()

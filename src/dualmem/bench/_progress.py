"""The one progress bar of dualmem (the CLI's and the benchmark's), on stderr by default.

``label [#####.....] done/total rate/s elapsed`` redrawn in place at most every ``interval``
seconds (and always when done); silent when disabled. Use it as a counter (:meth:`update`,
:meth:`set`, :meth:`close`) or as an ``on_progress(done, total)`` callback (it closes itself when
``done`` reaches ``total``).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]

_WIDTH = 30


class Progress:
    """A progress line for ``total`` steps; ``enabled=False`` draws nothing."""

    def __init__(
        self,
        label: str,
        total: int = 0,
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
        self._last = float("-inf")
        self._drawn = -1
        self._closed = False

    def __call__(self, done: int, total: int) -> None:
        """The ``on_progress`` callback of ``Memory.add_many`` / ``ingest``."""
        self.total = total
        self.set(done)
        if total > 0 and done >= total:
            self.close()

    def update(self, n: int = 1) -> None:
        self.done += n
        now = time.perf_counter()
        if self.enabled and (now - self._last >= self.interval or self.done >= self.total):
            self._last = now
            self._draw(now)

    def set(self, done: int) -> None:
        self.update(done - self.done)

    def close(self) -> None:
        """Draw the last state and end the line (once)."""
        if self.enabled and not self._closed:
            if self._drawn != self.done:
                self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()
        self._closed = True

    def _draw(self, now: float) -> None:
        self._drawn = self.done
        elapsed = now - self._start
        filled = min(_WIDTH, int(_WIDTH * self.done / self.total)) if self.total > 0 else 0
        bar = "#" * filled + "." * (_WIDTH - filled)
        rate = self.done / max(elapsed, 1e-9)
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} {rate:.0f}/s {elapsed:6.1f}s")
        self.stream.flush()

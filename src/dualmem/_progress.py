"""The one progress bar of dualmem (the CLI's and the benchmark's), on stderr by default.

``label [#####.....] done/total rate/s elapsed`` redrawn in place (``inline``, for a terminal) or
written as one line per report (a log file, a CI job). The throttle is time-based, not a count of
items: a report closer than ``interval`` seconds to the last one drawn is skipped (the last state is
always drawn), and used as a context manager a heartbeat thread draws at least every ``heartbeat``
seconds while the work is busy between reports (an ingest reports per chunk of 256 turns). Silent
when disabled. Use it as a counter (:meth:`update`, :meth:`set`, :meth:`close`) or as an
``on_progress(done, total)`` callback (it closes itself when ``done`` reaches ``total``). The clock
can be injected (tests drive :meth:`tick` with a fake one).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["Progress", "due"]

_WIDTH = 30


def due(last: float, now: float, interval: float) -> bool:
    """The throttle: whether a report at ``now`` may be drawn after one drawn at ``last``."""
    return now - last >= interval


class Progress:
    """A progress line for ``total`` steps; ``enabled=False`` draws nothing."""

    def __init__(  # noqa: PLR0913 - keyword-only display settings
        self,
        label: str,
        total: int = 0,
        *,
        enabled: bool = True,
        stream: TextIO | None = None,
        interval: float | None = None,
        inline: bool = True,
        heartbeat: float = 1.0,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.inline = inline
        # in place a line may be redrawn often; a log gets one line every 2 s at most
        self.interval = interval if interval is not None else (0.2 if inline else 2.0)
        self.heartbeat = min(heartbeat, 2.0)
        self._clock = clock
        self._start = clock()
        self._last = float("-inf")
        self._drawn = -1
        self._closed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if self.enabled and self._thread is None:
            self._thread = threading.Thread(target=self._beat, name="dualmem-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.close()

    def __call__(self, done: int, total: int) -> None:
        """The ``on_progress`` callback of ``Memory.add_many`` / ``ingest``."""
        self.total = total
        self.set(done)
        if total > 0 and done >= total:
            self.close()

    def update(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            now = self._clock()
            finished = self.total > 0 and self.done >= self.total
            if self.enabled and not self._closed and (due(self._last, now, self.interval) or finished):
                self._draw(now)

    def set(self, done: int) -> None:
        self.update(done - self.done)

    def tick(self) -> bool:
        """The heartbeat: draw the current state if nothing was drawn for ``heartbeat`` seconds
        (the elapsed time moves on even while the count does not); whether it drew."""
        with self._lock:
            now = self._clock()
            if not self.enabled or self._closed or not due(self._last, now, self.heartbeat):
                return False
            self._draw(now)
            return True

    def close(self) -> None:
        """Draw the last state and end the line (once)."""
        with self._lock:
            if self.enabled and not self._closed:
                if self._drawn != self.done:
                    self._draw(self._clock())
                if self.inline:
                    self.stream.write("\n")
                self.stream.flush()
            self._closed = True

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat / 2):
            self.tick()

    def _draw(self, now: float) -> None:
        self._last = now
        self._drawn = self.done
        elapsed = now - self._start
        filled = min(_WIDTH, int(_WIDTH * self.done / self.total)) if self.total > 0 else 0
        bar = "#" * filled + "." * (_WIDTH - filled)
        if self.total <= 0 and self.done == 0:  # nothing known yet: no "0/0 0/s"
            count = "starting"
        elif self.total <= 0:
            count = f"{self.done}"
        else:
            count = f"{self.done}/{self.total}"
        rate = f" {self.done / max(elapsed, 1e-9):.0f}/s" if self.done > 0 else ""
        line = f"{self.label} [{bar}] {count}{rate} {elapsed:6.1f}s"
        self.stream.write(f"\r{line}" if self.inline else f"{line}\n")
        self.stream.flush()

"""Periodic consolidation: when a pass is due (``write/cadence``) and where it runs (inline, or on a
single worker thread so writes never wait for it)."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Literal

from dualmem.errors import DualmemError
from dualmem.types import Tenant
from dualmem.write.cadence import Backlog, Cadence

__all__ = ["Background", "ConsolidationMode", "Periodic"]

log = logging.getLogger("dualmem")

ConsolidationMode = Literal["background", "inline", "off"]


class Background:
    """Runs ``fn(tenant, node_ids)`` for submitted jobs on one lazily started daemon thread."""

    def __init__(self, fn: Callable[[Tenant, Sequence[str]], None]) -> None:
        self._fn = fn
        self._queue: queue.Queue[tuple[Tenant, Sequence[str]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, tenant: Tenant, node_ids: Sequence[str]) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="dualmem-consolidate", daemon=True)
                self._thread.start()
        self._queue.put((tenant, node_ids))

    def join(self, timeout: float | None = None) -> None:
        """Wait until everything submitted so far has run (``timeout`` is best effort)."""
        if self._thread is None:
            return
        done = threading.Event()

        def wait() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=wait, daemon=True).start()
        done.wait(timeout)

    def close(self) -> None:
        thread = self._thread
        if thread is not None and thread.is_alive():
            self._queue.put(None)
            thread.join()
        self._thread = None

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if job is None:
                    return
                self._fn(*job)
            finally:
                self._queue.task_done()


class Periodic:
    """The every-N-writes passes of ``mode``: ``"background"`` (a worker thread; a failed pass is
    logged), ``"inline"`` (the write that completes a window runs the pass; its errors propagate)
    or ``"off"``. ``run(tenant, node_ids)`` is one pass over exactly the window's nodes."""

    def __init__(
        self,
        run: Callable[[Tenant, Sequence[str]], object],
        *,
        mode: ConsolidationMode,
        every: int,
        backlog: Backlog | None = None,
    ) -> None:
        self.mode = mode
        self.cadence = Cadence(every if mode != "off" else 0, backlog=backlog)
        self._run = run
        self._background = Background(self._quietly)

    def wrote(self, tenant: Tenant, node_ids: Sequence[str]) -> None:
        """Record successful writes; run or queue every pass that is now due."""
        for window in self.cadence.record(tenant, node_ids):
            if self.mode == "inline":
                self._run(tenant, window)
            else:
                self._background.submit(tenant, window)

    def join(self, timeout: float | None = None) -> None:
        """Wait until the passes queued so far are done (``timeout`` is best effort)."""
        self._background.join(timeout)

    def close(self) -> None:
        """Finish the queued passes and stop the worker."""
        self._background.close()

    def _quietly(self, tenant: Tenant, node_ids: Sequence[str]) -> None:
        try:
            self._run(tenant, node_ids)
        except DualmemError as exc:
            log.warning("background consolidation for %s failed: %s", tenant.user, exc.one_line())

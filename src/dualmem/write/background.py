"""Periodic consolidation: when a pass is due (``write/cadence``), where it runs (inline, or on a
single worker thread so writes never wait for it) and, with a store-kept queue, that none is lost."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Literal

from dualmem.errors import DualmemError
from dualmem.types import Tenant
from dualmem.write.cadence import Backlog, Cadence
from dualmem.write.durable import WorkQueue

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
    """The every-N-writes passes of ``mode``: ``"background"`` (a worker thread), ``"inline"`` (on the
    writer's thread, after its commit) or ``"off"``. ``run(tenant, node_ids)`` is one pass over
    exactly the window's nodes.

    With a ``queue`` (:class:`~dualmem.write.durable.WorkQueue`) and a store-kept ``backlog``, the
    cadence and the due passes live in the store: :meth:`record` is called inside the write's
    transaction (the pass commits with the write that made it due), :meth:`run_due` after the commit,
    and :meth:`resume` runs what a process that died left queued. A pass never raises to the writer
    (the write has committed): a failure is logged and the pass stays queued for a later retry.
    """

    def __init__(
        self,
        run: Callable[[Tenant, Sequence[str]], object],
        *,
        mode: ConsolidationMode,
        every: int,
        backlog: Backlog | None = None,
        queue: WorkQueue | None = None,
    ) -> None:
        self.mode = mode
        self.cadence = Cadence(every if mode != "off" else 0, backlog=backlog)
        self._run = run
        self._queue = queue
        self._background = Background(self._quietly)

    def record(self, tenant: Tenant, node_ids: Sequence[str]) -> list[tuple[str, ...]]:
        """Count successful writes; queue (in the store, if any) and return the windows now due."""
        due = self.cadence.record(tenant, node_ids)
        if self._queue is not None:
            for window in due:
                self._queue.push(tenant, window)
        return due

    def run_due(self, tenant: Tenant, windows: Sequence[Sequence[str]]) -> None:
        """Run (inline) or hand to the worker the passes :meth:`record` returned; never raises."""
        for window in windows:
            if self.mode == "inline":
                self._quietly(tenant, window)
            elif self.mode == "background":
                self._background.submit(tenant, window)

    def wrote(self, tenant: Tenant, node_ids: Sequence[str]) -> None:
        """:meth:`record` then :meth:`run_due` (for writes that are already committed)."""
        self.run_due(tenant, self.record(tenant, node_ids))

    def resume(self) -> int:
        """Run the passes left queued in the store by processes that are gone; how many."""
        if self._queue is None or self.mode == "off":
            return 0
        left = self._queue.resumable()
        for tenant, window in left:
            self.run_due(tenant, [window])
        return len(left)

    def join(self, timeout: float | None = None) -> None:
        """Wait until the passes queued so far are done (``timeout`` is best effort)."""
        self._background.join(timeout)

    def close(self) -> None:
        """Finish the queued passes and stop the worker."""
        self._background.close()

    def _quietly(self, tenant: Tenant, node_ids: Sequence[str]) -> None:
        """One pass: claimed, run, removed from the store's queue; on failure logged and requeued."""
        try:
            if self._queue is not None and not self._queue.claim(tenant, node_ids):
                return  # another live process runs it
            self._run(tenant, node_ids)
            if self._queue is not None:
                self._queue.finish(tenant, node_ids)
        except DualmemError as exc:
            log.warning("%s consolidation for %s failed: %s", self.mode, tenant.user, exc.one_line())
            if self._queue is None:
                return
            try:
                self._queue.release(tenant, node_ids)
            except DualmemError as again:
                log.warning("could not requeue the consolidation pass: %s", again.one_line())

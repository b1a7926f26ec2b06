"""A single worker thread that runs consolidation passes so writes never wait for them."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import Literal

from dualmem.types import Tenant

__all__ = ["Background", "ConsolidationMode"]

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

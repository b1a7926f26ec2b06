"""Periodic consolidation: when a pass is due (a :class:`Trigger`: every N writes of a tenant, and
optionally after an interval for fewer), where it runs (inline, or on a single worker thread so writes
never wait for it) and, with a store-kept queue, that none is lost.

There is one scheduler per memory, :class:`Periodic`. The library drives it on its own (the profile's
mode and cadence); a server drives the same one (:meth:`Periodic.drive`: its trigger, its writer lock
around each pass, its metrics), so serving a memory never starts a second scheduler.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal

from dualmem.errors import ConfigError, DualmemError
from dualmem.types import Tenant
from dualmem.write.cadence import Backlog, Cadence
from dualmem.write.durable import WaitingTenants, WorkQueue

__all__ = ["Background", "ConsolidationMode", "Periodic", "Trigger"]

log = logging.getLogger("dualmem")

ConsolidationMode = Literal["background", "inline", "off"]

#: runs one pass (a server passes its writer: the pass then runs as one of its writes)
Guard = Callable[[Callable[[], Any]], Any]


@dataclass(frozen=True, slots=True)
class Trigger:
    """When a tenant's waiting writes become a pass.

    ``count``: every ``count`` successful writes, one pass over exactly those (``<= 0``: never by count).
    ``interval_s``: a tenant whose oldest waiting write is this old gets one pass over every write it
    has waiting, however few (``None``: never by time; needs the background worker and a count, whose
    backlog holds the writes waiting).
    """

    count: int
    interval_s: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.count, int) or isinstance(self.count, bool):
            raise ConfigError(f"the consolidation cadence must be an integer, got {self.count!r}")
        interval = self.interval_s
        if interval is not None and (
            isinstance(interval, bool) or not isinstance(interval, int | float) or not interval > 0
        ):
            raise ConfigError(
                f"the consolidation interval must be a number of seconds > 0, got {interval!r}",
                hint="e.g. 30.0, or None for passes by count only",
            )
        if interval is not None and self.count <= 0:
            raise ConfigError(
                "a consolidation interval needs a count cadence (the writes waiting are counted there)",
                hint="give count > 0, or no interval",
            )

    @property
    def active(self) -> bool:
        return self.count > 0


def _call(fn: Callable[[], Any]) -> Any:
    return fn()


class Background:
    """Runs ``fn(tenant, node_ids)`` for submitted jobs on one lazily started daemon thread; with a
    ``tick`` (seconds) the thread also calls ``idle()`` whenever that long passed without a job."""

    def __init__(self, fn: Callable[[Tenant, Sequence[str]], None]) -> None:
        self._fn = fn
        self._queue: queue.Queue[tuple[Tenant, Sequence[str]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.tick: float | None = None
        self.idle: Callable[[], None] | None = None

    def start(self) -> None:
        """Start the worker now (it starts on the first job otherwise)."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="dualmem-consolidate", daemon=True)
                self._thread.start()

    def alive(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def submit(self, tenant: Tenant, node_ids: Sequence[str]) -> None:
        self.start()
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
            tick, idle = self.tick, self.idle
            try:
                job = self._queue.get(timeout=tick) if tick is not None else self._queue.get()
            except queue.Empty:
                if idle is not None:
                    idle()
                continue
            try:
                if job is None:
                    return
                self._fn(*job)
            finally:
                self._queue.task_done()
            if idle is not None and tick is not None:
                idle()  # a steady stream of jobs must not starve the interval passes


class Periodic:
    """The memory's one consolidation scheduler: the passes its :class:`Trigger` makes due, run by
    ``mode``: ``"background"`` (a worker thread), ``"inline"`` (on the writer's thread, after its
    commit) or ``"off"``. ``run(tenant, node_ids)`` is one pass over exactly the window's nodes.

    With a ``queue`` (:class:`~dualmem.write.durable.WorkQueue`) and a store-kept ``backlog``, the
    cadence and the due passes live in the store: :meth:`record` is called inside the write's
    transaction (the pass commits with the write that made it due), :meth:`run_due` after the commit,
    and :meth:`resume` runs what a process that died left queued. A pass never raises to the writer
    (the write has committed): a failure is logged and the pass stays queued for a later retry.

    A server takes the scheduler over with :meth:`drive` (its trigger, a guard that runs each pass as
    one of its writes, a callback per pass) and gives it back with :meth:`release`; one driver at a time.
    """

    def __init__(
        self,
        run: Callable[[Tenant, Sequence[str]], object],
        *,
        mode: ConsolidationMode,
        every: int,
        backlog: Backlog | None = None,
        queue: WorkQueue | None = None,
        waiting: WaitingTenants | None = None,
        transaction: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> None:
        self.mode: ConsolidationMode = mode
        self.trigger = Trigger(every if mode != "off" else 0)
        self.cadence = Cadence(self.trigger.count, backlog=backlog)
        self._run = run
        self._queue = queue
        self._waiting = waiting
        self._transaction = transaction or contextlib.nullcontext
        self._background = Background(self._quietly)
        self._background.idle = self._interval_passes
        self._guard: Guard = _call
        self._on_pass: Callable[[str], None] | None = None
        self._lock = threading.Lock()
        self._since: dict[Tenant, float] = {}  # while driven: tenants with writes waiting, since when
        self._driver: object | None = None
        self._own: tuple[ConsolidationMode, Trigger] = (mode, self.trigger)

    # -- the write side ------------------------------------------------------------------------
    def record(self, tenant: Tenant, node_ids: Sequence[str]) -> list[tuple[str, ...]]:
        """Count successful writes; queue (in the store, if any) and return the windows now due."""
        due, left = self.cadence.record_left(tenant, node_ids)
        if self._queue is not None:
            for window in due:
                self._queue.push(tenant, window)
        if self._driver is not None and node_ids and self.cadence.every > 0:
            self._note(tenant, waiting=left > 0)
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

    # -- a driver (the server) ---------------------------------------------------------------------
    def drive(
        self,
        owner: object,
        trigger: Trigger,
        *,
        guard: Guard | None = None,
        on_pass: Callable[[str], None] | None = None,
    ) -> None:
        """Let ``owner`` drive this scheduler: ``trigger`` replaces the profile's cadence, passes run in
        the background (none when the trigger is inactive), each one inside ``guard`` and reported to
        ``on_pass(trigger_name)``. The tenants a previous driver left waiting get their interval, and
        the passes left queued in the store run (if the memory's own mode, "off", did not resume them
        at open). Driving again is a no-op; a second driver while one holds it is a ``ConfigError``."""
        with self._lock:
            if self._driver is owner:
                return
            if self._driver is not None:
                raise ConfigError(
                    "this memory's consolidation is driven by another server already",
                    hint="serve a memory through one app (or stop the other first)",
                )
            self._own = (self.mode, self.trigger)
            # a memory whose own mode ran passes resumed the store's queue when it opened
            resume = self.mode == "off"
            self._driver = owner
            self.trigger = trigger
            self.cadence.every = trigger.count
            self.mode = "background" if trigger.active else "off"
            self._guard = guard or _call
            self._on_pass = on_pass
            now = time.monotonic()
            if self._waiting is not None and self.cadence.every > 0:
                for tenant in self._waiting.load():
                    self._since.setdefault(tenant, now)
        if self.mode == "background":
            self._background.tick = min(trigger.interval_s, 1.0) if trigger.interval_s is not None else None
            self._background.start()
            if resume:
                self.resume()

    def release(self, owner: object) -> None:
        """``owner`` stops driving: the profile's mode and cadence again (a pass running finishes)."""
        with self._lock:
            if self._driver is not owner:
                return
            self._driver = None
            self.mode, self.trigger = self._own
            self.cadence.every = self.trigger.count
            self._guard, self._on_pass = _call, None
            self._background.tick = None
            self._since.clear()

    def waiting(self) -> dict[Tenant, int]:
        """While driven: each tenant with writes waiting for a pass, and how many."""
        with self._lock:
            tenants = list(self._since)
        counts = {tenant: len(self.cadence.waiting(tenant)) for tenant in tenants}
        return {tenant: count for tenant, count in counts.items() if count}

    def note_waiting(self, tenant: Tenant) -> None:
        """Give ``tenant`` an interval pass over what it has waiting (a legacy backlog, say)."""
        with self._lock:
            self._since.setdefault(tenant, time.monotonic())

    def worker_alive(self) -> bool:
        return self._background.alive()

    def join(self, timeout: float | None = None) -> None:
        """Wait until the passes queued so far are done (``timeout`` is best effort)."""
        self._background.join(timeout)

    def close(self) -> None:
        """Finish the queued passes and stop the worker."""
        self._background.close()

    # -- passes ----------------------------------------------------------------------------------------
    def _note(self, tenant: Tenant, *, waiting: bool) -> None:
        """Track (and, in the store, list) the tenants with writes waiting; inside the write's transaction."""
        with self._lock:
            changed = (tenant in self._since) != waiting
            if waiting:
                self._since.setdefault(tenant, time.monotonic())
            else:
                self._since.pop(tenant, None)
            tenants = list(self._since)
        if changed and self._waiting is not None:
            self._waiting.save(tenants)

    def _interval_passes(self) -> None:
        """On the worker: one pass for each tenant whose oldest waiting write is older than the interval."""
        interval = self.trigger.interval_s
        if interval is None or self._driver is None:
            return
        now = time.monotonic()
        with self._lock:
            stale = [t for t, since in self._since.items() if now - since >= interval]
        for tenant in stale:
            try:
                window: tuple[str, ...] = self._guard(functools.partial(self._take, tenant))
            except DualmemError as exc:
                log.warning("could not take %s's waiting writes: %s", tenant.user, exc.one_line())
                with self._lock:
                    self._since[tenant] = time.monotonic()  # try again after another interval
                continue
            if window:
                self._quietly(tenant, window, trigger="interval")

    def _take(self, tenant: Tenant) -> tuple[str, ...]:
        """Every write ``tenant`` has waiting, as one queued pass (one transaction)."""
        with self._transaction():
            window = self.cadence.take(tenant)
            if window and self._queue is not None:
                self._queue.push(tenant, window)
            self._note(tenant, waiting=False)
        return window

    def _quietly(self, tenant: Tenant, node_ids: Sequence[str], trigger: str = "count") -> None:
        """One pass: claimed, run, removed from the store's queue; on failure logged and requeued."""
        work = self._queue
        try:
            if work is not None and not self._guard(lambda: work.claim(tenant, node_ids)):
                return  # another live process runs it
            self._guard(lambda: self._run(tenant, node_ids))
            if work is not None:
                self._guard(lambda: work.finish(tenant, node_ids))
            if self._on_pass is not None:
                self._on_pass(trigger)
        except DualmemError as exc:
            log.warning("%s consolidation for %s failed: %s", self.mode, tenant.user, exc.one_line())
            if self._queue is None:
                return
            try:
                self._queue.release(tenant, node_ids)
            except DualmemError as again:
                log.warning("could not requeue the consolidation pass: %s", again.one_line())

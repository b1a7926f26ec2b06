"""What the HTTP app and the MCP server share: one memory, one writer, one consolidation worker.

Writes (add, update, forget, import, consolidation passes) run one at a time under the writer lock;
reads (search, answer, get, list, export) run concurrently on the caller's thread. A write that
meets a database held by another process is retried with backoff for ``lock_wait_s`` before the
``DatabaseLocked`` reaches the caller. A write is acknowledged only after its transaction committed.

Consolidation: the service drives the memory's one scheduler (``Memory.scheduler``, a
``write.background.Periodic``) rather than running its own: every ``consolidate_every`` writes of a
tenant (or after ``consolidate_interval_s`` for a tenant with fewer waiting) the memory's worker runs
one pass, as one of this service's writes. What is waiting lives in the store (the backlog, the queue
of due passes, the tenants waiting), so a restart loses nothing; ``stop()`` hands the scheduler back
to the memory's own profile. A second service over the same memory cannot start while one drives it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from dualmem import Memory, Scope
from dualmem.errors import DatabaseLocked, DualmemError, UserError
from dualmem.server.keys import KeyStore, Replay
from dualmem.server.metrics import Metrics, file_bytes
from dualmem.vocab import Tenant, Trigger, check_json, stamped, utcnow

__all__ = ["Service", "stamped"]

log = logging.getLogger("dualmem.server")
T = TypeVar("T")

WRITE_PURPOSES = ("typing", "relations")
MAX_GROUP = 512  # observations committed together at most


class _AddJob:
    """One caller's add waiting for the writer."""

    def __init__(self, scope: Scope, observations: list[Mapping[str, Any]]) -> None:
        self.scope = scope
        self.observations = observations
        self.ids: list[str] = []
        self.error: BaseException | None = None
        self.done = threading.Event()

    def finish(self, *, ids: list[str] | None = None, error: BaseException | None = None) -> None:
        if self.done.is_set():
            return
        self.ids = ids or []
        self.error = error
        self.done.set()


class Service:
    def __init__(
        self,
        memory: Memory,
        keys: KeyStore,
        *,
        consolidate_every: int | None = None,
        consolidate_interval_s: float = 30.0,
        lock_wait_s: float = 30.0,
        max_reads: int | None = None,
    ) -> None:
        self.memory = memory
        self.keys = keys
        self.metrics = Metrics()
        self.metrics.add_gauges(self._gauges)
        every = memory.profile.write.consolidate_every if consolidate_every is None else consolidate_every
        self.consolidate_every = max(0, every)
        self.consolidate_interval_s = consolidate_interval_s
        self.lock_wait_s = lock_wait_s
        # searches are CPU-bound Python: more at once than cores only makes them (and the writer)
        # fight over the GIL, so at most ``max_reads`` run together and the rest queue
        self._reads = threading.BoundedSemaphore(max_reads or max(2, os.cpu_count() or 2))
        self._writer = threading.RLock()  # re-entrant: a write may call service.add
        self._queue_lock = threading.Lock()
        self._queue: list[_AddJob] = []

    def scope(self, tenant: Tenant) -> Scope:
        return self.memory.scope(tenant.user, tenant.agent, tenant.run)

    def read(self, fn: Callable[[], T]) -> T:
        """Run a heavy read (search, answer) with at most ``max_reads`` others at once."""
        with self._reads:
            return fn()

    # -- the one writer -----------------------------------------------------------------------
    def write(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` as the only writer; retry it while another process holds the database."""
        deadline = time.monotonic() + self.lock_wait_s
        delay = 0.05
        with self._writer:
            while True:
                try:
                    return fn()
                except DatabaseLocked:
                    if time.monotonic() + delay > deadline:
                        raise
                    self.metrics.locked_retries.inc()
                    time.sleep(delay)
                    delay = min(delay * 2, 1.0)

    def add(self, scope: Scope, observations: Sequence[Mapping[str, Any]]) -> list[str]:
        """Store observations as one all-or-nothing write; returns their ids once committed.

        Concurrent adds are committed together (group commit): whoever holds the writer stores every
        add queued meanwhile, one ``add_many`` per tenant, so embedding and controller work is batched.
        A batch refused for bad input is retried add by add, so only the bad add fails; up to
        ``MAX_GROUP`` observations are written as one chunk (one node transaction).

        An observation without ``at`` is stamped with the time of the call (UTC), so the time
        features (recency, ``since``/``until`` filters, forget-since) see it.
        """
        job = _AddJob(scope, stamped(observations, utcnow()))
        with self._queue_lock:
            self._queue.append(job)
        with self._writer:
            while not job.done.is_set():
                self._commit(self._take())
        if job.error is not None:
            raise job.error
        return job.ids

    def add_once(
        self, scope: Scope, observations: Sequence[Mapping[str, Any]], *, owner: str, key: str, digest: str
    ) -> tuple[Replay, bool]:
        """``add`` under an idempotency key: the first response for a key seen before (and ``True``),
        else the add's response, recorded for the key (and ``False``).

        The writer is held throughout, so two requests with one key never both add. Each step is
        retried on its own while a database is locked: a locked key file after the add committed
        retries only the recording, never the add (which would store the observations twice).
        """
        with self._writer:
            seen = self.write(lambda: self.keys.recall(owner, key))
            if seen is not None:
                return seen, True
            ids = self.add(scope, observations)
            replay = Replay(digest, 201, {"ids": ids})
            try:
                self.write(lambda: self.keys.remember(owner, key, replay))
            except DualmemError as exc:  # the add is committed: acknowledge it, without a replay record
                log.warning("cannot record Idempotency-Key %r: %s", key, exc.one_line())
            return replay, False

    def update(
        self,
        scope: Scope,
        node_id: str,
        text: str,
        *,
        at: Any = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        """``Scope.update`` as a write; ``metadata`` (if given) replaces the new version's metadata."""

        def run() -> str:
            with self.memory.store.transaction():
                new = scope.update(node_id, text, at=at)
                if metadata is not None:
                    check_json(metadata, "metadata")
                    node = scope.get(new)
                    self.memory.store.update_node(dataclasses.replace(node, metadata=dict(metadata)))
            return new

        return self.write(run)

    def _take(self) -> list[_AddJob]:
        """The queued adds, oldest first, up to ``MAX_GROUP`` observations (at least one add)."""
        with self._queue_lock:
            taken, total = 0, 0
            for job in self._queue:
                if taken and total + len(job.observations) > MAX_GROUP:
                    break
                taken += 1
                total += len(job.observations)
            batch, self._queue = self._queue[:taken], self._queue[taken:]
        return batch

    def _commit(self, batch: list[_AddJob]) -> None:
        groups: dict[Tenant, list[_AddJob]] = {}
        for job in batch:
            groups.setdefault(job.scope.tenant, []).append(job)
        try:
            for jobs in groups.values():
                try:
                    self._store(jobs)
                except DualmemError as exc:
                    # a UserError is raised before anything is written (add_many validates first);
                    # anything else may have stored part of the batch, so it fails every add in it
                    if len(jobs) == 1 or not isinstance(exc, UserError):
                        for job in jobs:
                            job.finish(error=exc)
                        continue
                    for one in jobs:  # find the culprit: everyone else still gets stored
                        try:
                            self._store([one])
                        except DualmemError as own:
                            one.finish(error=own)
        except BaseException as exc:  # not a dualmem error: fail the waiters too, then re-raise
            for job in batch:
                job.finish(error=exc)
            raise

    def _store(self, jobs: list[_AddJob]) -> None:
        observations = [o for job in jobs for o in job.observations]
        scope = jobs[0].scope

        def run() -> tuple[list[str], dict[str, int]]:
            before = self._write_calls()
            ids = scope.add_many(observations, chunk_size=max(1, len(observations)))  # one chunk
            after = self._write_calls()
            return ids, {p: after[p] - before[p] for p in WRITE_PURPOSES}

        ids, calls = self.write(run)
        self.metrics.observe_write(len(ids), len(jobs), calls)
        start = 0
        for job in jobs:
            job.finish(ids=ids[start : start + len(job.observations)])
            start += len(job.observations)

    def _write_calls(self) -> dict[str, int]:
        stats = self.memory.meter.stats
        return {p: stats.calls_for(p) for p in WRITE_PURPOSES}

    # -- consolidation: the memory's scheduler, driven by this service -------------------------------
    def backlog(self) -> dict[Tenant, int]:
        """Each tenant with writes waiting for a consolidation pass, and how many."""
        return self.memory.scheduler.waiting()

    def start(self) -> None:
        """Drive the memory's consolidation scheduler (idempotent; ``ConfigError`` if another service
        drives it). Tenants an earlier version left in the key database's backlog get their interval."""
        if self.memory.read_only:
            return  # nothing is written, so no pass is ever due
        interval = self.consolidate_interval_s if self.consolidate_every > 0 else None
        scheduler = self.memory.scheduler
        scheduler.drive(
            self, Trigger(self.consolidate_every, interval), guard=self.write, on_pass=self._passed
        )
        legacy = self.keys.load_backlog()
        if legacy:
            for tenant in legacy:
                scheduler.note_waiting(tenant)
            self.keys.save_backlog({})

    def worker_alive(self) -> bool:
        return self.memory.scheduler.worker_alive()

    def stop(self) -> None:
        """Hand the scheduler back to the memory (what is waiting stays in the store)."""
        self.memory.scheduler.release(self)

    def _passed(self, trigger: str) -> None:
        self.metrics.consolidations.labels(trigger).inc()

    # -- gauges -------------------------------------------------------------------------------
    def _gauges(self) -> dict[str, float]:
        stats = self.memory.store.meta.stats(None)
        backlog = self.backlog()
        path = getattr(self.memory.store, "path", "")
        return {
            "store_nodes": float(stats.nodes),
            "store_pending_nodes": float(stats.pending),
            "store_bytes": file_bytes(path) if isinstance(path, str) and path != ":memory:" else 0.0,
            "consolidation_backlog": float(sum(backlog.values())),
            "consolidation_tenants_waiting": float(len(backlog)),
        }

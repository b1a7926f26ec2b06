"""Checkpointing the WAL off the write path: a passive checkpoint on a background thread.

SQLite's automatic checkpoint runs inside the commit that takes the WAL past ``wal_autocheckpoint``
pages: that one add copies ~1,000 pages (8 MB) into the database file and syncs it, 0.1-0.75 s at
100k memories. Here the store's connection checkpoints automatically only as a backstop
(``BACKSTOP_PAGES``, for a checkpointer that cannot keep up), and a daemon thread with its own
connection runs ``PRAGMA wal_checkpoint(PASSIVE)`` after every ``EVERY`` commits. A passive
checkpoint never blocks a writer or a reader: it copies what no reader still needs and leaves the
rest for the next one.

Durability is unchanged: a commit is durable when its frames are in the WAL (``synchronous``
decides when those are synced), not when they reach the database file; the checkpointer's connection
uses the store's ``synchronous`` setting, so it syncs the WAL before copying and the file after, as
the automatic checkpoint does. Erasing (``Transactions.checkpoint``'s ``TRUNCATE``) still runs on
the store's connection and waits (busy timeout) for a passive checkpoint in progress.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["BACKSTOP_PAGES", "EVERY", "Checkpointer"]

log = logging.getLogger("dualmem")

#: commits between two background checkpoints
EVERY = 8
#: the store's own connection still checkpoints inside a commit past this many WAL pages (80 MB at 8 KiB)
BACKSTOP_PAGES = 10_000


class Checkpointer:
    """Runs passive checkpoints of ``path`` on a daemon thread, woken every ``every`` commits.

    ``committed()`` is called by the writer after each outermost commit (cheap: a counter, and an
    event set every ``every`` commits); the thread and its connection start at the first wake-up.
    ``close()`` stops the thread and closes its connection (the store's close calls it first).
    """

    def __init__(self, path: str, *, synchronous: str, timeout: float, every: int = EVERY) -> None:
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.path = path
        self.every = every
        self.checkpoints = 0  # passive checkpoints run (tests and benchmarks read it)
        self._synchronous = synchronous
        self._timeout = timeout
        self._pending = 0
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # guards start / stop
        self._done = threading.Condition()
        #: held while a checkpoint runs: ``paused()`` waits for it (a TRUNCATE cannot run beside one)
        self._running = threading.Lock()

    def committed(self) -> None:
        self._pending += 1
        if self._pending < self.every:
            return
        self._pending = 0
        with self._lock:
            if self._stop:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="dualmem-checkpoint", daemon=True)
                self._thread.start()
        self._wake.set()

    def wait_idle(self, runs: int, timeout: float = 10.0) -> bool:
        """Block until ``runs`` checkpoints have run in all (tests); False when the timeout passed first."""
        with self._done:
            return self._done.wait_for(lambda: self.checkpoints >= runs, timeout)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No background checkpoint runs inside (the store's erase truncates the WAL in one)."""
        with self._running:
            yield

    def close(self) -> None:
        with self._lock:
            self._stop = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        conn = self._connect()
        if conn is None:
            return
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stop:
                    return
                self._checkpoint(conn)
        finally:
            conn.close()

    def _connect(self) -> sqlite3.Connection | None:
        try:
            conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
            conn.execute(f"PRAGMA synchronous = {self._synchronous.upper()}")
        except sqlite3.Error as exc:  # the store's own backstop checkpoints instead
            log.warning("no background checkpoints for %s: %s", self.path, exc)
            return None
        return conn

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        with self._running:
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            except sqlite3.Error as exc:  # busy or failing: the next wake-up (or the backstop) tries again
                log.debug("background checkpoint of %s: %s", self.path, exc)
        with self._done:
            self.checkpoints += 1
            self._done.notify_all()

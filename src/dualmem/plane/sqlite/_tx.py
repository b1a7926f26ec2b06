"""Transactions of the SQLite store's one connection: writes, read snapshots, erasing on commit.

- ``write()``: ``BEGIN IMMEDIATE`` at the outermost level, a ``SAVEPOINT`` inside; any exception
  rolls back (and calls ``on_rollback``, which drops what the store cached during it); an outermost
  commit calls ``on_commit``.
- ``read()``: a read transaction (``BEGIN`` … ``COMMIT``), so several statements see one committed
  state; re-entrant, and a no-op inside a write (which already is one). A write cannot start inside.
- erasing: when a write set ``erase`` (it deleted or replaced text), ``on_erase`` (derived indexes)
  and FTS5 ``optimize`` run before ``COMMIT`` (deleted terms leave the index pages) and
  ``wal_checkpoint(TRUNCATE)`` after it (old WAL frames hold the text too). A checkpoint that
  readers block is retried at ``close()``.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from dualmem.errors import ReadOnlyStore, StoreError
from dualmem.plane.sqlite import _sql as sql

__all__ = ["Transactions"]

log = logging.getLogger("dualmem")


class Transactions:
    """Transaction state of one connection; ``lock`` serialises every use of the connection."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: str,
        *,
        read_only: bool,
        on_rollback: Callable[[], None],
        on_commit: Callable[[], None] = lambda: None,
        on_erase: Callable[[], None] = lambda: None,
    ) -> None:
        self.conn = conn
        self.path = path
        self.read_only = read_only
        self.lock = threading.RLock()
        self.erase = False  # the open write deleted text: clear FTS5 pages before COMMIT
        self._on_rollback = on_rollback
        self._on_commit = on_commit
        self._on_erase = on_erase
        self._depth = 0
        #: counts outermost write transactions: what another connection committed is checked once per write
        self.serial = 0
        self._reading = 0  # depth of read() blocks
        self._read_open = False  # read() began a read transaction (no write may start inside)
        self._wal_dirty = False  # a committed erase whose WAL could not be truncated yet
        #: held around the TRUNCATE checkpoint: keeps a background checkpoint from running beside it
        self.checkpoints_paused: Callable[[], AbstractContextManager[None]] = nullcontext

    @contextmanager
    def write(self) -> Iterator[None]:
        with self.lock:
            if self.read_only:
                raise ReadOnlyStore("this memory was opened read-only", hint="open it without read_only")
            if self._read_open:
                raise StoreError("a write cannot start inside a read snapshot")
            depth = self._depth
            savepoint = f"dualmem_sp{depth}"
            with sql.translated("begin a transaction"):
                self.conn.execute("BEGIN IMMEDIATE" if depth == 0 else f"SAVEPOINT {savepoint}")
            if depth == 0:
                self.serial += 1
            self._depth += 1
            try:
                yield
                with sql.translated("commit"):
                    if depth == 0 and self.erase:
                        self._on_erase()  # derived indexes drop what held the erased text
                        self.conn.execute("INSERT INTO nodes_fts (nodes_fts) VALUES ('optimize')")
                        self.conn.execute("INSERT INTO context_fts (context_fts) VALUES ('optimize')")
                    self.conn.execute("COMMIT" if depth == 0 else f"RELEASE {savepoint}")
            except BaseException:
                self._rollback(depth, savepoint)
                raise
            finally:
                self._depth = depth
            if depth == 0:
                self._on_commit()
            if depth == 0 and self.erase:
                self.erase = False
                self._wal_dirty = True
                self.checkpoint()

    @property
    def writing(self) -> bool:
        """A write transaction is open (on this connection)."""
        return self._depth > 0

    @property
    def reading(self) -> bool:
        """A read snapshot opened by ``read()`` is open (no write may start inside it)."""
        return self._read_open

    @contextmanager
    def read(self) -> Iterator[None]:
        with self.lock:
            if self._depth or self._reading:
                self._reading += 1
                try:
                    yield
                finally:
                    self._reading -= 1
                return
            with sql.translated("begin a read"):
                self.conn.execute("BEGIN")
            self._reading, self._read_open = 1, True
            try:
                yield
            finally:
                self._reading, self._read_open = 0, False
                if self.conn.in_transaction:
                    with sql.translated("end a read"):
                        self.conn.execute("COMMIT")

    def checkpoint(self) -> None:
        """Copy the WAL into the database and truncate it (old frames may hold erased text)."""
        try:
            with self.checkpoints_paused():
                busy = int(self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0])
        except sqlite3.Error as exc:
            log.warning("could not truncate the WAL of %s after a delete: %s", self.path, exc)
            return
        if busy:
            log.warning("readers kept the WAL of %s from being truncated; retried at close", self.path)
        else:
            self._wal_dirty = False

    def close(self) -> None:
        with self.lock:
            if self._wal_dirty:
                self.checkpoint()

    def _rollback(self, depth: int, savepoint: str) -> None:
        self._on_rollback()
        if depth == 0:
            self.erase = False
        with sql.translated("roll back"):
            if depth == 0:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
            else:
                self.conn.execute(f"ROLLBACK TO {savepoint}")
                self.conn.execute(f"RELEASE {savepoint}")

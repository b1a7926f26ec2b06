"""The embedded default store: one SQLite file (``store.SQLiteStore``) and its private modules.

What a user or a test of this backend may name is here: the store; its connection settings
(``MMAP_SIZE``, ``JOURNAL_SIZE_LIMIT``, ``Synchronous``, ``check_mmap_size``); the schema a file is
migrated to (``SCHEMA_VERSION``, the steps ``MIGRATIONS``); the WAL checkpoints' cadence
(``CHECKPOINT_EVERY`` commits, the ``BACKSTOP_PAGES`` autocheckpoint, the ``Checkpointer`` thread;
docs/storage.md); and which ``dualmem.errors`` error a ``sqlite3`` error is (``classify``).
Everything in the ``_*`` modules is the store's own (SQL, caches, the lexical index's tables, the
approximate vector index's upkeep), reached from outside only through the ``MemoryStore`` protocol
and its components (``plane/base.py``).
"""

from __future__ import annotations

from dualmem.plane.sqlite._conn import JOURNAL_SIZE_LIMIT, MMAP_SIZE, Synchronous, check_mmap_size
from dualmem.plane.sqlite._schema import MIGRATIONS, SCHEMA_VERSION
from dualmem.plane.sqlite._sql import classify
from dualmem.plane.sqlite._wal import BACKSTOP_PAGES, Checkpointer
from dualmem.plane.sqlite._wal import EVERY as CHECKPOINT_EVERY
from dualmem.plane.sqlite.store import SQLiteStore

__all__ = [
    "BACKSTOP_PAGES",
    "CHECKPOINT_EVERY",
    "JOURNAL_SIZE_LIMIT",
    "MIGRATIONS",
    "MMAP_SIZE",
    "SCHEMA_VERSION",
    "Checkpointer",
    "SQLiteStore",
    "Synchronous",
    "check_mmap_size",
    "classify",
]

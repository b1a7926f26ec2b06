"""The embedded default store: one SQLite file (``store.SQLiteStore``) and its private modules.

What a user or a test of this backend may name is here: the store, its connection settings
(``MMAP_SIZE``, ``JOURNAL_SIZE_LIMIT``, ``Synchronous``, ``check_mmap_size``) and the schema version
a file is migrated to (``SCHEMA_VERSION``). Everything in the ``_*`` modules is the store's own
(SQL, caches, the lexical index's tables, the approximate vector index's upkeep), reached by tests
only through the ``MemoryStore`` protocol and its components (``plane/base.py``).
"""

from __future__ import annotations

from dualmem.plane.sqlite._conn import JOURNAL_SIZE_LIMIT, MMAP_SIZE, Synchronous, check_mmap_size
from dualmem.plane.sqlite._schema import SCHEMA_VERSION
from dualmem.plane.sqlite.store import SQLiteStore

__all__ = [
    "JOURNAL_SIZE_LIMIT",
    "MMAP_SIZE",
    "SCHEMA_VERSION",
    "SQLiteStore",
    "Synchronous",
    "check_mmap_size",
]

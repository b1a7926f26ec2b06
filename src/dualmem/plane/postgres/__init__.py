"""The PostgreSQL store (``store.PostgresStore``, the ``[postgres]`` extra) and its private modules.

What a user or a test of this backend may name is here: the store, its defaults, the schema
version a database is migrated to (``SCHEMA_VERSION``) and the tables whose key does not lead with
the user id (``REFERENCE_TABLES``). The ``_*`` modules are the store's own (SQL, the postings of
its lexical index, vector search), reached from outside only through the ``MemoryStore`` protocol
and its components (``plane/base.py``).
"""

from __future__ import annotations

from dualmem.plane.postgres._schema import REFERENCE_TABLES, SCHEMA_VERSION
from dualmem.plane.postgres.store import DEFAULT_EF_SEARCH, DEFAULT_EXACT_BELOW, DEFAULT_SCHEMA, PostgresStore

__all__ = [
    "DEFAULT_EF_SEARCH",
    "DEFAULT_EXACT_BELOW",
    "DEFAULT_SCHEMA",
    "REFERENCE_TABLES",
    "SCHEMA_VERSION",
    "PostgresStore",
]

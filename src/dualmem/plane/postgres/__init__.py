"""The PostgreSQL store (``store.PostgresStore``, the ``[postgres]`` extra) and its private modules.

What a user or a test of this backend may name is here: the store, its defaults and the schema
version a database is migrated to (``SCHEMA_VERSION``). The ``_*`` modules are the store's own
(SQL, the postings of its lexical index, vector search), reached by tests only through the
``MemoryStore`` protocol and its components (``plane/base.py``).
"""

from __future__ import annotations

from dualmem.plane.postgres._schema import SCHEMA_VERSION
from dualmem.plane.postgres.store import DEFAULT_EF_SEARCH, DEFAULT_EXACT_BELOW, DEFAULT_SCHEMA, PostgresStore

__all__ = ["DEFAULT_EF_SEARCH", "DEFAULT_EXACT_BELOW", "DEFAULT_SCHEMA", "SCHEMA_VERSION", "PostgresStore"]

"""The SQLite schema as an ordered list of migrations, applied in one transaction each."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from dualmem.errors import ConfigError, DatabaseCorrupt
from dualmem.plane.sqlite._chunks import SCHEMA as CHUNKS_SCHEMA
from dualmem.plane.sqlite._chunks import V5
from dualmem.plane.sqlite._context import V6
from dualmem.plane.sqlite._edges import V7_EDGES, edges_table
from dualmem.plane.sqlite._impact import V8
from dualmem.plane.sqlite._impact_merge import V10
from dualmem.plane.sqlite._nodes import v11
from dualmem.plane.sqlite._rule import adopt
from dualmem.plane.sqlite._scale import V2
from dualmem.plane.sqlite._vectors import V7
from dualmem.types import utcnow

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "check_version", "migrate"]

_V1: tuple[str, ...] = (
    """CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE nodes (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        user_id TEXT NOT NULL,
        agent_id TEXT,
        run_id TEXT,
        content TEXT NOT NULL,
        at TEXT,
        at_ts REAL,
        speaker TEXT,
        source TEXT,
        session TEXT,
        turn_id TEXT,
        metadata TEXT NOT NULL,
        entities TEXT NOT NULL,
        temporal_refs TEXT NOT NULL,
        types TEXT,
        created_at TEXT NOT NULL,
        created_ts REAL NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('complete', 'pending')),
        valid_from TEXT,
        valid_to TEXT,
        derived INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX nodes_tenant ON nodes (user_id, agent_id, run_id)",
    "CREATE INDEX nodes_user_at ON nodes (user_id, at_ts)",
    "CREATE INDEX nodes_user_status ON nodes (user_id, status)",
    """CREATE TABLE vectors (
        node_id TEXT PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
        user_id TEXT NOT NULL,
        dim INTEGER NOT NULL,
        blob BLOB NOT NULL
    )""",
    "CREATE INDEX vectors_user ON vectors (user_id)",
    edges_table("edges", ("source", "target"), "TEXT", "id"),
    "CREATE INDEX edges_source ON edges (source)",
    "CREATE INDEX edges_target ON edges (target)",
    """CREATE TABLE entities (
        id INTEGER PRIMARY KEY,
        user_id TEXT NOT NULL,
        name TEXT NOT NULL,
        UNIQUE (user_id, name)
    )""",
    """CREATE TABLE node_entities (
        node_id TEXT NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
        entity_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
        PRIMARY KEY (node_id, entity_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX node_entities_entity ON node_entities (entity_id)",
    """CREATE TABLE decisions (
        seq INTEGER PRIMARY KEY,
        node_id TEXT NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
        purpose TEXT NOT NULL,
        name TEXT NOT NULL,
        key TEXT NOT NULL,
        value REAL NOT NULL,
        label TEXT,
        backend TEXT NOT NULL,
        latency_ms REAL NOT NULL,
        other_id TEXT,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX decisions_node ON decisions (node_id)",
    "CREATE INDEX decisions_other ON decisions (other_id)",
    """CREATE VIRTUAL TABLE nodes_fts USING fts5 (
        speaker, content, content='nodes', content_rowid='seq',
        tokenize='porter unicode61 remove_diacritics 2'
    )""",
    """CREATE TRIGGER nodes_fts_insert AFTER INSERT ON nodes BEGIN
        INSERT INTO nodes_fts (rowid, speaker, content) VALUES (new.seq, new.speaker, new.content);
    END""",
    """CREATE TRIGGER nodes_fts_delete AFTER DELETE ON nodes BEGIN
        INSERT INTO nodes_fts (nodes_fts, rowid, speaker, content)
            VALUES ('delete', old.seq, old.speaker, old.content);
    END""",
    """CREATE TRIGGER nodes_fts_update AFTER UPDATE OF content, speaker ON nodes BEGIN
        INSERT INTO nodes_fts (nodes_fts, rowid, speaker, content)
            VALUES ('delete', old.seq, old.speaker, old.content);
        INSERT INTO nodes_fts (rowid, speaker, content) VALUES (new.seq, new.speaker, new.content);
    END""",
)

# v2: the store enforces tenancy (an edge or a pair decision never links two users' nodes) and keeps
# idempotency keys (a retried write or a re-run ingest finds the node it already stored).
_SAME_USER = (
    "(SELECT user_id FROM nodes WHERE id = new.{a}) IS NOT (SELECT user_id FROM nodes WHERE id = new.{b})"
)
_V2: tuple[str, ...] = (
    f"""CREATE TRIGGER edges_same_user_insert BEFORE INSERT ON edges
        WHEN {_SAME_USER.format(a="source", b="target")}
        BEGIN SELECT RAISE(ABORT, 'dualmem: an edge cannot link two users'' memories'); END""",
    f"""CREATE TRIGGER edges_same_user_update BEFORE UPDATE OF source, target ON edges
        WHEN {_SAME_USER.format(a="source", b="target")}
        BEGIN SELECT RAISE(ABORT, 'dualmem: an edge cannot link two users'' memories'); END""",
    f"""CREATE TRIGGER decisions_same_user_insert BEFORE INSERT ON decisions
        WHEN new.other_id IS NOT NULL AND EXISTS (SELECT 1 FROM nodes WHERE id = new.other_id)
        AND {_SAME_USER.format(a="node_id", b="other_id")}
        BEGIN SELECT RAISE(ABORT, 'dualmem: a decision cannot link two users'' memories'); END""",
    """CREATE TABLE write_keys (
        user_id TEXT NOT NULL,
        key TEXT NOT NULL,
        node_id TEXT NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
        PRIMARY KEY (user_id, key)
    ) WITHOUT ROWID""",
    "CREATE INDEX write_keys_node ON write_keys (node_id)",
)

#: v3: session order, for ``session_neighbours`` (neighbour context of retrieval)
_V3: tuple[str, ...] = ("CREATE INDEX nodes_user_session ON nodes (user_id, session, seq)",)

#: a migration step: an SQL statement, or a function run on the connection inside the transaction
Step = str | Callable[[sqlite3.Connection], None]

#: ordered migrations: (version, steps). Append only; never edit a released one.
#: 4: entity/user counts, packed decisions, fts5vocab (``_sqlite_scale``)
#: 5: chunk vectors of long nodes (``_sqlite_chunks``)
#: 6: write-time neighbour context (``_sqlite_context``)
#: 7: per-user count of deleted/rewritten vectors, for the incremental vector cache (``_sqlite_vectors``),
#: and edges by integer node refs (``_sqlite_edges``); each applies whether or not the
#: others exist, and ``migrate`` applies every version not yet recorded (not only those above the highest)
#: 8: the impact-ordered, tenant-partitioned lexical index of large FTS5 tables (``_sqlite_impact``)
#: 10: the lexical index's per-user norms and rebuild cursors (``_sqlite_impact_merge``)
#: 11: stored neighbour lists as compact text, not JSON (``_sqlite_nodes.v11``)
#: 12: FTS5 given the lexical index rule's text (``_sqlite_lexical.adopt``: CJK bigrams); a file
#: holding CJK text keeps its index until ``dualmem reindex``
MIGRATIONS: tuple[tuple[int, tuple[Step, ...]], ...] = (
    (1, _V1),
    (2, _V2),
    (3, _V3),
    (4, (V2,)),
    (CHUNKS_SCHEMA, V5),
    (6, V6),
    (7, (*V7, *V7_EDGES)),
    (8, V8),
    (10, V10),
    (11, (v11,)),
    (12, (adopt,)),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]

_MIGRATIONS_TABLE = """CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"""


def _current_version(conn: sqlite3.Connection) -> int:
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "schema_migrations" not in names:
        if names:
            raise DatabaseCorrupt("the file is an SQLite database but not a dualmem one")
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def _applied(conn: sqlite3.Connection) -> set[int]:
    if _current_version(conn) == 0:
        return set()
    return {int(row[0]) for row in conn.execute("SELECT version FROM schema_migrations")}


def migrate(conn: sqlite3.Connection) -> int:
    """Apply every migration not yet recorded, in order (each in its own ``BEGIN IMMEDIATE``
    transaction; a version below the highest recorded one still applies when it is missing, as
    independently developed migrations may land out of order); the final version."""
    version = _current_version(conn)
    if version > SCHEMA_VERSION:
        raise ConfigError(
            f"the database has schema version {version}; this dualmem knows up to {SCHEMA_VERSION}",
            hint="upgrade dualmem to open this file",
        )
    applied = _applied(conn)
    for target, statements in MIGRATIONS:
        if target in applied:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if target in _applied(conn):  # another process migrated meanwhile
                conn.execute("COMMIT")
                continue
            conn.execute(_MIGRATIONS_TABLE)
            for step in statements:
                if isinstance(step, str):
                    conn.execute(step)
                else:
                    step(conn)
            conn.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                (target, utcnow().isoformat()),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return _current_version(conn)


def check_version(conn: sqlite3.Connection) -> int:
    """For a read-only open: the file's schema version, which must be one this dualmem reads."""
    version = _current_version(conn)
    if version == 0:
        raise ConfigError("the database is empty: there is nothing to read", hint="open it writable once")
    if version > SCHEMA_VERSION:
        raise ConfigError(
            f"the database has schema version {version}; this dualmem knows up to {SCHEMA_VERSION}",
            hint="upgrade dualmem to open this file",
        )
    missing = sorted({target for target, _ in MIGRATIONS} - _applied(conn))
    if missing:
        raise ConfigError(
            f"the database lacks schema migration(s) {missing}",
            hint="open it writable once so dualmem can migrate it",
        )
    return version

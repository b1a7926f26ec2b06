"""The PostgreSQL schema: ordered migrations, the pgvector extension, the vector column's dimension.

Every tenant-bound table's primary key and every foreign key lead with ``user_id``, so that a table
can be hash-distributed by user (Citus ``create_distributed_table(..., 'user_id')`` or native
``PARTITION BY HASH (user_id)``) with every join and cascade staying on one shard. ``meta`` and
``schema_migrations`` hold no tenant data: they are the reference tables (replicated to every node).
See ``docs/postgres.md``.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from dualmem.errors import ConfigError, DatabaseCorrupt, EmbedderMismatch
from dualmem.plane.postgres import _lexical as lexical
from dualmem.plane.postgres._context import V3
from dualmem.types import utcnow

__all__ = [
    "MIGRATIONS",
    "REFERENCE_TABLES",
    "SCHEMA_VERSION",
    "check_version",
    "fix_dimension",
    "migrate",
    "vector_dim",
]

_Conn = psycopg.Connection[tuple[Any, ...]]

#: tables without a user column: small, global, replicated when distributed
REFERENCE_TABLES = frozenset({"meta", "schema_migrations"})

# ``COLLATE "C"``: ids and names compare and sort bytewise, as in SQLite, whatever the database locale
_K = 'text COLLATE "C"'

_V1: tuple[str, ...] = (
    "CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)",
    f"""CREATE TABLE nodes (
        user_id {_K} NOT NULL,
        id {_K} NOT NULL,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        agent_id {_K},
        run_id {_K},
        content text NOT NULL,
        at text,
        at_ts double precision,
        speaker text,
        source text,
        session text,
        turn_id text,
        metadata text NOT NULL,
        entities text NOT NULL,
        temporal_refs text NOT NULL,
        types text,
        created_at text NOT NULL,
        created_ts double precision NOT NULL,
        status text NOT NULL CHECK (status IN ('complete', 'pending')),
        valid_from text,
        valid_to text,
        derived boolean NOT NULL,
        lex_len integer NOT NULL,
        PRIMARY KEY (user_id, id)
    )""",
    "CREATE INDEX nodes_id ON nodes (id)",
    "CREATE INDEX nodes_user_seq ON nodes (user_id, seq)",
    "CREATE INDEX nodes_user_at ON nodes (user_id, at_ts)",
    f"""CREATE TABLE vectors (
        user_id {_K} NOT NULL,
        node_id {_K} NOT NULL,
        seq bigint NOT NULL,
        agent_id {_K},
        run_id {_K},
        embedding vector NOT NULL,
        PRIMARY KEY (user_id, node_id),
        FOREIGN KEY (user_id, node_id) REFERENCES nodes (user_id, id) ON DELETE CASCADE
    )""",
    f"""CREATE TABLE edges (
        user_id {_K} NOT NULL,
        source {_K} NOT NULL,
        target {_K} NOT NULL,
        view {_K} NOT NULL,
        label {_K} NOT NULL,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        weight double precision NOT NULL,
        created_at text NOT NULL,
        valid_from text,
        valid_to text,
        PRIMARY KEY (user_id, source, target, view, label),
        FOREIGN KEY (user_id, source) REFERENCES nodes (user_id, id) ON DELETE CASCADE,
        FOREIGN KEY (user_id, target) REFERENCES nodes (user_id, id) ON DELETE CASCADE
    )""",
    "CREATE INDEX edges_target ON edges (user_id, target)",
    f"""CREATE TABLE node_entities (
        user_id {_K} NOT NULL,
        node_id {_K} NOT NULL,
        name {_K} NOT NULL,
        PRIMARY KEY (user_id, node_id, name),
        FOREIGN KEY (user_id, node_id) REFERENCES nodes (user_id, id) ON DELETE CASCADE
    )""",
    "CREATE INDEX node_entities_name ON node_entities (user_id, name)",
    f"""CREATE TABLE decisions (
        user_id {_K} NOT NULL,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        node_id {_K} NOT NULL,
        purpose text NOT NULL,
        name text NOT NULL,
        key text NOT NULL,
        value double precision NOT NULL,
        label text,
        backend text NOT NULL,
        latency_ms double precision NOT NULL,
        other_id {_K},
        created_at text NOT NULL,
        PRIMARY KEY (user_id, seq),
        FOREIGN KEY (user_id, node_id) REFERENCES nodes (user_id, id) ON DELETE CASCADE
    )""",
    "CREATE INDEX decisions_node ON decisions (user_id, node_id, seq)",
    "CREATE INDEX decisions_other ON decisions (user_id, other_id)",
    # lexical index: one row per (user, stemmed term, node), with what BM25 and the tenant filter need
    # (the node's order, length, agent and run), so that a search reads postings only. A derived
    # index, kept by the store: no foreign key (its row checks would dominate bulk writes).
    lexical.postings_table("postings"),
    "CREATE INDEX postings_node ON postings (user_id, node_id)",
    f"""CREATE TABLE lex_stats (
        user_id {_K} PRIMARY KEY,
        docs bigint NOT NULL,
        tokens bigint NOT NULL
    )""",
)

#: ordered migrations: (version, statements). Append only; never edit a released one.
# v2: idempotency keys of writes, removed with their node
_V2: tuple[str, ...] = (
    f"""CREATE TABLE write_keys (
        user_id {_K} NOT NULL,
        key text NOT NULL,
        node_id {_K} NOT NULL,
        PRIMARY KEY (user_id, key),
        FOREIGN KEY (user_id, node_id) REFERENCES nodes (user_id, id) ON DELETE CASCADE
    )""",
    "CREATE INDEX write_keys_node ON write_keys (user_id, node_id)",
)

# v4: chunk vectors of long nodes, one row per extra window, removed with their node; the
# column keeps no fixed dimension (the store checks it on write) and has no ANN index: searched exactly
_V4: tuple[str, ...] = (
    f"""CREATE TABLE chunk_vectors (
        user_id {_K} NOT NULL,
        node_id {_K} NOT NULL,
        part integer NOT NULL,
        seq bigint NOT NULL,
        agent_id {_K},
        run_id {_K},
        embedding vector NOT NULL,
        PRIMARY KEY (user_id, node_id, part),
        FOREIGN KEY (user_id, node_id) REFERENCES nodes (user_id, id) ON DELETE CASCADE
    )""",
)

# v3: write-time neighbour context (``_pg_context``)
# v5: the lexical index rule's marker (``_pg_lexical.V5``: CJK bigrams)
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = ((1, _V1), (2, _V2), (3, V3), (4, _V4), (5, lexical.V5))
SCHEMA_VERSION = MIGRATIONS[-1][0]

_HNSW_M = 16
_HNSW_EF_CONSTRUCTION = 64


def _lock(conn: _Conn, schema: str, what: str) -> None:
    """A transaction-scoped advisory lock: concurrent openers migrate (or fix the dimension) one at a time."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"dualmem:{schema}:{what}",))


def _ensure_extension(conn: _Conn) -> None:
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    try:
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public")
    except psycopg.errors.UniqueViolation:
        return  # another session created it meanwhile
    except (psycopg.errors.InsufficientPrivilege, psycopg.errors.FeatureNotSupported) as exc:
        raise ConfigError(
            f"the pgvector extension is not installed in this database ({exc.diag.message_primary})",
            hint="install pgvector on the server and run 'CREATE EXTENSION vector' as a superuser",
        ) from exc
    except psycopg.errors.UndefinedFile as exc:
        raise ConfigError(
            "the server has no pgvector extension", hint="install pgvector (>= 0.8) on the PostgreSQL server"
        ) from exc


def _current_version(conn: _Conn, schema: str) -> int:
    tables = {
        str(row[0])
        for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))
    }
    if "schema_migrations" not in tables:
        if tables:
            raise DatabaseCorrupt(f"schema {schema!r} holds tables but is not a dualmem schema")
        return 0
    row = conn.execute(
        sql.SQL("SELECT MAX(version) FROM {}.schema_migrations").format(sql.Identifier(schema))
    )
    found = row.fetchone()
    return int(found[0] or 0) if found else 0


def migrate(conn: _Conn, schema: str) -> int:
    """Create the schema if needed and apply pending migrations, each in its own transaction."""
    _ensure_extension(conn)
    with conn.transaction():
        _lock(conn, schema, "migrate")
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema)))
    version = _current_version(conn, schema)
    if version > SCHEMA_VERSION:
        raise ConfigError(
            f"the database has dualmem schema version {version}; this dualmem knows up to {SCHEMA_VERSION}",
            hint="upgrade dualmem to open this database",
        )
    for target, statements in MIGRATIONS:
        if target <= version:
            continue
        with conn.transaction():
            _lock(conn, schema, "migrate")
            if _current_version(conn, schema) >= target:  # another process migrated meanwhile
                continue
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version integer PRIMARY KEY, applied_at text NOT NULL)"
            )
            for statement in statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (%s, %s)",
                (target, utcnow().isoformat()),
            )
        version = target
    return version


def check_version(conn: _Conn, schema: str) -> int:
    """For a read-only open: the schema must exist at this dualmem's version (nothing is created)."""
    if not conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        raise ConfigError(
            "this database has no pgvector extension, so it holds no dualmem memory",
            hint="open it once without read_only to create the memory",
        )
    version = _current_version(conn, schema)
    if version == 0:
        raise ConfigError(
            f"schema {schema!r} holds no dualmem memory", hint="open it once without read_only to create it"
        )
    if version > SCHEMA_VERSION:
        raise ConfigError(
            f"the database has dualmem schema version {version}; this dualmem knows up to {SCHEMA_VERSION}",
            hint="upgrade dualmem to open this database",
        )
    if version < SCHEMA_VERSION:
        raise ConfigError(
            f"schema {schema!r} is at dualmem schema version {version}, "
            f"and needs migrating to {SCHEMA_VERSION}",
            hint="open it once without read_only (as a role that may write) to migrate it",
        )
    return version


def vector_dim(conn: _Conn) -> int | None:
    """The dimension the vector column is fixed to, or ``None`` while no embedder has written."""
    row = conn.execute(
        "SELECT a.atttypmod FROM pg_attribute a "
        "WHERE a.attrelid = 'vectors'::regclass AND a.attname = 'embedding'"
    ).fetchone()
    if row is None:
        raise DatabaseCorrupt("the vectors table has no embedding column")
    typmod = int(row[0])
    return typmod if typmod > 0 else None


def fix_dimension(conn: _Conn, schema: str, dim: int) -> None:
    """Fix the vector column to ``dim`` and build its HNSW (cosine) index; inside the caller's transaction.

    A no-op when already fixed to ``dim``; ``EmbedderMismatch`` when fixed to another dimension.
    """
    _lock(conn, schema, "dimension")
    current = vector_dim(conn)
    if current == dim:
        return
    if current is not None:
        raise EmbedderMismatch(
            f"embeddings of dimensions {sorted({current, dim})} cannot share one store",
            hint=f"use the embedder that built this store (dim {current})",
        )
    conn.execute(
        sql.SQL("ALTER TABLE vectors ALTER COLUMN embedding TYPE vector({})").format(sql.Literal(dim))
    )
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS vectors_hnsw ON vectors USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = {}, ef_construction = {})"
        ).format(sql.Literal(_HNSW_M), sql.Literal(_HNSW_EF_CONSTRUCTION))
    )

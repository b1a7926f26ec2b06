"""SQL helpers of the SQLite store: error translation, tenant filters, row <-> record codecs."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from dualmem.errors import (
    ConfigError,
    DatabaseCorrupt,
    DatabaseLocked,
    DualmemError,
    InvalidInput,
    ReadOnlyStore,
    StoreError,
)
from dualmem.plane import codec
from dualmem.plane.base import DECISION_FIELDS, Decision
from dualmem.text.lexical import fts_or
from dualmem.types import EDGE_FIELDS, Edge, Node, Tenant

__all__ = [
    "CHUNK",
    "DEC_COLS",
    "EDGE_COLS",
    "NODE_COLS",
    "NODE_FROM",
    "TRIGGER_PREFIX",
    "chunks",
    "classify",
    "decoding",
    "fts_top",
    "fts_top_split",
    "marks",
    "node_row",
    "tenant_of",
    "tenant_sql",
    "to_decision",
    "to_edge",
    "to_node",
    "translated",
]

CHUNK = 500
#: the message prefix of the schema's RAISE() triggers, mapped to ``InvalidInput``
TRIGGER_PREFIX = "dualmem:"
NODE_COLS = ", ".join(f"n.{column}" for column in codec.NODE_COLUMNS) + ", v.blob"
NODE_FROM = "nodes n LEFT JOIN vectors v ON v.node_id = n.id"
EDGE_COLS = ", ".join(EDGE_FIELDS)
DEC_COLS = ", ".join(DECISION_FIELDS)


_CORRUPT_CODES = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}
#: messages that mean the stored schema itself is damaged (our own SQL and FTS5 options are fixed, and
#: user text never reaches a query language, so these come only from a flipped schema byte)
_DAMAGED_SCHEMA = (
    "malformed",
    "not a database",
    "decode to UTF-8",
    "unrecognized option",
    "no such tokenizer",
    # the recorded schema version disagrees with the schema (a migration re-runs on a flipped version)
    "already exists",
    "duplicate column name",
)
_LOCK_CODES = {"SQLITE_BUSY", "SQLITE_LOCKED"}


def _code(exc: sqlite3.Error) -> str:
    """The primary result code's name (``SQLITE_BUSY`` for ``SQLITE_BUSY_SNAPSHOT``), or ``""``."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    parts = name.split("_")
    return "_".join(parts[:2]) if len(parts) >= 2 else name


def classify(what: str, exc: sqlite3.Error) -> DualmemError:
    """The dualmem error for one sqlite3 error, by result code first and message second."""
    code, text = _code(exc), str(exc)
    if code in _CORRUPT_CODES or any(mark in text for mark in _DAMAGED_SCHEMA):
        return DatabaseCorrupt(
            f"{what}: the file is damaged or not a dualmem database ({text})",
            hint="run 'dualmem check', restore a backup, or point dualmem at another file",
        )
    if code in _LOCK_CODES or "database is locked" in text or "database table is locked" in text:
        return DatabaseLocked(
            f"{what}: the database is locked by another connection",
            hint="another process is writing; retry, or raise the timeout",
        )
    if code == "SQLITE_READONLY" or "readonly database" in text:
        return ReadOnlyStore(
            f"{what}: the database is read-only", hint="open it without read_only, from a writable folder"
        )
    if code == "SQLITE_CANTOPEN" or "unable to open" in text:
        return ConfigError(f"{what}: cannot open the database file ({text})", hint="check the path")
    if code == "SQLITE_FULL" or "disk is full" in text:
        return StoreError(f"{what}: the disk is full", hint="free some space and retry")
    if "no such table" in text or "no such column" in text:
        return DatabaseCorrupt(f"{what}: the file is not a complete dualmem database ({text})")
    if code == "SQLITE_CONSTRAINT" and TRIGGER_PREFIX in text:
        return InvalidInput(f"{what}: {text.split(TRIGGER_PREFIX, 1)[1].strip()}")
    if isinstance(exc, sqlite3.ProgrammingError):
        return StoreError(f"{what}: {text}", hint="the store may be closed")
    if isinstance(exc, sqlite3.OperationalError | sqlite3.IntegrityError):
        return StoreError(f"{what}: {text}")
    if isinstance(exc, sqlite3.DatabaseError):  # DataError, InternalError, plain DatabaseError
        return DatabaseCorrupt(
            f"{what}: the file is damaged or not a dualmem database ({text})",
            hint="run 'dualmem check', restore a backup, or point dualmem at another file",
        )
    return StoreError(f"{what}: {text}")


@contextmanager
def translated(what: str) -> Iterator[None]:
    """Turn sqlite3 errors into dualmem's store errors (the only place that does)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise classify(what, exc) from exc
    except UnicodeDecodeError as exc:  # stored text that is not UTF-8: a damaged page
        raise DatabaseCorrupt(
            f"{what}: stored text does not decode as UTF-8 ({exc.reason})",
            hint="run 'dualmem check', restore a backup, or point dualmem at another file",
        ) from exc
    except UnicodeEncodeError as exc:  # sqlite3 binds str as UTF-8: a lone surrogate cannot be bound
        raise InvalidInput(
            f"{what}: the text is not valid Unicode (a lone surrogate at position {exc.start})",
            hint="pass text decoded as UTF-8",
        ) from None


@contextmanager
def decoding(what: str) -> Iterator[None]:
    """Rows that do not decode (bad JSON, timestamps, ids) mean a damaged file: ``DatabaseCorrupt``."""
    try:
        yield
    except (ValueError, TypeError, KeyError, IndexError, UnicodeDecodeError, InvalidInput) as exc:
        raise DatabaseCorrupt(
            f"{what}: a stored row does not decode ({type(exc).__name__}: {exc})",
            hint="run 'dualmem check'; restore a backup if it reports damage",
        ) from exc


def tenant_sql(tenant: Tenant | None, alias: str = "n") -> tuple[str, list[Any]]:
    if tenant is None:
        return "1", []
    parts, params = [f"{alias}.user_id = ?"], [tenant.user]
    if tenant.agent is not None:
        parts.append(f"{alias}.agent_id = ?")
        params.append(tenant.agent)
    if tenant.run is not None:
        parts.append(f"{alias}.run_id = ?")
        params.append(tenant.run)
    return " AND ".join(parts), params


def node_row(node: Node) -> tuple[Any, ...]:
    """The values of ``INSERT INTO nodes VALUES (NULL, ...)`` (``_codec.NODE_WRITE_COLUMNS``)."""
    return codec.node_values(node)


#: the ``Tenant`` of a stored row's ids, shared between rows (``_codec.tenant_of``)
tenant_of = codec.tenant_of


def to_node(row: sqlite3.Row | tuple[Any, ...]) -> Node:
    """A ``NODE_COLS`` row (the vector blob last) as its node."""
    blob = row[19]
    return codec.node_from_row(
        row[:19], None if blob is None else np.frombuffer(blob, dtype=np.float32).copy()
    )


def to_edge(row: tuple[Any, ...]) -> Edge:
    """An ``EDGE_COLS`` row (then any columns it was ordered by) as its edge; ``created_at`` is
    stored compactly (``_codec.to_stamp``)."""
    source, target, view, label, weight, created, valid_from, valid_to = row[:8]
    created_at = codec.from_stamp(str(created))
    return Edge(
        source, target, view, label, weight, created_at, codec.from_iso(valid_from), codec.from_iso(valid_to)
    )


def chunks(ids: Collection[str]) -> Iterator[list[str]]:
    items = list(dict.fromkeys(ids))
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def marks(n: int) -> str:
    return ",".join("?" * n)


def to_decision(r: tuple[Any, ...]) -> Decision:
    """A ``DEC_COLS`` row (the decisions table before schema v2) as its decision."""
    return Decision.from_json(dict(zip(DECISION_FIELDS, r, strict=True)))


#: bounded FTS5 top-k (``fts_top``): the first window holds at least FTS_FIRST rows and ``FTS_SPARE``
#: times the rows the tenant's share predicts for ``k``; each miss widens it FTS_WIDEN times; past
#: FTS_MAX_WINDOW (a tenant too small to fill ``k`` from it) the plain join runs
FTS_FIRST = 32
FTS_SPARE = 4
FTS_WIDEN = 8
FTS_MAX_WINDOW = 8192


def fts_top(
    conn: sqlite3.Connection, table: str, expression: str, k: int, where: tuple[str, list[Any]], share: float
) -> list[tuple[str, float]]:
    """BM25 top-k ``(node id, -bm25)`` of FTS5 ``table`` (rowid = ``nodes.seq``) among the nodes that
    ``where`` admits, best first, ties by ``seq``: the same rows and order as the plain join
    ``MATCH ... AND where ORDER BY -bm25 DESC, seq LIMIT k``, without joining every match to ``nodes``.

    FTS5 ranks every match (as a bare ``MATCH ... ORDER BY rank`` does) in the same total order
    (``rank, rowid``) and hands over a window of the best; only those rows are joined and filtered by
    tenant. The window is a prefix of the plain join's order, so when it yields ``k`` admitted rows (or
    held every match) they are the answer; otherwise it is widened. ``share`` (the tenant's estimated
    part of the rows) sizes the first window.
    """
    return [(node_id, -negated) for negated, _, node_id in _ranked(conn, table, expression, k, where, share)]


def fts_top_split(
    conn: sqlite3.Connection,
    table: str,
    rare: Sequence[str],
    common: Sequence[str],
    k: int,
    where: tuple[str, list[Any]],
    share: float,
) -> list[tuple[str, float]]:
    """``fts_top`` of ``rare OR common`` over the rows that hold a ``rare`` term, each scored as the
    whole OR query scores it: ``(rare) AND (common)`` and ``(rare) NOT (common)`` hold every phrase
    once, so FTS5's ``bm25()`` (idf and mean length from the whole table) gives each of their rows the
    whole query's score, while only rows holding a rare term are scored; the common terms' postings
    are merged, never ranked. Rows that hold only common terms are left out (``_sqlite_terms``)."""
    if not common:
        return fts_top(conn, table, fts_or(list(rare)), k, where, share)
    either, others = fts_or(list(rare)), fts_or(list(common))
    found = _ranked(conn, table, f"({either}) AND ({others})", k, where, share)
    found += _ranked(conn, table, f"({either}) NOT ({others})", k, where, share)
    return [(node_id, -negated) for negated, _, node_id in sorted(found)[:k]]


def _ranked(
    conn: sqlite3.Connection, table: str, expression: str, k: int, where: tuple[str, list[Any]], share: float
) -> list[tuple[float, int, str]]:
    """``fts_top``'s answer as ``(bm25, seq, node id)``, best first (bm25 is FTS5's: negative)."""
    clause, params = where
    window = max(FTS_FIRST, math.ceil(FTS_SPARE * k / max(share, 1e-9)))
    while window <= FTS_MAX_WINDOW:
        ranked = conn.execute(
            f"SELECT rowid, rank FROM {table} WHERE {table} MATCH ? ORDER BY rank, rowid LIMIT ?",
            (expression, window),
        ).fetchall()
        score = {int(seq): -float(rank) for seq, rank in ranked}
        rows = conn.execute(  # the window drives the join (by rowid), never the tenant's index
            f"SELECT n.seq, n.id FROM json_each(?) w CROSS JOIN nodes n ON n.seq = w.value WHERE {clause}",
            [json.dumps(list(score)), *params],
        ).fetchall()
        if len(rows) >= k or len(ranked) < window:
            return sorted((-score[seq], seq, node_id) for seq, node_id in rows)[:k]
        window *= FTS_WIDEN
    statement = (
        f"SELECT n.id, -bm25({table}) AS score, n.seq FROM {table} CROSS JOIN nodes n "
        f"ON n.seq = {table}.rowid WHERE {table} MATCH ? AND {clause} "
        "ORDER BY score DESC, n.seq LIMIT ?"
    )
    return [(-float(r[1]), int(r[2]), r[0]) for r in conn.execute(statement, [expression, *params, k])]

"""SQL helpers of the SQLite store: error translation, tenant filters, row <-> record codecs."""

from __future__ import annotations

import datetime as dt
import json
import math
import sqlite3
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

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
from dualmem.plane import _codec as codec
from dualmem.plane.base import Decision
from dualmem.text.lexical import fts_or
from dualmem.types import Edge, JSONValue, Node, Tenant

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
NODE_COLS = (
    "n.id, n.user_id, n.agent_id, n.run_id, n.content, n.at, n.speaker, n.source, n.session, "
    "n.turn_id, n.metadata, n.entities, n.temporal_refs, n.types, n.created_at, n.status, "
    "n.valid_from, n.valid_to, n.derived, v.blob"
)
NODE_FROM = "nodes n LEFT JOIN vectors v ON v.node_id = n.id"
EDGE_COLS = "source, target, view, label, weight, created_at, valid_from, valid_to"
DEC_COLS = "node_id, purpose, name, key, value, label, backend, latency_ms, other_id, created_at"


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
    metadata = codec.dump_json(dict(codec.check_metadata(node)))
    at_ts = None if node.at is None else codec.epoch(node.at)
    return (
        node.id, node.tenant.user, node.tenant.agent, node.tenant.run, node.content,
        codec.to_iso(node.at), at_ts, node.speaker, node.source, node.session, node.turn_id,
        metadata, codec.dump_json(list(node.entities)), codec.refs_to_json(node.temporal_refs),
        codec.types_to_json(node.types), node.created_at.isoformat(), codec.epoch(node.created_at),
        node.status, codec.to_iso(node.valid_from), codec.to_iso(node.valid_to), int(node.derived),
    )  # fmt: skip


#: decoded tenants by (user, agent, run): a read decodes hundreds of rows of the same few tenants, and
#: a ``Tenant`` validates its ids when built (immutable values: sharing them is safe)
_TENANTS: dict[tuple[str, str | None, str | None], Tenant] = {}
_TENANTS_MAX = 4096


def tenant_of(user: str, agent: str | None, run: str | None) -> Tenant:
    """The ``Tenant`` of a stored row's ids (built once per distinct triple, then shared)."""
    key = (user, agent, run)
    found = _TENANTS.get(key)
    if found is None:
        if len(_TENANTS) >= _TENANTS_MAX:
            _TENANTS.clear()
        found = _TENANTS[key] = Tenant(user, agent, run)
    return found


def _iso(text: str | None) -> dt.datetime | None:
    return None if text is None else dt.datetime.fromisoformat(text)


def to_node(row: sqlite3.Row | tuple[Any, ...]) -> Node:
    created = dt.datetime.fromisoformat(row[14])
    blob = row[19]
    return Node(
        id=row[0],
        tenant=tenant_of(row[1], row[2], row[3]),
        content=row[4],
        at=_iso(row[5]),
        speaker=row[6],
        source=row[7],
        session=row[8],
        turn_id=row[9],
        metadata={} if row[10] == "{}" else cast(dict[str, JSONValue], json.loads(row[10])),
        entities=() if row[11] == "[]" else tuple(cast(list[str], json.loads(row[11]))),
        temporal_refs=() if row[12] == "[]" else codec.refs_from_json(row[12]),
        types=None if row[13] is None else codec.types_from_json(row[13]),
        embedding=None if blob is None else np.frombuffer(blob, dtype=np.float32).copy(),
        created_at=created,
        status=row[15],
        valid_from=_iso(row[16]),
        valid_to=_iso(row[17]),
        derived=bool(row[18]),
    )


def to_edge(row: tuple[Any, ...]) -> Edge:
    created = codec.from_stamp(str(row[5]))
    return Edge(
        source=row[0], target=row[1], view=row[2], label=row[3], weight=row[4], created_at=created,
        valid_from=codec.from_iso(row[6]), valid_to=codec.from_iso(row[7]),
    )  # fmt: skip


def chunks(ids: Collection[str]) -> Iterator[list[str]]:
    items = list(dict.fromkeys(ids))
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def marks(n: int) -> str:
    return ",".join("?" * n)


def to_decision(r: tuple[Any, ...]) -> Decision:
    return Decision(
        node_id=r[0], purpose=r[1], name=r[2], key=r[3], value=r[4], label=r[5], backend=r[6],
        latency_ms=r[7], other_id=r[8], created_at=dt.datetime.fromisoformat(r[9]),
    )  # fmt: skip


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

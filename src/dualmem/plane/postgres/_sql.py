"""SQL helpers of the PostgreSQL store: error translation, NUL-safe text, rows, BM25 over postings."""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import psycopg
import psycopg_pool
from psycopg import sql
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format

from dualmem.errors import DatabaseCorrupt, DatabaseLocked, InvalidInput, ReadOnlyStore, StoreError
from dualmem.plane import codec
from dualmem.plane.base import DECISION_FIELDS, Decision
from dualmem.types import EDGE_FIELDS, Edge, Node, Tenant

__all__ = [
    "DEC_COLS",
    "EDGES_OF",
    "EDGES_OF_STRONGEST",
    "EDGE_COLS",
    "INSERT_NODE",
    "NODE_COLS",
    "NODE_FROM",
    "UPDATE_NODE",
    "UPSERT_EDGE",
    "dec",
    "decision_row",
    "edge_row",
    "enc",
    "node_row",
    "register_vector",
    "tenant_sql",
    "to_decision",
    "to_edge",
    "to_node",
    "translated",
    "update_args",
]

NODE_COLS = ", ".join(f"n.{column}" for column in codec.NODE_COLUMNS) + ", v.embedding"
NODE_FROM = "nodes n LEFT JOIN vectors v ON v.user_id = n.user_id AND v.node_id = n.id"
EDGE_COLS = ", ".join(EDGE_FIELDS)
DEC_COLS = ", ".join(DECISION_FIELDS)
#: the columns ``node_row`` writes: the shared ones (``_codec.NODE_WRITE_COLUMNS``) and the BM25 length
_WRITTEN = (*codec.NODE_WRITE_COLUMNS, "lex_len")
INSERT_NODE = f"INSERT INTO nodes ({', '.join(_WRITTEN)}) VALUES ({', '.join(['%s'] * len(_WRITTEN))})"
#: what an update rewrites: every written column but the keys and the creation time
_UPDATED = [
    c for c in _WRITTEN if c not in ("id", "user_id", "agent_id", "run_id", "created_at", "created_ts")
]
UPDATE_NODE = f"UPDATE nodes SET {', '.join(f'{c} = %s' for c in _UPDATED)} WHERE user_id = %s AND id = %s"
UPSERT_EDGE = (
    f"INSERT INTO edges (user_id, {EDGE_COLS}) VALUES ({', '.join(['%s'] * 9)}) "
    "ON CONFLICT (user_id, source, target, view, label) DO UPDATE SET weight = excluded.weight, "
    "created_at = excluded.created_at, valid_from = excluded.valid_from, valid_to = excluded.valid_to"
)
EDGES_OF = (
    f"SELECT {EDGE_COLS} FROM edges WHERE user_id = (SELECT user_id FROM nodes WHERE id = %s) "
    "AND (source = %s OR target = %s) AND view = ANY(%s) ORDER BY seq"
)
#: ``EDGES_OF`` with a limit: the strongest first, ties in write order
EDGES_OF_STRONGEST = (
    f"SELECT {EDGE_COLS} FROM edges WHERE user_id = (SELECT user_id FROM nodes WHERE id = %s) "
    "AND (source = %s OR target = %s) AND view = ANY(%s) ORDER BY weight DESC, seq LIMIT %s"
)

_LOCKED = (
    psycopg.errors.LockNotAvailable,
    psycopg.errors.DeadlockDetected,
    psycopg.errors.SerializationFailure,
    psycopg.errors.QueryCanceled,
)
_MISSING = (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn, psycopg.errors.UndefinedObject)


@contextmanager
def translated(what: str) -> Iterator[None]:
    """Turn psycopg errors into dualmem's store errors (the only place that does)."""
    try:
        yield
    except _LOCKED as exc:
        raise DatabaseLocked(
            f"{what}: the database is busy ({exc.diag.message_primary or exc})",
            hint="another session holds a lock; retry, or raise the timeout",
        ) from exc
    except psycopg.errors.ReadOnlySqlTransaction as exc:  # a read-only open, role default or standby
        raise ReadOnlyStore(
            f"{what}: the database accepts only reads here ({exc.diag.message_primary or exc})",
            hint="open the memory without read_only, as a role that may write, on the primary server",
        ) from exc
    except _MISSING as exc:
        raise DatabaseCorrupt(f"{what}: the schema is not a complete dualmem one ({exc})") from exc
    except psycopg.DataError as exc:
        raise InvalidInput(f"{what}: the database refused a value ({exc})") from exc
    except psycopg_pool.PoolTimeout as exc:
        raise DatabaseLocked(
            f"{what}: no database connection became free in time",
            hint="the server is busy or unreachable; retry, or raise the timeout or pool size",
        ) from exc
    except psycopg.OperationalError as exc:
        raise StoreError(f"{what}: {exc}", hint="is the PostgreSQL server running and reachable?") from exc
    except psycopg.Error as exc:
        raise StoreError(f"{what}: {exc}") from exc


# -- NUL-safe text: PostgreSQL text cannot hold U+0000; \x01 escapes itself and NUL ----------

_ESCAPED = re.compile("\x01([\x010])")


def enc(text: str | None) -> str | None:
    if text is None or ("\x00" not in text and "\x01" not in text):
        return text
    return text.replace("\x01", "\x01\x01").replace("\x00", "\x010")


def dec(text: str | None) -> str | None:
    if text is None or "\x01" not in text:
        return text
    return _ESCAPED.sub(lambda m: "\x01" if m.group(1) == "\x01" else "\x00", text)


def _dec(text: str) -> str:
    return cast(str, dec(text))


# -- pgvector's ``vector`` <-> float32 numpy arrays (binary: 2-byte dim, 2 unused, big-endian float4) --

_BIG_F4 = np.dtype(">f4")


class _VectorLoader(Loader):
    def load(self, data: bytes | bytearray | memoryview) -> npt.NDArray[np.float32]:
        text = bytes(data).decode("ascii")
        return np.array(text[1:-1].split(","), dtype=np.float32)


class _VectorBinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data: bytes | bytearray | memoryview) -> npt.NDArray[np.float32]:
        return np.frombuffer(bytes(data), dtype=_BIG_F4, offset=4).astype(np.float32)


class _VectorBinaryDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        vec = np.asarray(obj, dtype=np.float32).reshape(-1)
        return struct.pack(">HH", vec.shape[0], 0) + vec.astype(_BIG_F4).tobytes()


def register_vector(conn: psycopg.Connection[Any], oid: int) -> None:
    """Adapt numpy arrays to ``vector`` parameters and ``vector`` results to float32 arrays."""
    dumper = type("VectorDumper", (_VectorBinaryDumper,), {"oid": oid})
    conn.adapters.register_dumper(np.ndarray, dumper)
    conn.adapters.register_loader(oid, _VectorLoader)
    conn.adapters.register_loader(oid, _VectorBinaryLoader)


# -- rows --------------------------------------------------------------------------------------


_TEXT_AT = frozenset(i for i, c in enumerate(codec.NODE_WRITE_COLUMNS) if c in codec.NODE_TEXT_COLUMNS)


def node_row(node: Node, lex_len: int) -> tuple[Any, ...]:
    """The values of ``INSERT_NODE``: the shared row (``_codec.node_values``) with its text escaped
    (``enc``), ``derived`` as a boolean, and the BM25 length."""
    values = codec.node_values(node)
    return (
        *(enc(v) if i in _TEXT_AT else v for i, v in enumerate(values[:-1])),
        bool(values[-1]),
        lex_len,
    )


def update_args(row: Sequence[Any]) -> tuple[Any, ...]:
    """``UPDATE_NODE``'s values from a ``node_row``: the updated columns, then the key (user, id)."""
    by_column = dict(zip(_WRITTEN, row, strict=True))
    return (*(by_column[c] for c in _UPDATED), by_column["user_id"], by_column["id"])


def to_node(row: Sequence[Any]) -> Node:
    """A ``NODE_COLS`` row (the vector last) as its node."""
    vector = row[19]
    embedding = None if vector is None else np.asarray(vector, dtype=np.float32).copy()
    return codec.node_from_row(row[:19], embedding, text=dec)


def edge_row(user: str, e: Edge) -> tuple[Any, ...]:
    return (
        enc(user), enc(e.source), enc(e.target), e.view, enc(e.label), float(e.weight),
        e.created_at.isoformat(), codec.to_iso(e.valid_from), codec.to_iso(e.valid_to),
    )  # fmt: skip


def _decoded(fields: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    return {
        name: dec(value) if isinstance(value, str) else value for name, value in zip(fields, row, strict=True)
    }


def to_edge(row: Sequence[Any]) -> Edge:
    """An ``EDGE_COLS`` row as its edge."""
    return Edge.from_json(_decoded(EDGE_FIELDS, row))


def decision_row(user: str, d: Decision) -> tuple[Any, ...]:
    """``INSERT INTO decisions (user_id, DEC_COLS)``'s values: the user, then ``Decision.to_json``'s."""
    values = {**d.to_json(), "value": float(d.value), "latency_ms": float(d.latency_ms)}
    return (enc(user), *(enc(v) if isinstance(v, str) else v for v in values.values()))


def to_decision(r: Sequence[Any]) -> Decision:
    """A ``DEC_COLS`` row as its decision."""
    return Decision.from_json(_decoded(DECISION_FIELDS, r))


def tenant_sql(tenant: Tenant | None, alias: str = "n") -> tuple[sql.Composed, list[Any]]:
    """A WHERE fragment (``TRUE`` for every tenant) and its parameters."""
    if tenant is None:
        return sql.Composed([sql.SQL("TRUE")]), []
    table = sql.Identifier(alias)
    parts: list[sql.Composable] = [sql.SQL("{}.user_id = %s").format(table)]
    params: list[Any] = [enc(tenant.user)]
    for column, value in (("agent_id", tenant.agent), ("run_id", tenant.run)):
        if value is not None:
            parts.append(sql.SQL("{}.{} = %s").format(table, sql.Identifier(column)))
            params.append(enc(value))
    return sql.SQL(" AND ").join(parts), params

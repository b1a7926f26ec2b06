"""SQL helpers of the PostgreSQL store: error translation, NUL-safe text, rows, BM25 over postings."""

from __future__ import annotations

import datetime as dt
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
from dualmem.plane import _codec as codec
from dualmem.plane.base import Decision
from dualmem.types import Edge, JSONValue, Node, Tenant

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
    "edge_row",
    "enc",
    "node_row",
    "register_vector",
    "tenant_sql",
    "to_decision",
    "to_edge",
    "to_node",
    "translated",
]

NODE_COLS = (
    "n.id, n.user_id, n.agent_id, n.run_id, n.content, n.at, n.speaker, n.source, n.session, "
    "n.turn_id, n.metadata, n.entities, n.temporal_refs, n.types, n.created_at, n.status, "
    "n.valid_from, n.valid_to, n.derived, v.embedding"
)
NODE_FROM = "nodes n LEFT JOIN vectors v ON v.user_id = n.user_id AND v.node_id = n.id"
EDGE_COLS = "source, target, view, label, weight, created_at, valid_from, valid_to"
DEC_COLS = "node_id, purpose, name, key, value, label, backend, latency_ms, other_id, created_at"
INSERT_NODE = (
    "INSERT INTO nodes (id, user_id, agent_id, run_id, content, at, at_ts, speaker, source, session, "
    "turn_id, metadata, entities, temporal_refs, types, created_at, created_ts, status, valid_from, "
    "valid_to, derived, lex_len) VALUES (" + ", ".join(["%s"] * 22) + ")"
)

UPDATE_NODE = (
    "UPDATE nodes SET content = %s, at = %s, at_ts = %s, speaker = %s, source = %s, session = %s, "
    "turn_id = %s, metadata = %s, entities = %s, temporal_refs = %s, types = %s, status = %s, "
    "valid_from = %s, valid_to = %s, derived = %s, lex_len = %s WHERE user_id = %s AND id = %s"
)
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


def node_row(node: Node, lex_len: int) -> tuple[Any, ...]:
    metadata = codec.dump_json(dict(codec.check_metadata(node)))
    at_ts = None if node.at is None else codec.epoch(node.at)
    return (
        enc(node.id), enc(node.tenant.user), enc(node.tenant.agent), enc(node.tenant.run), enc(node.content),
        codec.to_iso(node.at), at_ts, enc(node.speaker), enc(node.source), enc(node.session),
        enc(node.turn_id), metadata, codec.dump_json(list(node.entities)),
        codec.refs_to_json(node.temporal_refs), codec.types_to_json(node.types), node.created_at.isoformat(),
        codec.epoch(node.created_at), node.status, codec.to_iso(node.valid_from), codec.to_iso(node.valid_to),
        bool(node.derived), lex_len,
    )  # fmt: skip


def to_node(row: Sequence[Any]) -> Node:
    created = codec.from_iso(row[14])
    assert created is not None
    vector = row[19]
    return Node(
        id=_dec(row[0]),
        tenant=Tenant(_dec(row[1]), dec(row[2]), dec(row[3])),
        content=_dec(row[4]),
        at=codec.from_iso(row[5]),
        speaker=dec(row[6]),
        source=dec(row[7]),
        session=dec(row[8]),
        turn_id=dec(row[9]),
        metadata=cast(dict[str, JSONValue], codec.load_json(row[10])),
        entities=tuple(cast(list[str], codec.load_json(row[11]))),
        temporal_refs=codec.refs_from_json(row[12]),
        types=codec.types_from_json(row[13]),
        embedding=None if vector is None else np.asarray(vector, dtype=np.float32).copy(),
        created_at=created,
        status=row[15],
        valid_from=codec.from_iso(row[16]),
        valid_to=codec.from_iso(row[17]),
        derived=bool(row[18]),
    )


def edge_row(user: str, e: Edge) -> tuple[Any, ...]:
    return (
        enc(user), enc(e.source), enc(e.target), e.view, enc(e.label), float(e.weight),
        e.created_at.isoformat(), codec.to_iso(e.valid_from), codec.to_iso(e.valid_to),
    )  # fmt: skip


def to_edge(row: Sequence[Any]) -> Edge:
    created = codec.from_iso(row[5])
    assert created is not None
    return Edge(
        source=_dec(row[0]), target=_dec(row[1]), view=row[2], label=_dec(row[3]), weight=row[4],
        created_at=created, valid_from=codec.from_iso(row[6]), valid_to=codec.from_iso(row[7]),
    )  # fmt: skip


def to_decision(r: Sequence[Any]) -> Decision:
    return Decision(
        node_id=_dec(r[0]), purpose=_dec(r[1]), name=_dec(r[2]), key=_dec(r[3]), value=r[4], label=dec(r[5]),
        backend=_dec(r[6]), latency_ms=r[7], other_id=dec(r[8]), created_at=dt.datetime.fromisoformat(r[9]),
    )  # fmt: skip


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

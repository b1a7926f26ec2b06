"""Helpers shared by the store backends: JSON columns, timestamps, vectors, FTS5 query phrases.

Private to ``dualmem.plane``; nothing outside the package imports this module.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from dualmem.errors import EmbedderMismatch, InvalidInput
from dualmem.plane import lexindex
from dualmem.types import NODE_FIELDS, JSONValue, Node, TemporalRef, Tenant, TypeScores, Vector

__all__ = [
    "BM25_B",
    "BM25_K1",
    "NODE_COLUMNS",
    "NODE_TEXT",
    "NODE_TEXT_COLUMNS",
    "NODE_WRITE_COLUMNS",
    "QUERY_COMMON_SHARE",
    "QUERY_MAX_TERMS",
    "QUERY_MIN_DOCS",
    "QUERY_OR_TERMS",
    "QUERY_POSTINGS",
    "as_vector",
    "bm25_idf",
    "check_embedder",
    "check_metadata",
    "dump_json",
    "entity_key",
    "epoch",
    "from_iso",
    "from_stamp",
    "load_json",
    "node_from_row",
    "node_values",
    "refs_from_json",
    "refs_to_json",
    "tenant_of",
    "to_iso",
    "to_stamp",
    "types_from_json",
    "types_to_json",
]

#: lexical query-term selection (docs/decisions/002 and 008): at most QUERY_MAX_TERMS distinct
#: content tokens are considered; once the index holds QUERY_MIN_DOCS rows, a term in more than
#: QUERY_COMMON_SHARE of them is dropped (unless every term is that common) and at most
#: QUERY_OR_TERMS of the rarest are OR-ed, the rows of the rarest whose document frequencies sum to
#: at most QUERY_POSTINGS ranked (``_sqlite_terms``)
QUERY_MAX_TERMS = 32
QUERY_OR_TERMS = 12
QUERY_COMMON_SHARE = 0.2
QUERY_MIN_DOCS = 2000
QUERY_POSTINGS = 20_000

#: FTS5's ``bm25()`` defaults (``lexindex``: the one BM25 of every store)
BM25_K1 = lexindex.K1
BM25_B = lexindex.B


def dump_json(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, sort_keys=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"value is not JSON-serialisable: {exc}") from exc


def load_json(text: str | None) -> JSONValue:
    if text is None:
        return None
    return cast(JSONValue, json.loads(text))


def epoch(value: dt.datetime) -> float:
    """Seconds since the epoch; a naive datetime is taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.timestamp()


def to_iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat()


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def to_stamp(value: dt.datetime) -> str:
    """A compact, exact text of ``value`` for a column written once per row (to save disk per
    memory): a UTC datetime as its microseconds since the epoch (16 digits instead of a 32-character
    ISO text), any other (another offset, or naive) as ISO, so reading it back gives an equal
    datetime with the same ``tzinfo``. ``from_stamp`` reads both forms (older rows are ISO)."""
    if value.tzinfo is dt.UTC:
        return str((value - _EPOCH) // dt.timedelta(microseconds=1))
    return value.isoformat()


def from_stamp(text: str) -> dt.datetime:
    """The datetime ``to_stamp`` wrote (or an ISO text)."""
    if text.isdigit() or (text[:1] == "-" and text[1:].isdigit()):
        return _EPOCH + dt.timedelta(microseconds=int(text))
    return dt.datetime.fromisoformat(text)


def from_iso(text: str | None) -> dt.datetime | None:
    return None if text is None else dt.datetime.fromisoformat(text)


def refs_to_json(refs: Sequence[TemporalRef]) -> str:
    return dump_json([ref.to_json() for ref in refs])


def refs_from_json(text: str) -> tuple[TemporalRef, ...]:
    raw = cast(list[dict[str, str]], json.loads(text))
    return tuple(
        TemporalRef(
            expression=item["expression"],
            start=dt.date.fromisoformat(item["start"]),
            end=dt.date.fromisoformat(item["end"]),
            precision=item["precision"],  # type: ignore[arg-type]
        )
        for item in raw
    )


def types_to_json(types: TypeScores | None) -> str | None:
    return None if types is None else dump_json(types.to_json())


def types_from_json(text: str | None) -> TypeScores | None:
    if text is None:
        return None
    raw = cast(dict[str, float], json.loads(text))
    return TypeScores(**raw)


def as_vector(node: Node) -> Vector:
    """The node's embedding as a 1-D float32 array; raises ``InvalidInput`` when missing or bad."""
    if node.embedding is None:
        raise InvalidInput(f"node {node.id} has no embedding", hint="embed the content before storing it")
    vec = np.asarray(node.embedding, dtype=np.float32)
    if vec.ndim != 1 or vec.size == 0:
        raise InvalidInput(f"node {node.id}: embedding must be a non-empty 1-D vector")
    if not bool(np.all(np.isfinite(vec))):
        raise InvalidInput(f"node {node.id}: embedding has NaN or infinite values")
    return vec


def check_metadata(node: Node) -> Mapping[str, JSONValue]:
    if not isinstance(node.metadata, Mapping):
        raise InvalidInput(f"node {node.id}: metadata must be a mapping")
    return node.metadata


def entity_key(name: str) -> str:
    """Entities match case-insensitively: the key stored in the entity index."""
    return " ".join(name.casefold().split())


bm25_idf = lexindex.idf


def check_embedder(bound: JSONValue, name: str, dim: int) -> None:
    """Raise ``EmbedderMismatch`` unless ``bound`` (the stored record) names ``name`` and ``dim``."""
    info = bound if isinstance(bound, dict) else {}
    if info.get("name") == name and info.get("dim") == dim:
        return
    got, got_dim = info.get("name"), info.get("dim")
    raise EmbedderMismatch(
        f"this store was built with embedder {got!r} (dim {got_dim}), not {name!r} (dim {dim})",
        hint=f"open it with the embedder {got!r}, or use a new database file",
    )


# -- nodes as SQL rows (both stores): derived from ``Node.to_json`` / ``NODE_FIELDS`` -----------------

_COLUMN = {"user": "user_id", "agent": "agent_id", "run": "run_id"}
#: the ``nodes`` columns a read selects, one a field of ``NODE_FIELDS``, in its order
NODE_COLUMNS: tuple[str, ...] = tuple(_COLUMN.get(name, name) for name in NODE_FIELDS)
#: the columns a write stores, in order: ``NODE_COLUMNS`` with the epoch seconds of ``at`` and
#: ``created_at`` (``at_ts``, ``created_ts``: what time order and time search read) after each
NODE_WRITE_COLUMNS: tuple[str, ...] = tuple(
    part
    for column in NODE_COLUMNS
    for part in (column, *{"at": ("at_ts",), "created_at": ("created_ts",)}.get(column, ()))
)
#: the fields held as plain text (PostgreSQL escapes NUL in them), the others are JSON, times or flags
NODE_TEXT = frozenset({"id", "user", "agent", "run", "content", "speaker", "source", "session", "turn_id"})
NODE_TEXT_COLUMNS = frozenset(_COLUMN.get(name, name) for name in NODE_TEXT)
_NODE_JSON = ("metadata", "entities", "temporal_refs", "types")


def node_values(node: Node) -> tuple[Any, ...]:
    """The values a store writes for ``node``, in ``NODE_WRITE_COLUMNS`` order: :meth:`Node.to_json`'s
    with the JSON fields as text (``types`` stays NULL until typed), ``derived`` as 0/1 and the epochs."""
    check_metadata(node)
    data: dict[str, Any] = node.to_json()
    for name in _NODE_JSON:
        if data[name] is not None:
            data[name] = dump_json(data[name])
    data["derived"] = int(node.derived)
    data["at_ts"] = None if node.at is None else epoch(node.at)
    data["created_ts"] = epoch(node.created_at)
    return tuple(
        data[name]
        for name in (*NODE_FIELDS[:6], "at_ts", *NODE_FIELDS[6:15], "created_ts", *NODE_FIELDS[15:])
    )


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


def node_from_row(
    row: Sequence[Any], embedding: Vector | None, text: Callable[[Any], Any] | None = None
) -> Node:
    """The node of a row in ``NODE_COLUMNS`` order (``node_values`` read back; :meth:`Node.from_json`
    on the row with its JSON text parsed); ``text`` decodes the text columns (PostgreSQL's NUL escape)."""
    data = dict(zip(NODE_FIELDS, row, strict=True))
    if text is not None:
        for name in NODE_TEXT:
            data[name] = text(data[name])
    metadata, entities, refs, types = data["metadata"], data["entities"], data["temporal_refs"], data["types"]
    data["metadata"] = {} if metadata == "{}" else json.loads(metadata)  # the common empty ones: no parse
    data["entities"] = () if entities == "[]" else json.loads(entities)
    data["temporal_refs"] = () if refs == "[]" else json.loads(refs)
    data["types"] = None if types is None else json.loads(types)
    return Node.from_json(
        data, embedding=embedding, tenant=tenant_of(data["user"], data["agent"], data["run"])
    )

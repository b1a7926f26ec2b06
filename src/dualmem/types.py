"""Plain data of the memory plane (paper eq. 4-6): observations, canonical nodes, typed edges.

Frozen dataclasses; no I/O here. Times are timezone-aware ``datetime`` in UTC (naive input is taken
as UTC by the constructors in ``dualmem.text.timeparse``).
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import threading
import unicodedata
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast, get_args

import numpy as np
import numpy.typing as npt

from dualmem.errors import InvalidInput, TenantRequired

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "EDGE_FIELDS",
    "EDGE_LABELS",
    "MAX_JSON_DEPTH",
    "MAX_K",
    "MAX_NODE_ID_CHARS",
    "NODE_FIELDS",
    "VIEWS",
    "Edge",
    "Evidence",
    "JSONValue",
    "Node",
    "NodeStatus",
    "Observation",
    "Precision",
    "TemporalRef",
    "Tenant",
    "TypeScores",
    "Vector",
    "View",
    "check_json",
    "check_node_id",
    "check_text",
    "fields_json",
    "from_iso",
    "memory_object",
    "new_id",
    "normal_tenant_id",
    "tenant_id_pattern",
    "utcnow",
]

JSONValue: TypeAlias = "str | int | float | bool | list[JSONValue] | dict[str, JSONValue] | None"
Vector: TypeAlias = npt.NDArray[np.float32]

View = Literal["semantic", "temporal", "causal", "entity"]
VIEWS: tuple[View, ...] = get_args(View)

#: labels allowed within each view. Directed labels read "source LABEL target".
EDGE_LABELS: Mapping[View, frozenset[str]] = {
    "semantic": frozenset({"related", "merge", "promote", "derived_from"}),
    "temporal": frozenset(
        {"before", "during", "contains", "overlaps", "same_time", "same_episode", "superseded_by"}
    ),
    "causal": frozenset({"causes"}),
    "entity": frozenset({"shared_entity", "alias"}),
}

Precision = Literal["day", "week", "month", "year"]
NodeStatus = Literal["complete", "pending"]


#: how deeply metadata may nest (JSON encoders and decoders recurse)
MAX_JSON_DEPTH = 64

#: the most evidence one search or answer may ask for, the same in every adapter (HTTP, MCP, client, CLI)
MAX_K = 100


def check_text(value: str, what: str) -> None:
    """``InvalidInput`` unless ``value`` is text UTF-8 can store (no lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{what} is not valid Unicode text (a lone surrogate at position {exc.start})",
            hint="pass text decoded as UTF-8; replace or drop undecodable characters",
        ) from None


def check_json(value: object, what: str) -> None:
    """``InvalidInput`` unless ``value`` is JSON made of str keys, text, finite numbers, bools,
    ``None``, lists and mappings, nested at most ``MAX_JSON_DEPTH`` deep. Iterative: no recursion."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise InvalidInput(f"{what} nests deeper than {MAX_JSON_DEPTH} levels")
        stack.extend((inner, depth + 1) for inner in _json_children(item, what))


def _json_children(item: object, what: str) -> Iterable[object]:
    """What ``item`` holds (a list's items, a mapping's values), once ``item`` itself is checked."""
    if isinstance(item, str):
        check_text(item, what)
    elif isinstance(item, float):
        if not math.isfinite(item):
            raise InvalidInput(f"{what} holds a number JSON cannot store ({item!r})")
    elif isinstance(item, Mapping):
        for key in item:
            if not isinstance(key, str):
                raise InvalidInput(f"{what} has a key that is not a string ({type(key).__name__})")
            check_text(key, what)
        return item.values()
    elif isinstance(item, list | tuple):
        return item
    elif item is not None and not isinstance(item, bool | int):
        raise InvalidInput(f"{what} holds a {type(item).__name__}, which JSON cannot store")
    return ()


def fields_json(obj: DataclassInstance, **converted: Any) -> dict[str, Any]:
    """Every field of the dataclass ``obj`` by name, in declaration order: the value given in
    ``converted`` for a field named there (a copy, a rounding), else the field's own value."""
    return {f.name: converted[f.name] if f.name in converted else getattr(obj, f.name) for f in fields(obj)}


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


_ID_LOCK = threading.Lock()
_last_id: list[int] = [0, 0]  # the last id's (milliseconds, random part) in this process
_RAND_MAX = 16**12 - 1


def new_id() -> str:
    """A time-sortable, random node id: 12 hex digits of milliseconds + 12 random hex digits.

    Monotonic within a process (as ULIDs are): an id made in the same millisecond as the one
    before takes that one's random part plus one, so ids sort in the order they were made and a
    batch write (``add_many``) orders its nodes as one-by-one writes do (ties in a ranking are
    broken by id)."""
    ms = int(utcnow().timestamp() * 1000)
    with _ID_LOCK:
        last_ms, last_rand = _last_id
        if ms <= last_ms:
            ms, rand = last_ms, last_rand + 1
            if rand > _RAND_MAX:
                ms, rand = ms + 1, int(uuid.uuid4().hex[:12], 16) >> 4
        else:
            rand = int(uuid.uuid4().hex[:12], 16) >> 4  # leaves room to count up in one millisecond
        _last_id[:] = [ms, rand]
    return f"{ms:012x}{rand:012x}"


#: default-ignorable code points that are not control or format characters (Unicode
#: DerivedCoreProperties): they render as nothing, so an id holding one looks like one without it
_IGNORABLE = frozenset(
    (0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0, *range(0x180B, 0x1810), *range(0xFE00, 0xFE10))
) | frozenset(range(0xE0100, 0xE01F0))


def _invisible(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") or ord(char) in _IGNORABLE


def normal_tenant_id(value: str) -> str:
    """``value`` as a tenant id: Unicode NFKC, without invisible characters (controls, format
    characters such as U+200B ZERO WIDTH SPACE, the other default-ignorable code points), trimmed.
    "ａlice" (fullwidth), "alice ", "alice\u200b" and "alice" are one id, "alice" (see :class:`Tenant`).
    Empty when nothing visible is left."""
    if value.isascii() and value.isprintable() and value == value.strip():
        return value  # the usual id: already normal (ASCII is NFKC; no control, no surrounding space)
    visible = "".join(c for c in unicodedata.normalize("NFKC", value) if not _invisible(c))
    return unicodedata.normalize("NFKC", visible).strip()


#: the longest memory id accepted from outside (an import): dualmem makes 24 hex digits
MAX_NODE_ID_CHARS = 128


def check_node_id(value: object, what: str = "id") -> str:
    """``value`` if it has the form of a memory id, else ``InvalidInput``.

    The rule (docs/storage.md): a string of 1 to ``MAX_NODE_ID_CHARS`` (128) characters with no
    whitespace, no control, format, surrogate or other invisible character (what
    :func:`normal_tenant_id` drops), no path separator ("/", "\\"), and neither "." nor "..".
    Every id dualmem makes (:func:`new_id`, 24 lowercase hex digits) follows it; an id that breaks it
    could not be typed, read or forgotten back (an empty one never)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, got {type(value).__name__}")
    shown = repr(value if len(value) <= 40 else f"{value[:40]}...")
    rule = (
        f"a memory id is 1-{MAX_NODE_ID_CHARS} characters without spaces, control characters, "
        "'/' or '\\' (dualmem makes 24 hex digits)"
    )
    if not value:
        raise InvalidInput(f"{what} is empty: {rule}")
    if len(value) > MAX_NODE_ID_CHARS:
        raise InvalidInput(f"{what} {shown} is {len(value):,} characters long: {rule}")
    if value in (".", "..") or any(
        c in "/\\" or c.isspace() or _invisible(c) or unicodedata.category(c) == "Cs" for c in value
    ):
        raise InvalidInput(f"{what} {shown} is not a memory id: {rule}")
    return value


@functools.cache
def tenant_id_pattern() -> str:
    """A regular expression (JSON Schema's dialect) that matches exactly the ids :class:`Tenant`
    accepts: one character, at least, that :func:`normal_tenant_id` keeps. Built on first use from
    this Python's Unicode tables (a scan of every code point, ~0.5 s) and kept."""
    blank = [c for c in range(0x110000) if not normal_tenant_id(chr(c))]
    spans: list[list[int]] = []
    for c in blank:
        if spans and spans[-1][1] == c - 1:
            spans[-1][1] = c
        else:
            spans.append([c, c])

    def char(c: int) -> str:  # astral characters literally: the dialect has no \u{...}
        return f"\\u{c:04x}" if c <= 0xFFFF else chr(c)

    return "[^" + "".join(char(a) if a == b else f"{char(a)}-{char(b)}" for a, b in spans) + "]"


@dataclass(frozen=True, slots=True)
class Tenant:
    """Who a memory belongs to. ``user`` is required; ``agent`` and ``run`` narrow the scope.

    A write stores all three. A read with ``agent``/``run`` set to ``None`` sees every agent/run of
    the user; set, it sees only that agent/run. Different users never see each other's memories.

    Each id is normalised when the tenant is made (:func:`normal_tenant_id`): Unicode NFKC, invisible
    characters removed, trimmed. So "ａlice" (fullwidth), "alice ", "alice\u200b" and "alice" are the
    same tenant, "alice", wherever the id came from (Python, CLI, HTTP keys, MCP); an id already
    normal is kept as it is. An id with nothing visible left is refused.
    """

    user: str
    agent: str | None = None
    run: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.user, str) or not self.user.strip():
            raise TenantRequired("a user id is required", hint="pass user='...' (a non-empty string)")
        for name in ("agent", "run"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InvalidInput(f"{name} must be a non-empty string or None")
        for name in ("user", "agent", "run"):
            value = getattr(self, name)
            if value is None:
                continue
            check_text(value, "a tenant id")
            normal = normal_tenant_id(value)
            if not normal:
                error = TenantRequired if name == "user" else InvalidInput
                raise error(
                    f"the {name} id {value!r} holds no visible character",
                    hint="tenant ids are normalised (NFKC, invisible characters removed, trimmed)",
                )
            if normal != value:
                object.__setattr__(self, name, normal)

    def covers(self, other: Tenant) -> bool:
        """True when a read scoped to ``self`` may see a record written as ``other``."""
        return (
            self.user == other.user
            and (self.agent is None or self.agent == other.agent)
            and (self.run is None or self.run == other.run)
        )


@dataclass(frozen=True, slots=True)
class TemporalRef:
    """A grounded time expression (paper B.5): the span it denotes and how precise it is.

    ``start``/``end`` are inclusive calendar dates. ``expression`` is the text as written.
    """

    expression: str
    start: dt.date
    end: dt.date
    precision: Precision

    def to_json(self) -> dict[str, str]:
        return {
            "expression": self.expression,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "precision": self.precision,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TemporalRef:
        """The inverse of :meth:`to_json` (dates as ISO 8601 text, or already dates)."""
        return cls(
            expression=data["expression"],
            start=_date(data["start"]),
            end=_date(data["end"]),
            precision=data["precision"],
        )


@dataclass(frozen=True, slots=True)
class TypeScores:
    """The four overlapping memory characteristics of paper eq. 7 (independent scores in [0, 1])."""

    episodic: float
    semantic: float
    procedural: float
    preference: float

    def to_json(self) -> dict[str, float]:
        return fields_json(self)

    @classmethod
    def from_json(cls, data: Mapping[str, float]) -> TypeScores:
        return cls(**data)


@dataclass(frozen=True, slots=True)
class Observation:
    """One thing an agent saw or was told (paper eq. 4): content, optional timestamp, provenance.

    ``at`` is when the statement was *observed*, which need not be when the event happened.
    """

    content: str
    at: dt.datetime | None = None
    speaker: str | None = None
    source: str | None = None
    session: str | None = None
    turn_id: str | None = None
    metadata: Mapping[str, JSONValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.content, str):
            raise InvalidInput(f"content must be a string, not {type(self.content).__name__}")
        if not self.content.strip():
            raise InvalidInput("content is empty", hint="an observation needs some non-blank text")
        check_text(self.content, "content")
        if self.at is not None:
            if not isinstance(self.at, dt.datetime):
                raise InvalidInput(f"at must be a datetime, not {type(self.at).__name__}")
            if self.at.tzinfo is None:
                raise InvalidInput("at must be timezone-aware", hint="parse it with dualmem.text.parse_time")
        for name in ("speaker", "source", "session", "turn_id"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise InvalidInput(f"{name} must be a string or None")
            if value is not None:
                check_text(value, name)
        if not isinstance(self.metadata, Mapping):
            raise InvalidInput("metadata must be a mapping")
        check_json(self.metadata, "metadata")


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """A canonical memory node: the observation kept verbatim plus what the write path derived.

    ``embedding`` is L2-normalised float32 (``None`` only on records read without vectors).
    ``types`` is ``None`` until typing ran (a ``pending`` node after a controller failure).
    """

    id: str
    tenant: Tenant
    content: str
    at: dt.datetime | None
    speaker: str | None = None
    source: str | None = None
    session: str | None = None
    turn_id: str | None = None
    metadata: Mapping[str, JSONValue] = field(default_factory=dict)
    entities: tuple[str, ...] = ()
    temporal_refs: tuple[TemporalRef, ...] = ()
    types: TypeScores | None = None
    embedding: Vector | None = field(default=None, repr=False)
    created_at: dt.datetime = field(default_factory=utcnow)
    status: NodeStatus = "complete"
    valid_from: dt.datetime | None = None
    valid_to: dt.datetime | None = None
    derived: bool = False

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Node):
            return NotImplemented
        same_vec = (self.embedding is None and other.embedding is None) or (
            self.embedding is not None
            and other.embedding is not None
            and np.array_equal(self.embedding, other.embedding)
        )
        return same_vec and _node_key(self) == _node_key(other)

    def __hash__(self) -> int:
        return hash(self.id)

    def to_json(self) -> dict[str, JSONValue]:
        """Every field but the embedding, as JSON values (times ISO 8601), keys ``NODE_FIELDS`` in
        order: the one full serialiser, and :meth:`from_json` its one inverse.

        Every other shape of a node derives from this pair: the JSONL export (it adds the
        embedding), the HTTP ``NodeOut`` (the tenant nested), the SQL rows of both stores
        (``plane.codec``: JSON text columns, and epoch columns beside the times). The CLI shows a
        projection of it. Controllers and answerers see :meth:`memory_json` instead.
        """
        return {
            "id": self.id,
            "user": self.tenant.user,
            "agent": self.tenant.agent,
            "run": self.tenant.run,
            "content": self.content,
            "at": _iso(self.at),
            "speaker": self.speaker,
            "source": self.source,
            "session": self.session,
            "turn_id": self.turn_id,
            "metadata": dict(self.metadata),
            "entities": list(self.entities),
            "temporal_refs": [dict(ref.to_json()) for ref in self.temporal_refs],
            "types": dict(self.types.to_json()) if self.types else None,
            "created_at": _iso(self.created_at),
            "status": self.status,
            "valid_from": _iso(self.valid_from),
            "valid_to": _iso(self.valid_to),
            "derived": self.derived,
        }

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], *, embedding: Vector | None = None, tenant: Tenant | None = None
    ) -> Node:
        """The node :meth:`to_json` wrote: ``data`` holds its keys, values as JSON (or, as a validated
        model gives them, times and dates already parsed). ``tenant``: the node's tenant when the
        caller has it already (a store decodes few distinct tenants)."""
        return cls(
            id=data["id"],
            tenant=tenant if tenant is not None else Tenant(data["user"], data["agent"], data["run"]),
            content=data["content"],
            at=from_iso(data["at"]),
            speaker=data["speaker"],
            source=data["source"],
            session=data["session"],
            turn_id=data["turn_id"],
            metadata=data["metadata"],
            entities=tuple(data["entities"]),
            temporal_refs=tuple(TemporalRef.from_json(r) for r in data["temporal_refs"]),
            types=None if data["types"] is None else TypeScores.from_json(data["types"]),
            embedding=embedding,
            created_at=cast(dt.datetime, from_iso(data["created_at"])),
            status=data["status"],
            valid_from=from_iso(data["valid_from"]),
            valid_to=from_iso(data["valid_to"]),
            derived=bool(data["derived"]),
        )

    def memory_json(self) -> dict[str, JSONValue]:
        """The memory object passed to System One (paper B.1): id, content, timestamp, entities."""
        return memory_object(self.id, self.content, self.at, self.entities, self.speaker)


def memory_object(
    id: str, content: str, at: dt.datetime | None, entities: Iterable[str], speaker: str | None
) -> dict[str, JSONValue]:
    """The memory object passed to System One (paper B.1): id, content, timestamp (ISO 8601, or
    None), entities, and the speaker when there is one."""
    out: dict[str, JSONValue] = {
        "id": id,
        "content": content,
        "timestamp": at.isoformat() if at else None,
        "entities": list(entities),
    }
    if speaker:
        out["speaker"] = speaker
    return out


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def from_iso(value: str | dt.datetime | None) -> dt.datetime | None:
    """A time of a JSON shape: ISO 8601 text (what ``to_json`` writes), or a datetime a validated
    model already parsed it to."""
    if value is None or isinstance(value, dt.datetime):
        return value
    return dt.datetime.fromisoformat(value)


def _date(value: str | dt.date) -> dt.date:
    return value if isinstance(value, dt.date) else dt.date.fromisoformat(value)


#: a node's fields as JSON, in order (``Node.to_json``): the one list every other shape derives from
NODE_FIELDS: tuple[str, ...] = (
    "id", "user", "agent", "run", "content", "at", "speaker", "source", "session", "turn_id", "metadata",
    "entities", "temporal_refs", "types", "created_at", "status", "valid_from", "valid_to", "derived",
)  # fmt: skip


def _node_key(n: Node) -> tuple[object, ...]:
    return (
        n.id, n.tenant, n.content, n.at, n.speaker, n.source, n.session, n.turn_id, dict(n.metadata),
        n.entities, n.temporal_refs, n.types, n.created_at, n.status, n.valid_from, n.valid_to, n.derived,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Edge:
    """A typed, directed relation in one view. Several edges may join the same pair."""

    source: str
    target: str
    view: View
    label: str
    weight: float = 1.0
    created_at: dt.datetime = field(default_factory=utcnow)
    valid_from: dt.datetime | None = None
    valid_to: dt.datetime | None = None

    def __post_init__(self) -> None:
        if self.view not in EDGE_LABELS:
            raise InvalidInput(f"unknown view {self.view!r}; expected one of {', '.join(VIEWS)}")
        if self.label not in EDGE_LABELS[self.view]:
            allowed = ", ".join(sorted(EDGE_LABELS[self.view]))
            raise InvalidInput(f"label {self.label!r} is not in view {self.view!r} ({allowed})")
        if not 0.0 <= self.weight <= 1.0:
            raise InvalidInput(f"edge weight must be in [0, 1], got {self.weight}")
        if self.source == self.target:
            raise InvalidInput("an edge cannot join a node to itself")

    def other(self, node_id: str) -> str:
        return self.target if node_id == self.source else self.source

    def to_json(self) -> dict[str, JSONValue]:
        """The edge as JSON values, keys ``EDGE_FIELDS`` in order (times ISO 8601)."""
        data: dict[str, JSONValue] = {name: getattr(self, name) for name in EDGE_FIELDS[:5]}
        return data | {name: _iso(getattr(self, name)) for name in EDGE_FIELDS[5:]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Edge:
        """The edge :meth:`to_json` wrote."""
        return cls(
            data["source"], data["target"], data["view"], data["label"], data["weight"],
            cast(dt.datetime, from_iso(data["created_at"])), from_iso(data["valid_from"]),
            from_iso(data["valid_to"]),
        )  # fmt: skip


#: an edge's fields as JSON, in order (``Edge.to_json``)
EDGE_FIELDS: tuple[str, ...] = (
    "source", "target", "view", "label", "weight", "created_at", "valid_from", "valid_to",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Evidence:
    """A memory selected by retrieval, with how it was reached and why it scored as it did."""

    node: Node
    score: float
    view: View | Literal["anchor"] = "anchor"  # the view of the edge that reached it, or an RRF anchor
    via: Edge | None = None  # the edge that reached it (None for anchors)
    round: int = 0  # retrieval round in which it was admitted (0 = anchors)
    temporal_refs: tuple[TemporalRef, ...] = ()  # grounded time expressions of its content

    def to_json(self) -> dict[str, JSONValue]:
        """The evidence object passed to System One and System Two (paper B.5)."""
        out = self.node.memory_json()
        out["timestamp_role"] = "observation_time"
        out["temporal_references"] = [ref.to_json() for ref in self.temporal_refs]  # type: ignore[misc]
        return out

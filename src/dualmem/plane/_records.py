"""Pydantic models of the JSONL export's records (a file boundary): header, node, edge, decision, trailer.

Each model checks one line's fields (names, types, ISO 8601 times, base64 vectors, finite numbers,
memory ids of the form :func:`dualmem.types.check_node_id` accepts) and builds the
frozen dataclass the store takes. Unknown fields are refused. Private to ``dualmem.plane``.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Callable
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict, FiniteFloat, PlainValidator, StrictInt

from dualmem.errors import InvalidInput
from dualmem.plane.base import Decision
from dualmem.types import Edge, Node, NodeStatus, Precision, View, check_node_id

__all__ = ["ChunksRecord", "DecisionRecord", "EdgeRecord", "HeaderRecord", "NodeRecord", "TrailerRecord"]


def _float32s(
    encoded: str,
    size_ok: Callable[[int], bool],
    not_base64: str,
    bad_size: Callable[[int], str],
    not_finite: str,
) -> np.ndarray[Any, np.dtype[np.float32]]:
    """``encoded`` (base64 of little-endian float32) as a flat array, its byte count checked by
    ``size_ok``; a ``ValueError`` with the message given for each fault."""
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(not_base64) from exc
    if not size_ok(len(raw)):
        raise ValueError(bad_size(len(raw)))
    values = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not np.isfinite(values).all():
        raise ValueError(not_finite)
    return values


def _time(value: Any) -> dt.datetime:
    if not isinstance(value, str):
        raise ValueError("expected an ISO 8601 time string")
    return dt.datetime.fromisoformat(value)


def _date(value: Any) -> dt.date:
    if not isinstance(value, str):
        raise ValueError("expected an ISO 8601 date string")
    return dt.date.fromisoformat(value)


def _node_id(value: str) -> str:
    try:
        return check_node_id(value)
    except InvalidInput as exc:
        raise ValueError(str(exc)) from None


#: parsed with ``fromisoformat`` (exactly what the export writes), never pydantic's looser rules
IsoTime = Annotated[dt.datetime, PlainValidator(_time)]
IsoDate = Annotated[dt.date, PlainValidator(_date)]
#: a memory id of the form :func:`dualmem.types.check_node_id` accepts (a read must find it again)
NodeId = Annotated[str, AfterValidator(_node_id)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HeaderRecord(_Record):
    kind: Literal["header"]
    format: str
    version: int
    embedder: str
    dim: int


class TrailerRecord(_Record):
    """The export's last line: how many records of each kind precede it and the sha256 of those lines."""

    kind: Literal["trailer"]
    nodes: StrictInt
    chunks: StrictInt
    edges: StrictInt
    decisions: StrictInt
    sha256: str


class _Ref(_Record):
    expression: str
    start: IsoDate
    end: IsoDate
    precision: Precision


class _Types(_Record):
    episodic: FiniteFloat
    semantic: FiniteFloat
    procedural: FiniteFloat
    preference: FiniteFloat


class NodeRecord(_Record):
    kind: Literal["node"]
    id: NodeId
    user: str
    agent: str | None
    run: str | None
    content: str
    at: IsoTime | None
    speaker: str | None
    source: str | None
    session: str | None
    turn_id: str | None
    metadata: dict[str, Any]  # JSON values (json.loads made them)
    entities: list[str]
    temporal_refs: list[_Ref]
    types: _Types | None
    embedding: str | None
    created_at: IsoTime
    status: NodeStatus
    valid_from: IsoTime | None
    valid_to: IsoTime | None
    derived: bool

    def to_node(self, dim: int) -> Node:
        """The node of this line (``Node.from_json`` on its validated values)."""
        return Node.from_json(self.model_dump(exclude={"kind", "embedding"}), embedding=self._vector(dim))

    def _vector(self, dim: int) -> np.ndarray[Any, np.dtype[np.float32]] | None:
        if self.embedding is None:
            return None
        return _float32s(
            self.embedding,
            lambda size: size == 4 * dim,
            f"node {self.id}: embedding is not base64",
            lambda size: f"node {self.id} has a {size // 4}-dim vector, expected {dim}",
            f"node {self.id}: the embedding holds a number that is not finite",
        )


class ChunksRecord(_Record):
    """The chunk vectors of one long node: ``parts`` rows of ``dim`` float32, base64."""

    kind: Literal["chunks"]
    node_id: NodeId
    parts: int
    vectors: str

    def to_matrix(self, dim: int) -> np.ndarray[Any, np.dtype[np.float32]]:
        values = _float32s(
            self.vectors,
            lambda size: self.parts >= 1 and size == 4 * dim * self.parts,
            f"node {self.node_id}: chunk vectors are not base64",
            lambda _: f"node {self.node_id}: chunk vectors are not {self.parts} x {dim} float32",
            f"node {self.node_id}: a chunk vector holds a number that is not finite",
        )
        return values.reshape(self.parts, dim)


class EdgeRecord(_Record):
    kind: Literal["edge"]
    source: NodeId
    target: NodeId
    view: View
    label: str
    weight: FiniteFloat
    created_at: IsoTime
    valid_from: IsoTime | None
    valid_to: IsoTime | None

    def to_edge(self) -> Edge:
        return Edge.from_json(self.model_dump(exclude={"kind"}))


class DecisionRecord(_Record):
    kind: Literal["decision"]
    node_id: NodeId
    purpose: str
    name: str
    key: str
    value: FiniteFloat
    label: str | None
    backend: str
    latency_ms: FiniteFloat
    other_id: NodeId | None
    created_at: IsoTime

    def to_decision(self) -> Decision:
        return Decision.from_json(self.model_dump(exclude={"kind"}))

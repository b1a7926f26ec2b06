"""Export and import of one tenant's whole memory as JSON Lines: nodes, edges, decisions.

The first line is a header naming the format version, the embedder and its dimension; the last is a
trailer with the count of each record kind and the sha256 of every line before it (header included,
each line's UTF-8 bytes followed by ``\\n``), so an import proves the file whole before it stores
anything: a file cut short, reordered, edited, or missing its trailer is refused with
:class:`~dualmem.errors.InvalidInput`. Files of format version 1 (no trailer) are refused too: they
cannot be told from a cut one. Each line is read through a pydantic model of its record kind
(:mod:`dualmem.plane._records`), so a bad file fails with the line number and the field. Import checks
everything before writing anything and applies it in one transaction. Round trip is exact: exporting
an imported file gives the same lines. Nodes are written with :meth:`dualmem.types.Node.to_json` plus
their embedding; a long node's chunk vectors follow its line as a ``chunks`` record.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pydantic

from dualmem import _json as bounded_json
from dualmem._boundary import describe_error
from dualmem.errors import Conflict, EmbedderMismatch, InvalidInput
from dualmem.plane._records import (
    ChunksRecord,
    DecisionRecord,
    EdgeRecord,
    HeaderRecord,
    NodeRecord,
    TrailerRecord,
)
from dualmem.plane.base import Decision, MemoryStore
from dualmem.types import Edge, Node, Tenant, Vector, check_json, check_text

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "DecisionRecord",
    "EdgeRecord",
    "ImportReport",
    "NodeRecord",
    "export_lines",
    "import_lines",
    "split_lines",
    "verify_export",
]

EXPORT_FORMAT = "dualmem.export"
EXPORT_VERSION = 2
#: the record kinds a trailer counts, in the order it names them
_COUNTED = ("nodes", "chunks", "edges", "decisions")
_HINT = "import a file written by dualmem's export, unedited"
_R = TypeVar("_R", bound=pydantic.BaseModel)


@dataclass(frozen=True, slots=True)
class ImportReport:
    nodes: int
    edges: int
    decisions: int


def export_lines(store: MemoryStore, tenant: Tenant, *, embedder: str, dim: int) -> Iterator[str]:
    """The tenant's memory, one JSON document per line: header first, trailer last."""
    seal = _Seal()
    header = {
        "kind": "header",
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "embedder": embedder,
        "dim": dim,
    }
    for doc in _records(store, tenant, header):
        line = _dump(doc)
        seal.add(line, doc["kind"])
        yield line
    yield _dump(seal.trailer())


def _records(store: MemoryStore, tenant: Tenant, header: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield header
    nodes = list(store.iter_nodes(tenant))
    ids = {n.id for n in nodes}
    chunks = store.vectors.get_chunks(ids, tenant)
    edges: dict[tuple[str, str, str, str], Edge] = {}
    for node in nodes:
        yield {"kind": "node", **_node_json(node)}
        if node.id in chunks:
            yield {"kind": "chunks", **_chunks_json(node.id, chunks[node.id])}
        for e in store.edges_of(node.id):
            if e.source in ids and e.target in ids:
                edges[(e.source, e.target, e.view, e.label)] = e
    for key in sorted(edges):
        yield {"kind": "edge", **edges[key].to_json()}
    for node in nodes:
        for d in store.log.decisions_of(node.id):
            yield {"kind": "decision", **d.to_json()}


class _Seal:
    """The running sha256 of an export's lines and the count of each record kind among them."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.counts = dict.fromkeys(_COUNTED, 0)

    def add(self, line: str, kind: object) -> None:
        self._sha.update(line.encode("utf-8", "surrogatepass") + b"\n")
        plural = f"{kind}s" if kind != "chunks" else "chunks"
        if plural in self.counts:
            self.counts[plural] += 1

    def digest(self) -> str:
        return self._sha.hexdigest()

    def trailer(self) -> dict[str, Any]:
        return {"kind": "trailer", **self.counts, "sha256": self.digest()}


@dataclass(frozen=True, slots=True)
class _Verified:
    header: HeaderRecord
    records: list[tuple[int, dict[str, Any]]]  # (line number, parsed document), header and trailer left out


def verify_export(lines: Iterable[str]) -> _Verified:
    """Parse an export and prove it whole, or raise ``InvalidInput``: a header first, a trailer last,
    and the trailer's counts and sha256 matching the lines before it. Stores nothing."""
    seal = _Seal()
    header: HeaderRecord | None = None
    trailer: TrailerRecord | None = None
    records: list[tuple[int, dict[str, Any]]] = []
    last = 0
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        doc = _parse(line, number)
        if trailer is not None:
            raise InvalidInput(f"line {number} follows the export's trailer (the last line)", hint=_HINT)
        last, kind = number, doc.get("kind")
        if header is None:
            if kind != "header":
                raise InvalidInput("the file does not start with a dualmem export header", hint=_HINT)
            header = _checked(HeaderRecord, doc, number)
            _check_format(header)
        elif kind == "trailer":
            trailer = _checked(TrailerRecord, doc, number)
            continue
        else:
            records.append((number, doc))
        seal.add(line, kind)
    if header is None:
        raise InvalidInput("the import file is empty", hint=_HINT)
    if trailer is None:
        raise InvalidInput(
            f"the export has no trailer: it ends at line {last} and was cut short or written by "
            "something other than dualmem's export; nothing was imported",
            hint=_HINT,
        )
    for kind, want in zip(
        _COUNTED, (trailer.nodes, trailer.chunks, trailer.edges, trailer.decisions), strict=False
    ):
        if seal.counts[kind] != want:
            raise InvalidInput(
                f"the export holds {seal.counts[kind]} {kind} records but its trailer says {want}: "
                "the file is incomplete or was edited; nothing was imported",
                hint=_HINT,
            )
    if seal.digest() != trailer.sha256:
        raise InvalidInput(
            "the export's lines do not match the sha256 in its trailer: the file was edited or its "
            "lines reordered after export; nothing was imported",
            hint=_HINT,
        )
    return _Verified(header, records)


def import_lines(store: MemoryStore, lines: Iterable[str], *, embedder: str, dim: int) -> ImportReport:
    """Load an export; nothing is written unless the file is whole (:func:`verify_export`), every
    line is valid and no id already exists."""
    verified = verify_export(lines)
    _check_embedder(verified.header, embedder=embedder, dim=dim)
    nodes: list[Node] = []
    edges: list[Edge] = []
    decisions: list[Decision] = []
    chunks: dict[str, Vector] = {}
    seen = _Repeats()
    for number, doc in verified.records:
        kind = doc.get("kind")
        try:
            if kind == "node":
                nodes.append(_valid(_checked(NodeRecord, doc, number).to_node(dim)))
                seen.once(("node", nodes[-1].id), number, f"node id {nodes[-1].id!r}")
            elif kind == "chunks":
                record = _checked(ChunksRecord, doc, number)
                if record.node_id not in {n.id for n in nodes[-1:]} or record.node_id in chunks:
                    raise ValueError(f"chunk vectors of {record.node_id!r} do not follow that node's line")
                chunks[record.node_id] = record.to_matrix(dim)
            elif kind == "edge":
                edges.append(_checked(EdgeRecord, doc, number).to_edge())
                e = edges[-1]
                seen.once(("edge", e.source, e.target, e.view, e.label), number, "the edge")
            elif kind == "decision":
                decisions.append(_checked(DecisionRecord, doc, number).to_decision())
                seen.once(("decision", json.dumps(doc, sort_keys=True)), number, "the decision")
            else:
                raise ValueError(f"unknown record kind {kind!r}")
        except (ValueError, InvalidInput) as exc:  # a bad vector, an edge label outside its view
            if isinstance(exc, InvalidInput) and str(exc).startswith("line "):
                raise
            raise InvalidInput(f"line {number} of the import is malformed: {exc}", hint=_HINT) from exc
    clash = store.get_nodes([n.id for n in nodes])
    if clash:
        raise Conflict(
            f"{len(clash)} node id(s) in the import already exist (e.g. {next(iter(clash))})",
            hint="import into a fresh database or forget those memories first",
        )
    with store.transaction():
        store.put_nodes(nodes)
        store.vectors.put_chunks(chunks)
        store.put_edges(edges)
        store.log.put_decisions(decisions)
    return ImportReport(len(nodes), len(edges), len(decisions))


class _Repeats:
    """Keys of the records read so far: a node id, an edge (its ends, view and label) or a decision
    line that comes twice is refused (export writes each once; counting it twice would be a lie)."""

    def __init__(self) -> None:
        self._first: dict[tuple[str, ...], int] = {}

    def once(self, key: tuple[str, ...], number: int, what: str) -> None:
        first = self._first.setdefault(key, number)
        if first != number:
            raise InvalidInput(f"line {number} of the import repeats {what} of line {first}", hint=_HINT)


def _valid(node: Node) -> Node:
    """What an observation must satisfy holds for an imported node too (text, times, metadata)."""
    if not node.content.strip():
        raise InvalidInput("content is empty")
    for what, text in (("id", node.id), ("content", node.content), *(("entity", e) for e in node.entities)):
        check_text(text, what)
    for what, value in (("speaker", node.speaker), ("source", node.source), ("session", node.session)):
        if value is not None:
            check_text(value, what)
    if node.turn_id is not None:
        check_text(node.turn_id, "turn_id")
    check_json(node.metadata, "metadata")
    times = (("at", node.at), ("created_at", node.created_at), ("valid_from", node.valid_from))
    for what, when in (*times, ("valid_to", node.valid_to)):
        if when is not None and when.utcoffset() is None:
            raise InvalidInput(f"{what} has no time zone (write it as ISO 8601 with an offset, e.g. +00:00)")
    return node


def _checked(model: type[_R], doc: dict[str, Any], number: int) -> _R:
    try:
        return model.model_validate(doc)
    except pydantic.ValidationError as exc:
        raise InvalidInput(
            f"line {number} of the import is malformed: {describe_error(exc)}", hint=_HINT
        ) from exc


def _parse(raw: str, number: int) -> dict[str, Any]:
    try:
        doc = bounded_json.loads(raw)
    except ValueError as exc:
        raise InvalidInput(f"line {number} of the import is malformed: not JSON ({exc})", hint=_HINT) from exc
    if not isinstance(doc, dict):
        raise InvalidInput(f"line {number} of the import is malformed: not a JSON object", hint=_HINT)
    return doc


def _check_format(header: HeaderRecord) -> None:
    if header.format != EXPORT_FORMAT:
        raise InvalidInput(f"not a dualmem export (format {header.format!r})", hint=_HINT)
    if header.version > EXPORT_VERSION:
        raise InvalidInput(
            f"the export uses format version {header.version}, "
            f"newer than this dualmem reads ({EXPORT_VERSION})",
            hint="upgrade dualmem",
        )
    if header.version < EXPORT_VERSION:
        raise InvalidInput(
            f"the export uses format version {header.version}, which has no trailer to prove the file "
            f"whole; this dualmem imports version {EXPORT_VERSION} only",
            hint="export the memory again with this dualmem (a dualmem that reads the old file can "
            "import it first)",
        )


def _check_embedder(header: HeaderRecord, *, embedder: str, dim: int) -> None:
    if header.embedder != embedder or header.dim != dim:
        raise EmbedderMismatch(
            f"the export was made with embedder {header.embedder} ({header.dim} dims), "
            f"this database uses {embedder} ({dim} dims)",
            hint=f"open the target with embedder={header.embedder!r}",
        )


#: what ``str.splitlines()`` splits on that ``json.dumps(ensure_ascii=False)`` leaves raw inside a
#: string (it escapes \n, \r, \v, \f and \x1c-\x1e as control characters already)
_RAW_SEPARATORS = {ord(ch): f"\\u{ord(ch):04x}" for ch in "\x85\u2028\u2029"}


def _dump(doc: dict[str, Any]) -> str:
    """One record as one line by any reader's idea of a line: every separator ``str.splitlines()``
    knows is escaped (they can only occur inside JSON strings, where the escape means the same)."""
    line = json.dumps(doc, ensure_ascii=False, sort_keys=True, allow_nan=False)
    return line.translate(_RAW_SEPARATORS)


def split_lines(text: str) -> list[str]:
    """An export's lines: split on "\n" only (a "\r" before it is dropped), never on the other
    separators ``str.splitlines()`` knows, which an older export may hold raw inside its strings."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _node_json(n: Node) -> dict[str, Any]:
    vec = None if n.embedding is None else base64.b64encode(np.asarray(n.embedding, "<f4").tobytes()).decode()
    return {**n.to_json(), "embedding": vec}


def _chunks_json(node_id: str, rows: Vector) -> dict[str, Any]:
    raw = np.ascontiguousarray(rows, dtype="<f4").tobytes()
    return {"node_id": node_id, "parts": int(rows.shape[0]), "vectors": base64.b64encode(raw).decode()}

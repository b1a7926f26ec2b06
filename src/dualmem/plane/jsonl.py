"""Export and import of one tenant's whole memory as JSON Lines: nodes, edges, decisions.

The first line is a header naming the format version, the embedder and its dimension. Import
checks everything before writing anything and applies it in one transaction. Round trip is exact:
exporting an imported file gives the same lines.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from dualmem.errors import EmbedderMismatch, InvalidInput
from dualmem.plane.base import Decision, Store
from dualmem.types import Edge, Node, TemporalRef, Tenant, TypeScores

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "ImportReport", "export_lines", "import_lines"]

EXPORT_FORMAT = "dualmem.export"
EXPORT_VERSION = 1


@dataclass(frozen=True, slots=True)
class ImportReport:
    nodes: int
    edges: int
    decisions: int


def export_lines(store: Store, tenant: Tenant, *, embedder: str, dim: int) -> Iterator[str]:
    """The tenant's memory, one JSON document per line, header first."""
    header = {
        "kind": "header",
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "embedder": embedder,
        "dim": dim,
    }
    yield _dump(header)
    nodes = list(store.iter_nodes(tenant))
    ids = {n.id for n in nodes}
    edges: dict[tuple[str, str, str, str], Edge] = {}
    for node in nodes:
        yield _dump({"kind": "node", **_node_json(node)})
        for e in store.edges_of(node.id):
            if e.source in ids and e.target in ids:
                edges[(e.source, e.target, e.view, e.label)] = e
    for key in sorted(edges):
        yield _dump({"kind": "edge", **_edge_json(edges[key])})
    for node in nodes:
        for d in store.decisions_of(node.id):
            yield _dump({"kind": "decision", **_decision_json(d)})


def import_lines(store: Store, lines: Iterable[str], *, embedder: str, dim: int) -> ImportReport:
    """Load an export; nothing is written unless every line is valid and no id already exists."""
    nodes: list[Node] = []
    edges: list[Edge] = []
    decisions: list[Decision] = []
    header: dict[str, Any] | None = None
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            doc = json.loads(raw)
            if not isinstance(doc, dict):
                raise TypeError("not an object")
            kind = doc.pop("kind")
            if header is None:
                if kind != "header":
                    raise InvalidInput("the file does not start with a dualmem export header")
                header = doc
                _check_header(header, embedder=embedder, dim=dim)
            elif kind == "node":
                nodes.append(_node_from(doc, dim))
            elif kind == "edge":
                edges.append(_edge_from(doc))
            elif kind == "decision":
                decisions.append(_decision_from(doc))
            else:
                raise InvalidInput(f"unknown record kind {kind!r}")
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"line {number} of the import is malformed: {exc}") from exc
    if header is None:
        raise InvalidInput("the import file is empty")
    clash = store.get_nodes([n.id for n in nodes])
    if clash:
        raise InvalidInput(
            f"{len(clash)} node id(s) in the import already exist (e.g. {next(iter(clash))})",
            hint="import into a fresh database or forget those memories first",
        )
    with store.transaction():
        store.put_nodes(nodes)
        store.put_edges(edges)
        store.put_decisions(decisions)
    return ImportReport(len(nodes), len(edges), len(decisions))


def _check_header(header: dict[str, Any], *, embedder: str, dim: int) -> None:
    if header.get("format") != EXPORT_FORMAT:
        raise InvalidInput(f"not a dualmem export (format {header.get('format')!r})")
    version = header.get("version")
    if not isinstance(version, int) or version > EXPORT_VERSION:
        raise InvalidInput(
            f"the export uses format version {version}, newer than this dualmem reads ({EXPORT_VERSION})",
            hint="upgrade dualmem",
        )
    if header.get("embedder") != embedder or header.get("dim") != dim:
        raise EmbedderMismatch(
            f"the export was made with embedder {header.get('embedder')} ({header.get('dim')} dims), "
            f"this database uses {embedder} ({dim} dims)",
            hint=f"open the target with embedder={header.get('embedder')!r}",
        )


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False, sort_keys=True, allow_nan=False)


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _time(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value is not None else None


def _node_json(n: Node) -> dict[str, Any]:
    vec = None if n.embedding is None else base64.b64encode(np.asarray(n.embedding, "<f4").tobytes()).decode()
    return {
        "id": n.id,
        "user": n.tenant.user,
        "agent": n.tenant.agent,
        "run": n.tenant.run,
        "content": n.content,
        "at": _iso(n.at),
        "speaker": n.speaker,
        "source": n.source,
        "session": n.session,
        "turn_id": n.turn_id,
        "metadata": dict(n.metadata),
        "entities": list(n.entities),
        "temporal_refs": [r.to_json() for r in n.temporal_refs],
        "types": n.types.to_json() if n.types else None,
        "embedding": vec,
        "created_at": _iso(n.created_at),
        "status": n.status,
        "valid_from": _iso(n.valid_from),
        "valid_to": _iso(n.valid_to),
        "derived": n.derived,
    }


def _node_from(d: dict[str, Any], dim: int) -> Node:
    vec = None
    if d["embedding"] is not None:
        vec = np.frombuffer(base64.b64decode(d["embedding"]), dtype="<f4").astype(np.float32)
        if vec.shape != (dim,):
            raise ValueError(f"node {d['id']} has a {vec.shape[0]}-dim vector, expected {dim}")
    refs = tuple(
        TemporalRef(
            r["expression"],
            dt.date.fromisoformat(r["start"]),
            dt.date.fromisoformat(r["end"]),
            r["precision"],
        )
        for r in d["temporal_refs"]
    )
    created = _time(d["created_at"])
    if created is None:
        raise ValueError(f"node {d['id']} has no created_at")
    return Node(
        id=d["id"],
        tenant=Tenant(d["user"], d["agent"], d["run"]),
        content=d["content"],
        at=_time(d["at"]),
        speaker=d["speaker"],
        source=d["source"],
        session=d["session"],
        turn_id=d["turn_id"],
        metadata=d["metadata"],
        entities=tuple(d["entities"]),
        temporal_refs=refs,
        types=TypeScores(**d["types"]) if d["types"] else None,
        embedding=vec,
        created_at=created,
        status=d["status"],
        valid_from=_time(d["valid_from"]),
        valid_to=_time(d["valid_to"]),
        derived=bool(d["derived"]),
    )


def _edge_json(e: Edge) -> dict[str, Any]:
    return {
        "source": e.source,
        "target": e.target,
        "view": e.view,
        "label": e.label,
        "weight": e.weight,
        "created_at": _iso(e.created_at),
        "valid_from": _iso(e.valid_from),
        "valid_to": _iso(e.valid_to),
    }


def _edge_from(d: dict[str, Any]) -> Edge:
    created = _time(d["created_at"])
    if created is None:
        raise ValueError("an edge has no created_at")
    return Edge(
        d["source"], d["target"], d["view"], d["label"], float(d["weight"]), created,
        _time(d["valid_from"]), _time(d["valid_to"]),
    )  # fmt: skip


def _decision_json(d: Decision) -> dict[str, Any]:
    return {
        "node_id": d.node_id,
        "purpose": d.purpose,
        "name": d.name,
        "key": d.key,
        "value": d.value,
        "label": d.label,
        "backend": d.backend,
        "latency_ms": d.latency_ms,
        "other_id": d.other_id,
        "created_at": _iso(d.created_at),
    }


def _decision_from(d: dict[str, Any]) -> Decision:
    created = _time(d["created_at"])
    if created is None:
        raise ValueError("a decision has no created_at")
    return Decision(
        d["node_id"], d["purpose"], d["name"], d["key"], float(d["value"]), d["label"], d["backend"],
        float(d["latency_ms"]), d["other_id"], created,
    )  # fmt: skip

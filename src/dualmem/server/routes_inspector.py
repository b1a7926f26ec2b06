"""The web inspector: the page at ``/ui`` and the few read-only routes it needs beyond the API.

The page (plain HTML, JS and CSS shipped in ``dualmem/server/ui/static``) holds no data of its own;
it calls the JSON API with the same bearer key as any client (with ``--no-auth`` none is needed).
The routes here only read: a node with its neighbours and versions in one call, short descriptions
of many nodes (for the trace's scored pool), the consolidation log, and memory growth over time.
"""

from __future__ import annotations

import datetime as dt
from importlib import resources
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict

from dualmem import Scope as TenantScope
from dualmem.server.auth import Scope
from dualmem.server.problems import ApiProblem
from dualmem.server.routes_memories import NodeId, errors
from dualmem.server.ui.growth import Clock, growth
from dualmem.vocab import Node
from dualmem.wire.schemas import InspectionOut, NodeOut, inspection_out, node_out

__all__ = ["inspector_router"]

STATIC = {"app.js": "text/javascript", "style.css": "text/css", "graph.js": "text/javascript"}
BRIEF_CHARS = 160


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Brief(_Model):
    """Enough of a memory to label it: id, speaker, time, status and the first words."""

    id: str
    speaker: str | None
    at: dt.datetime | None
    text: str
    current: bool
    pending: bool
    derived: bool


class NodeView(_Model):
    inspection: InspectionOut
    versions: list[NodeOut]
    neighbours: list[Brief]


class PairDecision(_Model):
    key: str
    value: float
    label: str | None


class ConsolidationPair(_Model):
    """One (new, earlier) pair a consolidation pass judged, with what it decided."""

    at: dt.datetime
    new: Brief
    old: Brief
    backend: str
    latency_ms: float
    decisions: list[PairDecision]
    superseded: bool
    linked: bool


class ConsolidationLog(_Model):
    pairs: list[ConsolidationPair]
    total: int


class GrowthOut(_Model):
    views: list[str]
    points: list[dict[str, Any]]


def brief(n: Node) -> Brief:
    text = n.content if len(n.content) <= BRIEF_CHARS else n.content[: BRIEF_CHARS - 1] + "…"
    return Brief(
        id=n.id, speaker=n.speaker, at=n.at, text=text, current=n.valid_to is None,
        pending=n.status == "pending", derived=n.derived,
    )  # fmt: skip


def _static(name: str) -> bytes:
    return resources.files("dualmem.server.ui").joinpath("static", name).read_bytes()


def inspector_router() -> APIRouter:
    """``/ui`` (the page and its assets, no auth: they hold no data) and ``/v1/inspector/*`` (auth)."""
    router = APIRouter()
    router.include_router(_page_router())
    router.include_router(_data_router())
    return router


def _page_router() -> APIRouter:
    page = APIRouter(include_in_schema=False)

    @page.get("/ui")
    def index() -> HTMLResponse:
        return HTMLResponse(_static("index.html"), headers={"Cache-Control": "no-store"})

    @page.get("/ui/")
    def index_slash() -> RedirectResponse:
        return RedirectResponse("/ui")

    @page.get("/ui/static/{name}")
    def asset(name: str) -> Response:
        media = STATIC.get(name)
        if media is None:
            raise ApiProblem(404, "not-found", f"no inspector asset {name!r}")
        return Response(_static(name), media_type=f"{media}; charset=utf-8")

    return page


def _data_router() -> APIRouter:
    data = APIRouter(prefix="/v1/inspector", tags=["inspector"])

    @data.get("/nodes/{node_id}", response_model=NodeView, responses=errors(404), summary="A node page")
    def node_view(node_id: NodeId, scope: Scope) -> NodeView:
        """The memory's inspection, every version, and a short description of each neighbour."""
        info = scope.inspect(node_id)
        others = sorted(
            {e.other(node_id) for e in info.edges} | {d.other_id for d in info.decisions if d.other_id}
        )
        found = scope.memory.store.get_nodes(others, scope.tenant)
        return NodeView(
            inspection=inspection_out(info),
            versions=[node_out(n) for n in scope.history(node_id)],
            neighbours=[brief(found[i]) for i in others if i in found],
        )

    @data.get("/briefs", response_model=list[Brief], responses=errors(), summary="Short descriptions")
    def briefs(scope: Scope, ids: Annotated[list[str], Query(max_length=500)]) -> list[Brief]:
        """The tenant's memories among ``ids`` (unknown or foreign ids are left out)."""
        found = scope.memory.store.get_nodes(set(ids), scope.tenant)
        return [brief(found[i]) for i in dict.fromkeys(ids) if i in found]

    @data.get(
        "/consolidation", response_model=ConsolidationLog, responses=errors(), summary="Consolidation log"
    )
    def consolidation(scope: Scope, limit: Annotated[int, Query(ge=1, le=1000)] = 200) -> ConsolidationLog:
        """Every pair consolidation judged, newest first: the four decisions and what came of them."""
        pairs = _consolidation_pairs(scope)
        return ConsolidationLog(pairs=pairs[:limit], total=len(pairs))

    @data.get("/growth", response_model=GrowthOut, responses=errors(), summary="Memory growth over time")
    def growth_view(
        scope: Scope, by: Clock = "observed", buckets: Annotated[int, Query(ge=2, le=1000)] = 120
    ) -> GrowthOut:
        """Memories (all, current) and edges per view, cumulative, by observation or write time."""
        out = growth(scope.memory.store, scope.tenant, by=by, buckets=buckets).to_json()
        return GrowthOut.model_validate(out)

    return data


def _consolidation_pairs(scope: TenantScope) -> list[ConsolidationPair]:
    store = scope.memory.store
    nodes = {n.id: n for n in store.iter_nodes(scope.tenant)}
    out: list[ConsolidationPair] = []
    for node in nodes.values():
        by_other: dict[str, list[Any]] = {}
        for d in store.log.decisions_of(node.id):
            if d.purpose == "consolidation" and d.other_id in nodes:
                by_other.setdefault(d.other_id, []).append(d)
        if not by_other:
            continue
        edges = store.edges_of(node.id)
        for other_id, decided in by_other.items():
            other = nodes[other_id]
            superseded = any(
                e.label == "superseded_by" and {e.source, e.target} == {node.id, other_id} for e in edges
            )
            linked = any(e.label == "related" and {e.source, e.target} == {node.id, other_id} for e in edges)
            out.append(
                ConsolidationPair(
                    at=max(d.created_at for d in decided), new=brief(node), old=brief(other),
                    backend=decided[0].backend, latency_ms=decided[0].latency_ms,
                    decisions=[PairDecision(key=d.key, value=d.value, label=d.label) for d in decided],
                    superseded=superseded, linked=linked,
                )
            )  # fmt: skip
    out.sort(key=lambda p: (p.at, p.new.id), reverse=True)
    return out

"""``/v1/memories``: add (idempotent), list with cursor pagination and filters, get, update, delete."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Path, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from dualmem.server.auth import Principal, Scope, tenant_principal
from dualmem.server.problems import ApiProblem
from dualmem.server.service import Service
from dualmem.vocab import Filter, Node, parse_time
from dualmem.wire.schemas import (
    ID_PATTERN,
    MAX_LIST,
    AddRequest,
    AddResponse,
    Cursor,
    ForgetResponse,
    HistoryOut,
    InspectionOut,
    NodeOut,
    NodePage,
    TimeText,
    UpdateRequest,
    UpdateResponse,
    WouldForgetOut,
    inspection_out,
    node_out,
    would_forget_out,
)

__all__ = ["errors", "router"]

router = APIRouter(prefix="/v1/memories", tags=["memories"])

NodeId = Annotated[str, Path(pattern=ID_PATTERN, description="a memory id")]


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for problem responses (every route also may answer 401/403/413/429)."""
    from dualmem.wire.schemas import Problem

    every = {400, 401, 403, 413, 422, 429, 503, *codes}
    return {
        c: {"model": Problem, "content": {"application/problem+json": {}}, "description": "a problem"}
        for c in sorted(every)
    }


def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


@router.post(
    "",
    status_code=201,
    response_model=AddResponse,
    responses=errors(409, 502, 504),
    summary="Store one or more observations",
)
def add_memories(
    body: AddRequest,
    request: Request,
    scope: Scope,
    who: Annotated[Principal, Depends(tenant_principal)],
    idempotency_key: Annotated[
        str | None,
        Header(max_length=200, pattern=r"^[\x21-\x7e]+$", description="replays the first response for 24 h"),
    ] = None,
) -> Any:
    """Every observation is validated before anything is stored; one bad item stores nothing.

    With an ``Idempotency-Key`` header, a retry with the same key and body gets the first response
    (header ``Idempotent-Replayed: true``); the same key with another body is a 409.
    """
    service = _service(request)
    observations = [o.model_dump(exclude_none=True) for o in body.observations]
    if idempotency_key is None:
        return AddResponse(ids=service.add(scope, observations))
    digest = hashlib.sha256(json.dumps(body.model_dump(), sort_keys=True, default=str).encode()).hexdigest()
    replay, replayed = service.add_once(
        scope, observations, owner=who.owner, key=idempotency_key, digest=digest
    )
    if replay.request_hash != digest:
        raise ApiProblem(
            409, "idempotency-conflict", "this Idempotency-Key was used with another request body",
            hint="use a new key for a new request",
        )  # fmt: skip
    headers = {"Idempotent-Replayed": "true"} if replayed else {}
    return JSONResponse(replay.body, status_code=replay.status, headers=headers)


Status = Literal["current", "superseded", "pending", "complete"]


def _order(n: Node) -> str:
    when = (n.at or n.created_at).isoformat()
    return f"{when}|{n.created_at.isoformat()}|{n.id}"


def _cursor_key(cursor: str) -> str:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        key = base64.b64decode(padded.encode("ascii"), altchars=b"-_", validate=True).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        key = ""
    if key.count("|") != 2:
        raise ApiProblem(400, "invalid-cursor", "the cursor is not one this server issued")
    return key


def _status_matches(n: Node, status: Status | None) -> bool:
    return (
        status is None
        or {
            "current": n.valid_to is None,
            "superseded": n.valid_to is not None,
            "pending": n.status == "pending",
            "complete": n.status == "complete",
        }[status]
    )


class ListQuery(BaseModel):
    cursor: Cursor | None = None
    limit: int = Field(default=50, ge=1, le=MAX_LIST)
    speaker: str | None = Field(default=None, max_length=512)
    session: str | None = Field(default=None, max_length=512)
    since: TimeText | None = Field(default=None, description="observed at or after")
    until: TimeText | None = Field(default=None, description="observed before")
    status: Status | None = None


@router.get("", response_model=NodePage, responses=errors(), summary="List memories, oldest first")
def list_memories(scope: Scope, q: Annotated[ListQuery, Query()]) -> NodePage:
    """Paged by cursor; ``POST /v1/list`` also filters by metadata."""
    after = _cursor_key(q.cursor) if q.cursor else ""
    where = Filter(speaker=q.speaker, session=q.session, since=parse_time(q.since), until=parse_time(q.until))
    chosen: list[tuple[str, Node]] = []
    for n in scope.nodes():
        if not where.matches(n) or not _status_matches(n, q.status):
            continue
        key = _order(n)
        if key > after:
            chosen.append((key, n))
    chosen.sort(key=lambda kn: kn[0])
    page = chosen[: q.limit]
    more = len(chosen) > q.limit
    next_cursor = base64.urlsafe_b64encode(page[-1][0].encode()).decode().rstrip("=") if more else None
    return NodePage(items=[node_out(n) for _, n in page], next_cursor=next_cursor)


@router.get("/{node_id}", response_model=NodeOut, responses=errors(404), summary="One memory")
def get_memory(node_id: NodeId, scope: Scope) -> NodeOut:
    return node_out(scope.get(node_id))


@router.patch(
    "/{node_id}",
    response_model=UpdateResponse,
    responses=errors(404, 409, 502, 504),
    summary="Correct a memory (the old text stays as history)",
)
def update_memory(node_id: NodeId, body: UpdateRequest, scope: Scope, request: Request) -> UpdateResponse:
    """The new version keeps the old one's fields; ``metadata``, if given, replaces its metadata.
    A superseded version cannot be updated (409): update the newest one."""
    new = _service(request).update(scope, node_id, body.text, at=body.at, metadata=body.metadata)
    return UpdateResponse(old=node_id, new=new, node=node_out(scope.get(new)))


@router.delete(
    "/{node_id}",
    response_model=ForgetResponse,
    responses=errors(404),
    summary="Forget a memory, its versions and everything derived from it",
)
def delete_memory(node_id: NodeId, scope: Scope, request: Request) -> ForgetResponse:
    return ForgetResponse(forgotten=_service(request).write(lambda: scope.forget(node_id)))


@router.get(
    "/{node_id}/forget-preview",
    response_model=WouldForgetOut,
    responses=errors(404),
    summary="What forgetting this memory would remove (its versions and derived summaries too)",
)
def forget_preview(node_id: NodeId, scope: Scope) -> WouldForgetOut:
    return would_forget_out(scope.would_forget(node_id))


@router.get(
    "/{node_id}/history",
    response_model=HistoryOut,
    responses=errors(404),
    summary="Every version, oldest first",
)
def memory_history(node_id: NodeId, scope: Scope) -> HistoryOut:
    return HistoryOut(id=node_id, versions=[node_out(n) for n in scope.history(node_id)])


@router.get(
    "/{node_id}/inspect",
    response_model=InspectionOut,
    responses=errors(404),
    summary="A memory with its edges and the controller decisions recorded for it",
)
def inspect_memory(node_id: NodeId, scope: Scope) -> InspectionOut:
    return inspection_out(scope.inspect(node_id))

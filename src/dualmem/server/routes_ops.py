"""Query and tenant-wide routes (search, answer, forget, consolidate, export, import, stats) and keys."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi import Path as PathParam
from fastapi.responses import StreamingResponse

from dualmem.errors import InvalidInput
from dualmem.server.auth import Principal, Scope, admin_principal, principal
from dualmem.server.keys import ApiKey
from dualmem.server.routes_memories import errors
from dualmem.server.service import Service
from dualmem.wire.schemas import (
    EXPORT_SCHEMA,
    AnswerOut,
    BackfillOut,
    ConsolidationOut,
    ForgetRequest,
    ForgetResponse,
    ImportOut,
    KeyCreate,
    KeyCreated,
    KeyOut,
    ListRequest,
    NodeList,
    QueryRequest,
    RepairOut,
    SearchOut,
    SearchRequest,
    TenantOut,
    WhoAmI,
    WouldForgetOut,
    answer_out,
    backfill_out,
    consolidation_out,
    import_out,
    node_list,
    repair_out,
    search_out,
    would_forget_out,
)

__all__ = ["keys_router", "router"]

router = APIRouter(prefix="/v1", tags=["memory"])
keys_router = APIRouter(prefix="/v1/keys", tags=["keys"])
NDJSON = "application/x-ndjson"


def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


@router.post("/search", response_model=SearchOut, responses=errors(502, 504), summary="Adaptive retrieval")
def search(body: SearchRequest, scope: Scope, request: Request) -> SearchOut:
    """The top-``k`` evidence with a trace summary (stop reason, controller calls, latency);
    ``trace: true`` adds the full trace (routing, budgets, each round's assessment and scored pool)."""
    service = _service(request)
    where = body.where()
    found = service.read(
        lambda: scope.search(body.query, k=body.k, where=where, group=body.group, now=body.now)
    )
    t = found.trace
    service.metrics.observe_query("search", t.stop_reason, t.calls_by_purpose)
    return search_out(found, with_trace=body.trace)


@router.post("/answer", response_model=AnswerOut, responses=errors(502, 504), summary="Retrieve, then answer")
def answer(body: QueryRequest, scope: Scope, request: Request) -> AnswerOut:
    """System Two answers from the retrieved evidence only; ``abstained`` is true when it had none."""
    service = _service(request)
    where = body.where()
    ans = service.read(lambda: scope.answer(body.query, k=body.k, where=where))
    t = ans.trace
    service.metrics.observe_query("answer", t.stop_reason, t.calls_by_purpose)
    return answer_out(body.query, ans, with_trace=body.trace)


@router.post("/list", response_model=NodeList, responses=errors(), summary="List memories by filter")
def list_memories(body: ListRequest, scope: Scope) -> NodeList:
    """The memories matching every given condition (speaker, session, since/until, metadata), in time
    order, ``offset`` skipped, at most ``limit``."""
    nodes = scope.list_memories(
        where=body.where(), limit=body.limit + 1, offset=body.offset, status=body.status
    )
    return node_list(nodes, limit=body.limit, offset=body.offset)


@router.post("/forget", response_model=ForgetResponse, responses=errors(), summary="Forget by filter")
def forget(body: ForgetRequest, scope: Scope, request: Request) -> ForgetResponse:
    where = body.where()  # the model made sure: filter fields, or all=true without any
    service = _service(request)
    removed = service.write(lambda: scope.forget_all() if body.all else scope.forget(where=where))
    return ForgetResponse(forgotten=removed)


@router.post(
    "/forget/preview", response_model=WouldForgetOut, responses=errors(), summary="What a forget would remove"
)
def forget_preview(body: ForgetRequest, scope: Scope) -> WouldForgetOut:
    """The memories ``POST /v1/forget`` with the same body would remove now, removing nothing."""
    nodes = scope.would_forget() if body.all else scope.would_forget(where=body.where())
    return would_forget_out(nodes)


@router.post(
    "/repair", response_model=RepairOut, responses=errors(502, 504), summary="Complete pending memories"
)
def repair(scope: Scope, request: Request) -> RepairOut:
    """Complete the controller decisions of the memories a controller outage left pending."""
    return repair_out(_service(request).write(scope.repair))


@router.post(
    "/repair/views",
    response_model=BackfillOut,
    responses=errors(502, 504),
    summary="Edges of views turned on later",
)
def backfill_views(scope: Scope, request: Request) -> BackfillOut:
    """Give the tenant's memories the edges of the profile's views that their writes did not make
    (the views were off then); running it again adds nothing (``dualmem repair --views``)."""
    return backfill_out(_service(request).write(scope.backfill_views))


@router.post(
    "/consolidate", response_model=ConsolidationOut, responses=errors(502, 504), summary="One pass now"
)
def consolidate(scope: Scope, request: Request) -> ConsolidationOut:
    return consolidation_out(_service(request).write(scope.consolidate))


def _stream(path: Path) -> Iterator[bytes]:
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(64 * 1024):
                yield chunk
    finally:
        path.unlink(missing_ok=True)


@router.get(
    "/export",
    responses={
        200: {"content": {NDJSON: {"schema": {"type": "string"}}}, "description": "JSON Lines"},
        **errors(),
    },
    response_class=StreamingResponse,
    summary="The tenant's whole memory as JSON Lines (streamed)",
)
def export(scope: Scope, request: Request) -> StreamingResponse:
    fd, name = tempfile.mkstemp(prefix="dualmem-export-", suffix=".jsonl")
    os.close(fd)
    path = Path(name)
    try:
        _service(request).write(lambda: scope.export_jsonl(path))  # a consistent snapshot
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return StreamingResponse(_stream(path), media_type=NDJSON)


@router.post(
    "/import",
    response_model=ImportOut,
    responses=errors(409),
    openapi_extra={"requestBody": {"required": True, "content": {NDJSON: {"schema": EXPORT_SCHEMA}}}},
    summary="Load a JSON Lines export of the caller's tenant (all of it or nothing)",
)
async def import_jsonl(request: Request, scope: Scope) -> ImportOut:
    from starlette.concurrency import run_in_threadpool

    raw = await request.body()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput("the import is not UTF-8 text") from exc
    service = _service(request)

    def run() -> ImportOut:
        fd, name = tempfile.mkstemp(prefix="dualmem-import-", suffix=".jsonl")
        path = Path(name)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
            return import_out(service.write(lambda: scope.import_jsonl(path)))
        finally:
            path.unlink(missing_ok=True)

    return await run_in_threadpool(run)


@router.get("/stats", response_model=dict[str, Any], responses=errors(), summary="Counts for the tenant")
def stats(scope: Scope, request: Request) -> dict[str, Any]:
    out: dict[str, Any] = dict(scope.stats())
    waiting = _service(request).backlog().get(scope.tenant, 0)
    out["consolidation_backlog"] = waiting
    return out


@router.get("/whoami", response_model=WhoAmI, responses=errors(), summary="The caller's key and tenant")
def whoami(who: Annotated[Principal, Depends(principal)]) -> WhoAmI:
    t = who.tenant
    return WhoAmI(
        key_id=who.key.id if who.key else None,
        admin=who.admin,
        tenant=TenantOut(user=t.user, agent=t.agent, run=t.run) if t else None,
    )


def key_out(k: ApiKey) -> KeyOut:
    return KeyOut(
        id=k.id, user=k.user, agent=k.agent, run=k.run, admin=k.admin, label=k.label,
        created_at=k.created_at, revoked_at=k.revoked_at,
    )  # fmt: skip


Admin = Annotated[Principal, Depends(admin_principal)]


@keys_router.post("", status_code=201, response_model=KeyCreated, responses=errors(), summary="Create a key")
def create_key(body: KeyCreate, request: Request, _: Admin) -> KeyCreated:
    key, token = _service(request).keys.create(
        user=body.user, agent=body.agent, run=body.run, admin=body.admin, label=body.label
    )
    return KeyCreated(key=key_out(key), token=token)


@keys_router.get("", response_model=list[KeyOut], responses=errors(), summary="Every key (no secrets)")
def list_keys(request: Request, _: Admin) -> list[KeyOut]:
    return [key_out(k) for k in _service(request).keys.list()]


@keys_router.delete("/{key_id}", response_model=KeyOut, responses=errors(404), summary="Revoke a key")
def revoke_key(
    key_id: Annotated[str, PathParam(pattern=r"^[0-9a-f]{8}$")], request: Request, _: Admin
) -> KeyOut:
    return key_out(_service(request).keys.revoke(key_id))

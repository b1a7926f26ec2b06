"""``create_app``: the FastAPI app over one ``Memory`` (no module globals; all state on ``app.state``)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi_offline import FastAPIOffline
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import dualmem
from dualmem import Memory
from dualmem.errors import DualmemError
from dualmem.server import routes_memories, routes_ops
from dualmem.server.auth import Authenticator, RateLimiter, principal
from dualmem.server.bodies import check_json_body
from dualmem.server.keys import KeyStore
from dualmem.server.metrics import Metrics
from dualmem.server.problems import PROBLEM_TYPE, install_handlers, problem_response
from dualmem.server.routes_memories import errors
from dualmem.server.service import Service
from dualmem.vocab import Tenant
from dualmem.wire.schemas import MAX_TEXT, Status

__all__ = ["DOCS_ASSETS", "ServerSettings", "create_app"]

#: where the API docs' assets (Swagger UI, ReDoc) are served from
DOCS_ASSETS = "/docs/assets"


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """How the app behaves; the defaults suit a service on 127.0.0.1."""

    #: with auth off every request is ``tenant`` (``dualmem serve --no-auth`` allows it on loopback only)
    auth: bool = True
    tenant: Tenant | None = None
    rate_limit: float | None = 200.0  # requests per second per key; None: unlimited
    burst: int = 400
    max_body_bytes: int = 1 << 20
    #: larger limits for some paths (imports)
    body_limits: Mapping[str, int] = field(default_factory=lambda: {"/v1/import": 64 << 20})
    consolidate_every: int | None = None  # None: the memory profile's consolidate_every
    consolidate_interval_s: float = 30.0
    lock_wait_s: float = 30.0
    max_reads: int | None = None  # searches/answers at once; None: the number of cores (at least 2)
    #: ``/metrics`` without an API key (by default it needs one: any valid key, admin or tenant)
    metrics_public: bool = False


def create_app(
    memory: Memory,
    *,
    keys: KeyStore | None = None,
    settings: ServerSettings | None = None,
    routers: Sequence[APIRouter] = (),
) -> FastAPI:
    """The HTTP API over ``memory``. ``keys`` holds the API keys (an empty in-memory store if omitted).

    ``routers`` are mounted as they are (the web inspector's ``/ui`` router plugs in here); their
    routes can depend on ``dualmem.server.auth.tenant_scope`` for the same auth as the API.
    The caller owns ``memory`` and ``keys`` and closes them after the app stopped.
    """
    cfg = settings or ServerSettings()
    if not cfg.auth and cfg.tenant is None:
        raise dualmem.ConfigError("auth is off but no tenant was given", hint="pass settings.tenant")
    store = keys if keys is not None else KeyStore.open(":memory:")
    service = Service(
        memory, store, consolidate_every=cfg.consolidate_every,
        consolidate_interval_s=cfg.consolidate_interval_s, lock_wait_s=cfg.lock_wait_s,
        max_reads=cfg.max_reads,
    )  # fmt: skip
    limiter = RateLimiter(cfg.rate_limit, cfg.burst) if cfg.rate_limit else None

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        service.start()
        try:
            yield
        finally:
            await run_in_threadpool(service.stop)

    # /docs (Swagger UI) and /redoc load their scripts and styles from the fastapi-offline package,
    # served here: no CDN, so they work on a machine without internet (and contact nothing else)
    app = FastAPIOffline(
        title="dualmem",
        version=dualmem.__version__,
        description="Agent memory with a fast System-One controller. Errors are RFC 9457 problem JSON.",
        lifespan=lifespan,
        static_url=DOCS_ASSETS,
        swagger_ui_parameters={"validatorUrl": None},  # no badge fetched from swagger.io
    )
    app.state.service = service
    app.state.auth = Authenticator(store, tenant=None if cfg.auth else cfg.tenant, limiter=limiter)
    install_handlers(app)
    app.include_router(routes_memories.router)
    app.include_router(routes_ops.router)
    app.include_router(routes_ops.keys_router)
    app.include_router(_ops_router(public_metrics=cfg.metrics_public))
    for extra in routers:
        app.include_router(extra)
    app.add_middleware(BodyLimit, default=cfg.max_body_bytes, overrides=dict(cfg.body_limits))
    app.add_middleware(RequestMetrics, metrics=service.metrics)
    _problem_media_types(app)
    return app


def _problem_media_types(app: FastAPI) -> None:
    """Document error responses as ``application/problem+json`` (FastAPI writes ``application/json``)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        for path in schema.get("paths", {}).values():
            for operation in path.values():
                for response in operation.get("responses", {}).values():
                    content = response.get("content", {})
                    if PROBLEM_TYPE in content and "application/json" in content:
                        content[PROBLEM_TYPE] = content.pop("application/json")
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _ops_router(*, public_metrics: bool) -> APIRouter:
    ops = APIRouter(tags=["operations"])
    metrics_auth = [] if public_metrics else [Depends(principal)]

    @ops.get("/healthz", response_model=Status, summary="The process is up")
    def healthz() -> Status:
        return Status(status="ok")

    @ops.get(
        "/readyz",
        response_model=Status,
        responses={503: {"model": Status, "description": "not ready"}},
        summary="The database answers and the consolidation worker runs",
    )
    def readyz(request: Request, response: Response) -> Status:
        service: Service = request.app.state.service
        try:
            nodes = service.memory.store.count()
        except DualmemError as exc:
            response.status_code = 503
            return Status(status="unavailable", detail={"error": exc.one_line()})
        worker = service.consolidate_every <= 0 or service.worker_alive()
        response.status_code = 200 if worker else 503
        return Status(status="ready" if worker else "starting", detail={"nodes": nodes, "worker": worker})

    @ops.get(
        "/metrics",
        response_class=Response,
        responses={
            200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "metrics"},
            **({} if public_metrics else errors(401)),
        },
        dependencies=metrics_auth,
        summary="Prometheus text (needs an API key unless the server was started with --metrics-public)",
    )
    def metrics(request: Request) -> Response:
        service: Service = request.app.state.service
        return Response(service.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    return ops


#: routes whose body is not JSON (JSON Lines)
RAW_BODY_PATHS = frozenset({"/v1/import"})


class _HTTPMiddleware:
    """An ASGI middleware that acts on HTTP requests (:meth:`http`) and passes anything else
    (lifespan, websockets) straight to ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError


class BodyLimit(_HTTPMiddleware):
    """Refuses bodies over the limit with a 413 before the app reads them (buffers at most the limit),
    and JSON bodies that are not JSON, not UTF-8 or nest too deep (:mod:`dualmem.server.bodies`)."""

    def __init__(self, app: ASGIApp, *, default: int, overrides: dict[str, int]) -> None:
        super().__init__(app)
        self.default = default
        self.overrides = overrides

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.overrides.get(scope["path"], self.default)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await self._refuse(scope, receive, send, limit)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await self._refuse(scope, receive, send, limit)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if scope["method"] in ("POST", "PUT", "PATCH") and scope["path"] not in RAW_BODY_PATHS:
            content_type = dict(scope["headers"]).get(b"content-type", b"").decode("latin-1")
            problem = check_json_body(content_type, body)
            if problem is not None:
                response = problem_response(
                    problem.status, problem.code, problem.detail, hint=problem.hint, instance=scope["path"]
                )
                await response(scope, receive, send)
                return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        hint = (  # one huge observation is the usual cause on the memory routes: name its own limit
            f"one observation's text holds at most {MAX_TEXT} characters: split a longer text into "
            "several observations (and a large batch into several requests)"
            if scope["path"].startswith("/v1/memories")
            else "send a smaller request"
        )
        response = problem_response(
            413, "too-large", f"the request body is over {limit} bytes", hint=hint, instance=scope["path"]
        )
        await response(scope, receive, send)


class RequestMetrics(_HTTPMiddleware):
    """Counts requests and observes latency by route template (never by raw path)."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        super().__init__(app)
        self.metrics = metrics

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        status = 500

        async def record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, record)
        finally:
            route: Any = scope.get("route")
            name = getattr(route, "path", None) or "unmatched"
            method = str(scope.get("method", ""))
            self.metrics.requests.labels(name, method, str(status)).inc()
            self.metrics.latency.labels(name, method).observe(time.perf_counter() - started)

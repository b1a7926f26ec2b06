"""RFC 9457 problem documents mapped from dualmem's error tree, and the handlers that send them."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from dualmem.errors import (
    AnswererError,
    AuthError,
    ConfigError,
    Conflict,
    ControllerError,
    ControllerTimeout,
    DatabaseLocked,
    DualmemError,
    EmbedderError,
    EmbedderMismatch,
    InvalidInput,
    NotFound,
    StoreError,
    TenantRequired,
    UserError,
)

__all__ = [
    "PROBLEM_TYPE",
    "ApiProblem",
    "allowed_methods",
    "install_handlers",
    "problem_response",
    "status_for",
]

PROBLEM_TYPE = "application/problem+json"
log = logging.getLogger("dualmem.server")

#: most specific first
_STATUS: tuple[tuple[type[DualmemError], int], ...] = (
    (NotFound, 404),
    (Conflict, 409),
    (AuthError, 401),
    (TenantRequired, 400),
    (EmbedderMismatch, 409),
    (InvalidInput, 422),
    (ConfigError, 400),
    (UserError, 400),
    (DatabaseLocked, 503),
    (StoreError, 503),
    (ControllerTimeout, 504),
    (ControllerError, 502),
    (EmbedderError, 502),
    (AnswererError, 502),
)

_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Request too large",
    415: "Unsupported media type",
    422: "Invalid input",
    429: "Too many requests",
    500: "Internal error",
    502: "Backend failed",
    503: "Unavailable",
    504: "Backend timed out",
}


class ApiProblem(Exception):
    """An HTTP-level problem that has no dualmem error class (auth, rate limit, idempotency)."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        hint: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.hint = hint
        self.headers = headers or {}


def status_for(exc: DualmemError) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return 500


def problem_response(
    status: int,
    code: str,
    detail: str,
    *,
    hint: str | None = None,
    instance: str | None = None,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": f"urn:dualmem:problem:{code}",
        "title": _TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "code": code,
        "hint": hint,
        "instance": instance,
    }
    if errors is not None:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, media_type=PROBLEM_TYPE, headers=headers)


def _field_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    out = []
    for err in exc.errors():
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        out.append(
            {"loc": [str(p) for p in err.get("loc", ())], "msg": msg, "type": str(err.get("type", ""))}
        )
    return out


def _first(errors: list[dict[str, Any]]) -> str:
    """The first field error as ``where.it.is: message`` (and how many more there are)."""
    if not errors:
        return "the request does not match the schema"
    first = errors[0]
    where = ".".join(p for p in first["loc"] if p != "body") or "body"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


def install_handlers(app: FastAPI) -> None:
    @app.exception_handler(DualmemError)
    async def on_dualmem(request: Request, exc: DualmemError) -> JSONResponse:
        status = status_for(exc)
        headers = {"Retry-After": "1"} if status == 503 else None
        if status >= 500:
            log.warning("%s %s failed: %s", request.method, request.url.path, exc.one_line())
        return problem_response(
            status, exc.code, exc.message, hint=exc.hint, instance=request.url.path, headers=headers
        )

    @app.exception_handler(ApiProblem)
    async def on_problem(request: Request, exc: ApiProblem) -> JSONResponse:
        return problem_response(
            exc.status,
            exc.code,
            exc.detail,
            hint=exc.hint,
            instance=request.url.path,
            headers=dict(exc.headers or {}),
        )

    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = _field_errors(exc)
        malformed = any(e["type"] in ("json_invalid", "json_type") for e in errors)
        status, code = (400, "malformed-json") if malformed else (422, "invalid-input")
        detail = "the body is not valid JSON" if malformed else f"invalid request: {_first(errors)}"
        return problem_response(
            status, code, detail, hint="see /openapi.json", instance=request.url.path, errors=errors
        )

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> Response:
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            # Starlette names only the first route of the path; every method of the resource it is
            allow = allowed_methods(request)
            if request.method == "OPTIONS":
                return Response(status_code=204, headers={"Allow": allow})
            headers["Allow"] = allow
        code = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http-error")
        return problem_response(
            exc.status_code, code, str(exc.detail), instance=request.url.path, headers=headers
        )


def allowed_methods(request: Request) -> str:
    """The ``Allow`` header of the requested resource: each method some route of the path answers
    (asked of the router itself, so included routers count), and OPTIONS."""
    allowed = []
    for method in ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT"):
        probe = {**request.scope, "method": method}
        if any(route.matches(probe)[0] == Match.FULL for route in request.app.router.routes):
            allowed.append(method)
    return ", ".join([*allowed, "OPTIONS"])

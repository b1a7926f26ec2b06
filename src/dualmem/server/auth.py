"""Who is calling: API key -> principal -> tenant, a per-key rate limit, and the FastAPI dependencies.

The tenant always comes from the key (or, with auth off on loopback, from the server's settings);
no request body or query parameter can name one.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from dualmem import Scope as TenantScope
from dualmem.server.keys import ApiKey, KeyStore
from dualmem.server.problems import ApiProblem
from dualmem.server.service import Service
from dualmem.vocab import Tenant

__all__ = [
    "Authenticator",
    "Principal",
    "RateLimiter",
    "Scope",
    "admin_principal",
    "principal",
    "tenant_scope",
]

bearer = HTTPBearer(auto_error=False, description="an API key from `dualmem keys create`")
api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="the same key, as a header")


@dataclass(frozen=True, slots=True)
class Principal:
    key: ApiKey | None  # None when auth is off
    tenant: Tenant | None  # None for an admin key

    @property
    def admin(self) -> bool:
        return self.key is not None and self.key.admin

    @property
    def owner(self) -> str:
        """A stable id for per-caller state (idempotency records, rate buckets)."""
        if self.key is not None:
            return f"key:{self.key.id}"
        t = self.tenant
        return f"tenant:{t.user}/{t.agent or ''}/{t.run or ''}" if t else "anonymous"


class RateLimiter:
    """A token bucket per caller: ``rate`` requests per second, bursts up to ``burst``."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, owner: str) -> float:
        """0 when allowed, else the seconds to wait."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(owner, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[owner] = (tokens - 1.0, now)
                return 0.0
            self._buckets[owner] = (tokens, now)
            return (1.0 - tokens) / self.rate


class Authenticator:
    def __init__(self, keys: KeyStore, *, tenant: Tenant | None, limiter: RateLimiter | None) -> None:
        self.keys = keys
        self.tenant = tenant  # set: auth is off and every request is this tenant
        self.limiter = limiter

    def authenticate(self, token: str | None) -> Principal:
        if self.tenant is not None:
            found = self.keys.verify(token) if token else None
            return Principal(found, found.tenant if found else self.tenant)
        if not token:
            raise ApiProblem(
                401, "unauthorized", "an API key is required",
                hint="send Authorization: Bearer <key> (create one with `dualmem keys create --user U`)",
                headers={"WWW-Authenticate": 'Bearer realm="dualmem"'},
            )  # fmt: skip
        key = self.keys.verify(token)
        if key is None:
            raise ApiProblem(
                401, "unauthorized", "the API key is unknown or revoked",
                headers={"WWW-Authenticate": 'Bearer realm="dualmem", error="invalid_token"'},
            )  # fmt: skip
        return Principal(key, key.tenant)

    def throttle(self, who: Principal) -> None:
        if self.limiter is None:
            return
        wait = self.limiter.take(who.owner)
        if wait > 0:
            raise ApiProblem(
                429, "rate-limited", "too many requests for this key",
                hint=f"retry after {wait:.2f} s", headers={"Retry-After": str(max(1, round(wait)))},
            )  # fmt: skip


def principal(
    request: Request,
    creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    header_key: Annotated[str | None, Depends(api_key_header)],
) -> Principal:
    auth: Authenticator = request.app.state.auth
    token = creds.credentials if creds is not None and creds.scheme.lower() == "bearer" else header_key
    who = auth.authenticate(token)
    auth.throttle(who)
    return who


def tenant_principal(who: Annotated[Principal, Depends(principal)]) -> Principal:
    if who.tenant is None:
        raise ApiProblem(
            403, "forbidden", "an admin key manages keys and cannot read or write memories",
            hint="use a key created with --user",
        )  # fmt: skip
    return who


def tenant_scope(request: Request, who: Annotated[Principal, Depends(tenant_principal)]) -> TenantScope:
    """The caller's tenant-bound memory (for routers such as the web inspector)."""
    service: Service = request.app.state.service
    assert who.tenant is not None
    return service.scope(who.tenant)


#: a route's tenant-bound memory parameter (``scope: Scope``), resolved by :func:`tenant_scope`
Scope = Annotated[TenantScope, Depends(tenant_scope)]


def admin_principal(who: Annotated[Principal, Depends(principal)]) -> Principal:
    if not who.admin:
        raise ApiProblem(
            403, "forbidden", "key management needs an admin key", hint="dualmem keys create --admin"
        )
    return who

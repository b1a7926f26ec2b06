"""Consolidation work kept in the store, so no process loses it: the cadence backlog and due passes.

:class:`StoreBacklog` is a :class:`~dualmem.write.cadence.Backlog` in the store's metadata: the ids
written since a tenant's last periodic pass survive the process (25 separate CLI ``add`` calls
reach a pass at the 20th). :class:`WorkQueue` holds the passes that are due and not yet done.
Both are updated inside the write's own transaction, so a write and the pass it makes due commit
together. A pass is claimed by one process before it runs and removed when it is done; a pass whose
claimant died (a dead local pid, or a claim older than an hour) is resumed by whichever process
opens the memory next.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Sequence
from typing import cast

from dualmem.plane.base import WriteStore
from dualmem.types import JSONValue, Tenant

__all__ = ["QueuedPass", "StoreBacklog", "WaitingTenants", "WorkQueue"]

_QUEUE_KEY = "consolidation:queue"
_STALE_S = 3600.0
_MAX_ATTEMPTS = 3

QueuedPass = tuple[Tenant, tuple[str, ...]]


def _tenant_key(tenant: Tenant) -> str:
    return json.dumps([tenant.user, tenant.agent, tenant.run])


class StoreBacklog:
    """The cadence backlog in the store's metadata (one key per tenant)."""

    def __init__(self, store: WriteStore) -> None:
        self._store = store

    def load(self, tenant: Tenant) -> list[str]:
        value = self._store.meta.get("consolidation:backlog:" + _tenant_key(tenant))
        return [str(i) for i in value] if isinstance(value, list) else []

    def save(self, tenant: Tenant, node_ids: Sequence[str]) -> None:
        key = "consolidation:backlog:" + _tenant_key(tenant)
        if node_ids or self._store.meta.get(key) is not None:
            self._store.meta.set(key, list(node_ids))


class WaitingTenants:
    """The tenants with writes waiting for a pass, listed in the store's metadata while a server
    drives the scheduler (so its passes by time survive a restart; the library keeps no such list)."""

    _KEY = "consolidation:waiting"

    def __init__(self, store: WriteStore) -> None:
        self._store = store

    def load(self) -> list[Tenant]:
        value = self._store.meta.get(self._KEY)
        found = [_tenant({"tenant": v}) for v in value] if isinstance(value, list) else []
        return [t for t in found if t is not None]

    def save(self, tenants: Sequence[Tenant]) -> None:
        if tenants or self._store.meta.get(self._KEY) is not None:
            self._store.meta.set(self._KEY, [[t.user, t.agent, t.run] for t in tenants])


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _claim_is_dead(owner: object, claimed: object) -> bool:
    if not isinstance(owner, str) or not isinstance(claimed, int | float):
        return True
    host, _, pid = owner.rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False
    return time.time() - float(claimed) > _STALE_S


class WorkQueue:
    """Due consolidation passes, in the store's metadata (one JSON list)."""

    def __init__(self, store: WriteStore) -> None:
        self._store = store

    def _entries(self) -> list[dict[str, JSONValue]]:
        value = self._store.meta.get(_QUEUE_KEY)
        return [cast(dict[str, JSONValue], e) for e in value] if isinstance(value, list) else []

    def push(self, tenant: Tenant, node_ids: Sequence[str]) -> None:
        """Queue a pass (call inside the write's transaction)."""
        entry: dict[str, JSONValue] = {
            "tenant": [tenant.user, tenant.agent, tenant.run],
            "ids": list(node_ids),
            "owner": None,
            "claimed": None,
            "attempts": 0,
        }
        with self._store.transaction():
            self._store.meta.set(_QUEUE_KEY, [*self._entries(), entry])

    def claim(self, tenant: Tenant, node_ids: Sequence[str]) -> bool:
        """Take the queued pass for this process; ``False`` if another live process holds it."""
        with self._store.transaction():
            entries = self._entries()
            for entry in entries:
                if _matches(entry, tenant, node_ids):
                    if entry.get("owner") not in (None, _owner()) and not _claim_is_dead(
                        entry.get("owner"), entry.get("claimed")
                    ):
                        return False
                    attempts = entry.get("attempts")
                    entry.update(
                        owner=_owner(),
                        claimed=time.time(),
                        attempts=(attempts if isinstance(attempts, int) else 0) + 1,
                    )
                    self._store.meta.set(_QUEUE_KEY, cast(JSONValue, entries))
                    return True
        return True  # not queued (e.g. an explicit window): nothing to coordinate

    def finish(self, tenant: Tenant, node_ids: Sequence[str]) -> None:
        """Drop the pass (done, or failed too often to retry)."""
        with self._store.transaction():
            entries = self._entries()
            kept = [e for e in entries if not _matches(e, tenant, node_ids)]
            if len(kept) != len(entries):
                self._store.meta.set(_QUEUE_KEY, cast(JSONValue, kept))

    def release(self, tenant: Tenant, node_ids: Sequence[str]) -> None:
        """A pass failed: unclaim it for a later retry, or drop it after a few attempts."""
        with self._store.transaction():
            entries = self._entries()
            kept: list[dict[str, JSONValue]] = []
            for entry in entries:
                attempts = entry.get("attempts")
                if _matches(entry, tenant, node_ids):
                    if isinstance(attempts, int) and attempts >= _MAX_ATTEMPTS:
                        continue
                    entry.update(owner=None, claimed=None)
                kept.append(entry)
            self._store.meta.set(_QUEUE_KEY, cast(JSONValue, kept))

    def resumable(self) -> list[QueuedPass]:
        """Queued passes no live process holds (left by a process that exited or was killed)."""
        out: list[QueuedPass] = []
        for entry in self._entries():
            if entry.get("owner") is None or _claim_is_dead(entry.get("owner"), entry.get("claimed")):
                tenant = _tenant(entry)
                if tenant is not None:
                    out.append((tenant, tuple(str(i) for i in cast(list[str], entry.get("ids") or []))))
        return out

    def __len__(self) -> int:
        return len(self._entries())


def _tenant(entry: dict[str, JSONValue]) -> Tenant | None:
    parts = entry.get("tenant")
    if not isinstance(parts, list) or len(parts) != 3 or not isinstance(parts[0], str):
        return None
    agent, run = parts[1], parts[2]
    return Tenant(parts[0], agent if isinstance(agent, str) else None, run if isinstance(run, str) else None)


def _matches(entry: dict[str, JSONValue], tenant: Tenant, node_ids: Sequence[str]) -> bool:
    return entry.get("tenant") == [tenant.user, tenant.agent, tenant.run] and entry.get("ids") == list(
        node_ids
    )

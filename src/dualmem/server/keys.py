"""The service database: API keys (stored hashed), HTTP idempotency records, the consolidation backlog.

A small SQLite file of its own beside the memory (``memory.db`` -> ``memory.keys.db``), so the memory
schema stays the storage engine's alone and a key file can be backed up or rotated separately.

A key is ``dmk_<id>_<secret>``: 8 hex digits of public id and 32 random bytes. Only its SHA-256 is
stored (the token has 256 bits of entropy, so a plain hash is enough); the token is shown once.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import secrets
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dualmem.errors import ConfigError, DatabaseLocked, InvalidInput, NotFound, StoreError
from dualmem.vocab import Tenant, utcnow

__all__ = ["ApiKey", "KeyStore", "Replay", "keys_path_for"]

TOKEN_PREFIX = "dmk_"
IDEMPOTENCY_TTL = dt.timedelta(hours=24)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS api_keys (
  id TEXT PRIMARY KEY,
  hash TEXT NOT NULL UNIQUE,
  user_id TEXT, agent_id TEXT, run_id TEXT,
  admin INTEGER NOT NULL DEFAULT 0,
  label TEXT,
  created_at TEXT NOT NULL,
  revoked_at TEXT
);
CREATE TABLE IF NOT EXISTS idempotency (
  owner TEXT NOT NULL,
  key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  status INTEGER NOT NULL,
  body TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (owner, key)
);
CREATE TABLE IF NOT EXISTS consolidation_backlog (
  user_id TEXT NOT NULL, agent_id TEXT NOT NULL DEFAULT '', run_id TEXT NOT NULL DEFAULT '',
  writes INTEGER NOT NULL,
  PRIMARY KEY (user_id, agent_id, run_id)
);
"""


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A key's public record. ``tenant`` is ``None`` for an admin key (key management only)."""

    id: str
    user: str | None
    agent: str | None
    run: str | None
    admin: bool
    label: str | None
    created_at: dt.datetime
    revoked_at: dt.datetime | None = None

    @property
    def tenant(self) -> Tenant | None:
        return None if self.user is None else Tenant(self.user, self.agent, self.run)


@dataclass(frozen=True, slots=True)
class Replay:
    """A stored response to an idempotent request."""

    request_hash: str
    status: int
    body: Any


def keys_path_for(db: str) -> str:
    """Where the service database lives for a memory at ``db`` (``:memory:`` stays in memory)."""
    if db == ":memory:":
        return ":memory:"
    if "://" in db:
        raise ConfigError("a store URL has no folder for the key file", hint="pass --keys PATH")
    path = Path(db).expanduser()
    return str(path.with_name(f"{path.stem}.keys{path.suffix or '.db'}"))


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _time(value: str | None) -> dt.datetime | None:
    return None if value is None else dt.datetime.fromisoformat(value)


class KeyStore:
    """API keys, idempotency records and the consolidation backlog; safe to share across threads."""

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self._conn = conn
        self.path = path
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: str | Path, *, timeout: float = 5.0) -> KeyStore:
        target = str(path)
        if target != ":memory:" and not Path(target).parent.is_dir():
            raise ConfigError(f"cannot create {target}: its folder does not exist", hint="create it first")
        try:
            conn = sqlite3.connect(target, timeout=timeout, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open the key database {target}: {exc}") from exc
        return cls(conn, target)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                    self._conn.execute("COMMIT")
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    raise DatabaseLocked(f"the key database is locked: {exc}") from exc
                raise StoreError(f"key database: {exc}") from exc
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"key database: {exc}") from exc

    # -- keys ---------------------------------------------------------------------------------
    def create(
        self,
        *,
        user: str | None = None,
        agent: str | None = None,
        run: str | None = None,
        admin: bool = False,
        label: str | None = None,
    ) -> tuple[ApiKey, str]:
        """A new key and its token (the only time the token exists outside the caller)."""
        if admin and (user or agent or run):
            raise InvalidInput(
                "an admin key manages keys and has no tenant", hint="drop --user/--agent/--run"
            )
        if not admin:
            tenant = Tenant(user or "", agent, run)  # validates (a tenant key needs a user), normalises
            user, agent, run = tenant.user, tenant.agent, tenant.run
        key_id = secrets.token_hex(4)
        token = f"{TOKEN_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        key = ApiKey(key_id, user, agent, run, admin, label, utcnow())
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO api_keys (id, hash, user_id, agent_id, run_id, admin, label, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key_id, _hash(token), user, agent, run, int(admin), label, key.created_at.isoformat()),
            )
        return key, token

    def list(self, *, include_revoked: bool = True) -> list[ApiKey]:
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT id, user_id, agent_id, run_id, admin, label, created_at, revoked_at FROM api_keys "
                + ("" if include_revoked else "WHERE revoked_at IS NULL ")
                + "ORDER BY created_at, id"
            ).fetchall()
        return [self._row(r) for r in rows]

    def revoke(self, key_id: str) -> ApiKey:
        with self._tx() as conn:
            found = conn.execute(
                "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?",
                (utcnow().isoformat(), key_id),
            ).rowcount
        if not found:
            raise NotFound(f"no API key with id {key_id!r}", hint="see `dualmem keys list`")
        return next(k for k in self.list() if k.id == key_id)

    def verify(self, token: str) -> ApiKey | None:
        """The live key a token belongs to, or ``None`` (unknown, malformed or revoked)."""
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        digest = _hash(token)
        with self._tx() as conn:
            row = conn.execute(
                "SELECT id, user_id, agent_id, run_id, admin, label, created_at, revoked_at, hash "
                "FROM api_keys WHERE hash = ?",
                (digest,),
            ).fetchone()
        if row is None or not hmac.compare_digest(row[8], digest) or row[7] is not None:
            return None
        return self._row(row[:8])

    @staticmethod
    def _row(r: tuple[Any, ...]) -> ApiKey:
        created = _time(r[6])
        assert created is not None
        return ApiKey(r[0], r[1], r[2], r[3], bool(r[4]), r[5], created, _time(r[7]))

    # -- idempotency --------------------------------------------------------------------------
    def recall(self, owner: str, key: str) -> Replay | None:
        with self._tx() as conn:
            row = conn.execute(
                "SELECT request_hash, status, body, created_at FROM idempotency WHERE owner = ? AND key = ?",
                (owner, key),
            ).fetchone()
        if row is None or utcnow() - dt.datetime.fromisoformat(row[3]) > IDEMPOTENCY_TTL:
            return None
        return Replay(row[0], int(row[1]), json.loads(row[2]))

    def remember(self, owner: str, key: str, replay: Replay) -> None:
        now = utcnow()
        with self._tx() as conn:
            conn.execute(
                "DELETE FROM idempotency WHERE created_at < ?", ((now - IDEMPOTENCY_TTL).isoformat(),)
            )
            conn.execute(
                "INSERT OR REPLACE INTO idempotency (owner, key, request_hash, status, body, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (owner, key, replay.request_hash, replay.status, json.dumps(replay.body), now.isoformat()),
            )

    # -- consolidation backlog ----------------------------------------------------------------
    def save_backlog(self, backlog: dict[Tenant, int]) -> None:
        with self._tx() as conn:
            conn.execute("DELETE FROM consolidation_backlog")
            conn.executemany(
                "INSERT INTO consolidation_backlog (user_id, agent_id, run_id, writes) VALUES (?, ?, ?, ?)",
                [(t.user, t.agent or "", t.run or "", n) for t, n in backlog.items() if n > 0],
            )

    def load_backlog(self) -> dict[Tenant, int]:
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT user_id, agent_id, run_id, writes FROM consolidation_backlog"
            ).fetchall()
        return {Tenant(u, a or None, r or None): int(n) for u, a, r, n in rows}

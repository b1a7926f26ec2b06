"""One error tree for dualmem.

``DualmemError`` is the root. ``UserError`` means the caller can fix it (each carries a ``hint``);
``RuntimeFailure`` means something failed while running (a database, a remote backend). Adapters
translate these: the CLI prints one line and exits non-zero, HTTP answers a problem JSON.
"""

from __future__ import annotations

__all__ = [
    "AnswererError",
    "AuthError",
    "ConfigError",
    "Conflict",
    "ControllerError",
    "ControllerTimeout",
    "DatabaseCorrupt",
    "DatabaseLocked",
    "DualmemError",
    "EmbedderError",
    "EmbedderMismatch",
    "InvalidInput",
    "NotFound",
    "ReadOnlyStore",
    "RuntimeFailure",
    "StoreError",
    "TenantRequired",
    "UnknownDecision",
    "UserError",
]


class DualmemError(Exception):
    """Root of every error dualmem raises on purpose."""

    #: a short, stable identifier used by adapters (CLI, HTTP problem ``type``)
    code: str = "dualmem-error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        """The message (and hint) on one line, for a CLI or a log."""
        text = self.message.replace("\n", " ")
        if self.hint:
            text = f"{text} (hint: {self.hint})"
        return text


class UserError(DualmemError):
    """The caller can fix this: bad input, a missing tenant, a wrong file."""

    code = "user-error"


class InvalidInput(UserError):
    """An argument or a record is malformed (empty text, bad timestamp, wrong type)."""

    code = "invalid-input"


class TenantRequired(InvalidInput):
    """A call that reads or writes memories was made without a user id."""

    code = "tenant-required"


class NotFound(UserError):
    """An id that does not exist (or belongs to another tenant)."""

    code = "not-found"


class ReadOnlyStore(UserError):
    """A write was attempted on a memory opened read-only (or on a file the process cannot write)."""

    code = "read-only"


class Conflict(InvalidInput):
    """The request is well formed but the memory's state refuses it: an update of a superseded
    version, an import of ids that exist (HTTP 409). An ``InvalidInput``, as it was before it had
    a class of its own."""

    code = "conflict"


class AuthError(UserError):
    """A service refused the credentials: no API key, an unknown or revoked one, or a key that may
    not do this (an admin key reading memories, a tenant key managing keys)."""

    code = "auth-error"


class ConfigError(UserError):
    """An invalid profile, backend name or setting."""

    code = "config-error"


class EmbedderMismatch(UserError):
    """The database was built with another embedder or dimension."""

    code = "embedder-mismatch"


class UnknownDecision(ConfigError):
    """A controller was asked a decision key it does not know."""

    code = "unknown-decision"


class RuntimeFailure(DualmemError):
    """Something failed while running; retrying or repairing may help."""

    code = "runtime-failure"


class StoreError(RuntimeFailure):
    """The memory store failed."""

    code = "store-error"


class DatabaseLocked(StoreError):
    """Another process holds a lock on the database for too long."""

    code = "database-locked"


class DatabaseCorrupt(StoreError):
    """The file is not a dualmem database, or it is damaged."""

    code = "database-corrupt"


class EmbedderError(RuntimeFailure):
    """The embedder failed (model file missing, remote endpoint error)."""

    code = "embedder-error"


class ControllerError(RuntimeFailure):
    """A System-One backend failed or answered something malformed."""

    code = "controller-error"


class ControllerTimeout(ControllerError):
    """A System-One backend did not answer in time."""

    code = "controller-timeout"


class AnswererError(RuntimeFailure):
    """A System-Two answerer failed or answered something malformed."""

    code = "answerer-error"

"""dualmem: agent memory with a fast System-One controller, an open implementation of Jev-Mem.

Importing dualmem has no side effects: no files, no network, no model loading, no logging setup.

    from dualmem import Memory
    with Memory.open("memory.db") as mem:
        mira = mem.scope("mira")  # or pass user="mira" to every call
        mira.add("Mira: My old bicycle broke.", at="2024-05-14T10:00:00Z")
        print(mira.answer("Why did Mira buy a new bicycle?").text)
"""

from __future__ import annotations

from dualmem._version import __version__
from dualmem.config import Profile
from dualmem.control.config import JevConfig, LLMConfig
from dualmem.errors import (
    AuthError,
    ConfigError,
    Conflict,
    ControllerError,
    ControllerTimeout,
    DatabaseCorrupt,
    DatabaseLocked,
    DualmemError,
    EmbedderMismatch,
    InvalidInput,
    NotFound,
    RuntimeFailure,
    TenantRequired,
    UserError,
)
from dualmem.memory import Answer, Filter, Inspection, Memory, OpenOptions
from dualmem.read.trace import Retrieval, Trace
from dualmem.scope import Scope
from dualmem.types import Edge, Evidence, Node, Observation, TemporalRef, Tenant, TypeScores

__all__ = [
    "Answer",
    "AuthError",
    "ConfigError",
    "Conflict",
    "ControllerError",
    "ControllerTimeout",
    "DatabaseCorrupt",
    "DatabaseLocked",
    "DualmemError",
    "Edge",
    "EmbedderMismatch",
    "Evidence",
    "Filter",
    "Inspection",
    "InvalidInput",
    "JevConfig",
    "LLMConfig",
    "Memory",
    "Node",
    "NotFound",
    "Observation",
    "OpenOptions",
    "Profile",
    "Retrieval",
    "RuntimeFailure",
    "Scope",
    "TemporalRef",
    "Tenant",
    "TenantRequired",
    "Trace",
    "TypeScores",
    "UserError",
    "__version__",
]

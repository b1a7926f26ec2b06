"""dualmem: agent memory with a fast System-One controller, an open implementation of Jev-Mem.

Importing dualmem has no side effects: no files, no network, no model loading, no logging setup.

    from dualmem import Memory
    with Memory.open("memory.db") as mem:
        mira = mem.scope("mira")  # or pass user="mira" to every call
        mira.add("Mira: My old bicycle broke.", at="2024-05-14T10:00:00Z")
        print(mira.answer("Why did Mira buy a new bicycle?").text)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dualmem._version import __version__
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

if TYPE_CHECKING:
    from dualmem.config import Profile
    from dualmem.control.config import JevConfig, LLMConfig
    from dualmem.memory import Answer, Filter, Inspection, Memory, OpenOptions
    from dualmem.read.trace import Retrieval, Trace
    from dualmem.scope import Scope
    from dualmem.types import Edge, Evidence, Node, Observation, TemporalRef, Tenant, TypeScores
    from dualmem.vocab import BackfillReport, ConsolidationReport, Decision, ImportReport, WriteReport

#: Where each lazily imported name lives: ``import dualmem`` (and the ``dualmem`` command, which
#: imports this package first) loads numpy, pydantic and the memory core only when one is used.
_LAZY = {
    "Profile": "dualmem.config",
    "JevConfig": "dualmem.control.config",
    "LLMConfig": "dualmem.control.config",
    "Answer": "dualmem.memory",
    "Filter": "dualmem.memory",
    "Inspection": "dualmem.memory",
    "Memory": "dualmem.memory",
    "OpenOptions": "dualmem.memory",
    "Retrieval": "dualmem.read.trace",
    "Trace": "dualmem.read.trace",
    "Scope": "dualmem.scope",
    "Edge": "dualmem.types",
    "Evidence": "dualmem.types",
    "Node": "dualmem.types",
    "Observation": "dualmem.types",
    "TemporalRef": "dualmem.types",
    "Tenant": "dualmem.types",
    "TypeScores": "dualmem.types",
    "BackfillReport": "dualmem.vocab",
    "ConsolidationReport": "dualmem.vocab",
    "Decision": "dualmem.vocab",
    "ImportReport": "dualmem.vocab",
    "WriteReport": "dualmem.vocab",
}


def __getattr__(name: str) -> Any:
    """``dualmem.Memory`` and the other public names, imported on first use (PEP 562)."""
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'dualmem' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Answer",
    "AuthError",
    "BackfillReport",
    "ConfigError",
    "Conflict",
    "ConsolidationReport",
    "ControllerError",
    "ControllerTimeout",
    "DatabaseCorrupt",
    "DatabaseLocked",
    "Decision",
    "DualmemError",
    "Edge",
    "EmbedderMismatch",
    "Evidence",
    "Filter",
    "ImportReport",
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
    "WriteReport",
    "__version__",
]

"""dualmem over HTTP: ``create_app(memory, keys=..., settings=...)`` builds the FastAPI app.

Needs the ``[server]`` extra.

Run it with ``dualmem serve``. Importing this package does not import FastAPI; the documents it
answers with are :mod:`dualmem.wire` (shared with :mod:`dualmem.client`), which needs only pydantic.
``Service`` (the memory behind the routes: writes serialised, the consolidation cadence) and
``KeyStore`` (API keys) are public for the other adapters that serve the same memory (MCP).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dualmem.server.app import ServerSettings, create_app
    from dualmem.server.keys import KeyStore
    from dualmem.server.service import Service

__all__ = ["KeyStore", "ServerSettings", "Service", "create_app"]

_WHERE = {
    "KeyStore": "dualmem.server.keys",
    "ServerSettings": "dualmem.server.app",
    "Service": "dualmem.server.service",
    "create_app": "dualmem.server.app",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)

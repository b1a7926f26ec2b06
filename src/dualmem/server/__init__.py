"""dualmem over HTTP: ``create_app(memory, keys=..., settings=...)`` builds the FastAPI app.

Needs the ``[server]`` extra.

Run it with ``dualmem serve``. Importing this package does not import FastAPI; :mod:`dualmem.server.schemas`
(the wire models shared with :mod:`dualmem.client`) needs only pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dualmem.server.app import ServerSettings, create_app

__all__ = ["ServerSettings", "create_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from dualmem.server import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The web inspector's assets (``static/``: plain HTML, JS and CSS, no build step) and growth data.

The router that serves them is :func:`dualmem.server.routes_inspector.inspector_router`.
"""

from __future__ import annotations

__all__: list[str] = []

"""The jevcompat reference mock of Jev (``jevcompat.mock``), started with a short shutdown poll.

``jevcompat.mock.Running`` polls for shutdown every 0.5 s, which adds half a second to every test;
this starts the same server (``make_server``) with a 20 ms poll.
"""

from __future__ import annotations

import threading
from typing import Any

from jevcompat.mock import MockConfig, make_server

__all__ = ["JevMock", "MockConfig"]


class JevMock:
    """Context manager: the jevcompat mock on 127.0.0.1 (free port); ``url`` is its root."""

    def __init__(self, cfg: MockConfig | None = None) -> None:
        self.cfg = cfg or MockConfig()
        self.server = make_server(self.cfg)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> JevMock:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

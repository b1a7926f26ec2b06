"""A local HTTP server run on a daemon thread, as the fake servers of the tests are."""

from __future__ import annotations

import threading
from socketserver import BaseServer
from typing import Self


class ServedInThread:
    """Serves ``server`` (bound to 127.0.0.1, a free port) on a daemon thread polling for shutdown
    every 20 ms; ``url`` is its root. A context manager, or :meth:`start` / :meth:`stop`."""

    def __init__(self, server: BaseServer) -> None:
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

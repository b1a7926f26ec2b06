"""The jevcompat reference mock of Jev (``jevcompat.mock``), started with a short shutdown poll.

``jevcompat.mock.Running`` polls for shutdown every 0.5 s, which adds half a second to every test;
this starts the same server (``make_server``) with a 20 ms poll.
"""

from __future__ import annotations

from jevcompat.mock import MockConfig, make_server

from fakes.serving import ServedInThread

__all__ = ["JevMock", "MockConfig"]


class JevMock(ServedInThread):
    """Context manager: the jevcompat mock on 127.0.0.1 (free port); ``url`` is its root."""

    def __init__(self, cfg: MockConfig | None = None) -> None:
        self.cfg = cfg or MockConfig()
        super().__init__(make_server(self.cfg))

"""Helpers for the service tests: a real uvicorn on 127.0.0.1 (ephemeral port) in a thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn

from dualmem import Memory, Profile
from dualmem.server import ServerSettings, create_app
from dualmem.server.keys import KeyStore


@contextmanager
def live_server(app: Any, *, port: int = 0) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 (an ephemeral port by default); yields the base URL; stops it gracefully."""
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="test-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextmanager
def served_memory(folder: Path) -> Iterator[tuple[str, KeyStore, Memory]]:
    """The service over a fresh SQLite memory in ``folder`` (hashing embedder, no consolidation, no
    rate limit) on a live server: its base URL, its key store and the memory behind it."""
    keys = KeyStore.open(folder / "srv.keys.db")
    quiet = Profile.builtin().with_(write__consolidation="off")
    try:
        with Memory.open(folder / "srv.db", embedder="hashing", profile=quiet) as mem:
            app = create_app(mem, keys=keys, settings=ServerSettings(rate_limit=None, consolidate_every=0))
            with live_server(app) as url:
                yield url, keys, mem
    finally:
        keys.close()

"""Helpers for the service tests: a real uvicorn on 127.0.0.1 (ephemeral port) in a thread."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
import uvicorn
from fastapi import APIRouter
from fastapi.testclient import TestClient

from dualmem import Memory, Profile
from dualmem.server import ServerSettings, create_app
from dualmem.server.keys import KeyStore
from dualmem.server.service import Service

#: a memory for service tests: the builtin decider without periodic consolidation
QUIET = Profile.builtin().with_(write__consolidation="off")


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    """A fresh SQLite memory (hashing embedder, ``QUIET``)."""
    with Memory.open(tmp_path / "m.db", embedder="hashing", profile=QUIET) as mem:
        yield mem


@pytest.fixture
def keys(tmp_path: Path) -> Iterator[KeyStore]:
    """A fresh key store beside the memory."""
    store = KeyStore.open(tmp_path / "m.keys.db")
    yield store
    store.close()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    """The service (no periodic consolidation) over a fresh memory, without an HTTP server."""
    keys = KeyStore.open(tmp_path / "m.keys.db")
    with Memory.open(tmp_path / "m.db", embedder="hashing", profile=QUIET) as mem:
        yield Service(mem, keys, consolidate_every=0)
    keys.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextmanager
def app_client(memory: Memory, keys: KeyStore, routers: Sequence[APIRouter] = ()) -> Iterator[TestClient]:
    """The service over ``memory`` in process (no rate limit, no periodic consolidation)."""
    settings = ServerSettings(rate_limit=None, consolidate_every=0)
    with TestClient(create_app(memory, keys=keys, settings=settings, routers=list(routers))) as c:
        yield c


@pytest.fixture
def client(memory: Memory, keys: KeyStore) -> Iterator[TestClient]:
    with app_client(memory, keys) as c:
        yield c


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[Any], output: IO[Any] | None) -> None:
    """Until ``dualmem serve`` at ``url`` answers ``/readyz`` (its output shown if it died first)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, output.read() if output else ""
        assert time.monotonic() < deadline, "dualmem serve did not become ready"
        time.sleep(0.1)


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

"""The MCP server: every tool through the SDK's in-process client, and streamable HTTP on a real
uvicorn with bearer API keys (401 without one, tenants kept apart)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, get_args

import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from dualmem import InvalidInput, Memory, Profile, Tenant
from dualmem.mcp_server import build_mcp
from dualmem.read.trace import StopReason
from dualmem.server.service import Service
from server_support import QUIET, anyio_backend, live_server, service  # noqa: F401 - fixtures

QUIET = Profile.builtin().with_(write__consolidation="off")
TOOLS = {"add", "search", "answer", "list", "get", "update", "history", "forget", "consolidate", "stats"}


@pytest.fixture
async def client(service: Service) -> AsyncIterator[Client]:
    async with Client(build_mcp(service, tenant=Tenant("mira"))) as c:
        yield c


async def call(c: Client, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await c.call_tool(name, args or {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def failure(c: Client, name: str, args: dict[str, Any]) -> str:
    result = await c.call_tool(name, args)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    return str(text)


@pytest.mark.anyio
async def test_tools_are_described_typed_and_annotated(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description
        assert len(tool.description) > 40
        assert tool.input_schema["type"] == "object"
        assert tool.annotations is not None
        assert "user" not in tool.input_schema.get("properties", {})  # no tenant argument
    read_only = {n for n, t in tools.items() if t.annotations and t.annotations.read_only_hint}
    assert read_only == {"search", "answer", "list", "get", "history", "stats"}
    destructive = {n for n, t in tools.items() if t.annotations and t.annotations.destructive_hint}
    assert destructive == {"forget"}


@pytest.mark.anyio
async def test_every_tool_in_process(client: Client, service: Service) -> None:
    empty = await call(client, "answer", {"query": "What is the name of Mira's dog?"})
    assert empty["abstained"] is True
    assert empty["summary"]["stop_reason"] == "empty"
    turns = [
        ("Mira: My dog is called Biscuit.", "2024-06-01T10:00:00Z"),
        ("Mira: Biscuit ate a sock yesterday.", "2024-06-02T10:00:00Z"),
        ("Leo: I live in Porto.", "2024-06-03T10:00:00Z"),
    ]
    ids = []
    for text, at in turns:
        ids += (await call(client, "add", {"text": text, "speaker": text.split(":")[0], "at": at}))["ids"]
    found = await call(client, "search", {"query": "What did Biscuit eat?", "k": 2})
    assert found["evidence"]
    assert len(found["evidence"]) <= 2
    assert found["summary"]["stop_reason"] in get_args(StopReason)
    assert {"active_views", "controller_calls", "latency_ms"} <= set(found["summary"])
    assert "trace" not in found  # null: left out
    ans = await call(client, "answer", {"query": "What is the name of Mira's dog?"})
    assert ans["abstained"] is False
    assert ans["text"]
    assert ans["evidence"]
    got = await call(client, "get", {"id": ids[0]})
    assert got["content"] == turns[0][0]
    assert got["speaker"] == "Mira"
    assert "valid_to" not in got  # current
    upd = await call(client, "update", {"id": ids[2], "text": "Leo: I live in Lisbon now."})
    assert upd["old"] == ids[2]
    assert upd["node"]["content"] == "Leo: I live in Lisbon now."
    versions = (await call(client, "history", {"id": upd["new"]}))["versions"]
    assert ["valid_to" in v for v in versions] == [True, False]
    report = await call(client, "consolidate")
    assert report["user"] == "mira"
    assert report["examined"] >= 1
    stats = await call(client, "stats")
    assert stats["nodes"] == 4
    assert (await call(client, "forget", {"id": ids[1]}))["forgotten"] == 1
    assert (await call(client, "forget", {"speaker": "Leo"}))["forgotten"] >= 1
    assert service.memory.count(user="mira") == 1


@pytest.mark.anyio
async def test_bad_input_is_a_tool_error_and_stores_nothing(client: Client, service: Service) -> None:
    assert "no memory with id" in await failure(client, "get", {"id": "0123456789abcdef01234567"})
    assert "invalid arguments: text:" in await failure(client, "add", {"text": ""})
    assert "invalid arguments: k:" in await failure(client, "search", {"query": "x", "k": 0})
    assert "cannot read a time" in await failure(client, "add", {"text": "hello", "at": "not a time"})
    assert "not both and not neither" in await failure(client, "forget", {})
    assert service.memory.count(user="mira") == 0
    # a tool argument can never choose the tenant: an extra "user" is ignored
    await call(client, "add", {"text": "x", "user": "bob"})
    assert service.memory.count(user="bob") == 0
    assert service.memory.count(user="mira") == 1


def test_build_needs_a_tenant_or_an_url(service: Service) -> None:
    with pytest.raises(InvalidInput):
        build_mcp(service)
    with pytest.raises(InvalidInput):
        build_mcp(service, tenant=Tenant("a"), http_url="http://127.0.0.1:1/mcp")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def http_client(url: str, token: str) -> Client:
    transport = streamable_http_client(
        url, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    )
    return Client(transport)


@pytest.mark.anyio
async def test_streamable_http_needs_a_key_and_keeps_tenants_apart(service: Service) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    app = build_mcp(service, http_url=url).streamable_http_app(host="127.0.0.1")
    _, alice = service.keys.create(user="alice")
    _, bob = service.keys.create(user="bob")
    _, admin = service.keys.create(admin=True)
    with live_server(app, port=port):
        async with httpx.AsyncClient() as raw:
            assert (await raw.post(url, json=INIT, headers=MCP_HEADERS)).status_code == 401
            bad = {**MCP_HEADERS, "Authorization": "Bearer dmk_nope"}
            assert (await raw.post(url, json=INIT, headers=bad)).status_code == 401
            admin_h = {**MCP_HEADERS, "Authorization": f"Bearer {admin}"}
            assert (await raw.post(url, json=INIT, headers=admin_h)).status_code == 401  # no tenant
            ok = {**MCP_HEADERS, "Authorization": f"Bearer {alice}"}
            assert (await raw.post(url, json=INIT, headers=ok)).status_code == 200
        async with http_client(url, alice) as a:
            (secret,) = (await call(a, "add", {"text": "Alice's locker code is 4711."}))["ids"]
            assert (await call(a, "get", {"id": secret}))["content"] == "Alice's locker code is 4711."
        async with http_client(url, bob) as b:
            assert "no memory with id" in await failure(b, "get", {"id": secret})
            assert "no memory with id" in await failure(b, "update", {"id": secret, "text": "mine now"})
            assert "no memory with id" in await failure(b, "forget", {"id": secret})
            assert (await call(b, "search", {"query": "locker code 4711"}))["evidence"] == []
            assert (await call(b, "stats"))["nodes"] == 0
    assert service.memory.get(secret, user="alice").content == "Alice's locker code is 4711."


@pytest.mark.anyio
async def test_dualmem_mcp_over_stdio(tmp_path: Path) -> None:
    import os
    import sys

    from mcp import StdioServerParameters

    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {
        **os.environ,
        "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "DUALMEM_USER": "mira",
    }
    args = ["-m", "dualmem.cli.main", "--db", str(tmp_path / "stdio.db"), "--embedder", "hashing", "mcp"]
    async with Client(StdioServerParameters(command=sys.executable, args=args, env=env)) as c:
        (node,) = (await call(c, "add", {"text": "Mira: my cat is called Pixel."}))["ids"]
        found = await call(c, "search", {"query": "cat name"})
        assert [e["node"]["id"] for e in found["evidence"]] == [node]
    with Memory.open(tmp_path / "stdio.db", embedder="hashing") as mem:
        assert mem.get(node, user="mira").tenant == Tenant("mira")  # the tenant came from DUALMEM_USER


@pytest.mark.anyio
async def test_the_server_reports_dualmem_and_its_version(client: Client) -> None:
    import dualmem

    info = client.server_info
    assert info is not None
    assert (info.name, info.version) == ("dualmem", dualmem.__version__)  # issue 49: was ""


@pytest.mark.anyio
async def test_search_takes_the_whole_message(
    client: Client, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search tool understands a chatty message before searching it (issue 47) and groups by
    session on request."""
    from dualmem.read import loop, message

    asked: list[str] = []

    def understand(query: str, ask: Any, weights: Any = None) -> Any:
        asked.append(query)
        return message.understand(query, ask, weights)

    monkeypatch.setattr(loop, "understand", understand)
    turns = [
        ("Mira: We moved to Utrecht, the flat in Lombok has a balcony.", "s1"),
        ("Mira: Biscuit the cat loves the balcony.", "s1"),
        ("Mira: We had pancakes at the tea house on Saturday.", "s2"),
    ]
    for text, session in turns:
        await call(client, "add", {"text": text, "speaker": "Mira", "session": session})
    chatty = "Morning! Pancakes again today, so good. Where did we move to? Thanks a lot!"
    found = await call(client, "search", {"query": chatty, "k": 2})
    assert asked == [chatty]
    assert "Utrecht" in found["evidence"][0]["node"]["content"]
    grouped = await call(client, "search", {"query": chatty, "k": 2, "group": "session"})
    assert next(s["session"] for s in grouped["sessions"]) == "s1"

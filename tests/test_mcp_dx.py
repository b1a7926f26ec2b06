"""What an agent reads over MCP (issue 28): small ``tools/list``, compact results, the answer first,
clean descriptions, short validation errors, filters and the list tool, times defaulting to now."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import Client

from dualmem import Tenant
from dualmem.mcp_server import build_mcp
from dualmem.server.service import Service
from dualmem.types import MAX_K
from dualmem.wire.schemas import BRIEF_NODE, QueryRequest, TraceSummary
from server_support import anyio_backend, service  # noqa: F401 - fixtures

#: before issue 28, on the same data: tools/list 14,069 bytes, a k=10 search 4,570 bytes of text
TOOLS_LIST_MAX = 6_000
SEARCH_MAX = 3_000


@pytest.fixture
async def client(service: Service) -> AsyncIterator[Client]:
    async with Client(build_mcp(service, tenant=Tenant("mira"))) as c:
        yield c


async def text_of(c: Client, name: str, args: dict[str, Any] | None = None) -> str:
    result = await c.call_tool(name, args or {})
    assert not result.is_error, result.content
    (block,) = result.content
    text = str(block.text)  # type: ignore[union-attr]
    assert json.loads(text) == result.structured_content  # the text is the structured content
    return text


async def call(c: Client, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return dict(json.loads(await text_of(c, name, args)))


async def failure(c: Client, name: str, args: dict[str, Any]) -> str:
    result = await c.call_tool(name, args)
    assert result.is_error
    return str(result.content[0].text)  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_tools_list_is_small_flat_and_cleanly_described(client: Client) -> None:
    listed = await client.list_tools()
    wire = listed.model_dump_json(by_alias=True, exclude_none=True)
    assert len(wire) < TOOLS_LIST_MAX, len(wire)
    assert "$defs" not in wire
    assert "$ref" not in wire
    for tool in listed.tools:
        d = tool.description or ""
        assert d == " ".join(d.split()), d  # one paragraph, no indentation
        assert "``" not in d
        assert "Args:" not in d
        assert 20 < len(d) <= 220, (tool.name, len(d))
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert "title" not in prop
            assert "anyOf" not in prop or name == "metadata", (tool.name, name, prop)
    by_name = {t.name: t for t in listed.tools}
    for name in ("search", "answer"):
        props = by_name[name].input_schema["properties"]
        assert {"speaker", "session", "since", "until", "metadata"} <= set(props)
        assert (
            props["k"]["maximum"] == MAX_K == QueryRequest.model_json_schema()["properties"]["k"]["maximum"]
        )
    assert set(by_name["list"].input_schema["properties"]) >= {"speaker", "metadata", "limit", "offset"}


@pytest.mark.anyio
async def test_results_are_compact_and_the_answer_comes_first(client: Client) -> None:
    for i in range(12):
        await call(
            client, "add", {"text": f"Mira: fact {i} about my bike and the dog Biscuit.", "speaker": "Mira"}
        )
    text = await text_of(client, "search", {"query": "bike dog", "k": 10})
    assert len(text) < SEARCH_MAX, len(text)
    found = json.loads(text)
    assert text == json.dumps(found, ensure_ascii=False, separators=(",", ":"))  # no indentation
    assert len(found["evidence"]) == 10
    for e in found["evidence"]:  # the HTTP API's evidence, in brief: the memory nested, its score
        assert set(e) == {"node", "score"}
        assert set(e["node"]) <= {"id", "content", "speaker", "at", "session"}
        assert e["score"] == round(e["score"], 3)
    assert set(found) == {"query", "evidence", "summary"}
    assert set(found["summary"]) == set(TraceSummary.model_fields)
    answered = await text_of(client, "answer", {"query": "What did the dog eat?", "k": 10})
    assert answered.startswith('{"text":')
    assert len(answered) < SEARCH_MAX + 500
    got = await call(client, "get", {"id": found["evidence"][0]["node"]["id"]})
    assert set(got) <= BRIEF_NODE


@pytest.mark.anyio
async def test_add_without_at_is_now_and_filters_and_list_work(client: Client, service: Service) -> None:
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    (now_id,) = (await call(client, "add", {"text": "Mira: I moved to Porto.", "speaker": "Mira"}))["ids"]
    leo = {"text": "Leo: I sold my car.", "speaker": "Leo", "at": "2023-05-08", "session": "s1"}
    (old_id,) = (await call(client, "add", {**leo, "metadata": {"topic": "cars"}}))["ids"]
    stored = service.memory.get(now_id, user="mira").at
    assert stored is not None
    assert stored >= before
    assert service.memory.get(old_id, user="mira").at == dt.datetime(2023, 5, 8, tzinfo=dt.UTC)

    async def ids(tool: str, **args: Any) -> list[str]:
        out = await call(client, tool, {"query": "Porto car", **args} if tool != "list" else args)
        return (
            [m["id"] for m in out["items"]] if tool == "list" else [e["node"]["id"] for e in out["evidence"]]
        )

    for tool in ("search", "answer", "list"):
        assert set(await ids(tool)) == {now_id, old_id}
        assert await ids(tool, speaker="leo") == [old_id]
        assert await ids(tool, session="s1") == [old_id]
        assert await ids(tool, since=before.isoformat()) == [now_id]
        assert await ids(tool, until="2024-01-01") == [old_id]
        assert await ids(tool, metadata={"topic": "cars"}) == [old_id]
    listed = await call(client, "list", {"limit": 1})
    assert [m["id"] for m in listed["items"]] == [old_id]  # oldest first
    assert listed["next_offset"] == 1
    assert (await call(client, "list", {"limit": 1, "offset": 1}))["next_offset"] is None
    assert (await call(client, "forget", {"since": before.isoformat()}))["forgotten"] == 1
    assert [m["id"] for m in (await call(client, "list"))["items"]] == [old_id]


@pytest.mark.anyio
async def test_errors_are_short_and_store_nothing(client: Client, service: Service) -> None:
    for name, args in (
        ("add", {"text": ""}),
        ("add", {"text": "x", "at": True}),
        ("search", {"query": "x", "k": MAX_K + 1}),
        ("list", {"limit": 0}),
        ("search", {"query": "x", "since": "not a time"}),
    ):
        message = await failure(client, name, args)
        assert "pydantic" not in message
        assert "\n" not in message
        assert len(message) < 200, message
    assert "invalid arguments: k:" in await failure(client, "search", {"query": "x", "k": MAX_K + 1})
    assert service.memory.count(user="mira") == 0

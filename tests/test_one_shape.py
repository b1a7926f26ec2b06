"""One JSON shape per thing (issue 41): a list is ``{"items", "next_offset"}``, a piece of evidence
nests its memory under ``node``, an answer is ``{"text", "abstained", ...}``, in the CLI (``--json``),
over HTTP and from the MCP tools (the same shape in brief). The same memory file is read by all
three here and the documents compared; a blank query gets the same plain message from each."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("mcp")
from fastapi.testclient import TestClient
from mcp import Client as McpClient

from dualmem import Memory, Profile, Tenant
from dualmem.cli.main import main
from dualmem.mcp_server import build_mcp
from dualmem.server import ServerSettings, create_app
from dualmem.server.keys import KeyStore
from dualmem.server.service import Service
from dualmem.wire.schemas import BRIEF_NODE

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "dualmem" / "data" / "sample_conversation.json"
QUIET = Profile.builtin().with_(write__consolidation="off")
QUERY = "Why did Mira buy a new bicycle?"
EMPTY = "the query is empty"
HINT = "pass a non-blank question"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shape") / "m.db"
    with Memory.open(path, embedder="hashing", profile=QUIET) as mem:
        mem.ingest(SAMPLE, user="mira")
    return path


@pytest.fixture
def http(db: Path) -> Iterator[tuple[TestClient, dict[str, str]]]:
    keys = KeyStore.open(":memory:")
    headers = {"Authorization": f"Bearer {keys.create(user='mira')[1]}"}
    with Memory.open(db, embedder="hashing", profile=QUIET) as mem:
        app = create_app(mem, keys=keys, settings=ServerSettings(rate_limit=None, consolidate_every=0))
        with TestClient(app) as client:
            yield client, headers
    keys.close()


def cli(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, Any, str]:
    code = main(["-q", "--embedder", "hashing", "--db", str(db), "--user", "mira", *args, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out else None, err


def _steady(doc: dict[str, Any]) -> dict[str, Any]:
    """A search or answer document without what differs from run to run (the time it took)."""
    out = dict(doc)
    out["summary"] = {k: v for k, v in doc["summary"].items() if k != "latency_ms"}
    return out


def test_cli_json_is_the_http_document(
    capsys: pytest.CaptureFixture[str], db: Path, http: tuple[TestClient, dict[str, str]]
) -> None:
    client, headers = http
    code, listed, _ = cli(capsys, db, "list", "--limit", "3", "--offset", "2", "--speaker", "Mira")
    assert code == 0
    assert set(listed) == {"items", "next_offset"}
    over_http = client.post("/v1/list", json={"limit": 3, "offset": 2, "speaker": "Mira"}, headers=headers)
    assert listed == over_http.json()
    assert listed["next_offset"] == 5

    node_id = listed["items"][0]["id"]
    assert cli(capsys, db, "get", node_id)[1] == client.get(f"/v1/memories/{node_id}", headers=headers).json()
    inspected = client.get(f"/v1/memories/{node_id}/inspect", headers=headers).json()
    assert cli(capsys, db, "inspect", node_id)[1] == inspected

    code, found, _ = cli(capsys, db, "search", QUERY, "-k", "4")
    assert code == 0
    searched = client.post("/v1/search", json={"query": QUERY, "k": 4}, headers=headers).json()
    assert set(found) == set(searched) == {"query", "evidence", "summary", "trace", "sessions"}
    assert found["trace"]["rounds"] is not None  # --json: the full trace, as trace=true over HTTP
    assert searched["trace"] is None
    assert _steady({**found, "trace": None}) == _steady(searched)
    first = found["evidence"][0]
    assert set(first) == {"node", "score", "view", "via", "round", "temporal_refs"}
    assert set(first["node"]) >= {"id", "content", "speaker", "at", "tenant"}

    code, answered, _ = cli(capsys, db, "ask", QUERY, "-k", "4")
    assert code == 0
    over_http = client.post("/v1/answer", json={"query": QUERY, "k": 4}, headers=headers).json()
    assert list(answered)[:3] == ["text", "abstained", "answerer"]  # the answer first
    assert _steady(answered) == _steady(over_http)


@pytest.mark.anyio
async def test_mcp_tools_return_the_same_shape_in_brief(
    db: Path, http: tuple[TestClient, dict[str, str]]
) -> None:
    client, headers = http
    keys = KeyStore.open(":memory:")
    with Memory.open(db, embedder="hashing", profile=QUIET) as mem:
        async with McpClient(
            build_mcp(Service(mem, keys, consolidate_every=0), tenant=Tenant("mira"))
        ) as mcp:
            listed = (await mcp.call_tool("list", {"limit": 3, "offset": 2})).structured_content
            found = (await mcp.call_tool("search", {"query": QUERY, "k": 4})).structured_content
            answered = (await mcp.call_tool("answer", {"query": QUERY, "k": 4})).structured_content
    keys.close()
    full = client.post("/v1/list", json={"limit": 3, "offset": 2}, headers=headers).json()
    assert listed is not None
    assert set(listed) == {"items", "next_offset"}
    assert listed["next_offset"] == full["next_offset"]
    for brief, item in zip(listed["items"], full["items"], strict=True):
        assert set(brief) <= BRIEF_NODE
        assert brief == {k: item[k] for k in brief}  # the same values under the same names
    searched = client.post("/v1/search", json={"query": QUERY, "k": 4}, headers=headers).json()
    assert found is not None
    assert [e["node"]["id"] for e in found["evidence"]] == [e["node"]["id"] for e in searched["evidence"]]
    assert [e["score"] for e in found["evidence"]] == [round(e["score"], 3) for e in searched["evidence"]]
    assert set(found["summary"]) == set(searched["summary"])
    assert answered is not None
    assert list(answered)[:2] == ["text", "abstained"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_blank_query_gets_one_plain_message_everywhere(
    capsys: pytest.CaptureFixture[str], db: Path, http: tuple[TestClient, dict[str, str]]
) -> None:
    client, headers = http
    for blank in ("", "   "):
        for command in ("search", "ask"):
            code, out, err = cli(capsys, db, command, blank)
            assert (code, out, err) == (2, None, f"dualmem: error: {EMPTY} (hint: {HINT})\n")
        for route in ("/v1/search", "/v1/answer"):
            r = client.post(route, json={"query": blank}, headers=headers)
            assert r.status_code == 422
            assert (r.json()["detail"], r.json()["hint"]) == (EMPTY, HINT)
    keys = KeyStore.open(":memory:")
    with Memory.open(db, embedder="hashing", profile=QUIET) as mem:
        async with McpClient(
            build_mcp(Service(mem, keys, consolidate_every=0), tenant=Tenant("mira"))
        ) as mcp:
            for tool in ("search", "answer"):
                result = await mcp.call_tool(tool, {"query": ""})
                assert result.is_error
                text = result.content[0].text  # type: ignore[union-attr]
                assert text == f"Error executing tool {tool}: {EMPTY} (hint: {HINT})"
    keys.close()

"""One tenant API, three surfaces: the embedded ``Scope``, the Python ``Client`` of ``dualmem serve``
and the MCP tools expose the same operations with the same parameters (the MCP server leaves out,
by name and with a reason, what an agent is not offered). A new ``Scope`` operation fails here
until the ``Client`` has it and the MCP server offers it or says why not."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("mcp")

from mcp import Client as McpClient

from dualmem import Tenant
from dualmem.client import Client
from dualmem.mcp_server import build_mcp
from dualmem.mcp_server.tools import NOT_TOOLS, TOOL_OPERATIONS
from dualmem.scope import Scope
from dualmem.server.service import Service
from dualmem.write.lifecycle import Filter
from server_support import anyio_backend, served_memory, service  # noqa: F401 - fixtures

#: the fields of ``where=Filter(...)`` as separate tool arguments
FILTER_FIELDS = {"speaker", "session", "since", "until", "metadata"}


def _operations(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(fn)
        for name, fn in inspect.getmembers(cls, callable)
        if not name.startswith("_") and name not in ("close",)
    }


def _keywords(sig: inspect.Signature) -> set[str]:
    return {p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY}


def _positional(sig: inspect.Signature) -> int:
    return sum(1 for p in sig.parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD and p.name != "self")


def test_the_client_has_every_scope_operation_with_its_parameters() -> None:
    scope, client = _operations(Scope), _operations(Client)
    missing = sorted(set(scope) - set(client))
    assert not missing, f"Client lacks {missing}"
    for name, sig in scope.items():
        assert _positional(client[name]) == _positional(sig), name
        assert _keywords(sig) <= _keywords(client[name]), (name, _keywords(sig) - _keywords(client[name]))


@pytest.mark.anyio
async def test_every_scope_operation_is_a_tool_or_left_out_by_name(service: Service) -> None:
    async with McpClient(build_mcp(service, tenant=Tenant("mira"))) as mcp:
        tools = {t.name: t for t in (await mcp.list_tools()).tools}
    scope = _operations(Scope)
    offered = {TOOL_OPERATIONS.get(name, name): tool for name, tool in tools.items()}
    assert set(offered) <= set(scope), sorted(set(offered) - set(scope))
    assert set(NOT_TOOLS) <= set(scope), sorted(set(NOT_TOOLS) - set(scope))
    assert not set(offered) & set(NOT_TOOLS)
    assert set(offered) | set(NOT_TOOLS) == set(scope), sorted(set(scope) - set(offered) - set(NOT_TOOLS))
    for name, tool in offered.items():
        sig = scope[name]
        allowed = set(sig.parameters) - {"self", "node_id"} | {"id"}
        if "where" in sig.parameters:
            allowed = (allowed - {"where"}) | FILTER_FIELDS
        arguments = set(tool.input_schema.get("properties", {}))
        assert arguments <= allowed, (name, arguments - allowed)


def test_the_client_adds_once_per_key_previews_a_forget_and_repairs_as_the_scope_does(tmp_path: Path) -> None:
    with served_memory(tmp_path) as (url, keys, mem):
        _, token = keys.create(user="mira")
        scope = mem.scope("mira")
        with Client(url, token) as client:
            for surface in (scope, client):
                first = surface.add("Mira moved to Porto.", speaker="Mira", key="req-1")
                assert surface.add("Mira moved to Porto.", speaker="Mira", key="req-1") == first
                assert surface.add_many(
                    [{"text": "Mira adopted a dog.", "key": "req-2"}]
                ) == surface.add_many([{"text": "Mira adopted a dog.", "key": "req-2"}])
            assert client.count() == scope.count() == 2
            by_client = [n.id for n in client.would_forget(where=Filter(speaker="Mira"))]
            assert by_client == [n.id for n in scope.would_forget(where=Filter(speaker="Mira"))]
            assert [n.id for n in client.would_forget(first)] == [n.id for n in scope.would_forget(first)]
            assert [n.id for n in client.would_forget()] == [n.id for n in scope.would_forget()]
            assert client.count() == 2  # a preview removes nothing
            report = client.repair()
            assert (report.ids, report.pending, report.error) == ((), (), None)
            for status in ("current", "superseded", "complete", "pending"):
                by_client = [n.id for n in client.list_memories(status=status)]  # type: ignore[arg-type]
                assert by_client == [n.id for n in scope.list_memories(status=status)], status  # type: ignore[arg-type]
            assert len(client.list_memories(status="current")) == 2
            filled = client.backfill_views()  # the served profile stores no views: nothing to add
            assert filled == scope.backfill_views()
            assert (filled.memories, filled.failed) == (2, ())

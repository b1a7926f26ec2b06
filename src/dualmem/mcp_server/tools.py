"""The MCP tools over one :class:`~dualmem.server.service.Service`.

The tenant is fixed for a stdio server (a flag or the environment) and comes from the bearer token
over HTTP; no tool takes a tenant argument. Writes go through the service's single writer.

What a model reads is kept small: a tool result is compact JSON (the text block, and the same
object as structured content) of the HTTP API's shape, in brief (:func:`dualmem.wire.schemas.brief`:
the same names and nesting, only what an agent uses: id, content, speaker, at, session; evidence
with its score; the trace as a summary), ``answer`` puts the answer first, and ``tools/list``
carries flat argument schemas (no ``$defs``, no titles) and one-paragraph descriptions. Invalid
arguments are a one-line tool error naming the field (no pydantic links).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeVar

import anyio.to_thread
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from dualmem import Scope as TenantScope
from dualmem import __version__
from dualmem.errors import DualmemError, InvalidInput
from dualmem.server import KeyStore, Service
from dualmem.vocab import MAX_K, Filter, Tenant, parse_time
from dualmem.wire.decode import describe_error
from dualmem.wire.schemas import (
    MAX_LIST,
    MAX_QUERY,
    HistoryOut,
    UpdateResponse,
    answer_out,
    brief,
    consolidation_out,
    node_list,
    node_out,
    search_out,
)

__all__ = ["NOT_TOOLS", "TOOL_OPERATIONS", "KeyVerifier", "build_mcp", "flat_schema"]

#: the ``Scope`` operation behind each tool whose name differs from it
TOOL_OPERATIONS: Mapping[str, str] = {"list": "list_memories"}
#: the tenant operations (``Scope``'s, the Python ``Client``'s) an agent is not offered as tools, and
#: why; ``tests/test_tenant_api.py`` checks that every other operation is a tool
NOT_TOOLS: Mapping[str, str] = {
    "add_many": "an agent remembers one statement at a time; batches go through HTTP or the library",
    "ingest": "reads a conversation file on the caller's disk",
    "repair": "an operator's remedy after a controller outage (dualmem check --repair, POST /v1/repair)",
    "backfill_views": "an operator's step after turning views on (repair --views, POST /v1/repair/views)",
    "inspect": "edges and controller decisions: a debugging view (the inspector, GET /inspect)",
    "count": "stats holds the count",
    "nodes": "list pages through the memories",
    "delete": "the same operation as forget",
    "would_forget": "forget removes exactly what the user asked for; previews are for people (HTTP)",
    "forget_all": "erasing a whole tenant is not an agent's decision",
    "export_jsonl": "writes a file on the caller's disk",
    "import_jsonl": "reads a file on the caller's disk",
}

T = TypeVar("T")

INSTRUCTIONS = (
    "Long-term memory for this user. Call `search` (or `answer`) before replying whenever earlier "
    "conversations, preferences or facts could matter; call `add` for anything worth remembering "
    "(one statement per call, with the speaker and when it was said). Use `update` to correct a "
    "memory and `forget` when the user asks you to."
)


Json = dict[str, Any]


def compact(obj: Json) -> CallToolResult:
    """A tool result: ``obj`` as compact JSON text, and as structured content."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=obj)


def result(model: BaseModel) -> CallToolResult:
    """A tool result: the wire model in brief (the HTTP API's shape, fewer fields)."""
    return compact(brief(model))


def describe(doc: str) -> str:
    """A docstring as one clean paragraph: no indentation, no RST markup."""
    return " ".join(doc.replace("``", "").split())


def flat_schema(schema: Mapping[str, Any]) -> Json:
    """A tool's argument schema without titles, ``$defs`` or ``anyOf [X, null]`` (optional is
    already said by ``required``); the arguments are still validated by the full model."""
    props: Json = {}
    for name, prop in schema.get("properties", {}).items():
        p = {k: v for k, v in prop.items() if k != "title"}
        options = [o for o in p.pop("anyOf", []) if o.get("type") != "null"]
        if len(options) == 1:
            p = {**options[0], **p}
        elif options:
            p["anyOf"] = options
        if p.get("default", 0) is None:
            del p["default"]
        props[name] = p
    out: Json = {"type": "object", "properties": props}
    if schema.get("required"):
        out["required"] = list(schema["required"])
    return out


class _Tool(Tool):
    """A tool whose invalid arguments are a one-line error naming the field."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(f"invalid arguments: {describe_error(cause)}") from cause
            raise


def _tool(fn: Callable[..., Any], annotations: ToolAnnotations, name: str | None = None) -> Tool:
    tool = _Tool.from_function(
        fn, name=name, description=describe(fn.__doc__ or ""), annotations=annotations,
        structured_output=False,
    )  # fmt: skip
    return tool.model_copy(update={"parameters": flat_schema(tool.parameters)})


class KeyVerifier:
    """Bearer tokens are dualmem API keys; the tenant rides in the access token's claims."""

    def __init__(self, keys: KeyStore) -> None:
        self.keys = keys

    async def verify_token(self, token: str) -> AccessToken | None:
        key = await anyio.to_thread.run_sync(self.keys.verify, token)
        if key is None or key.tenant is None:
            return None
        claims = {"user": key.tenant.user, "agent": key.tenant.agent, "run": key.tenant.run}
        return AccessToken(token=token, client_id=key.id, scopes=["memory"], claims=claims)


ID = Annotated[str, Field(min_length=1, max_length=128, description="a memory id from add, search or list")]
#: a blank query gets the core's message ("the query is empty"), as over HTTP and in the CLI
Query = Annotated[str, Field(max_length=MAX_QUERY, json_schema_extra={"minLength": 1})]
K = Annotated[int, Field(ge=1, le=MAX_K, description="how many memories to return")]
Text = Annotated[str, Field(min_length=1, max_length=20000)]
Short = Annotated[str | None, Field(max_length=512)]
When = Annotated[str | None, Field(max_length=100)]
Meta = Annotated[dict[str, Any] | None, Field(description="key == value for every pair")]
Group = Annotated[
    Literal["turn", "session"],
    Field(description="session: the k best earlier sessions, each with its best turns"),
]
READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DESTROY = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)


def _where(
    speaker: str | None, session: str | None, since: str | None, until: str | None, metadata: Meta
) -> Filter:
    return Filter(
        speaker=speaker, session=session, since=parse_time(since), until=parse_time(until),
        metadata=dict(metadata) if metadata else None,
    )  # fmt: skip


def build_mcp(service: Service, *, tenant: Tenant | None = None, http_url: str | None = None) -> MCPServer:
    """An MCP server over ``service``: fixed ``tenant`` (stdio), or bearer keys (``http_url`` given)."""
    if (tenant is None) == (http_url is None):
        raise InvalidInput("give exactly one of a tenant (stdio) or the HTTP URL (bearer keys)")
    auth = None
    verifier = None
    if http_url is not None:
        auth = AuthSettings(
            issuer_url=http_url,  # type: ignore[arg-type]
            resource_server_url=http_url,  # type: ignore[arg-type]
            required_scopes=["memory"],
            validate_token_resource=False,  # keys are ours, checked by KeyVerifier; no audience
        )
        verifier = KeyVerifier(service.keys)

    def scope() -> TenantScope:
        if tenant is not None:
            return service.scope(tenant)
        token = get_access_token()
        if token is None or not token.claims:
            raise ToolError("no tenant: authenticate with a dualmem API key")
        c = token.claims
        return service.scope(Tenant(c["user"], c.get("agent"), c.get("run")))

    async def call(fn: Callable[[TenantScope], T]) -> T:
        bound = scope()
        try:
            return await anyio.to_thread.run_sync(functools.partial(fn, bound))
        except DualmemError as exc:
            raise ToolError(exc.one_line()) from exc

    tools = [*_writes(service, call), *_reads(service, call)]
    return MCPServer(
        "dualmem", instructions=INSTRUCTIONS, token_verifier=verifier, auth=auth, log_level="WARNING",
        tools=tools, version=__version__,  # the initialize reply's serverInfo.version
    )  # fmt: skip


def _writes(service: Service, call: Callable[..., Any]) -> list[Tool]:
    async def add(
        text: Annotated[str, Field(min_length=1, max_length=20000, description="the statement, verbatim")],
        speaker: Annotated[str | None, Field(max_length=512, description="who said it")] = None,
        at: Annotated[str | None, Field(max_length=100, description="when it was said; default now")] = None,
        session: Short = None,
        metadata: Meta = None,
    ) -> CallToolResult:
        """Remember one statement (a fact, preference, event or instruction from the conversation).
        Call it whenever the user tells you something worth knowing later; say who said it."""
        obs = {"text": text, "speaker": speaker, "at": at, "session": session, "metadata": metadata or {}}
        return compact({"ids": await call(lambda s: service.add(s, [obs]))})

    async def update(id: ID, text: Text) -> CallToolResult:
        """Correct a memory: the new text becomes current, the old one stays as history.
        Call it when the user corrects something you remembered."""

        def run(s: TenantScope) -> UpdateResponse:
            new = service.update(s, id, text)
            return UpdateResponse(old=id, new=new, node=node_out(s.get(new)))

        return result(await call(run))

    async def forget(
        id: ID | None = None, speaker: Short = None, session: Short = None, since: When = None,
        until: When = None, metadata: Meta = None,
    ) -> CallToolResult:  # fmt: skip
        """Delete memories for good, with their versions: one by id, or every match of the filters.
        Only when the user asks to forget something."""

        def run(s: TenantScope) -> int:
            where = _where(speaker, session, since, until, metadata)
            if (id is None) == where.empty():
                raise InvalidInput("give a memory id or filter fields, not both and not neither")
            return service.write(lambda: s.forget(id) if id is not None else s.forget(where=where))

        return compact({"forgotten": await call(run)})

    async def consolidate() -> CallToolResult:
        """Link, merge and supersede recent memories now. Rarely needed: it also runs in the background."""
        report = await call(lambda s: service.write(s.consolidate))
        return result(consolidation_out(report))

    return [_tool(add, WRITE), _tool(update, WRITE), _tool(forget, DESTROY), _tool(consolidate, WRITE)]


def _reads(service: Service, call: Callable[..., Any]) -> list[Tool]:
    async def search(  # noqa: PLR0913, PLR0917 (the tool's arguments: query, k, filters, group)
        query: Query, k: K = 10, speaker: Short = None, session: Short = None, since: When = None,
        until: When = None, metadata: Meta = None, group: Group = "turn",
    ) -> CallToolResult:  # fmt: skip
        """Find the memories relevant to a question or the user's whole message, best first; filters
        are optional. Call it before answering anything that may depend on earlier conversations."""
        where = _where(speaker, session, since, until, metadata)
        found = await call(lambda s: service.read(lambda: s.search(query, k=k, where=where, group=group)))
        t = found.trace
        service.metrics.observe_query("search", t.stop_reason, t.calls_by_purpose)
        return result(search_out(found, with_trace=False))

    async def answer(
        query: Query, k: K = 10, speaker: Short = None, session: Short = None, since: When = None,
        until: When = None, metadata: Meta = None,
    ) -> CallToolResult:  # fmt: skip
        """Answer a question from memory only (filters as in search), with the evidence used.
        When abstained is true memory has no answer: tell the user you do not know rather than guess."""
        where = _where(speaker, session, since, until, metadata)
        ans = await call(lambda s: service.read(lambda: s.answer(query, k=k, where=where)))
        t = ans.trace
        service.metrics.observe_query("answer", t.stop_reason, t.calls_by_purpose)
        return result(answer_out(query, ans, with_trace=False))

    async def list_memories(
        speaker: Short = None, session: Short = None, since: When = None, until: When = None,
        metadata: Meta = None, limit: Annotated[int, Field(ge=1, le=MAX_LIST)] = 20,
        offset: Annotated[int, Field(ge=0)] = 0,
    ) -> CallToolResult:  # fmt: skip
        """List memories oldest first; filters are optional. Page with offset (next_offset is null
        on the last page)."""
        where = _where(speaker, session, since, until, metadata)
        nodes = await call(lambda s: s.list_memories(where=where, limit=limit + 1, offset=offset))
        return result(node_list(nodes, limit=limit, offset=offset))

    async def get(id: ID) -> CallToolResult:
        """Read one memory by id (from add, search or list)."""
        return result(node_out(await call(lambda s: s.get(id))))

    async def history(id: ID) -> CallToolResult:
        """Every version of a memory, oldest first (the last is current): how a fact changed."""
        versions = await call(lambda s: s.history(id))
        return result(HistoryOut(id=id, versions=[node_out(n) for n in versions]))

    async def stats() -> CallToolResult:
        """How much this memory holds: memories, pending ones, edges by view."""
        return compact(dict(await call(lambda s: dict(s.stats()))))

    return [
        _tool(search, READ), _tool(answer, READ), _tool(list_memories, READ, name="list"),
        _tool(get, READ), _tool(history, READ), _tool(stats, READ),
    ]  # fmt: skip

"""The MCP tools over one :class:`~dualmem.server.service.Service`.

The tenant is fixed for a stdio server (a flag or the environment) and comes from the bearer token
over HTTP; no tool takes a tenant argument. Writes go through the service's single writer.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from dualmem.errors import DualmemError, InvalidInput
from dualmem.scope import Scope as TenantScope
from dualmem.server.keys import KeyStore
from dualmem.server.schemas import ConsolidationOut, TraceSummary, consolidation_out, summary_of
from dualmem.server.service import Service
from dualmem.text.timeparse import parse_time
from dualmem.types import Evidence, Node, Tenant
from dualmem.write.lifecycle import Filter

__all__ = ["KeyVerifier", "build_mcp"]

T = TypeVar("T")

INSTRUCTIONS = (
    "Long-term memory for this user. Call `search` (or `answer`) before replying whenever earlier "
    "conversations, preferences or facts could matter; call `add` for anything worth remembering "
    "(one statement per call, with the speaker and when it was said). Use `update` to correct a "
    "memory and `forget` when the user asks you to."
)


class MemoryItem(BaseModel):
    id: str
    content: str
    speaker: str | None
    at: dt.datetime | None = Field(description="when it was observed")
    session: str | None
    current: bool = Field(description="false once a newer version superseded it")
    status: str = Field(description="complete, or pending until its controller decisions are repaired")
    entities: list[str]


class EvidenceItem(MemoryItem):
    score: float
    view: str = Field(description="how it was reached: anchor, semantic, temporal, causal or entity")


class AddResult(BaseModel):
    ids: list[str]


class SearchResult(BaseModel):
    evidence: list[EvidenceItem]
    stop_reason: str = Field(description="why retrieval stopped, e.g. sufficient, no_gain, depth, empty")
    trace: TraceSummary


class AnswerResult(SearchResult):
    answer: str
    abstained: bool = Field(description="true when the memories hold no answer; say so rather than guess")


class UpdateResult(BaseModel):
    old: str
    new: str
    memory: MemoryItem


class HistoryResult(BaseModel):
    versions: list[MemoryItem] = Field(description="oldest first; the last is current")


class ForgetResult(BaseModel):
    forgotten: int


class StatsResult(BaseModel):
    nodes: int
    pending: int
    stats: dict[str, Any]


def _item(n: Node) -> MemoryItem:
    return MemoryItem(
        id=n.id, content=n.content, speaker=n.speaker, at=n.at, session=n.session,
        current=n.valid_to is None, status=n.status, entities=list(n.entities),
    )  # fmt: skip


def _evidence(e: Evidence) -> EvidenceItem:
    return EvidenceItem(**_item(e.node).model_dump(), score=e.score, view=e.view)


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


ID = Annotated[str, Field(min_length=1, max_length=128, description="a memory id from add or search")]
Query = Annotated[str, Field(min_length=1, max_length=4000)]
K = Annotated[int, Field(ge=1, le=50, description="how many memories to return")]
READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DESTROY = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)


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
    server = MCPServer(
        "dualmem", instructions=INSTRUCTIONS, token_verifier=verifier, auth=auth, log_level="WARNING"
    )

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

    _register(server, service, call)
    return server


def _register(server: MCPServer, service: Service, call: Callable[..., Any]) -> None:
    _register_writes(server, service, call)
    _register_reads(server, service, call)


def _register_writes(server: MCPServer, service: Service, call: Callable[..., Any]) -> None:
    @server.tool(annotations=WRITE)
    async def add(
        text: Annotated[str, Field(min_length=1, max_length=20000, description="the statement, verbatim")],
        speaker: Annotated[str | None, Field(max_length=512, description="who said it")] = None,
        at: Annotated[str | None, Field(max_length=100, description="when it was said (ISO-8601)")] = None,
        session: Annotated[str | None, Field(max_length=512)] = None,
    ) -> AddResult:
        """Remember one statement (a fact, preference, event or instruction from the conversation).
        Call it whenever the user tells you something worth knowing later; include who said it and when."""
        obs = {"text": text, "speaker": speaker, "at": at, "session": session}
        return AddResult(ids=await call(lambda s: service.add(s, [obs])))

    @server.tool(annotations=WRITE)
    async def update(id: ID, text: Annotated[str, Field(min_length=1, max_length=20000)]) -> UpdateResult:
        """Correct a memory: the new text becomes current, the old one stays as history.
        Call it when the user corrects something you remembered."""

        def run(s: TenantScope) -> UpdateResult:
            new = service.write(lambda: s.update(id, text))
            service.note_writes(s.tenant, 1)
            return UpdateResult(old=id, new=new, memory=_item(s.get(new)))

        out: UpdateResult = await call(run)
        return out

    @server.tool(annotations=DESTROY)
    async def forget(
        id: ID | None = None,
        speaker: Annotated[str | None, Field(max_length=512)] = None,
        session: Annotated[str | None, Field(max_length=512)] = None,
        since: Annotated[str | None, Field(max_length=100)] = None,
        until: Annotated[str | None, Field(max_length=100)] = None,
    ) -> ForgetResult:
        """Delete memories for good: one by id, or every match of speaker/session/since/until.
        Only when the user asks to forget something; it removes versions and derived summaries too."""

        def run(s: TenantScope) -> int:
            where = Filter(speaker=speaker, session=session, since=parse_time(since), until=parse_time(until))
            if (id is None) == where.empty():
                raise InvalidInput("give a memory id or filter fields, not both and not neither")
            return service.write(lambda: s.forget(id) if id is not None else s.forget(where=where))

        return ForgetResult(forgotten=await call(run))

    @server.tool(annotations=WRITE)
    async def consolidate() -> ConsolidationOut:
        """Link, merge and supersede recent memories now (it also runs by itself in the background).
        Rarely needed: call it after a large batch of adds when you need the links right away."""
        return consolidation_out(await call(lambda s: service.write(s.consolidate)))


def _register_reads(server: MCPServer, service: Service, call: Callable[..., Any]) -> None:
    @server.tool(annotations=READ)
    async def search(query: Query, k: K = 10) -> SearchResult:
        """Find the memories relevant to a question or topic, best first, with why retrieval stopped.
        Call it before answering anything that may depend on earlier conversations."""
        found = await call(lambda s: service.read(lambda: s.search(query, k=k)))
        t = found.trace
        service.metrics.observe_query("search", t.stop_reason, t.calls_by_purpose)
        return SearchResult(
            evidence=[_evidence(e) for e in found.evidence], stop_reason=t.stop_reason, trace=summary_of(t)
        )

    @server.tool(annotations=READ)
    async def answer(query: Query, k: K = 10) -> AnswerResult:
        """Answer a question from memory only, with the evidence used. ``abstained`` is true when
        memory has no answer; then tell the user you do not know rather than guess."""
        ans = await call(lambda s: service.read(lambda: s.answer(query, k=k)))
        t = ans.trace
        service.metrics.observe_query("answer", t.stop_reason, t.calls_by_purpose)
        return AnswerResult(
            evidence=[_evidence(e) for e in ans.evidence], stop_reason=t.stop_reason, trace=summary_of(t),
            answer=ans.text, abstained=ans.abstained,
        )  # fmt: skip

    @server.tool(annotations=READ)
    async def get(id: ID) -> MemoryItem:
        """Read one memory by id (from add or search)."""
        return _item(await call(lambda s: s.get(id)))

    @server.tool(annotations=READ)
    async def history(id: ID) -> HistoryResult:
        """Every version of a memory, oldest first: how a fact changed over time."""
        return HistoryResult(versions=[_item(n) for n in await call(lambda s: s.history(id))])

    @server.tool(annotations=READ)
    async def stats() -> StatsResult:
        """How much this memory holds: memories, pending ones, edges by view."""
        out = await call(lambda s: dict(s.stats()))
        return StatsResult(nodes=int(out.get("nodes", 0)), pending=int(out.get("pending", 0)), stats=out)

"""The facade: one ``Memory`` wires a Store, an Embedder, a System-One controller and an Answerer.

Thin on purpose: validation of arguments, tenant scoping, and delegation to ``write/`` and ``read/``.

Tenancy: every method that touches memories takes a required ``user=`` and optional ``agent=`` /
``run=`` (or use :meth:`Memory.scope` for a handle bound to one tenant). A call scoped to a user sees
all its agents and runs; with ``agent``/``run`` given it sees only those. By-id calls obey the same
rule: an id of another user, agent or run is ``NotFound``. Operations over every tenant have their
own names (``stats_all``, ``repair_all``).
"""

from __future__ import annotations

import datetime as dt
import logging
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import closing, nullcontext
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

from dualmem._closing import Closing
from dualmem._open import OpenOptions, build, close_all
from dualmem.config import Profile
from dualmem.control import create_controller
from dualmem.control.meter import Meter
from dualmem.control.questions import Controller
from dualmem.conversations import load_observations
from dualmem.embed import CachedEmbedder, Embedder, create_embedder
from dualmem.errors import ConfigError, Conflict, InvalidInput, NotFound
from dualmem.plane import Decision, MemoryStore, open_store
from dualmem.plane.base import ApproximateSearch
from dualmem.plane.jsonl import ImportReport, export_lines, import_lines, split_lines, verify_export
from dualmem.read.loop import Retriever
from dualmem.read.quick import quick_search
from dualmem.read.sessions import group_sessions
from dualmem.read.trace import Retrieval, Trace
from dualmem.read.versions import current_first
from dualmem.reason import create_answerer
from dualmem.reason.base import Answerer
from dualmem.reason.extractive import ExtractiveAnswerer
from dualmem.text.timeparse import TimeInput, parse_time
from dualmem.types import Edge, Evidence, JSONValue, Node, Observation, Tenant, check_text, utcnow
from dualmem.write.backfill import BackfillReport, backfill_views
from dualmem.write.background import Periodic
from dualmem.write.consolidate import ConsolidationReport, Consolidator, Summarizer
from dualmem.write.durable import StoreBacklog, WaitingTenants, WorkQueue
from dualmem.write.lifecycle import (
    Filter,
    check_import_tenant,
    forget_closure,
    history,
    repair_at_open,
    select,
    supersede,
)
from dualmem.write.pipeline import Writer, WriteReport, natural_key

__all__ = [
    "LIST_STATUSES",
    "Answer",
    "Filter",
    "Inspection",
    "ListStatus",
    "Memory",
    "OpenOptions",
    "Scope",
    "observed_at",
    "stamped",
]

#: ``list_memories(status=...)``, as ``GET /v1/memories?status=``: not superseded by a later version,
#: superseded (``valid_to`` set), a write a controller outage left pending, or one it completed
ListStatus = Literal["current", "superseded", "pending", "complete"]
LIST_STATUSES: tuple[str, ...] = get_args(ListStatus)


#: the store meta key holding the profile a database was first opened with (``Profile.to_json``)
PROFILE_META = "profile"


def _profile_of(
    store: Any, given: Profile | str | None, controller: str, *, read_only: bool
) -> Profile | None:
    """The profile of one open, layered: the one ``given`` (a preset name or a file, its missing
    settings from the controller's default), else the one stored in the database, else ``None`` (the
    controller's default). A ``given`` profile is stored when the database holds none yet (its
    first open with a profile, a new database included), so later opens without one keep it."""
    stored = store.get_meta(PROFILE_META)
    if given is not None:
        prof = Profile.named(given, base=Profile.default_for(controller)) if isinstance(given, str) else given
        if stored is None and not read_only:
            store.set_meta(PROFILE_META, prof.to_json())
        return prof
    if stored is None:
        return None
    return Profile.from_json(stored, source="the database's stored profile")


def _in_order(store: MemoryStore, tenant: Tenant, ids: list[str]) -> Iterator[Node]:
    """The nodes of ``ids`` in that order, read a batch at a time (as far as the caller reads)."""
    for start in range(0, len(ids), 512):
        batch = ids[start : start + 512]
        nodes = store.get_nodes(batch, tenant)
        yield from (nodes[i] for i in batch if i in nodes)


def _has_status(node: Node, status: str) -> bool:
    if status == "superseded":
        return node.valid_to is not None
    if status in ("pending", "complete"):
        return node.status == status
    return node.valid_to is None


log = logging.getLogger("dualmem")

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Answer:
    """System Two's answer with the evidence it was given and the retrieval trace."""

    text: str
    evidence: tuple[Evidence, ...]
    trace: Trace
    abstained: bool
    answerer: str
    #: ids of the memories the answer quotes or relies on, the first one first (empty when the
    #: answerer abstained or does not say)
    used: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Inspection:
    """A node with its edges and the controller decisions recorded when it was written."""

    node: Node
    edges: tuple[Edge, ...]
    decisions: tuple[Decision, ...]


class Memory(Closing):
    """An agent memory. Open one with :meth:`Memory.open`; use it as a context manager."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        controller: Controller,
        *,
        answerer: Answerer | None = None,
        profile: Profile | None = None,
        summarizer: Summarizer | None = None,
    ) -> None:
        """Wire ready parts. The memory takes over ``store`` (closed by :meth:`close`); the embedder,
        controller and answerer stay the caller's to close. Nothing here touches the network: an
        embedder whose dimension is not known yet is bound to the store on first use."""
        self.store = store
        self.embedder = embedder
        self.controller = controller
        self.answerer = answerer
        self.profile = profile or Profile.default_for(controller.name)
        self.meter = Meter(
            controller,
            timeout_s=self.profile.controller_timeout_s,
            cache_size=self.profile.controller_cache,
            calibration=self.profile.calibration,
        )
        self._bind_lock = threading.Lock()
        self._bound = False
        if _declared_dim(embedder) is not None:
            self._bind()  # a mismatched database is refused at open
        if isinstance(store, ApproximateSearch):
            store.use_ann(self.profile.ann_threshold)
        store.context.set_window(self.profile.read.pool_window)  # a changed window rebuilds the context
        self._writer = Writer(store, embedder, self.meter, self.profile.write)
        # every read decision goes through the meter to System One (no side channel to a scorer)
        queries = CachedEmbedder(embedder, size=1024)
        self._retriever = Retriever(store, queries, self.meter, self.profile.read)
        if isinstance(answerer, ExtractiveAnswerer) and answerer.embedder is None:
            answerer.embedder = queries  # its meaning score embeds the question as retrieval just did
        self._consolidator = Consolidator(
            store, embedder, self.meter, self.profile.write, summarizer=summarizer
        )
        # the cadence's backlog and the due passes live in the store: no process loses them
        self._periodic = Periodic(
            self._consolidator.run,
            mode=self.profile.write.consolidation,
            every=self.profile.write.consolidate_every,
            backlog=StoreBacklog(store),
            queue=WorkQueue(store),
            waiting=WaitingTenants(store),
            transaction=store.transaction,
        )
        self._owned: list[object] = []  # parts Memory.open built from names: closed with the memory
        self._closed = False
        self.read_only = store.read_only
        if not self.read_only:
            self._periodic.resume()  # passes a process that died left queued

    @classmethod
    def open(  # noqa: PLR0913 - keyword-only: the parts by name or object, their options, read-only
        cls,
        path: str | Path = ":memory:",
        *,
        embedder: Embedder | str = "minilm",
        controller: Controller | str = "builtin",
        answerer: Answerer | str | None = "extractive",
        profile: Profile | str | None = None,
        summarizer: Summarizer | None = None,
        options: OpenOptions | None = None,
        read_only: bool = False,
    ) -> Memory:
        """Open (or create) a memory at ``path`` (a SQLite file, ``:memory:``, or a store URL).

        Parts given by name are built here with ``options`` and closed by :meth:`close`; parts
        passed as objects are the caller's to close. A remote System One takes a typed config::

            cfg = LLMConfig(base_url="http://127.0.0.1:8080/v1", model="qwen")  # or LLMConfig.from_env()
            Memory.open(path, controller="llm", options=OpenOptions(controller=cfg))

        (``JevConfig`` for ``controller="jev"``; a plain mapping of keyword options also works). The
        library never reads the environment itself; a missing setting is a ``ConfigError`` with a
        hint. Periodic consolidation follows ``profile.write.consolidation``
        (``"background"`` by default: passes run on a worker thread and writes never wait;
        ``"inline"``; ``"off"``). ``summarizer`` is the System-Two callable that may write derived
        nodes for approved merges/promotions. ``read_only`` opens an existing memory without ever
        writing it (writes raise ``ReadOnlyStore``); ``options.synchronous="full"`` makes every commit
        survive power loss. A writable open with the builtin controller first completes the nodes a
        controller outage left ``pending`` (``options.repair_on_open=False`` skips it); other
        controllers are not called at open (a warning names the pending nodes' remedy).
        """
        opts = options or OpenOptions()
        owned: list[object] = []
        try:
            emb = build(embedder, create_embedder, opts.embedder, what="embedder", owned=owned)
            ctl = build(controller, create_controller, opts.controller, what="controller", owned=owned)
            ans = build(answerer, create_answerer, opts.answerer, what="answerer", owned=owned)
            store = open_store(
                str(path),
                timeout=opts.lock_timeout,
                read_only=read_only,
                synchronous=opts.synchronous,
                mmap_size=opts.mmap_size,
            )
            owned.append(store)
            prof = _profile_of(store, profile, ctl.name, read_only=read_only)
            if opts.profile_changes:
                prof = (prof or Profile.default_for(ctl.name)).with_(**opts.profile_changes)
            mem = cls(store, emb, ctl, answerer=ans, profile=prof, summarizer=summarizer)
            if opts.repair_on_open and not mem.read_only:
                # an in-process controller (``runs_inline``: no network, milliseconds a node) repairs
                repair_at_open(store, mem.repair_all if getattr(ctl, "runs_inline", False) else None)
        except BaseException:
            close_all(owned)
            raise
        mem._owned = [part for part in owned if part is not store]
        return mem

    def close(self) -> None:
        """Stop background work and close the store and every part :meth:`open` built (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._periodic.close()
        finally:
            close_all([*self._owned, self.store, self.meter])

    def _bind(self) -> None:
        """Record (or check) the embedder in the store; the first call may ask a remote embedder its dim."""
        if self._bound:
            return
        with self._bind_lock:
            if not self._bound:
                self.store.meta.bind_embedder(self.embedder.name, self.embedder.dim)
                self._bound = True

    def scope(self, user: str, agent: str | None = None, run: str | None = None) -> Scope:
        """A handle bound to one tenant: the same methods without the tenant keywords."""
        return Scope(self, Tenant(user, agent, run))

    # -- write -------------------------------------------------------------------------------
    def add(
        self,
        text: str,
        *,
        user: str,
        agent: str | None = None,
        run: str | None = None,
        speaker: str | None = None,
        at: TimeInput = None,
        **provenance: Any,
    ) -> str:
        """Store one observation; returns its node id. ``provenance``: source, session, turn_id, metadata,
        and ``key``, an idempotency key.

        Retrying is safe: an observation with a ``turn_id`` (keyed by agent, run, source, session and
        turn id) or a caller's ``key`` that is already stored is not written again; its id is returned.
        The write is one transaction: it is stored whole (edges and decisions too) or not at all.
        """
        tenant = Tenant(user, agent, run)
        key = _caller_key(provenance.pop("key", None))
        obs = _observation(text, speaker=speaker, at=at, **provenance)
        return self._add_many(tenant, [obs], keys=[key])[0]

    def add_many(
        self,
        observations: Iterable[Observation | str | Mapping[str, Any]],
        *,
        user: str,
        agent: str | None = None,
        run: str | None = None,
        chunk_size: int = 256,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> list[str]:
        """Store observations in order, batching embedding and controller work per chunk.

        All or nothing: every observation is validated before anything is written, and the whole
        call is one transaction (a failure stores none of it). Observations with a ``turn_id``, or (a
        mapping) a ``key``, that is already stored are not written again (their stored ids are
        returned), as with :meth:`add`.
        """
        return self._add_many(Tenant(user, agent, run), observations, chunk_size, on_progress)

    def _chunks(self, tenant: Tenant, items: list[_T], size: int) -> list[list[_T]]:
        """Chunks of at most ``size``; with inline consolidation they also end where a periodic pass
        is due, so the pass sees the memory as it would after one ``add`` per observation."""
        write = self.profile.write
        every = write.consolidate_every if write.consolidation == "inline" else 0
        if every <= 0:
            return [items[start : start + size] for start in range(0, len(items), size)]
        room = every - len(self._periodic.cadence.waiting(tenant)) % every
        out: list[list[_T]] = []
        start = 0
        while start < len(items):
            take = max(1, min(size, room))
            out.append(items[start : start + take])
            start += take
            room = room - take if room > take else every
        return out

    def _add_many(
        self,
        tenant: Tenant,
        observations: Iterable[Observation | str | Mapping[str, Any]],
        chunk_size: int = 256,
        on_progress: Callable[[int, int], None] | None = None,
        *,
        keys: Sequence[str | None] | None = None,
        atomic: bool = True,
    ) -> list[str]:
        if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
            raise InvalidInput(f"chunk_size must be a positive integer, got {chunk_size!r}")
        keyed = [_keyed(o) for o in observations]
        items = [obs for obs, _ in keyed]
        self._bind()
        wanted = [
            given if given is not None else natural_key(obs, tenant)
            for obs, given in zip(items, keys or [key for _, key in keyed], strict=True)
        ]
        # a retry or a resumed ingest: what is stored already is neither embedded nor written again
        asked = {k for k in wanted if k is not None}
        found = self.store.log.find_keys(tenant.user, asked) if asked else {}
        ids: list[str | None] = [None if k is None else found.get(k) for k in wanted]
        todo = [i for i, known in enumerate(ids) if known is None]
        chunks = self._chunks(tenant, todo, chunk_size)
        reports = self._writer.write_chunks(
            [[items[i] for i in c] for c in chunks], tenant, [[wanted[i] for i in c] for c in chunks]
        )
        due: list[tuple[str, ...]] = []
        with closing(reports), self.store.transaction() if atomic else nullcontext():
            for chunk in chunks:
                with self.store.transaction():  # one chunk: its nodes and the passes they make due
                    report = next(reports)
                    skip = set(report.pending) | set(report.existing)
                    due += self._periodic.record(tenant, [i for i in report.ids if i not in skip])
                for i, node_id in zip(chunk, report.ids, strict=True):
                    ids[i] = node_id
                self._warn_pending(report)
                if on_progress is not None:
                    on_progress(sum(1 for i in ids if i is not None), len(items))
        self._periodic.run_due(tenant, due)  # after the commit: never raises
        return [i for i in ids if i is not None]

    def ingest(
        self,
        path: str | Path,
        *,
        user: str,
        agent: str | None = None,
        run: str | None = None,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> list[str]:
        """Load a conversation file (dualmem's JSON format or LoCoMo) and store every turn.

        Resumable: each chunk of 256 turns is one transaction and every turn is keyed by its turn
        id, so running an interrupted ingest again stores the missing turns and nothing twice.
        """
        tenant = Tenant(user, agent, run)
        return self._add_many(tenant, load_observations(Path(path)), on_progress=on_progress, atomic=False)

    def repair(self, *, user: str, agent: str | None = None, run: str | None = None) -> WriteReport:
        """Complete the controller decisions of the tenant's nodes left ``pending`` by an outage."""
        return self._repair(Tenant(user, agent, run))

    def repair_all(self) -> WriteReport:
        """Admin: :meth:`repair` over every tenant of the store."""
        return self._repair(None)

    def backfill_views(
        self, *, user: str | None = None, agent: str | None = None, run: str | None = None
    ) -> BackfillReport:
        """Give the tenant's memories (``user=None``: every tenant's, admin) the edges of the
        profile's ``write.views`` that their writes did not make (the views were off then):
        ``dualmem repair --views``, see ``dualmem.write.backfill``."""
        self._bind()
        tenant = None if user is None else Tenant(user, agent, run)
        with self.store.transaction():
            report = backfill_views(self.store, self.meter, self.profile.write, tenant)
        self.meter.clear_cache()
        self._retriever.clear_cache()
        return report

    def _repair(self, tenant: Tenant | None) -> WriteReport:
        report = self._writer.repair(tenant)
        self._bind()
        self._warn_pending(report)
        return report

    def _warn_pending(self, report: WriteReport) -> None:
        if report.pending:
            log.warning(
                "%d observation(s) stored without controller decisions (%s); run repair later",
                len(report.pending),
                report.error,
            )

    # -- read --------------------------------------------------------------------------------
    def get(self, node_id: str, *, user: str, agent: str | None = None, run: str | None = None) -> Node:
        """The memory ``node_id``; ``NotFound`` unless it belongs to the tenant (agent/run included)."""
        return self._find(node_id, Tenant(user, agent, run))

    def _find(self, node_id: str, tenant: Tenant) -> Node:
        if not isinstance(node_id, str) or not node_id.strip():
            raise InvalidInput(f"a memory id must be a non-empty string, got {node_id!r}")
        check_text(node_id, "a memory id")
        node = self.store.get_node(node_id, tenant)
        if node is None:
            raise NotFound(f"no memory with id {node_id!r}", hint="ids are only visible to their own tenant")
        return node

    def inspect(
        self, node_id: str, *, user: str, agent: str | None = None, run: str | None = None
    ) -> Inspection:
        """A memory with its edges and recorded decisions, leaving out any that name a memory the
        tenant cannot see (a user-wide consolidation may relate two agents' memories)."""
        tenant = Tenant(user, agent, run)
        node = self._find(node_id, tenant)
        edges = self.store.edges_of(node.id)
        decisions = self.store.log.decisions_of(node.id)
        others = {e.other(node.id) for e in edges} | {d.other_id for d in decisions if d.other_id}
        visible = self.store.get_nodes(others, tenant)
        return Inspection(
            node,
            tuple(e for e in edges if e.other(node.id) in visible),
            tuple(d for d in decisions if d.other_id is None or d.other_id in visible),
        )

    def count(self, *, user: str, agent: str | None = None, run: str | None = None) -> int:
        return self.store.count(Tenant(user, agent, run))

    def nodes(self, *, user: str, agent: str | None = None, run: str | None = None) -> Iterator[Node]:
        return self.store.iter_nodes(Tenant(user, agent, run))

    def list_memories(
        self,
        *,
        user: str,
        agent: str | None = None,
        run: str | None = None,
        where: Filter | None = None,
        limit: int | None = 100,
        offset: int = 0,
        status: ListStatus | None = None,
    ) -> list[Node]:
        """The tenant's memories in time order (observation time, then write order), those matching
        ``where`` only, ``offset`` skipped and at most ``limit`` of them (``None``: all). ``status``
        keeps only the ``"current"`` ones (not superseded by a later version), the ``"superseded"``
        ones (``valid_to`` set), the ``"pending"`` ones (a write a controller outage left unfinished)
        or the ``"complete"`` ones (as ``GET /v1/memories?status=``)."""
        if status is not None and status not in LIST_STATUSES:
            raise InvalidInput(f"unknown status {status!r}", hint=f"use one of {', '.join(LIST_STATUSES)}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInput("offset must be an integer >= 0")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise InvalidInput("limit must be an integer >= 1 (or None for all)")
        tenant = Tenant(user, agent, run)
        found: Iterable[Node] = self.store.iter_nodes(tenant)
        if where is not None and not where.empty():  # the store's query, in the same time order
            found = _in_order(self.store, tenant, self.store.links.select(tenant, where))
        if status is not None:
            found = (n for n in found if _has_status(n, status))
        if offset >= sys.maxsize:  # no store holds that many (and islice refuses larger bounds)
            return []
        stop = None if limit is None else min(offset + limit, sys.maxsize)
        return list(islice(found, offset, stop))

    def search(  # noqa: PLR0913 - keyword-only: the tenant, k, filter, grouping and the asker's now
        self,
        query: str,
        *,
        user: str,
        agent: str | None = None,
        run: str | None = None,
        k: int = 10,
        where: Filter | None = None,
        group: Literal["turn", "session"] = "turn",
        now: TimeInput = None,
    ) -> Retrieval:
        """Adaptive retrieval: the top-``k`` evidence and the trace of how it was found.

        ``where`` restricts the evidence to the memories that match a :class:`Filter` (speaker,
        session, since/until, metadata); an empty filter restricts nothing. ``group="session"``:
        the ``k`` best sessions instead (``Retrieval.sessions``, each with its best turns; the
        evidence of several turns of a session adds up, ``dualmem.read.sessions``). ``now``: the
        asker's present (any ``TimeInput``), what relative time in the query ("last weekend", "two
        days ago") is grounded against; without it the temporal channel (``read.channels``)
        grounds against the memory's latest time and the ``time`` feature reads absolute dates only.
        """
        tenant = Tenant(user, agent, run)
        _check_query(query, k)
        asked_at = parse_time(now)
        if group not in ("turn", "session"):
            raise InvalidInput(f"group must be 'turn' or 'session', got {group!r}")
        self._bind()
        allowed = None
        if where is not None and not where.empty():
            allowed = frozenset(select(self.store, tenant, where))
        if group == "session":
            found = self._retriever.search(query, tenant, k=max(3 * k, k + 20), allowed=allowed, now=asked_at)
            hits = group_sessions(found.evidence, k)
            return replace(found, evidence=tuple(e for h in hits for e in h.evidence), sessions=hits)
        return self._retriever.search(query, tenant, k=k, allowed=allowed, now=asked_at)

    def quick_search(
        self, text: str, *, user: str, agent: str | None = None, run: str | None = None, k: int = 10
    ) -> list[Node]:
        """The current memories that share words or entities with ``text``, fused by reciprocal rank:
        no embedding, no System One (``read/quick.py``; the coding-agent hook's search)."""
        _check_query(text, k)
        return quick_search(self.store, Tenant(user, agent, run), text, k)

    def answer(
        self,
        query: str,
        *,
        user: str,
        agent: str | None = None,
        run: str | None = None,
        k: int = 10,
        where: Filter | None = None,
    ) -> Answer:
        """Retrieve (``where`` as in :meth:`search`), then let System Two answer from the selected
        evidence only, in search's order; a superseded memory that search ranked below its own later
        version is not quotable (``read.versions.current_first``). ``Answer.evidence`` is the search's."""
        if self.answerer is None:
            raise ConfigError(
                "this memory has no answerer", hint="open it with answerer='extractive' or 'chat'"
            )
        found = self.search(query, user=user, agent=agent, run=run, k=k, where=where)
        # the answer quotes what search ranked current: a fact ranked below its own update is not quoted
        draft = self.answerer.answer(query, current_first(found.evidence, self.store))
        return Answer(
            draft.text, found.evidence, found.trace, draft.abstained, self.answerer.name, used=draft.used
        )

    # -- consolidation -----------------------------------------------------------------------
    def consolidate(
        self, *, user: str, agent: str | None = None, run: str | None = None
    ) -> ConsolidationReport:
        """Run one consolidation pass over the tenant's recent memories now."""
        tenant = Tenant(user, agent, run)
        self._bind()
        return self._consolidator.run(tenant)

    @property
    def scheduler(self) -> Periodic:
        """The one consolidation scheduler of this memory (a server drives it, see ``Periodic.drive``)."""
        return self._periodic

    def wait_for_consolidation(self, timeout: float | None = None) -> None:
        """Block until background consolidation passes queued so far are done."""
        self._periodic.join(timeout)

    # -- lifecycle ---------------------------------------------------------------------------
    def update(
        self,
        node_id: str,
        text: str,
        *,
        user: str,
        agent: str | None = None,
        run: str | None = None,
        at: TimeInput = None,
    ) -> str:
        """Correct a memory: the new text becomes a new current node; the old one stays as history.

        The new version keeps the old one's tenant, speaker, provenance and (unless ``at`` is given) time.
        With ``at``, the old version's validity ends at that observation time; without it, now.
        """
        tenant = Tenant(user, agent, run)
        self._bind()
        with self.store.transaction():  # the new version and the supersession commit together
            old = self._find(node_id, tenant)
            if old.valid_to is not None:
                raise Conflict(f"memory {node_id!r} was already superseded", hint="update its newest version")
            obs = _observation(
                text,
                speaker=old.speaker,
                at=at if at is not None else old.at,
                source=old.source,
                session=old.session,
                turn_id=old.turn_id,
                metadata=dict(old.metadata),
            )
            new_id_ = self._writer.write([obs], old.tenant).ids[0]
            new = self._find(new_id_, old.tenant)
            supersede(self.store, old, new, at=new.at if at is not None else None)
        self.meter.clear_cache()
        self._retriever.clear_cache()
        return new_id_

    def history(
        self, node_id: str, *, user: str, agent: str | None = None, run: str | None = None
    ) -> list[Node]:
        """Every version of a memory (updates and superseded facts) the tenant can see, oldest first."""
        tenant = Tenant(user, agent, run)
        return history(self.store, self._find(node_id, tenant), tenant)

    def forget(
        self,
        node_id: str | None = None,
        *,
        user: str,
        agent: str | None = None,
        run: str | None = None,
        where: Filter | None = None,
    ) -> int:
        """Remove memories for good: by id, or every match of ``where``; returns how many nodes went.

        With each memory go every version in its supersession chain (what it superseded and what
        superseded it), every derived summary built from any of them, their edges, entity links,
        lexical and vector entries, recorded decisions, and every cached controller answer. Only the
        tenant's own memories are touched: another tenant's (or agent's/run's) id is ``NotFound``.
        """
        tenant = Tenant(user, agent, run)
        if (node_id is None) == (where is None):
            raise InvalidInput("pass exactly one of a node id or where=Filter(...)")
        return self._forget_ids(self._named(tenant, node_id, where), tenant)

    def delete(
        self,
        node_id: str | None = None,
        *,
        user: str,
        agent: str | None = None,
        run: str | None = None,
        where: Filter | None = None,
    ) -> int:
        """An alias of :meth:`forget` (same arguments, same meaning)."""
        return self.forget(node_id, user=user, agent=agent, run=run, where=where)

    def forget_all(self, *, user: str, agent: str | None = None, run: str | None = None) -> int:
        """Remove every memory of a tenant (as :meth:`forget` does for each); returns how many went."""
        tenant = Tenant(user, agent, run)
        return self._forget_ids(self._named(tenant, None, None), tenant)

    def would_forget(
        self,
        node_id: str | None = None,
        *,
        user: str,
        agent: str | None = None,
        run: str | None = None,
        where: Filter | None = None,
    ) -> list[Node]:
        """What :meth:`forget` would remove now, in time order, removing nothing: with ``node_id`` or
        ``where`` what ``forget`` with the same argument removes; with neither what :meth:`forget_all`
        removes. The same closure as the forget itself (versions and derived summaries included), so
        ``len(...)`` is the count the forget would return."""
        tenant = Tenant(user, agent, run)
        if node_id is not None and where is not None:
            raise InvalidInput("pass at most one of a node id or where=Filter(...)")
        ids = self._named(tenant, node_id, where)
        closure = forget_closure(self.store, ids, tenant) if ids else set()
        return [n for n in self.store.iter_nodes(tenant) if n.id in closure] if closure else []

    def _named(self, tenant: Tenant, node_id: str | None, where: Filter | None) -> list[str]:
        """The memories a forget names: the one with ``node_id``, the matches of ``where``, or (with
        neither) every memory of the tenant."""
        if node_id is not None:
            return [self._find(node_id, tenant).id]
        if where is not None:
            return select(self.store, tenant, where)
        return [n.id for n in self.store.iter_nodes(tenant)]

    def _forget_ids(self, ids: list[str], tenant: Tenant) -> int:
        if not ids:
            return 0
        with self.store.transaction():  # the closure is read and deleted in one transaction
            closure = forget_closure(self.store, ids, tenant)
            removed = self.store.delete_nodes(closure)
        self.meter.clear_cache()
        self._retriever.clear_cache()
        return removed

    def export_jsonl(
        self, path: str | Path, *, user: str, agent: str | None = None, run: str | None = None
    ) -> int:
        """Write the tenant's whole memory (nodes, edges, decisions) as JSON Lines; returns lines written."""
        tenant = Tenant(user, agent, run)
        self._bind()
        lines = export_lines(self.store, tenant, embedder=self.embedder.name, dim=self.embedder.dim)
        count = 0
        with Path(path).open("w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(line + "\n")
                count += 1
        return count

    def import_jsonl(
        self, path: str | Path, *, user: str, agent: str | None = None, run: str | None = None
    ) -> ImportReport:
        """Load an export made by :meth:`export_jsonl` into the caller's tenant: all of it, or nothing.

        The file must be whole: its trailer's counts and sha256 must match its lines (a file cut
        short, reordered or edited is refused with ``InvalidInput``, as is a version 1 export).

        A file holding any memory of a tenant the caller's does not cover (another user, or another
        agent/run when those are given) is refused with ``InvalidInput``; nothing is remapped.
        """
        tenant = Tenant(user, agent, run)
        try:
            with Path(path).open(encoding="utf-8", newline="") as fh:
                lines = split_lines(fh.read())  # "\n" only: never U+2028 and the like
        except OSError as exc:
            raise InvalidInput(f"cannot read {path}: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                f"cannot read {path}: it is not UTF-8 text (byte {exc.start})",
                hint="import a file written by export_jsonl",
            ) from exc
        verify_export(lines)  # a cut or edited file is refused before anything else is said of it
        check_import_tenant(lines, tenant)
        self._bind()
        return import_lines(self.store, lines, embedder=self.embedder.name, dim=self.embedder.dim)

    # -- introspection -----------------------------------------------------------------------
    def stats(self, *, user: str, agent: str | None = None, run: str | None = None) -> dict[str, JSONValue]:
        """Counts for the tenant: nodes, pending, edges by view, entities; the embedder and controller."""
        return self._stats(Tenant(user, agent, run))

    def stats_all(self) -> dict[str, JSONValue]:
        """Admin: :meth:`stats` over every tenant of the store, and ``users``: each user id with its
        memory count and the count of each of its (agent, run) pairs."""
        out = self._stats(None)
        grouped: dict[str, list[tuple[Tenant, int]]] = {}
        for tenant, count in self.store.meta.tenant_counts():
            grouped.setdefault(tenant.user, []).append((tenant, count))
        out["users"] = [
            {
                "user": user,
                "memories": sum(count for _, count in rows),
                "tenants": [{"agent": t.agent, "run": t.run, "memories": count} for t, count in rows],
            }
            for user, rows in grouped.items()
        ]
        return out

    def _stats(self, tenant: Tenant | None) -> dict[str, JSONValue]:
        s = self.store.meta.stats(tenant)
        return {
            "nodes": s.nodes,
            "pending": s.pending,
            "edges_by_view": dict(s.edges_by_view),
            "supersessions": s.supersessions,
            "entities": s.entities,
            "embedder": s.embedder,
            "dim": s.dim,
            "controller": self.controller.name,
            "profile": self.profile.name,
        }

    def controller_stats(self) -> dict[str, object]:
        """System-One calls, questions, latency and tokens per purpose (a consistent snapshot)."""
        return self.meter.snapshot().to_json()


def _declared_dim(embedder: Embedder) -> int | None:
    """The embedder's dimension when it is known without a request (see ``OpenAIEmbedder.declared_dim``)."""
    inner = getattr(embedder, "inner", None)  # a CachedEmbedder around another embedder
    if inner is not None and callable(getattr(inner, "embed", None)):  # not isinstance: it reads .dim
        return _declared_dim(inner)
    if hasattr(type(embedder), "declared_dim"):
        declared: int | None = getattr(embedder, "declared_dim")  # noqa: B009 - not the protocol's dim
        return declared
    return embedder.dim


def _check_query(query: object, k: object) -> None:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("the query is empty", hint="pass a non-blank question")
    check_text(query, "the query")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InvalidInput(f"k must be a positive integer, got {k!r}")


def observed_at(at: TimeInput, now: dt.datetime | None = None) -> TimeInput:
    """The adapters' one rule for an observation given without a time (CLI ``add``, HTTP, MCP): it
    was observed at the time of the call, ``now`` (UTC). An explicit ``at`` is kept as given. (The
    library itself stores what it is given: ``Memory.add(text)`` keeps ``at=None``.)"""
    return at if at is not None else (now or utcnow())


def stamped(
    observations: Sequence[Mapping[str, Any]], now: dt.datetime | None = None
) -> list[Mapping[str, Any]]:
    """The observations, each without a time given ``at=now`` (:func:`observed_at`; one ``now`` for
    the whole batch, the time of the call by default)."""
    now = now or utcnow()
    return [o if o.get("at") is not None else {**o, "at": observed_at(None, now)} for o in observations]


def _observation(text: object, *, speaker: str | None, at: TimeInput, **provenance: Any) -> Observation:
    allowed = {"source", "session", "turn_id", "metadata"}
    unknown = set(provenance) - allowed
    if unknown:
        raise InvalidInput(f"unknown observation field(s): {', '.join(sorted(unknown))}")
    return Observation(
        content=text,  # type: ignore[arg-type]
        at=parse_time(at),
        speaker=speaker,
        source=provenance.get("source"),
        session=provenance.get("session"),
        turn_id=provenance.get("turn_id"),
        metadata=provenance.get("metadata") or {},
    )


def _caller_key(key: object) -> str | None:
    """A caller's idempotency key as stored (``key:`` and the key), or None."""
    if key is None:
        return None
    if not isinstance(key, str) or not key.strip():
        raise InvalidInput("key must be a non-empty string", hint="an idempotency key, e.g. a request id")
    check_text(key, "key")
    return "key:" + key


def _keyed(item: Observation | str | Mapping[str, Any]) -> tuple[Observation, str | None]:
    """An observation and the caller's key a mapping gave it (``{"text": ..., "key": ...}``)."""
    if isinstance(item, Mapping) and "key" in item:
        data = dict(item)
        key = _caller_key(data.pop("key"))
        return _coerce(data), key
    return _coerce(item), None


def _coerce(item: Observation | str | Mapping[str, Any]) -> Observation:
    if isinstance(item, Observation):
        return item
    if isinstance(item, str):
        return _observation(item, speaker=None, at=None)
    if isinstance(item, Mapping):
        data = dict(item)
        text = data.pop("content", data.pop("text", None))
        return _observation(text, speaker=data.pop("speaker", None), at=data.pop("at", None), **data)
    raise InvalidInput(
        f"an observation must be a str, a mapping or an Observation, not {type(item).__name__}"
    )


class Scope:
    """The memory as one tenant sees it. Build it with :meth:`Memory.scope`."""

    __slots__ = ("_kw", "memory", "tenant")

    def __init__(self, memory: Memory, tenant: Tenant) -> None:
        self.memory = memory
        self.tenant = tenant
        self._kw: dict[str, Any] = {"user": tenant.user, "agent": tenant.agent, "run": tenant.run}

    def __repr__(self) -> str:
        t = self.tenant
        return f"Scope(user={t.user!r}, agent={t.agent!r}, run={t.run!r})"

    # -- write -------------------------------------------------------------------------------
    def add(  # noqa: PLR0913 - keyword-only: the observation's fields and its idempotency key
        self,
        text: str,
        *,
        speaker: str | None = None,
        at: TimeInput = None,
        source: str | None = None,
        session: str | None = None,
        turn_id: str | None = None,
        metadata: Mapping[str, JSONValue] | None = None,
        key: str | None = None,
    ) -> str:
        """Store one observation; returns its node id (the stored one for a known ``key``/turn)."""
        return self.memory.add(
            text,
            speaker=speaker,
            at=at,
            source=source,
            session=session,
            turn_id=turn_id,
            metadata=metadata,
            key=key,
            **self._kw,
        )

    def add_many(
        self,
        observations: Iterable[Observation | str | Mapping[str, Any]],
        *,
        chunk_size: int = 256,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> list[str]:
        """Store observations in order; one bad item stores nothing."""
        return self.memory.add_many(observations, chunk_size=chunk_size, on_progress=on_progress, **self._kw)

    def ingest(self, path: str | Path, *, on_progress: Callable[[int, int], None] | None = None) -> list[str]:
        """Store every turn of a conversation file (dualmem JSON or LoCoMo)."""
        return self.memory.ingest(path, on_progress=on_progress, **self._kw)

    def repair(self) -> WriteReport:
        """Complete the controller decisions of this tenant's pending nodes."""
        return self.memory.repair(**self._kw)

    def backfill_views(self) -> BackfillReport:
        """Edges of views turned on after this tenant's memories were written (``Memory.backfill_views``)."""
        return self.memory.backfill_views(**self._kw)

    # -- read --------------------------------------------------------------------------------
    def list_memories(
        self,
        *,
        where: Filter | None = None,
        limit: int | None = 100,
        offset: int = 0,
        status: ListStatus | None = None,
    ) -> list[Node]:
        return self.memory.list_memories(where=where, limit=limit, offset=offset, status=status, **self._kw)

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        where: Filter | None = None,
        group: Literal["turn", "session"] = "turn",
        now: TimeInput = None,
    ) -> Retrieval:
        return self.memory.search(query, k=k, where=where, group=group, now=now, **self._kw)

    def answer(self, query: str, *, k: int = 10, where: Filter | None = None) -> Answer:
        return self.memory.answer(query, k=k, where=where, **self._kw)

    def get(self, node_id: str) -> Node:
        return self.memory.get(node_id, **self._kw)

    def inspect(self, node_id: str) -> Inspection:
        return self.memory.inspect(node_id, **self._kw)

    def history(self, node_id: str) -> list[Node]:
        return self.memory.history(node_id, **self._kw)

    def count(self) -> int:
        return self.memory.count(**self._kw)

    def nodes(self) -> Iterator[Node]:
        return self.memory.nodes(**self._kw)

    def stats(self) -> dict[str, JSONValue]:
        return self.memory.stats(**self._kw)

    # -- lifecycle ---------------------------------------------------------------------------
    def update(self, node_id: str, text: str, *, at: TimeInput = None) -> str:
        return self.memory.update(node_id, text, at=at, **self._kw)

    def forget(self, node_id: str | None = None, *, where: Filter | None = None) -> int:
        """Remove a memory (with its versions, derived summaries and cached answers) or every match."""
        return self.memory.forget(node_id, where=where, **self._kw)

    def delete(self, node_id: str | None = None, *, where: Filter | None = None) -> int:
        """An alias of :meth:`forget`."""
        return self.forget(node_id, where=where)

    def would_forget(self, node_id: str | None = None, *, where: Filter | None = None) -> list[Node]:
        """What :meth:`forget` (or, with neither argument, :meth:`forget_all`) would remove now."""
        return self.memory.would_forget(node_id, where=where, **self._kw)

    def forget_all(self) -> int:
        return self.memory.forget_all(**self._kw)

    def consolidate(self) -> ConsolidationReport:
        return self.memory.consolidate(**self._kw)

    def export_jsonl(self, path: str | Path) -> int:
        return self.memory.export_jsonl(path, **self._kw)

    def import_jsonl(self, path: str | Path) -> ImportReport:
        return self.memory.import_jsonl(path, **self._kw)

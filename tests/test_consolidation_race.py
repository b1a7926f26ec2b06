"""A consolidation pass racing a ``forget`` keeps the rest of its work (issue 41, item 3).

A pass reads its window and pairs, asks System One (which may take seconds with a remote
controller), then writes. A ``forget`` committed meanwhile by another connection (a thread, another
process) used to fail that write ("edges|decisions refer to unknown nodes"): the pass was logged as
failed and dropped. Now what names a forgotten memory is left out and the rest is stored.

The race is made deterministic at the one seam between the read and the write: the controller (the
public ``Controller`` protocol, one ``decide`` method). Asked its first consolidation batch, it has a
second ``Memory`` on the same SQLite file forget one of the pass's memories, then answers as the
builtin controller does.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dualmem import Memory, Profile
from dualmem.control.builtin import BuiltinController
from dualmem.control.questions import Batch, BatchResult
from dualmem.embed import HashingEmbedder
from dualmem.plane import SQLiteStore
from dualmem.types import Tenant
from dualmem.write.lifecycle import Filter

NOTES = [
    ("Mira's dog Biscuit ate a sock on Monday.", "keep"),
    ("Biscuit the beagle ate another sock today.", "keep"),
    ("The vet said Biscuit is fine after eating the sock.", "victim"),
    ("Biscuit is a nosy beagle who eats socks and shoes.", "keep"),
]


class ForgetsDuringThePass:
    """The builtin controller, except that before answering the first consolidation batch it has
    another connection forget the memories tagged ``victim`` (and waits until that committed)."""

    name = "builtin"

    def __init__(self, db: Path, *, in_thread: bool) -> None:
        self.inner = BuiltinController()
        self.db = db
        self.in_thread = in_thread
        self.forgotten = 0

    def decide(self, batch: Batch) -> BatchResult:
        if batch.purpose == "consolidation" and not self.forgotten:
            if self.in_thread:  # another thread with its own connection
                worker = threading.Thread(target=self._forget)
                worker.start()
                worker.join()
            else:
                self._forget()
            assert self.forgotten == 1
        return self.inner.decide(batch)

    def _forget(self) -> None:
        profile = Profile.builtin().with_(write__consolidation="off")
        with Memory.open(self.db, embedder=HashingEmbedder(256), profile=profile) as other:
            self.forgotten = other.forget(user="u", where=Filter(metadata={"tag": "victim"}))


@pytest.mark.parametrize(("mode", "in_thread"), [("inline", False), ("background", True)])
def test_a_pass_racing_a_forget_stores_the_rest_and_logs_no_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, mode: str, in_thread: bool
) -> None:
    db = tmp_path / "m.db"
    controller = ForgetsDuringThePass(db, in_thread=in_thread)
    profile = Profile.builtin().with_(write__consolidation=mode, write__consolidate_every=len(NOTES))
    mem = Memory(SQLiteStore.open(db), HashingEmbedder(256), controller, answerer=None, profile=profile)
    caplog.set_level(logging.WARNING, logger="dualmem")
    try:
        ids = [mem.add(text, user="u", speaker="Mira", metadata={"tag": tag}) for text, tag in NOTES]
        mem.wait_for_consolidation()
        victim = ids[2]
        assert controller.forgotten == 1
        assert mem.store.get_nodes(ids, Tenant("u")).keys() == {ids[0], ids[1], ids[3]}
        assert [r.getMessage() for r in caplog.records] == []  # a normal race: nothing to report
        assert mem.store.get_meta("consolidation:queue") in (None, [], {})  # the pass is done, not requeued
        judged = {
            (d.node_id, d.other_id)
            for i in ids
            for d in mem.store.decisions_of(i)
            if d.purpose == "consolidation"
        }
        assert judged  # the pass ran: its pairs without the forgotten memory were judged and stored
        assert all(victim not in pair for pair in judged)
        for i in ids:
            assert all(victim not in (e.source, e.target) for e in mem.store.edges_of(i))
            assert all(d.other_id != victim for d in mem.store.decisions_of(i))
        report = mem.consolidate(user="u")  # a later pass finds nothing left undone
        assert report.pairs == 0
    finally:
        mem.close()


class ForgetsBeforeTheEdges:
    """A ``Store`` as the protocol sees it (every call passed on to a real ``PostgresStore``), except
    that, once armed, its first ``put_edges`` has another connection forget the ``victim`` first:
    the forget commits between the pass's re-read of its nodes and its writes, inside its transaction
    (PostgreSQL's read committed lets it). Only this protocol seam can place the forget there."""

    def __init__(self, inner: Any, other: Memory) -> None:
        self._inner = inner
        self._other = other
        self.victim: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def put_edges(self, edges: Any) -> None:
        if self.victim is not None:
            victim, self.victim = self.victim, None
            assert self._other.forget(victim, user="u") == 1
        self._inner.put_edges(edges)


def test_a_forget_inside_the_passes_write_on_postgres_is_retried(
    pg_store_factory: Callable[..., Any], pg_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    from pg_server import with_schema

    inner = pg_store_factory()
    quiet = Profile.builtin().with_(write__consolidation="off")
    other = Memory.open(with_schema(pg_dsn, inner.schema), embedder=HashingEmbedder(256), profile=quiet)
    store = ForgetsBeforeTheEdges(inner, other)
    mem = Memory(store, HashingEmbedder(256), BuiltinController(), answerer=None, profile=quiet)  # type: ignore[arg-type]
    caplog.set_level(logging.WARNING, logger="dualmem")
    try:
        ids = [mem.add(text, user="u", speaker="Mira") for text, _ in NOTES]
        store.victim = ids[2]
        report = mem.consolidate(user="u")
        assert store.victim is None  # the forget happened, inside the pass's write
        assert report.pairs > 0
        judged = {
            (d.node_id, d.other_id)
            for i in ids
            for d in inner.decisions_of(i)
            if d.purpose == "consolidation"
        }
        assert judged
        assert all(ids[2] not in pair for pair in judged)
        assert inner.get_nodes([ids[2]]) == {}
        assert [r.getMessage() for r in caplog.records] == []
    finally:
        mem.close()
        other.close()

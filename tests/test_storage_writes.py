"""Findings 3 and 5: one call one transaction, idempotent retries and ingests, durable consolidation
work, repair equal to a clean build, pending nodes repaired by ``dualmem check --repair``."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from control_support import with_views
from dualmem import Memory, OpenOptions, Profile
from dualmem.cli.main import main
from dualmem.control import create_controller
from dualmem.control.base import BaseController
from dualmem.control.questions import Batch, BatchResult
from dualmem.control.scripted import ScriptedController
from dualmem.embed import HashingEmbedder
from dualmem.errors import ControllerError, DatabaseLocked, ReadOnlyStore, UnknownDecision
from dualmem.plane import SQLiteStore

REPO = Path(__file__).resolve().parents[1]


class Flaky(BaseController):
    """The builtin controller behind a switch: ``down`` makes every request fail (an outage)."""

    name = "flaky"

    def __init__(self) -> None:
        self.inner = create_controller("builtin")
        self.down = False

    def decide(self, batch: Batch) -> BatchResult:
        if self.down:
            raise ControllerError("the controller is down")
        return self.inner.decide(batch)


WORDS = [
    "tea",
    "harbor",
    "bike",
    "garden",
    "river",
    "violin",
    "market",
    "lantern",
    "pebble",
    "orchard",
    "meadow",
    "kettle",
    "ferry",
]


def conversation(path: Path, turns: int) -> Path:
    """Distinct times and words per turn: no ties in candidate search, so builds compare exactly."""
    rng = random.Random(turns)
    rows = [
        {
            "speaker": "Mira" if i % 2 else "Sam",
            "text": f"turn {i}: " + " ".join(rng.sample(WORDS, 5)),
            "id": f"t{i}",
            "at": f"2024-05-14T{10 + i // 60:02d}:{i % 60:02d}:00Z",
        }
        for i in range(turns)
    ]
    doc = {"id": "c", "sessions": [{"id": "s1", "date": "2024-05-14T10:00:00Z", "turns": rows}]}
    path.write_text(json.dumps(doc))
    return path


def open_mem(db: Path, controller: BaseController | str = "builtin", **changes: object) -> Memory:
    # the views on: the builds' edges are compared too, and an outage keeps the deterministic ones
    prof = with_views(Profile.named("builtin")).with_(**{"write__consolidation": "off", **changes})
    return Memory.open(db, embedder=HashingEmbedder(64), controller=controller, answerer=None, profile=prof)


def graph(db: Path) -> tuple[set[tuple[str, ...]], dict[str, int]]:
    """Edges as (turn, turn, view, label) and node counts per turn: comparable across builds."""
    with SQLiteStore.open(db) as store:
        nodes = {n.id: n for n in store.iter_nodes(None)}
        turn = {i: str(n.turn_id) for i, n in nodes.items()}
        edges = {(turn[e.source], turn[e.target], e.view, e.label) for i in nodes for e in store.edges_of(i)}
        counts: dict[str, int] = {}
        for n in nodes.values():
            counts[str(n.turn_id)] = counts.get(str(n.turn_id), 0) + 1
        assert all(n.status == "complete" for n in nodes.values())
    return edges, counts


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with open_mem(tmp_path / "m.db") as m:
        yield m


# -- one call, one transaction ---------------------------------------------------------------
def test_a_failing_write_leaves_nothing(tmp_path: Path) -> None:
    ctl = ScriptedController({})  # no answers: typing raises UnknownDecision inside the write
    with open_mem(tmp_path / "m.db", controller=ctl) as m:
        with pytest.raises(UnknownDecision):
            m.add("Mira bought a bike.", user="u")
        with pytest.raises(UnknownDecision):
            m.add_many([f"note {i}" for i in range(20)], user="u", chunk_size=3)
        assert m.count(user="u") == 0
        assert m.store.check().healthy


def test_add_many_is_all_or_nothing(mem: Memory) -> None:
    def stop(done: int, total: int) -> None:
        if done > 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        mem.add_many([f"note {i}" for i in range(20)], user="u", chunk_size=5, on_progress=stop)
    assert mem.count(user="u") == 0
    assert len(mem.add_many([f"note {i}" for i in range(20)], user="u", chunk_size=5)) == 20


def test_update_is_one_transaction(tmp_path: Path) -> None:
    ctl = Flaky()
    with open_mem(tmp_path / "m.db", controller=ctl) as m:
        old = m.add("My locker code is 4471.", user="u")
        blocker = SQLiteStore.open(tmp_path / "m.db", timeout=0.1)
        m.store._conn.execute("PRAGMA busy_timeout = 100")  # type: ignore[attr-defined]
        with blocker.transaction(), pytest.raises(DatabaseLocked):
            m.update(old, "My locker code is 9902.", user="u")
        blocker.close()
        assert [n.id for n in m.nodes(user="u")] == [old]
        assert m.get(old, user="u").valid_to is None
        new = m.update(old, "My locker code is 9902.", user="u")
        assert [n.id for n in m.history(new, user="u")] == [old, new]


def test_a_controller_outage_stores_pending_nodes_with_their_deterministic_edges(tmp_path: Path) -> None:
    ctl = Flaky()
    with open_mem(tmp_path / "m.db", controller=ctl) as m:
        first = m.add("Mira: I bought a bike.", user="u", session="s", turn_id="1")
        ctl.down = True
        second = m.add("Mira: the bike is red.", user="u", session="s", turn_id="2")  # no raise: it is stored
        assert m.get(second, user="u").status == "pending"
        assert any(e.source == first and e.label == "before" for e in m.inspect(second, user="u").edges)


# -- idempotency -----------------------------------------------------------------------------
def test_a_retried_add_with_a_key_or_a_turn_id_is_stored_once(mem: Memory) -> None:
    a = mem.add("Mira bought a bike.", user="u", key="req-1")
    assert mem.add("Mira bought a bike.", user="u", key="req-1") == a
    assert mem.add("Mira bought a bike.", user="u", key="req-2") != a
    t = mem.add("Turn one.", user="u", session="s", turn_id="7")
    assert mem.add("Turn one.", user="u", session="s", turn_id="7") == t
    assert mem.add("Turn one.", user="u", session="other", turn_id="7") != t
    assert mem.add("Turn one.", user="v", session="s", turn_id="7") != t  # keys are per tenant
    assert mem.count(user="u") == 4
    ids = mem.add_many([{"text": "x", "turn_id": "9"}, {"text": "x", "turn_id": "9"}], user="u")
    assert ids[0] == ids[1]


def test_an_interrupted_ingest_run_again_stores_each_turn_once(tmp_path: Path) -> None:
    convo = conversation(tmp_path / "c.json", 300)  # two chunks of 256
    clean, crashed = tmp_path / "clean.db", tmp_path / "crashed.db"
    with open_mem(clean) as m:
        m.ingest(convo, user="u")

    def stop(done: int, total: int) -> None:
        raise KeyboardInterrupt  # after the first chunk committed

    with open_mem(crashed) as m:
        with pytest.raises(KeyboardInterrupt):
            m.ingest(convo, user="u", on_progress=stop)
        assert m.count(user="u") == 256
    with open_mem(crashed) as m:
        assert len(m.ingest(convo, user="u")) == 300
        assert len(m.ingest(convo, user="u")) == 300  # and once more: nothing new
        assert m.count(user="u") == 300
    clean_edges, clean_counts = graph(clean)
    crashed_edges, crashed_counts = graph(crashed)
    assert crashed_counts == clean_counts == {f"t{i}": 1 for i in range(300)}
    assert crashed_edges == clean_edges  # the previous-turn edge across the interruption included
    assert sum(1 for e in clean_edges if e[3] == "before") >= 299


def mem_graph(m: Memory) -> tuple[set[tuple[str, ...]], dict[str, int]]:
    """``graph`` through the API, for any store: edges by turn ids, and node counts per turn."""
    nodes = {n.id: n for n in m.nodes(user="u")}
    turn = {i: str(n.turn_id) for i, n in nodes.items()}
    edges = {
        (turn[e.source], turn[e.target], e.view, e.label) for i in nodes for e in m.inspect(i, user="u").edges
    }
    counts: dict[str, int] = {}
    for n in nodes.values():
        counts[str(n.turn_id)] = counts.get(str(n.turn_id), 0) + 1
    assert all(n.status == "complete" for n in nodes.values())
    return edges, counts


def test_repair_after_an_outage_equals_a_clean_build(memory_db: Callable[[str], str], tmp_path: Path) -> None:
    convo = conversation(tmp_path / "c.json", 40)
    with open_mem(memory_db("clean")) as m:
        m.ingest(convo, user="u")
        clean = mem_graph(m)
    ctl = Flaky()
    ctl.down = True
    with open_mem(memory_db("broken"), controller=ctl) as m:
        m.ingest(convo, user="u")
        assert m.stats(user="u")["pending"] == 40
        ctl.down = False
        m.repair(user="u")
        assert mem_graph(m) == clean
    assert sum(1 for e in clean[0] if e[2] in ("semantic", "causal")) > 0  # inferred edges are compared


def test_repair_after_an_outage_in_the_middle_equals_a_clean_build(
    memory_db: Callable[[str], str], tmp_path: Path
) -> None:
    """Nodes written after the outage are stored (and complete) when the pending ones are repaired:
    repair still relates each pending node only to what was stored before it."""
    rows = json.loads(conversation(tmp_path / "c.json", 40).read_text())["sessions"][0]["turns"]

    def build(m: Memory, ctl: Flaky | None) -> None:
        for i, row in enumerate(rows):
            if ctl is not None:
                ctl.down = 10 <= i < 25
            m.add(
                row["text"], user="u", speaker=row["speaker"], at=row["at"], session="s1", turn_id=row["id"]
            )

    with open_mem(memory_db("clean")) as m:
        build(m, None)
        clean = mem_graph(m)
    ctl = Flaky()
    with open_mem(memory_db("broken"), controller=ctl) as m:
        build(m, ctl)
        assert m.stats(user="u")["pending"] == 15
        report = m.repair(user="u")
        assert len(report.ids) == 15
        assert not report.pending
        assert mem_graph(m) == clean


def test_repair_skips_a_candidate_forgotten_meanwhile(tmp_path: Path) -> None:
    ctl = Flaky()
    with open_mem(tmp_path / "m.db", controller=ctl) as m:
        first = m.add("Mira bought a red bike at the harbor market.", user="u")
        ctl.down = True
        second = m.add("Mira rides the red bike to the harbor.", user="u")
        candidates = [d.other_id for d in m.inspect(second, user="u").decisions if d.purpose == "candidates"]
        assert first in candidates
        m.forget(first, user="u")
        ctl.down = False
        assert not m.repair(user="u").pending
        assert m.get(second, user="u").status == "complete"
        assert all(first not in (e.source, e.target) for e in m.inspect(second, user="u").edges)


def test_check_repair_completes_pending_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "m.db"
    ctl = Flaky()
    ctl.down = True
    with open_mem(db, controller=ctl) as m:
        m.add_many(["Mira bought a bike.", "The bike is red."], user="u")
    argv = ["--db", str(db), "--embedder", "hashing:64"]
    assert main([*argv, "check"]) == 1
    assert {p["kind"] for p in json.loads(capsys.readouterr().out)["problems"]} == {"pending_nodes"}
    assert main([*argv, "check", "--repair"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["healthy"] is True
    assert "pending_nodes" in out["repaired"]


# -- durable consolidation work --------------------------------------------------------------
def _cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, "-m", "dualmem.cli.main", "--db", str(db), "--embedder", "hashing:64", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=120)


def test_twenty_five_cli_adds_consolidate(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    for i in range(25):
        done = _cli(db, "--user", "local", "add", f"Mira note {i}: she likes tea and the harbor")
        assert done.returncode == 0, done.stderr
    with SQLiteStore.open(db) as store:
        purposes = {d.purpose for n in store.iter_nodes(None) for d in store.decisions_of(n.id)}
        assert "consolidation" in purposes
        assert store.get_meta("consolidation:queue") == []
        backlog = store.get_meta('consolidation:backlog:["local", null, null]')
        assert isinstance(backlog, list)
        assert len(backlog) == 5


_EXIT_WITHOUT_CLOSE = """
import os, sys
from dualmem import Memory, OpenOptions, Profile
from dualmem.embed import HashingEmbedder
prof = Profile.named("builtin").with_(write__consolidation="background", write__consolidate_every=5)
m = Memory.open(sys.argv[1], embedder=HashingEmbedder(64), answerer=None, profile=prof)
m._periodic._background._fn = lambda tenant, ids: None  # the worker thread never gets to run a pass
m.add_many([f"Mira fact {i} about tea" for i in range(15)], user="u")
os._exit(0)  # no close(): the process ends with three passes queued
"""


def test_a_process_exiting_without_close_loses_no_queued_pass(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    subprocess.run([sys.executable, "-c", _EXIT_WITHOUT_CLOSE, str(db)], check=True, env=env, timeout=120)
    with SQLiteStore.open(db) as store:
        queue = store.get_meta("consolidation:queue")
        assert isinstance(queue, list)
        assert len(queue) == 3
    with open_mem(db, write__consolidation="inline", write__consolidate_every=5) as m:  # resumes them
        assert m.store.get_meta("consolidation:queue") == []
        decided = {
            d.node_id
            for n in m.nodes(user="u")
            for d in m.store.decisions_of(n.id)
            if d.purpose == "consolidation"
        }
        assert decided


# -- read-only -------------------------------------------------------------------------------
def test_memory_open_read_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "m.db"
    with open_mem(db) as m:
        node = m.add("Mira bought a bike.", user="u")
    before = db.read_bytes()
    with Memory.open(db, embedder=HashingEmbedder(64), answerer=None, read_only=True) as m:
        assert m.get(node, user="u").content == "Mira bought a bike."
        assert m.search("bike", user="u").evidence
        with pytest.raises(ReadOnlyStore):
            m.add("more", user="u")
        with pytest.raises(ReadOnlyStore):
            m.forget(node, user="u")
    assert db.read_bytes() == before
    argv = ["--db", str(db), "--embedder", "hashing:64", "--user", "u", "--read-only"]
    assert main([*argv, "search", "bike"]) == 0
    capsys.readouterr()
    assert main([*argv, "add", "x"]) == 2
    assert "read-only" in capsys.readouterr().err


# -- pending nodes repaired on open ----------------------------------------------------------
def _pending_db(path: Path) -> tuple[Path, str]:
    ctl = Flaky()
    with open_mem(path, controller=ctl) as m:
        m.add("Mira bought a bike at the harbor market.", user="u")
        ctl.down = True
        node = m.add("Mira rides the bike to the harbor.", user="u")
        assert m.get(node, user="u").status == "pending"
    return path, node


def test_a_writable_open_with_the_builtin_controller_repairs_pending_nodes(tmp_path: Path) -> None:
    db, node = _pending_db(tmp_path / "m.db")
    with open_mem(db) as m:  # builtin: offline, cheap
        assert m.get(node, user="u").status == "complete"
        assert m.stats(user="u")["pending"] == 0
        assert any(e.view == "semantic" for e in m.inspect(node, user="u").edges)


def test_opens_that_must_not_repair_leave_pending_nodes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db, node = _pending_db(tmp_path / "m.db")
    before = db.read_bytes()
    with Memory.open(db, embedder=HashingEmbedder(64), answerer=None, read_only=True) as m:
        assert m.get(node, user="u").status == "pending"  # a read-only open never writes
    assert db.read_bytes() == before
    called: list[Batch] = []

    class Remote(Flaky):
        def decide(self, batch: Batch) -> BatchResult:
            called.append(batch)
            return super().decide(batch)

    with caplog.at_level("WARNING", logger="dualmem"), open_mem(db, controller=Remote()) as m:
        assert m.get(node, user="u").status == "pending"  # another controller is not called at open
    assert not called
    assert "pending nodes" in caplog.text
    opts = OpenOptions(repair_on_open=False)
    prof = Profile.named("builtin").with_(write__consolidation="off")
    with Memory.open(db, embedder=HashingEmbedder(64), answerer=None, profile=prof, options=opts) as m:
        assert m.get(node, user="u").status == "pending"


def test_a_held_write_lock_does_not_fail_the_open(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db, node = _pending_db(tmp_path / "m.db")
    blocker = SQLiteStore.open(db, timeout=0.1)
    opts = OpenOptions(lock_timeout=0.2)
    prof = Profile.named("builtin").with_(write__consolidation="off")
    try:
        with (
            blocker.transaction(),
            caplog.at_level("WARNING", logger="dualmem"),
            Memory.open(db, embedder=HashingEmbedder(64), answerer=None, profile=prof, options=opts) as m,
        ):
            assert m.get(node, user="u").status == "pending"
        assert "write lock" in caplog.text
    finally:
        blocker.close()


def test_a_pending_node_without_recorded_candidates_is_still_repaired(tmp_path: Path) -> None:
    """Nodes left pending by an older dualmem have no candidate records: repair discovers them again."""
    ctl = Flaky()
    db = tmp_path / "m.db"
    with open_mem(db, controller=ctl) as m:
        first = m.add("Mira bought a red bike at the harbor market.", user="u")
        ctl.down = True
        second = m.add("Mira rides the red bike to the harbor.", user="u")
        m.store._conn.execute("DELETE FROM decision_sets WHERE purpose = 'candidates'")  # type: ignore[attr-defined]
        assert not [d for d in m.inspect(second, user="u").decisions if d.purpose == "candidates"]
        ctl.down = False
        assert not m.repair(user="u").pending
        assert m.get(second, user="u").status == "complete"
        assert any(
            first in (e.source, e.target) for e in m.inspect(second, user="u").edges if e.view == "semantic"
        )

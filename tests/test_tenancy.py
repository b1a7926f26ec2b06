"""One tenancy API: by-id calls never cross users, agents or runs; forget has one meaning; scoped handles."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dualmem import InvalidInput, Memory, NotFound, Profile, Scope, Tenant
from dualmem.control.scripted import ScriptedController
from dualmem.embed import HashingEmbedder
from dualmem.memory import Filter
from export_seal import resealed_text

OWNER = Tenant("alice", "helper", "r1")
#: scopes that must not reach OWNER's memories by id
OUTSIDERS = [
    Tenant("bob"),
    Tenant("bob", "helper", "r1"),
    Tenant("alice", "other"),
    Tenant("alice", None, "r2"),
]
#: scopes that do cover OWNER
INSIDERS = [Tenant("alice"), Tenant("alice", "helper"), Tenant("alice", None, "r1"), OWNER]
TABLE: dict[str, object] = {"relation.time": "unknown", "consolidate.representation": "uncertain"}


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    prof = Profile.paper().with_(write__consolidation="off", controller_cache=256)
    ctl = ScriptedController(TABLE, default=0.2)  # type: ignore[arg-type]
    with Memory.open(tmp_path / "m.db", embedder=HashingEmbedder(128), controller=ctl, profile=prof) as m:
        yield m


def _kw(t: Tenant) -> dict[str, Any]:
    return {"user": t.user, "agent": t.agent, "run": t.run}


def _snapshot(mem: Memory) -> tuple[object, ...]:
    """Everything stored, seen as an administrator (no tenant filter)."""
    nodes = sorted((n.id, n.tenant, n.content, n.valid_to, n.status) for n in mem.store.iter_nodes(None))
    edges = sorted((e.source, e.target, e.view, e.label) for i, *_ in nodes for e in mem.store.edges_of(i))
    return tuple(nodes), tuple(edges)


BY_ID: dict[str, Callable[[Memory, str, Tenant], object]] = {
    "get": lambda m, i, t: m.get(i, **_kw(t)),
    "inspect": lambda m, i, t: m.inspect(i, **_kw(t)),
    "history": lambda m, i, t: m.history(i, **_kw(t)),
    "update": lambda m, i, t: m.update(i, "Changed by someone else.", **_kw(t)),
    "forget": lambda m, i, t: m.forget(i, **_kw(t)),
    "delete": lambda m, i, t: m.delete(i, **_kw(t)),
}


@pytest.mark.parametrize("method", sorted(BY_ID))
@pytest.mark.parametrize("outsider", OUTSIDERS, ids=str)
def test_by_id_calls_never_cross_tenants(mem: Memory, method: str, outsider: Tenant) -> None:
    first = mem.add("Alice's locker code is 4471.", **_kw(OWNER))
    node_id = mem.update(first, "Alice's locker code is 9902.", **_kw(OWNER))
    mem.add("Bob keeps his bike in the shed.", user="bob", agent="helper", run="r1")
    before = _snapshot(mem)
    scope = mem.scope(outsider.user, outsider.agent, outsider.run)
    scoped: dict[str, Callable[[str], object]] = {
        "get": scope.get,
        "inspect": scope.inspect,
        "history": scope.history,
        "update": lambda i: scope.update(i, "Changed by someone else."),
        "forget": scope.forget,
        "delete": scope.delete,
    }
    for target in (first, node_id):
        with pytest.raises(NotFound):
            BY_ID[method](mem, target, outsider)
        with pytest.raises(NotFound):
            scoped[method](target)
    assert _snapshot(mem) == before


@pytest.mark.parametrize("insider", INSIDERS, ids=str)
def test_by_id_calls_work_inside_the_tenant(mem: Memory, insider: Tenant) -> None:
    node_id = mem.add("Alice's locker code is 4471.", **_kw(OWNER))
    scope = mem.scope(insider.user, insider.agent, insider.run)
    assert scope.get(node_id).tenant == OWNER
    assert scope.inspect(node_id).node.id == node_id
    new = scope.update(node_id, "Alice's locker code is 9902.")
    assert mem.get(new, **_kw(OWNER)).tenant == OWNER  # the new version keeps the owner's tenant
    assert [n.id for n in scope.history(new)] == [node_id, new]
    assert scope.forget(new) == 2
    assert mem.count(user="alice") == 0


def test_inspect_and_history_show_only_the_tenant(mem: Memory) -> None:
    from dualmem.errors import InvalidInput
    from dualmem.types import Edge

    mine = mem.add("Alice walks the dog at noon.", user="alice", agent="a1")
    sibling = mem.add("Alice's other agent walks the dog.", user="alice", agent="a2")
    theirs = mem.add("Bob walks the dog at noon.", user="bob")
    # the store refuses an edge or a pair decision between two users outright
    from dualmem.plane import Decision

    with pytest.raises(InvalidInput):
        mem.store.put_edges([Edge(mine, theirs, "temporal", "superseded_by", 1.0)])
    with pytest.raises(InvalidInput):
        mem.store.put_decisions([Decision(mine, "consolidation", "pair_1_x", "x", 0.9, other_id=theirs)])
    # links into another agent of the same user must not leak through by-id reads scoped to one agent
    mem.store.put_edges([Edge(mine, sibling, "temporal", "superseded_by", 1.0)])
    assert all(sibling not in (e.source, e.target) for e in mem.inspect(mine, user="alice", agent="a1").edges)
    mem.store.put_decisions([Decision(mine, "consolidation", "pair_0_x", "consolidate.contradiction", 0.9)])
    mem.store.put_decisions([Decision(mine, "consolidation", "pair_1_x", "x", 0.9, other_id=sibling)])
    names = [d.name for d in mem.inspect(mine, user="alice", agent="a1").decisions]
    assert "pair_0_x" in names
    assert "pair_1_x" not in names  # it names the other agent's memory
    assert [n.id for n in mem.history(mine, user="alice", agent="a1")] == [mine]
    assert mem.forget(mine, user="alice", agent="a1") == 1  # the forget closure stays inside the tenant too
    assert mem.get(sibling, user="alice", agent="a2").content.startswith("Alice's")
    assert mem.get(theirs, user="bob").content.startswith("Bob")


def test_forget_takes_the_whole_supersession_chain(mem: Memory) -> None:
    for forget_index in (0, 1, 2):
        v0 = mem.add("My locker code is 4471.", user="u")
        v1 = mem.update(v0, "My locker code is 9902.", user="u")
        v2 = mem.update(v1, "My locker code is 1234.", user="u")
        keep = mem.add("My bike is blue.", user="u")
        chain = [v0, v1, v2]
        assert mem.forget(chain[forget_index], user="u") == 3
        for gone in chain:
            assert mem.store.get_node(gone) is None
        for code in ("4471", "9902", "1234"):
            assert all(code not in e.node.content for e in mem.search("locker code", user="u").evidence)
        assert mem.get(keep, user="u").content == "My bike is blue."
        mem.forget_all(user="u")


def test_forget_and_delete_are_one_verb(mem: Memory) -> None:
    a = mem.add("My locker code is 4471.", user="u")
    b = mem.update(a, "My locker code is 9902.", user="u")
    mem.search("What is my locker code?", user="u")  # fills the controller answer cache
    assert mem.meter.cached_answers > 0
    assert mem.delete(a, user="u") == 2  # the alias follows the chain to b as forget does
    assert mem.meter.cached_answers == 0
    for node_id in (a, b):
        with pytest.raises(NotFound):
            mem.get(node_id, user="u")
    assert Memory.delete.__doc__ is not None
    assert "alias" in Memory.delete.__doc__


def test_forget_by_filter_stays_in_its_agent(mem: Memory) -> None:
    mem.add("Note from agent a.", user="u", agent="a", speaker="Jon")
    kept = mem.add("Note from agent b.", user="u", agent="b", speaker="Jon")
    assert mem.forget(user="u", agent="a", where=Filter(speaker="Jon")) == 1
    assert [n.id for n in mem.nodes(user="u")] == [kept]
    assert mem.forget_all(user="u", agent="a") == 0
    assert mem.forget_all(user="u", agent="b") == 1


def test_stats_and_repair_are_tenant_bound_with_admin_variants(mem: Memory) -> None:
    mem.add("One.", user="u", agent="a")
    mem.add("Two.", user="u", agent="b")
    mem.add("Three.", user="v")
    assert mem.stats(user="u")["nodes"] == 2
    assert mem.stats(user="u", agent="a")["nodes"] == 1
    assert mem.stats(user="v")["nodes"] == 1
    assert mem.stats_all()["nodes"] == 3
    assert mem.repair(user="u", agent="a").ids == ()
    assert mem.repair_all().ids == ()
    with pytest.raises(TypeError):
        mem.stats()  # type: ignore[call-arg]  # the tenant is required; all tenants is stats_all()


def test_import_writes_only_into_the_callers_tenant(mem: Memory, tmp_path: Path) -> None:
    mem.add("Alice's note.", user="alice", agent="helper")
    exported = tmp_path / "alice.jsonl"
    mem.export_jsonl(exported, user="alice")
    mem.forget_all(user="alice")
    for wrong in (Tenant("bob"), Tenant("alice", "other"), Tenant("alice", None, "r9")):
        with pytest.raises(InvalidInput, match="another tenant"):
            mem.import_jsonl(exported, **_kw(wrong))
        assert mem.stats_all()["nodes"] == 0
    assert mem.import_jsonl(exported, user="alice", agent="helper").nodes == 1
    assert [n.tenant for n in mem.nodes(user="alice")] == [Tenant("alice", "helper")]


def test_import_refuses_edges_to_memories_outside_the_file(mem: Memory, tmp_path: Path) -> None:
    bob = mem.add("Bob's note.", user="bob")
    mem.add("Alice's note.", user="alice")
    exported = tmp_path / "alice.jsonl"
    mem.export_jsonl(exported, user="alice")
    mem.forget_all(user="alice")
    lines = exported.read_text().splitlines()
    node = json.loads(lines[1])
    edge = {"kind": "edge", "source": node["id"], "target": bob, "view": "semantic", "label": "related"}
    edge |= {"weight": 1.0, "created_at": node["created_at"], "valid_from": None, "valid_to": None}
    exported.write_text(resealed_text([*lines, json.dumps(edge)]))
    with pytest.raises(InvalidInput, match="not in the file"):
        mem.import_jsonl(exported, user="alice")
    assert mem.count(user="alice") == 0
    assert mem.store.edges_of(bob) == []


def test_scope_binds_the_tenant(mem: Memory, tmp_path: Path) -> None:
    alice = mem.scope("alice", agent="helper")
    assert isinstance(alice, Scope)
    assert alice.tenant == Tenant("alice", "helper")
    assert "alice" in repr(alice)
    first = alice.add("Alice: my bike is blue.", speaker="Alice", at="2024-05-14", metadata={"k": 1})
    ids = alice.add_many(["Alice: I moved to Porto.", {"text": "Alice: I like tea."}])
    assert alice.count() == 3
    assert [n.id for n in alice.nodes()] == [first, *ids]
    assert alice.search("bike colour", k=3).evidence
    assert alice.answer("What colour is the bike?").answerer == "extractive"
    assert alice.stats()["nodes"] == 3
    assert alice.repair().ids == ()
    assert alice.consolidate().user == "alice"
    out = tmp_path / "a.jsonl"
    assert alice.export_jsonl(out) > 3
    assert alice.forget(where=Filter(speaker="Alice")) == 1
    assert alice.delete(ids[0]) == 1
    assert alice.forget_all() == 1
    assert alice.import_jsonl(out).nodes == 3
    assert mem.scope("bob").count() == 0
    with pytest.raises(NotFound):
        mem.scope("bob").get(first)


def test_scope_ingest(mem: Memory) -> None:
    sample = Path(__file__).resolve().parents[1] / "src" / "dualmem" / "data" / "sample_conversation.json"
    ids = mem.scope("demo", run="r").ingest(sample)
    assert mem.count(user="demo", run="r") == len(ids) > 0


# -- random operations across users, agents and runs: 0 leaks ----------------------------------
USERS = ("u1", "u2", "u3")
AGENTS = (None, "a", "b")
RUNS = (None, "r1", "r2")


def _random_tenant(rng: random.Random, *, write: bool = False) -> Tenant:
    # writes name a full tenant most of the time; reads use every shape of scope
    agent = rng.choice(AGENTS[1:] if write and rng.random() < 0.8 else AGENTS)
    run = rng.choice(RUNS[1:] if write and rng.random() < 0.8 else RUNS)
    return Tenant(rng.choice(USERS), agent, run)


def _visible_truth(mem: Memory, t: Tenant) -> set[str]:
    """The ground truth, read with SQL straight from the file (not through the code under test)."""
    rows = mem.store._conn.execute("SELECT id, user_id, agent_id, run_id FROM nodes").fetchall()  # type: ignore[attr-defined]
    return {row[0] for row in rows if t.covers(Tenant(row[1], row[2], row[3]))}


def _check_no_leak(
    mem: Memory, t: Tenant, known: list[str], rng: random.Random, tmp: Path, *, export: bool = True
) -> int:
    """Every read surface shows exactly (or only) the memories ``t`` covers. Returns the read calls made."""
    scope = mem.scope(t.user, t.agent, t.run)
    truth = _visible_truth(mem, t)
    query = rng.choice(["locker code", "bike colour", "where does she live", "tea or coffee"])
    assert {e.node.id for e in scope.search(query, k=5).evidence} <= truth
    assert {e.node.id for e in scope.answer(query, k=5).evidence} <= truth
    assert scope.stats()["nodes"] == len(truth) == scope.count()
    checks = 4
    if export:
        out = tmp / "x.jsonl"
        scope.export_jsonl(out)
        exported = [json.loads(line) for line in out.read_text().splitlines()[1:]]
        assert {d["id"] for d in exported if d["kind"] == "node"} == truth
        checks += 1
    for node_id in rng.sample(known, min(4, len(known))):
        if node_id in truth:
            assert scope.get(node_id).id == node_id
            info = scope.inspect(node_id)
            assert {e.other(node_id) for e in info.edges} <= truth
            assert {d.other_id for d in info.decisions if d.other_id} <= truth
            assert {n.id for n in scope.history(node_id)} <= truth
        else:
            for call in (scope.get, scope.inspect, scope.history):
                with pytest.raises(NotFound):
                    call(node_id)
        checks += 3
    return checks


TEXTS = ["My locker code is {n}.", "My bike is {n} years old.", "I live at number {n}.", "I drink {n} teas."]


def _random_write(mem: Memory, rng: random.Random, t: Tenant, op: float, step: int, known: list[str]) -> None:
    """One write of the random walk (``op`` < 0.7): an add, a batch, a correction or a forget of a
    known memory, each checked against what tenant ``t`` can see; new ids join ``known``."""
    if op < 0.4:
        known.append(mem.add(rng.choice(TEXTS).format(n=step), **_kw(t)))
    elif op < 0.45:
        known += mem.add_many([rng.choice(TEXTS).format(n=f"{step}.{i}") for i in range(3)], **_kw(t))
    elif not known:
        return
    elif op < 0.6:
        target = rng.choice(known)
        try:
            known.append(mem.update(target, f"Corrected fact {step}.", **_kw(t)))
        except (NotFound, InvalidInput):
            assert target not in _visible_truth(mem, t) or mem.store.get_node(target).valid_to
    else:
        target = rng.choice(known)
        visible = target in _visible_truth(mem, t)
        try:
            mem.forget(target, **_kw(t))
            assert visible
        except NotFound:
            assert not visible


def test_random_operations_never_leak(tmp_path: Path) -> None:
    """Over 1,000 random operations (writes, corrections, forgets, passes, imports, and reads:
    search, answer, stats, count, export, get, inspect, history) across 3 users x 3 agents x 3 runs,
    no read shows a memory its scope does not cover. ``checks`` counts the read calls made."""
    rng = random.Random(20261201)
    prof = Profile.paper().with_(
        write__consolidation="inline", write__consolidate_every=7, controller_cache=64
    )
    table = {**TABLE, "consolidate.contradiction": 0.9, "consolidate.obsolescence": 0.9}
    ctl = ScriptedController(table, default=0.3)  # type: ignore[arg-type]
    known: list[str] = []
    checks = 0
    with Memory.open(tmp_path / "m.db", embedder=HashingEmbedder(128), controller=ctl, profile=prof) as mem:
        for step in range(650):
            op = rng.random()
            t = _random_tenant(rng, write=op < 0.6)
            if op < 0.7:
                _random_write(mem, rng, t, op, step, known)
            elif op < 0.73:
                mem.consolidate(**_kw(t))
            elif op < 0.76:
                _import_never_crosses(mem, t, _random_tenant(rng), tmp_path)
            elif op < 0.92:
                checks += _check_reads(mem, t, known, rng)
            else:
                checks += _check_no_leak(mem, t, known, rng, tmp_path, export=rng.random() < 0.3)
        for user in USERS:
            for agent in AGENTS:
                for run in RUNS:
                    checks += _check_no_leak(mem, Tenant(user, agent, run), known, rng, tmp_path)
    assert 650 + checks >= 1300  # operations: the 650 random steps plus the read calls checked


def _check_reads(mem: Memory, t: Tenant, known: list[str], rng: random.Random) -> int:
    """The cheap half of ``_check_no_leak``: search and by-id reads only."""
    scope = mem.scope(t.user, t.agent, t.run)
    truth = _visible_truth(mem, t)
    assert {e.node.id for e in scope.search(rng.choice(["locker code", "bike"]), k=5).evidence} <= truth
    sample = rng.sample(known, min(3, len(known)))
    for node_id in sample:
        if node_id in truth:
            assert {e.other(node_id) for e in scope.inspect(node_id).edges} <= truth
        else:
            with pytest.raises(NotFound):
                scope.get(node_id)
    return 1 + len(sample)


def _import_never_crosses(mem: Memory, source: Tenant, target: Tenant, tmp: Path) -> None:
    """An export imported by another scope is refused (another tenant, or ids already stored)."""
    out = tmp / "move.jsonl"
    mem.scope(source.user, source.agent, source.run).export_jsonl(out)
    before = mem.store.count(None)
    exported = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    if not any(d["kind"] == "node" for d in exported):
        return
    with pytest.raises(InvalidInput):
        mem.import_jsonl(out, **_kw(target))
    assert mem.store.count(None) == before

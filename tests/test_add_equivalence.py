"""One memory, whichever way it is written: ``add`` per observation and ``add_many`` agree.

The same observations written one by one and in batches must store the same nodes (with the same
vectors to the bit), edges and decisions (compared by turn id: node ids and creation times differ),
with periodic consolidation running inline or in the background (issue 41, item 4). Two causes of a
difference were found and fixed: MiniLM padded a batch's rows to its longest one, which changes a
vector's last bits; and a consolidation pass searched a node's neighbours afresh when it ran, among
whatever had been written since (in a batch, everything), instead of using the candidates found
when the node was written.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from control_support import with_views
from dualmem import Memory
from dualmem.control.builtin import BuiltinController
from dualmem.conversations import load_observations
from dualmem.embed import Embedder
from dualmem.plane import SQLiteStore
from dualmem.types import Observation, Tenant

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "dualmem" / "data" / "sample_conversation.json"

TOPICS = [
    "my sister Ana visited Lisbon and we ate pastel de nata",
    "I adopted a border collie named Pepper last weekend",
    "the pottery class on Tuesday was about glazing bowls",
    "Jon started a new job at the bakery near the station",
    "we are planning a hiking trip to the Alps in July",
    "my laptop broke so I bought a new one yesterday",
]
QUERIES = [
    "What did Mira adopt?",
    "Where did Ana visit?",
    "What was the pottery class about?",
    "Where does Jon work now?",
    "When is the hiking trip?",
    "Why did Mira buy a laptop?",
]


def _observations() -> list[Observation]:
    out = []
    start = dt.datetime(2023, 5, 1, 10, 0, tzinfo=dt.UTC)
    for s in range(4):
        at = start + dt.timedelta(days=9 * s)
        for t in range(13):
            speaker = "Mira" if t % 2 == 0 else "Jon"
            topic = TOPICS[(s + t) % len(TOPICS)]
            text = f"{topic}." if t % 3 else f"Oh really? Tell me more about {topic.split()[-1]}."
            out.append(Observation(text, at=at, speaker=speaker, session=f"s{s}", turn_id=f"D{s}:{t}"))
    return out


def _open(path: Path, embedder: Embedder, mode: str, every: int = 20) -> Memory:
    # the views on: the edges of both builds are compared too
    profile = with_views().with_(write__consolidation=mode, write__consolidate_every=every)
    return Memory(SQLiteStore.open(path), embedder, BuiltinController(), answerer=None, profile=profile)


def _write(mem: Memory, obs: list[Observation], *, one_by_one: bool, chunk_size: int = 256) -> None:
    if one_by_one:
        for o in obs:
            mem.add(
                o.content, user="u", speaker=o.speaker, at=o.at, session=o.session, turn_id=o.turn_id,
                metadata=dict(o.metadata),
            )  # fmt: skip
    else:
        mem.add_many(obs, user="u", chunk_size=chunk_size)
    mem.wait_for_consolidation()


def snapshot(mem: Memory) -> dict[str, Any]:
    """Everything the memory holds, named by turn id (ids and creation times differ between builds)."""
    nodes = {n.id: n for n in mem.store.iter_nodes(Tenant("u"))}
    assert all(n.turn_id for n in nodes.values()), "every node is a turn (no summarizer here)"

    def name(node_id: str | None) -> str | None:
        return None if node_id is None else nodes[node_id].turn_id

    stored = {
        n.turn_id: (
            n.content, n.speaker, n.at, n.session, json.dumps(n.metadata, sort_keys=True), n.entities,
            n.temporal_refs, n.types, n.status, n.valid_from, n.valid_to, n.derived,
            None if n.embedding is None else np.asarray(n.embedding, "<f4").tobytes(),
        )
        for n in nodes.values()
    }  # fmt: skip
    chunks = {name(i): m.tobytes() for i, m in mem.store.get_chunks(list(nodes)).items()}
    edges = sorted(
        (name(e.source), name(e.target), e.view, e.label, e.weight, e.valid_from, e.valid_to)
        for i in nodes
        for e in mem.store.edges_of(i)
    )
    decisions = sorted(
        (name(d.node_id), d.purpose, d.name, d.key, d.value, d.label, d.backend, name(d.other_id))
        for i in nodes
        for d in mem.store.decisions_of(i)
    )
    return {"nodes": stored, "chunks": chunks, "edges": edges, "decisions": decisions}


def assert_same_memory(one: Memory, many: Memory) -> dict[str, Any]:
    a, b = snapshot(one), snapshot(many)
    assert a["nodes"].keys() == b["nodes"].keys()
    differing = sorted(k for k in a["nodes"] if a["nodes"][k] != b["nodes"][k])
    assert differing == [], f"{len(differing)} nodes differ, e.g. {differing[:3]}"
    assert a["chunks"] == b["chunks"]
    only_one, only_many = sorted(set(a["edges"]) - set(b["edges"])), sorted(set(b["edges"]) - set(a["edges"]))
    assert (only_one, only_many) == ([], []), (len(only_one), only_one[:3], only_many[:3])
    assert a["edges"] == b["edges"]  # the same multiset, too
    only_one, only_many = (
        sorted(set(a["decisions"]) - set(b["decisions"])),
        sorted(set(b["decisions"]) - set(a["decisions"])),
    )
    assert (only_one, only_many) == ([], []), (len(only_one), only_one[:3], only_many[:3])
    assert a["decisions"] == b["decisions"]
    return a


@pytest.mark.slow
def test_add_and_add_many_build_the_same_edges_and_rank_the_same(hashing: Embedder, tmp_path: Path) -> None:
    one = _open(tmp_path / "one.db", hashing, "inline")
    many = _open(tmp_path / "many.db", hashing, "inline")
    try:
        _write(one, _observations(), one_by_one=True)
        _write(many, _observations(), one_by_one=False)
        assert one.count(user="u") == many.count(user="u") == 52
        built = assert_same_memory(one, many)
        assert {e[2] for e in built["edges"]} >= {"temporal", "semantic"}
        for q in QUERIES:
            a = [e.node.turn_id for e in one.search(q, user="u", k=10).evidence]
            b = [e.node.turn_id for e in many.search(q, user="u", k=10).evidence]
            assert a == b, q
    finally:
        one.close()
        many.close()


@pytest.mark.parametrize("mode", ["inline", "background"])
def test_the_sample_conversation_builds_the_same_memory_either_way(
    minilm: Embedder, tmp_path: Path, mode: str
) -> None:
    """The bundled conversation, the real embedder, a pass every 8 writes; batches of 16 turns."""
    obs = load_observations(SAMPLE)
    one = _open(tmp_path / "one.db", minilm, mode, every=8)
    many = _open(tmp_path / "many.db", minilm, mode, every=8)
    try:
        _write(one, obs, one_by_one=True)
        _write(many, obs, one_by_one=False, chunk_size=16)
        built = assert_same_memory(one, many)
        assert len(built["nodes"]) == len(obs) == 40
        passes = {d[0] for d in built["decisions"] if d[1] == "consolidation"}
        assert len(passes) >= 10  # the passes ran and judged pairs: their decisions were compared too
    finally:
        one.close()
        many.close()


@pytest.mark.slow
@pytest.mark.locomo
def test_a_locomo_conversation_builds_the_same_memory_either_way(
    minilm: Embedder, locomo_dir: Path, tmp_path: Path
) -> None:
    """conv-26 (419 turns) with the default cadence, passes in the background as by default."""
    path = locomo_dir / "conv-26.json"
    if not path.is_file():
        pytest.skip(f"{path} not found (a LoCoMo dev conversation)")
    obs = load_observations(path)
    one = _open(tmp_path / "one.db", minilm, "background")
    many = _open(tmp_path / "many.db", minilm, "background")
    try:
        _write(one, obs, one_by_one=True)
        _write(many, obs, one_by_one=False)
        built = assert_same_memory(one, many)
        assert len(built["nodes"]) == len(obs)
        assert sum(1 for d in built["decisions"] if d[1] == "consolidation") >= 500  # 20 passes judged pairs
        questions = [q["question"] for q in json.loads(path.read_text(encoding="utf-8"))["qa"][:60]]
        for q in questions:
            a = [e.node.turn_id for e in one.search(q, user="u", k=10).evidence]
            assert a == [e.node.turn_id for e in many.search(q, user="u", k=10).evidence], q
    finally:
        one.close()
        many.close()

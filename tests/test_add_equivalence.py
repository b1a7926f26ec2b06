"""One memory, whichever way it is written: ``add`` per observation and ``add_many`` agree."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from dualmem import Memory, Profile
from dualmem.control.builtin import BuiltinController
from dualmem.embed import Embedder
from dualmem.plane import SQLiteStore
from dualmem.types import Observation, Tenant

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


def _build(path: Path, embedder: Embedder, *, one_by_one: bool) -> Memory:
    profile = Profile.builtin().with_(write__consolidation="inline", write__consolidate_every=20)
    mem = Memory(SQLiteStore.open(path), embedder, BuiltinController(), answerer=None, profile=profile)
    obs = _observations()
    if one_by_one:
        for o in obs:
            mem.add(o.content, user="u", speaker=o.speaker, at=o.at, session=o.session, turn_id=o.turn_id)
    else:
        mem.add_many(obs, user="u", chunk_size=256)
    return mem


def _edges(mem: Memory) -> set[tuple[str, str, str, str, float]]:
    nodes = {n.id: n for n in mem.store.iter_nodes(Tenant("u"))}
    out = set()
    for n in nodes.values():
        for e in mem.store.edges_of(n.id):
            out.add(
                (
                    nodes[e.source].turn_id or "",
                    nodes[e.target].turn_id or "",
                    e.view,
                    e.label,
                    round(e.weight, 6),
                )
            )
    return out


@pytest.mark.slow
def test_add_and_add_many_build_the_same_edges_and_rank_the_same(hashing: Embedder, tmp_path: Path) -> None:
    one = _build(tmp_path / "one.db", hashing, one_by_one=True)
    many = _build(tmp_path / "many.db", hashing, one_by_one=False)
    try:
        assert one.count(user="u") == many.count(user="u") == 52
        edges = _edges(one)
        assert edges, "the conversation must produce edges"
        assert {e[2] for e in edges} >= {"temporal", "semantic"}
        assert _edges(many) == edges
        for q in QUERIES:
            a = [e.node.turn_id for e in one.search(q, user="u", k=10).evidence]
            b = [e.node.turn_id for e in many.search(q, user="u", k=10).evidence]
            assert a == b, q
    finally:
        one.close()
        many.close()

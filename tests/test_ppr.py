"""The entity channel's Personalized PageRank (``dualmem.read.ppr``): two-hop bridges, never speakers."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualmem import Memory
from dualmem.embed import HashingEmbedder
from dualmem.read.channels import ENTITY_FLOOR, ENTITY_SHARE, entity_channel, query_entities
from dualmem.read.pool import FEATURES, PoolSettings, build_pool
from dualmem.read.ppr import ppr_channel, seed_memories, walk
from dualmem.text.query import analyze
from dualmem.types import Observation, Tenant
from store_support import STORE_KINDS, filled_memory

START = dt.datetime(2023, 5, 1, 12, 0, tzinfo=dt.UTC)
TENANT = Tenant("u")
QUERY = "What did Mira make in the class she started?"
#: the class turn (the query's hit), the bridge (shares "pottery" with it, no word with the query),
#: and another turn of the same speaker (shares only her name with the class turn)
CLASS = ("Mira", "I started a pottery class at the community centre.")
BRIDGE = ("Jon", "The kiln fired your glazed pottery bowl overnight.")
SAME_SPEAKER = ("Mira", "Bought fresh figs at the market.")
FILLER = [
    "Rain again, the garden looks green.",
    "The train to Leeds was late this morning.",
    "Watched a documentary about whales.",
    "Fixed the bicycle chain, finally.",
    "The printer jammed twice at work.",
    "Cooked lentil soup for dinner.",
    "Read a novel about lighthouses.",
    "Paid the electricity bill online.",
    "The neighbour's dog barked all night.",
    "Planted tomatoes by the fence.",
    "Cleaned the windows upstairs.",
    "Booked a dentist appointment.",
    "Played chess with my uncle.",
    "The laptop battery died during a call.",
    "Tried a new recipe with chickpeas.",
    "Went jogging along the river.",
    "Sorted old photographs into albums.",
    "The heating broke in the flat.",
    "Listened to a podcast on volcanoes.",
    "Bought new curtains for the bedroom.",
    "Walked the hills near Buxton.",
    "Repaired the leaking tap.",
    "Painted the shed door blue.",
    "Saw a heron by the canal.",
    "Baked sourdough bread at dawn.",
    "Returned library books late.",
    "The football match ended in a draw.",
    "Visited a museum about trains.",
]


def _observations() -> list[Observation]:
    turns = [CLASS, BRIDGE, SAME_SPEAKER, *(("Ann", t) for t in FILLER)]
    return [
        Observation(text, at=START + dt.timedelta(hours=i), speaker=s, session=f"s{i}", turn_id=f"D{i}")
        for i, (s, text) in enumerate(turns)
    ]


@pytest.fixture(params=STORE_KINDS)
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    with filled_memory(request.param, HashingEmbedder(64), tmp_path, _observations()) as m:
        yield m


def _id(mem: Memory, turn: str) -> str:
    ids = [n.id for n in mem.store.iter_nodes(TENANT) if n.turn_id == turn]
    assert len(ids) == 1
    return ids[0]


def _ppr(mem: Memory, speakers: tuple[str, ...]) -> list[str]:
    analysis = analyze(QUERY)
    seeds = [(_id(mem, "D0"), 1.0)]  # the class turn: what the indexes rank first
    entities = query_entities(analysis, speakers)
    hits = ppr_channel(
        mem.store, TENANT, entities, seeds, 5, {}, speakers=speakers, share=ENTITY_SHARE, floor=ENTITY_FLOOR
    )
    return [i for i, _ in hits]


def test_the_walk_reaches_a_memory_two_hops_away() -> None:
    links = {"top": {"pottery", "class"}, "bridge": {"pottery"}, "other": {"figs"}}
    idf = {"pottery": 2.0, "class": 1.0, "figs": 2.0}
    scores = walk(links, idf, {"class": 1.0}, {"top": 1.0})
    assert scores["top"] > scores["bridge"] > 0.0
    assert scores["other"] == 0.0  # no path from the seeds
    assert walk(links, idf, {}, {}) == {}


def test_a_rarer_entity_carries_more_of_the_walk() -> None:
    links = {"top": {"rare", "common"}, "a": {"rare"}, "b": {"common"}}
    scores = walk(links, {"rare": 3.0, "common": 1.0}, {}, {"top": 1.0})
    assert scores["a"] > scores["b"] > 0.0


def test_ppr_surfaces_the_bridge_the_entity_channel_cannot(mem: Memory) -> None:
    analysis = analyze(QUERY)
    speakers = ("Mira", "Jon", "Ann")
    direct, _ = entity_channel(mem.store, TENANT, analysis, mem.embedder.embed([QUERY])[0], 5, {}, speakers)
    bridge = _id(mem, "D1")
    assert bridge not in [i for i, _ in direct]  # it shares no entity with the query
    found = _ppr(mem, speakers)
    assert found == [bridge]  # the memory two hops away, through "pottery"; never the seed itself,
    # nor a filler: they share nothing with the seed


def test_speaker_names_never_link(mem: Memory) -> None:
    """Mira speaks two turns (few enough to pass the IDF cut): her name would link them; it never does."""
    other = _id(mem, "D2")
    assert other not in _ppr(mem, ("Mira", "Jon", "Ann"))
    assert other in _ppr(mem, ())  # the same walk with her name as a node reaches it


def test_seed_memories_fuse_the_lists() -> None:
    seeds = seed_memories([[("a", 0.9), ("b", 0.5)], [("b", 3.0), ("c", 1.0)]], k=2)
    assert [i for i, _ in seeds] == ["b", "a"]


def test_the_pool_adds_the_bridge_with_its_ppr_rank(mem: Memory) -> None:
    bridge = _id(mem, "D1")
    plain = build_pool(mem.store, mem.embedder, QUERY, TENANT, PoolSettings(1, 0))
    assert bridge not in plain.ids
    pool = build_pool(mem.store, mem.embedder, QUERY, TENANT, PoolSettings(1, 0, (("entity", 5),)))
    assert bridge in pool.ids
    absent = 10.0 / (10.0 + 4)
    col = FEATURES.index("ppr_rank")
    assert pool.features[pool.ids.index(bridge), col] > absent
    assert (plain.features[:, col] == absent).all()

"""The retrieval channels (``dualmem.read.channels``) and how the pool adds their candidates."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualmem import Memory
from dualmem.embed import HashingEmbedder
from dualmem.errors import ConfigError
from dualmem.read.channels import (
    checked_channels,
    entity_channel,
    query_entities,
    temporal_channel,
)
from dualmem.read.pool import FEATURES, PoolSettings, build_pool, pool_prior
from dualmem.text.query import analyze
from dualmem.types import Observation, Tenant
from store_support import STORE_KINDS, filled_memory, turn_ids

START = dt.datetime(2023, 5, 1, 12, 0, tzinfo=dt.UTC)  # a Monday
#: (days after START, speaker, text): the weekend of 13-14 May holds two lexically unrelated turns
TURNS = [
    (0, "Mira", "I started a pottery class at the community centre."),
    (1, "Jon", "Nice, I should try pottery too."),
    (5, "Mira", "Went to the market and bought fresh figs."),
    (12, "Mira", "We drove up to the lake and swam all afternoon."),
    (13, "Jon", "Fixed the bicycle chain, finally."),
    (15, "Mira", "Back at work, the printer jammed again."),
    (16, "Jon", "My brother Callum visits Porto next month."),
    (17, "Mira", "Callum loved the Porto trip on 3 June 2022, he said."),
    (18, "Jon", "The printer at the office is new."),
    (19, "Mira", "Pottery class again today, made a bowl."),
]
TENANT = Tenant("u")


def _observations() -> list[Observation]:
    return [
        Observation(text, at=START + dt.timedelta(days=d), speaker=s, session=f"s{d}", turn_id=f"D{d}")
        for d, s, text in TURNS
    ]


@pytest.fixture(params=STORE_KINDS)
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    with filled_memory(request.param, HashingEmbedder(64), tmp_path, _observations()) as m:
        yield m


def _qvec(mem: Memory, text: str):  # type: ignore[no-untyped-def]
    return mem.embedder.embed([text])[0]


def test_a_time_window_reaches_every_memory_of_its_days(mem: Memory) -> None:
    """ "last weekend" grounds against the latest memory (20 May, a Saturday... the day after the
    last turn): the turns of 13-14 May are found whatever their words."""
    query = "What did we get up to last weekend?"
    analysis = analyze(query)
    hits = temporal_channel(mem.store, TENANT, analysis, _qvec(mem, query), 5, {})
    assert sorted(turn_ids(mem, [i for i, _ in hits])) == ["D12", "D13"]


def test_a_month_window_and_its_size(mem: Memory) -> None:
    query = "What happened in May 2023?"
    hits = temporal_channel(mem.store, TENANT, analyze(query), _qvec(mem, query), 3, {})
    assert len(hits) == 3  # every turn is in May: the channel adds at most its size


def test_a_question_about_time_without_a_window_reaches_dated_memories(mem: Memory) -> None:
    query = "When did Callum go to Porto?"
    hits = temporal_channel(
        mem.store, TENANT, analyze(query, names={"Jon", "Mira"}), _qvec(mem, query), 5, {}
    )
    # the turns whose words ground to a date ("next month", "on 3 June 2022", "today"), no other
    assert sorted(turn_ids(mem, [i for i, _ in hits])) == ["D16", "D17", "D19"]


def test_a_query_about_no_time_runs_no_temporal_channel(mem: Memory) -> None:
    query = "What did Mira make in pottery?"
    assert temporal_channel(mem.store, TENANT, analyze(query), _qvec(mem, query), 5, {}) == []


def test_entities_leave_out_speakers_and_persons_the_query_names() -> None:
    analysis = analyze("What did Mira say about Callum and Porto?", names={"Mira", "Jon"})
    found = query_entities(analysis, speakers={"Mira", "Jon"})
    assert "mira" not in found
    assert "jon" not in found
    assert {"callum", "porto"} <= set(found)


def test_the_entity_channel_weighs_rare_entities_above_common_ones(mem: Memory) -> None:
    query = "What about the pottery and Callum in Porto?"
    analysis = analyze(query, names={"Mira", "Jon"})
    hits, weights = entity_channel(mem.store, TENANT, analysis, _qvec(mem, query), 10, {}, {"Mira", "Jon"})
    turns = turn_ids(mem, [i for i, _ in hits])
    # both Callum-and-Porto turns share two rare entities: above the pottery turns (one entity)
    assert set(turns[:2]) == {"D16", "D17"}
    assert {"D0", "D1", "D19"} <= set(turns)
    assert weights[hits[0][0]] > weights[hits[-1][0]]
    assert "D12" not in turns  # mentions none of them


def test_an_entity_on_most_memories_is_left_out(tmp_path: Path) -> None:
    obs = [
        Observation(f"The printer did thing {i} today.", at=START + dt.timedelta(hours=i), speaker="Jon")
        for i in range(12)
    ]
    with filled_memory("sqlite", HashingEmbedder(64), tmp_path, obs) as m:
        query = "What is wrong with the printer?"
        hits, _ = entity_channel(m.store, TENANT, analyze(query), _qvec(m, query), 5, {})
        assert hits == []  # "printer" links every memory: it tells none apart


def test_the_pool_adds_channel_candidates_with_their_rank_features(mem: Memory) -> None:
    query = "What did we get up to last weekend?"
    plain = build_pool(mem.store, mem.embedder, query, TENANT, PoolSettings(1, 0))
    pool = build_pool(mem.store, mem.embedder, query, TENANT, PoolSettings(1, 0, (("temporal", 5),)))
    added = [i for i in pool.ids if i not in plain.ids]
    assert sorted(turn_ids(mem, added)) == sorted(set(turn_ids(mem, added)) & {"D12", "D13"})
    assert added
    absent = 10.0 / (10.0 + 4)
    col = FEATURES.index("time_rank")
    for i in pool.ids:
        row = pool.row(i)
        assert row["neighbour"] == 0.0
        assert (row["time_rank"] > absent) == (turn_ids(mem, [i])[0] in {"D12", "D13"})
    assert (plain.features[:, col] == absent).all()
    assert (pool_prior(pool) > 0).all()  # the channel's list is one of the prior's rankings


def test_without_channels_the_pool_is_unchanged(mem: Memory) -> None:
    query = "What happened in May 2023?"
    a = build_pool(mem.store, mem.embedder, query, TENANT, PoolSettings(3, 1))
    b = build_pool(
        mem.store, mem.embedder, query, TENANT, PoolSettings(3, 1, (("temporal", 0), ("entity", 0)))
    )
    assert a.ids == b.ids
    assert (a.features == b.features).all()


def test_channels_are_checked() -> None:
    assert checked_channels(["entity"]) == ("entity",)
    with pytest.raises(ConfigError):
        checked_channels("entity")
    with pytest.raises(ConfigError):
        checked_channels(["causality"])


class _Routed:
    """The builtin decider, but the route's needs read from ``need`` (a view -> score table)."""

    name = "routed"

    def __init__(self, need: dict[str, float]) -> None:
        from dualmem.control.builtin import BuiltinController
        from dualmem.control.scripted import ScriptedController

        self.inner = BuiltinController()
        self.route = ScriptedController({f"route.{k}": v for k, v in need.items()}, default=0.0)

    def decide(self, batch):  # type: ignore[no-untyped-def]
        return (self.route if batch.purpose == "routing" else self.inner).decide(batch)


def _search(tmp_path: Path, need: dict[str, float], channels: tuple[str, ...], query: str):  # type: ignore[no-untyped-def]
    from dualmem.config import Profile
    from dualmem.plane import SQLiteStore

    profile = Profile.builtin().with_(
        read__channels=channels, read__channel_budget=10, read__pool=1, read__channel_route="builtin"
    )
    tmp_path.mkdir(parents=True, exist_ok=True)
    mem = Memory(SQLiteStore.open(tmp_path / "r.db"), HashingEmbedder(64), _Routed(need), profile=profile)
    with mem:
        mem.add_many(_observations(), user="u")
        found = mem.search(query, user="u", k=10)
        return found.trace, [e.node.turn_id for e in found.evidence]


def test_the_route_chooses_the_channels_and_their_sizes(tmp_path: Path) -> None:
    query = "What did we get up to last weekend?"
    trace, turns = _search(tmp_path / "a", {"temporal": 0.9, "entity": 0.3}, ("temporal", "entity"), query)
    assert set(trace.channels) == {"temporal", "entity"}
    assert sum(trace.channels.values()) == 10
    assert trace.channels["temporal"] > trace.channels["entity"]  # shared by need
    assert {"D12", "D13"} <= set(turns)
    assert trace.to_json()["channels"] == trace.channels
    # a need below theta_act runs no channel: the pool is the indexes' alone (1 deep each here)
    trace, turns = _search(tmp_path / "b", {"temporal": 0.0, "entity": 0.0}, ("temporal", "entity"), query)
    assert trace.channels == {}
    assert "channels" not in trace.to_json()
    assert not {"D12", "D13"} <= set(turns)


def test_a_profile_without_channels_runs_none(tmp_path: Path) -> None:
    trace, _ = _search(tmp_path, {"temporal": 0.9, "entity": 0.9}, (), "What did we get up to last weekend?")
    assert trace.channels == {}


def test_read_channels_is_checked() -> None:
    from dualmem.config import Profile

    with pytest.raises(ConfigError):
        Profile.builtin().with_(read__channels=("causality",))

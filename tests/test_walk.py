"""The temporal channel's ordering walk (``dualmem.read.walk``) and its query-time ``now``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from research.loco import drop_channel
from research.pools import QueryPool

from dualmem import Memory
from dualmem.embed import HashingEmbedder
from dualmem.read.channels import temporal_channel
from dualmem.read.pool import FEATURES, PoolSettings, build_pool
from dualmem.read.walk import Ordering, ordering, ordering_walk
from dualmem.text.query import analyze
from dualmem.types import Observation, Tenant
from pool_support import as_query_pool
from store_support import STORE_KINDS, filled_memory, turn_ids

START = dt.datetime(2023, 5, 1, 12, 0, tzinfo=dt.UTC)
TENANT = Tenant("u")
#: (days after START, text): the turn after the concert shares no word with the question
TURNS = [
    (0, "I started a pottery class at the community centre."),
    (2, "Painted the fence blue over the long afternoon."),
    (4, "The concert at the Roundhouse was loud and wonderful."),
    (5, "Bought a second-hand cello from a shop in Camden."),
    (9, "Went to the market and bought fresh figs."),
    (14, "Mended the garden gate with new hinges."),
    (20, "Booked flights for the summer holiday."),
]
QUERY = "What did I do right after the concert?"


def _observations() -> list[Observation]:
    return [
        Observation(text, at=START + dt.timedelta(days=d), speaker="Mira", session=f"s{d}", turn_id=f"D{d}")
        for d, text in TURNS
    ]


@pytest.fixture(params=STORE_KINDS)
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    with filled_memory(request.param, HashingEmbedder(64), tmp_path, _observations()) as m:
        yield m


def test_ordering_questions_split_into_their_event_clauses() -> None:
    assert ordering("How long after I arrived in Leeds did my partner join me?") == Ordering(
        ("I arrived in Leeds", "my partner join me"), "after"
    )
    assert ordering("What did I do before I moved to Leeds?") == Ordering(("I moved to Leeds",), "before")
    assert ordering("Which came first, the photographer or the florist?") == Ordering(
        ("the photographer", "the florist"), "both"
    )
    assert ordering(
        "How many days passed between our flight to Sweden and my first day at work?"
    ) == Ordering(("our flight to Sweden", "my first day at work"), "both")
    assert ordering("Did I give my talk before or after my last day at the bank?") == Ordering(
        ("my last day at the bank", "I give my talk"), "both"
    )
    assert ordering("When did Caroline go to the support group?") is None
    assert ordering("Turns out they will cover the train after all, does that change my plan?") is None
    assert ordering("What is my favourite colour?") is None


def test_the_walk_finds_the_memory_right_after_the_anchor(mem: Memory) -> None:
    hits = ordering_walk(mem.store, TENANT, QUERY, mem.embedder.embed, 5, {})
    turns = turn_ids(mem, [i for i, _ in hits])
    # the anchor (the concert clause's best hit), then the next memory in time, which shares no
    # word with the question; the memory before the anchor is not what the question asks about
    assert turns[:2] == ["D4", "D5"]
    before = ordering_walk(
        mem.store, TENANT, "What did I do just before the concert?", mem.embedder.embed, 5, {}
    )
    assert turn_ids(mem, [i for i, _ in before])[:2] == ["D4", "D2"]
    assert ordering_walk(mem.store, TENANT, "What did I paint?", mem.embedder.embed, 5, {}) == []


def _qpool(mem: Memory, channels: tuple[tuple[str, int], ...]) -> QueryPool:
    pool = build_pool(mem.store, mem.embedder, QUERY, TENANT, PoolSettings(1, 0, channels))
    turns = tuple(turn_ids(mem, list(pool.ids)))
    return as_query_pool(pool, turns, category=2)


def test_the_pool_adds_the_walked_memory_and_dropping_the_temporal_channel_removes_it(mem: Memory) -> None:
    plain = _qpool(mem, ())
    walked = _qpool(mem, (("temporal", 3),))  # ranks below 4N (an absent rank at N = 1)
    assert "D5" not in plain.turn_ids  # the indexes' top 1 does not hold it
    assert "D5" in walked.turn_ids
    col = FEATURES.index("walk_rank")
    absent = 10.0 / (10.0 + 4)
    assert walked.features[walked.turn_ids.index("D5"), col] > absent
    assert (plain.features[:, col] == absent).all()
    dropped = drop_channel(walked, "temporal", n=1)
    assert dropped.turn_ids == plain.turn_ids
    np.testing.assert_array_equal(dropped.features, plain.features)


def test_relative_time_grounds_against_the_callers_now(mem: Memory) -> None:
    query = "What did I do two days ago?"
    qvec = mem.embedder.embed([query])[0]
    # against the memory's latest time (day 20): day 18, where nothing happened
    assert temporal_channel(mem.store, TENANT, analyze(query), qvec, 5, {}) == []
    now = START + dt.timedelta(days=7)  # two days ago: day 5
    hits = temporal_channel(mem.store, TENANT, analyze(query), qvec, 5, {}, now=now)
    assert turn_ids(mem, [i for i, _ in hits]) == ["D5"]


def test_memory_search_passes_now_to_the_pool(tmp_path: Path) -> None:
    with filled_memory("sqlite", HashingEmbedder(64), tmp_path, _observations()) as m:
        m.profile = m.profile.with_(read__channels=("temporal",))
        query = "What did I do two days ago?"
        now = START + dt.timedelta(days=7)
        seen: list[PoolSettings] = []
        retriever = m._retriever
        original = retriever.pool

        def spy(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
            found = original(*args, **kwargs)  # type: ignore[arg-type]
            seen.append(found)
            return found

        retriever.pool = spy  # type: ignore[method-assign]
        m.search(query, user="u", now=now.isoformat())
        m.scope("u").search(query)
        with_now, without = seen
        assert with_now.analysis.times
        assert with_now.analysis.times[0].start == dt.date(2023, 5, 6)
        assert not without.analysis.times  # "two days ago" needs a present to ground against


def test_a_clause_anchors_on_the_memory_that_dates_its_event(tmp_path: Path) -> None:
    obs = [
        Observation(text, at=START + dt.timedelta(days=d), speaker="Mira", session=f"s{d}", turn_id=f"D{d}")
        for d, text in (
            (0, "Tips for signing the wholesale contract?"),
            (3, "We signed the wholesale contract on Monday."),
            (4, "The oven needs a new door seal."),
            (8, "Our new baker started yesterday."),
            (9, "Tips for the new baker starting out?"),
        )
    ]
    with filled_memory("sqlite", HashingEmbedder(64), tmp_path, obs) as m:
        query = "Which happened first, signing the wholesale contract or the new baker starting?"
        hits = ordering_walk(m.store, TENANT, query, m.embedder.embed, 6, {})
        # each clause's anchor is the memory that dates the event, not the one that only names it
        assert turn_ids(m, [i for i, _ in hits])[:2] == ["D3", "D8"]


def test_dropping_the_walk_keeps_the_rest_of_the_temporal_channel(mem: Memory) -> None:
    walked = _qpool(mem, (("temporal", 3),))
    dropped = drop_channel(walked, "walk", n=1)
    assert "D5" not in dropped.turn_ids  # only the walk found it
    col, absent = FEATURES.index("walk_rank"), 10.0 / (10.0 + 4)
    assert (dropped.features[:, col] == absent).all()
    kept = [walked.turn_ids.index(t) for t in dropped.turn_ids]
    time_rank = FEATURES.index("time_rank")
    np.testing.assert_array_equal(dropped.features[:, time_rank], walked.features[kept, time_rank])


def test_a_now_that_is_no_time_is_a_typed_error_and_stores_nothing(tmp_path: Path) -> None:
    from dualmem.errors import InvalidInput

    with Memory.open(tmp_path / "m.db", embedder=HashingEmbedder(64), answerer=None) as m:
        m.add_many(_observations(), user="u")
        before = m.store.count(Tenant("u"))
        with pytest.raises(InvalidInput, match="cannot read a time"):
            m.search("What did Mira do two days ago?", user="u", now="not a time")
        assert m.store.count(Tenant("u")) == before
        assert m.search("What did Mira do two days ago?", user="u", now="2023-05-20").evidence

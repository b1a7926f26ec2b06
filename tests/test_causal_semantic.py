"""The causal and semantic retrieval channels (``dualmem.read.causal``, ``dualmem.read.semantic``)
and how the pool and ``research.loco`` carry them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from research.loco import drop_channel
from research.pools import QueryPool

from dualmem import Memory
from dualmem.config import Profile
from dualmem.embed import HashingEmbedder
from dualmem.read.causal import asks_cause, causal_channel, states_cause
from dualmem.read.pool import FEATURES, PoolSettings, build_pool
from dualmem.read.semantic import semantic_channel
from dualmem.text.query import analyze
from dualmem.types import Observation, Tenant
from pool_support import as_query_pool
from store_support import STORE_KINDS, filled_memory, turn_ids

START = dt.datetime(2023, 5, 1, 12, 0, tzinfo=dt.UTC)
TENANT = Tenant("u")
#: (session, speaker, text): in session s1 the cause of selling the bicycle is told four turns after
#: the sale, in words the question does not use; s2 holds a cue-bearing turn about something else
TURNS = [
    ("s1", "Mira", "I sold my bicycle on Saturday."),
    ("s1", "Jon", "Oh really? It was a good bicycle."),
    ("s1", "Mira", "The weather was lovely all day."),
    ("s1", "Jon", "We had tea in the garden."),
    ("s1", "Mira", "The repair would have cost more than a new one, that's why."),
    ("s1", "Jon", "Makes sense to me."),
    ("s2", "Jon", "I moved flats because the landlord raised the rent."),
    ("s2", "Mira", "The new flat has a balcony."),
    ("s3", "Mira", "Porto had lovely tiled houses."),
    ("s3", "Jon", "Tiled houses with blue azulejos line the river in Porto."),
    ("s3", "Mira", "The azulejos river walk at dusk was the best part."),
    ("s3", "Jon", "Pottery class made a bowl."),
]


def _observations() -> list[Observation]:
    return [
        Observation(text, at=START + dt.timedelta(minutes=i), speaker=who, session=s, turn_id=f"T{i}")
        for i, (s, who, text) in enumerate(TURNS)
    ]


@pytest.fixture(params=STORE_KINDS)
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    with filled_memory(request.param, HashingEmbedder(64), tmp_path, _observations()) as m:
        yield m


def _qvec(mem: Memory, text: str):  # type: ignore[no-untyped-def]
    return mem.embedder.embed([analyze(text).stripped])[0]


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("Why did Mira sell her bicycle?", True),
        ("What led Jon to move flats?", True),
        ("How come Caroline started painting?", True),
        ("What made Melanie decide to run a charity race?", True),
        ("What was the reason for the trip?", True),
        ("What happened after the accident?", True),
        ("Where did Mira sell her bicycle?", False),
        ("When did Jon move flats?", False),
    ],
)
def test_cause_language_in_a_query(query: str, asks: bool) -> None:
    assert asks_cause(query) is asks


@pytest.mark.parametrize(
    ("text", "states"),
    [
        ("I moved because the rent went up.", True),
        ("The repair cost too much, that's why.", True),
        ("Losing my job led me to start painting.", True),
        ("It rained, so I stayed in.", True),
        ("Her talk inspired me to volunteer.", True),
        ("We had tea in the garden.", False),
        ("So good to see you!", False),  # "so" alone states nothing
    ],
)
def test_cause_cues_in_a_memory(text: str, states: bool) -> None:
    assert states_cause(text) is states


def test_a_why_question_reaches_the_cause_told_turns_away(mem: Memory) -> None:
    query = "Why did Mira sell her bicycle?"
    hits = causal_channel(mem.store, TENANT, analyze(query), _qvec(mem, query), 5, {})
    turns = turn_ids(mem, [i for i, _ in hits])
    assert "T4" in turns  # the cause: four turns after the sale, no word of the question
    assert turns[0] == "T4"  # reached from the best anchor: above the other session's cue
    assert set(turns) <= {"T4", "T6"}  # only memories that state a cause
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)


def test_a_question_without_cause_language_runs_no_causal_channel(mem: Memory) -> None:
    query = "Where did Mira sell her bicycle?"
    assert causal_channel(mem.store, TENANT, analyze(query), _qvec(mem, query), 5, {}) == []
    query = "Why did Mira sell her bicycle?"
    assert causal_channel(mem.store, TENANT, analyze(query), _qvec(mem, query), 0, {}) == []


def test_the_semantic_channel_reaches_the_anchors_neighbours(mem: Memory) -> None:
    query = "Porto tiled houses"
    qvec = _qvec(mem, query)
    anchors = {i for i, _ in mem.store.vectors.search(TENANT, qvec, 5)}
    hits = semantic_channel(mem.store, TENANT, qvec, 3, {})
    assert 0 < len(hits) <= 3
    assert not anchors & {i for i, _ in hits}  # the query found those itself
    rows = mem.store.context.candidates([i for i, _ in hits], TENANT)
    vectors = mem.store.context.candidates(sorted(anchors), TENANT)
    for node_id, cos in hits:  # each hit's score is its best cosine with an anchor
        emb = rows[node_id].embedding
        assert emb is not None
        best = max(float(np.dot(emb, v.embedding)) for v in vectors.values() if v.embedding is not None)
        assert cos == pytest.approx(best, abs=1e-6)
    assert semantic_channel(mem.store, TENANT, qvec, 0, {}) == []


def test_the_pool_carries_the_causal_and_semantic_columns(mem: Memory) -> None:
    query = "Why did Mira sell her bicycle?"
    plain = build_pool(mem.store, mem.embedder, query, TENANT, PoolSettings(1, 0))
    pool = build_pool(
        mem.store, mem.embedder, query, TENANT, PoolSettings(1, 0, (("causal", 3), ("semantic", 3)))
    )
    absent = 10.0 / (10.0 + 4)
    assert "T4" in turn_ids(mem, list(pool.ids))
    assert "T4" not in turn_ids(mem, list(plain.ids))  # neither index's top 1 nor a neighbour (window 0)
    causal = {i for i in pool.ids if pool.row(i)["causal_rank"] > absent}
    assert causal
    assert all(states_cause(pool.rows[i].content) for i in causal)
    semantic = [i for i in pool.ids if pool.row(i)["semantic_rank"] > absent]
    assert semantic
    assert all(pool.row(i)["semantic_cos"] > 0 for i in semantic)
    for col in ("causal_rank", "semantic_rank"):
        assert (plain.features[:, FEATURES.index(col)] == absent).all()
    assert (plain.features[:, FEATURES.index("semantic_cos")] == 0).all()


def test_causal_and_semantic_are_profile_channels() -> None:
    profile = Profile.builtin().with_(read__channels=("causal", "semantic"))
    assert profile.read.channels == ("causal", "semantic")


def _qpool(mem: Memory, query: str, channels: tuple[tuple[str, int], ...], n: int) -> QueryPool:
    pool = build_pool(mem.store, mem.embedder, query, TENANT, PoolSettings(n, 0, channels))
    turns = tuple(pool.rows[i].content for i in pool.ids)
    return as_query_pool(pool, turns)


def test_dropping_channels_gives_the_pool_built_without_them(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", embedder=HashingEmbedder(64), answerer=None) as m:
        m.add_many(_observations(), user="u")
        query = "Why did Mira sell her bicycle?"
        both = _qpool(m, query, (("causal", 3), ("semantic", 3)), 1)
        plain = _qpool(m, query, (), 1)
        causal = _qpool(m, query, (("causal", 3),), 1)
        assert len(both.turn_ids) > len(causal.turn_ids) > len(plain.turn_ids)
        alone = drop_channel(both, "semantic", n=1)
        assert alone.turn_ids == causal.turn_ids
        np.testing.assert_array_equal(alone.features, causal.features)
        none = drop_channel(both, ["causal", "semantic"], n=1)
        assert none.turn_ids == plain.turn_ids
        np.testing.assert_array_equal(none.features, plain.features)


def test_co_evidence_pairs_are_counted_by_session_distance_and_cue() -> None:
    from research.causal_pairs import count_pairs

    from dualmem.conversations import QA, Conversation

    obs = tuple(
        Observation(text, at=START, speaker=who, session=s, turn_id=f"T{i}")
        for i, (s, who, text) in enumerate(TURNS)
    )
    questions = (
        QA("Why did Mira sell her bicycle?", "cost", ("T0", "T4"), 1),  # 4 apart, T4 states a cause
        QA("What did they do on Saturday?", "tea", ("T0", "T1", "T3"), 1),  # 1, 2 and 3 apart, no cue
        QA("Where did Jon move?", "a flat", ("T6", "T9"), 1),  # two sessions
        QA("What happened after the move?", "balcony", ("T4", "T11"), 1),  # 7 apart, across sessions
    )
    counts = count_pairs([Conversation("c", obs, questions)])
    assert counts.turns == len(TURNS)
    assert counts.cued_turns == 2  # T4 ("that's why"), T6 ("because")
    assert counts.pairs == 1 + 3 + 1 + 1
    assert counts.same_session == 1 + 3
    assert counts.within_window == 2  # T0-T1, T1-T3
    assert counts.cued_within_reach == 1  # T0-T4
    assert counts.cued_beyond_reach == 0  # T0-T3 is 3 apart without a cue
    assert (counts.cause_questions, counts.cause_multi) == (2, 2)
    assert (counts.cause_evidence, counts.cause_evidence_cued) == (4, 2)

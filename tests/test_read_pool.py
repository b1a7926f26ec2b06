"""The pooled read path: learned anchors, the learned relevance head in the builtin decider, bounds."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualmem import Memory, Profile
from dualmem.control.builtin import BuiltinController
from dualmem.embed import Embedder
from dualmem.learn import LinearRanker
from dualmem.plane import SQLiteStore
from dualmem.read.pool import FEATURES, PoolNodes, PoolSettings, build_pool
from dualmem.types import Observation, Tenant

AT = dt.datetime(2023, 5, 8, 13, 0, tzinfo=dt.UTC)
TURNS = [
    ("Mira", "Guess what happened at the weekend?"),
    ("Jon", "Tell me!"),
    ("Mira", "I adopted a border collie, her name is Pepper."),
    ("Jon", "Pepper is a lovely name for a dog."),
    ("Mira", "My old bicycle broke on the way to work."),
    ("Jon", "I went hiking in the Alps with my sister in July."),
    ("Mira", "I love sushi, especially salmon nigiri."),
    ("Jon", "My favourite food is ramen from the shop near the station."),
]
RANKER = LinearRanker(("lex_q", "speaker", "nb_lex"), (4.0, 1.0, 0.5), -3.0, {"data": "test"})


@pytest.fixture
def mem(hashing: Embedder, tmp_path: Path) -> Iterator[Memory]:
    ctl = BuiltinController(ranker=RANKER)
    with Memory(
        SQLiteStore.open(tmp_path / "m.db"), hashing, ctl, answerer=None, profile=Profile.builtin()
    ) as m:
        m.add_many(
            [
                Observation(t, at=AT, speaker=s, session="s1", turn_id=f"D1:{i}")
                for i, (s, t) in enumerate(TURNS)
            ],
            user="u",
        )
        yield m


def test_the_first_round_scores_the_whole_pool_by_its_prior(mem: Memory) -> None:
    """The builtin profile scores every pool candidate (``read.anchors=None``); the trace lists them
    in the order of the pool's prior (RRF of its rankings), and the learned answer decides."""
    query = "What is the name of the dog Mira adopted?"
    found = mem.search(query, user="u", k=5)
    pool = build_pool(mem.store, mem.embedder, query, Tenant("u"), PoolSettings(50, 2))
    prior = mem._retriever.prior_ranking(pool)
    assert [i for i, _ in found.trace.anchors] == [i for i, _ in prior]
    assert {c.node_id for c in found.trace.rounds[0].candidates} == set(pool.ids)
    assert found.evidence[0].node.turn_id == "D1:2"


def test_the_builtin_relevance_of_a_pooled_candidate_is_the_learned_head(mem: Memory) -> None:
    query = "Which food does Jon like?"
    found = mem.search(query, user="u", k=5)
    pool = build_pool(mem.store, mem.embedder, query, Tenant("u"), PoolSettings(50, 2))
    by_id = dict(zip(pool.ids, RANKER.score(pool.features, FEATURES), strict=True))
    first = found.trace.rounds[0]
    assert first.candidates
    for cand in first.candidates:
        assert cand.relevance == pytest.approx(by_id[cand.node_id], abs=1e-9)
        assert cand.score == pytest.approx(cand.relevance, rel=0.2)  # lambda = (0, 1, 0, 0, 0) + recency


def test_pooled_retrieval_keeps_the_papers_call_bounds(mem: Memory) -> None:
    for query in ("What did Mira adopt?", "Where did Jon go hiking and with whom?", "bicycle"):
        t = mem.search(query, user="u", k=5).trace
        calls = t.calls_by_purpose
        assert calls.get("routing") == 1
        rounds = len([r for r in t.rounds if r.candidates])
        assert calls.get("scoring", 0) == rounds
        assert calls.get("assessment", 0) <= rounds
        assert t.controller_calls <= Profile.builtin().read.limits.max_controller_calls


def test_the_pool_reads_candidates_and_its_full_nodes_only_when_asked(mem: Memory) -> None:
    tenant = Tenant("u")
    pool = build_pool(mem.store, mem.embedder, "What is the name of the dog Mira adopted?", tenant)
    assert set(pool.rows) == set(pool.ids)
    full = mem.store.get_nodes(pool.ids, tenant)
    contexts = mem.store.node_context(pool.ids, tenant)
    for node_id in pool.ids:
        row, node = pool.rows[node_id], full[node_id]
        assert (row.content, row.speaker, row.at, row.valid_to) == (
            node.content,
            node.speaker,
            node.at,
            node.valid_to,
        )
        stored = contexts.get(node_id)
        assert (row.context is None) == (stored is None)
        if row.context is not None and stored is not None:
            assert row.context.neighbours == stored.neighbours
    nodes = pool.nodes
    assert isinstance(nodes, PoolNodes)
    assert len(nodes) == len(pool.ids)
    assert list(nodes) == list(pool.ids)
    assert pool.ids[0] in nodes
    assert "not-a-candidate" not in nodes
    first = nodes.load([pool.ids[0], "not-a-candidate"])
    assert list(first) == [pool.ids[0]]
    assert first[pool.ids[0]] == full[pool.ids[0]]
    assert all(nodes[i] == full[i] for i in pool.ids)  # the rest in one read on first use
    with pytest.raises(KeyError):
        nodes["not-a-candidate"]
    # a candidate forgotten after the pool was read is simply not there any more
    later = build_pool(mem.store, mem.embedder, "What is the name of the dog Mira adopted?", tenant)
    gone = later.ids[-1]
    mem.forget(gone, user="u")
    assert gone not in later.nodes.load([gone])

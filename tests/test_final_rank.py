"""The read loop's final ranking: expanded nodes compete on the pool's learned score (issue 10).

Before ``read.final_rank``, nodes the loop reached over an edge were admitted as evidence with a
hop-decayed eq. 23 score and then ranked ahead of every runner-up, so at K = 20 they took slots
from better pool candidates (LoCoMo CV: R@20 0.830 for the loop against 0.873 for its own pool).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from dualmem import Memory, Profile
from dualmem.control.builtin import BuiltinController
from dualmem.embed import Embedder
from dualmem.learn import LinearRanker
from dualmem.plane import SQLiteStore
from dualmem.read.pool import FEATURES, PoolSettings, build_pool
from dualmem.types import Observation, Tenant

AT = dt.datetime(2023, 5, 8, 13, 0, tzinfo=dt.UTC)
PEOPLE = ("Mira", "Jon")
TOPICS = ("Pepper the dog", "the Alps", "salmon sushi", "the bicycle", "the pottery class", "Lisbon")
#: 42 turns in 6 sessions, each naming a topic shared with turns of other sessions (entity edges)
TURNS = [
    (PEOPLE[i % 2], f"In session {s} we talked about {TOPICS[(s + i) % len(TOPICS)]} and {TOPICS[i % 3]}.")
    for s in range(6)
    for i in range(7)
]
RANKER = LinearRanker(("lex_q", "speaker", "nb_lex", "vec"), (3.0, 0.5, 0.5, 1.0), -3.0, {"data": "test"})
QUERIES = ("What did Mira say about Pepper the dog?", "When did Jon talk about Lisbon and the Alps?")


def _open(path: Path, embedder: Embedder, profile: Profile) -> Memory:
    ctl = BuiltinController(ranker=RANKER)
    return Memory(SQLiteStore.open(path), embedder, ctl, answerer=None, profile=profile)


@pytest.fixture
def db(hashing: Embedder, tmp_path: Path) -> Path:
    path = tmp_path / "m.db"
    with _open(path, hashing, Profile.builtin()) as m:
        m.add_many(
            [
                Observation(t, at=AT + dt.timedelta(days=n // 7), speaker=p, session=f"s{n // 7}",
                            turn_id=f"D{n // 7}:{n % 7}")
                for n, (p, t) in enumerate(TURNS)
            ],
            user="u",
        )  # fmt: skip
    return path


#: the builtin profile with read-time expansion on (its default is off, chosen by CV)
EXPANDING = Profile.builtin().with_(read__expansion=True)


def _pool_order(mem: Memory, query: str) -> list[str]:
    pool = build_pool(mem.store, mem.embedder, query, Tenant("u"), PoolSettings(50, 2))
    scores = RANKER.score(pool.features, FEATURES)
    return [pool.ids[i] for i in sorted(range(len(pool.ids)), key=lambda i: (-scores[i], i))]


@pytest.mark.parametrize("query", QUERIES)
def test_the_loop_is_its_pool_ranking_at_every_k(db: Path, hashing: Embedder, query: str) -> None:
    with _open(db, hashing, EXPANDING) as mem:
        order = _pool_order(mem, query)
        assert len(order) == len(TURNS)  # the pool holds every node: expansion can add none
        for k in (1, 5, 10, 20, 30):
            found = mem.search(query, user="u", k=k)
            assert [e.node.id for e in found.evidence] == order[:k]
            scores = [e.score for e in found.evidence]
            assert scores == sorted(scores, reverse=True)
        assert any(r.round > 0 for r in found.trace.rounds)  # it did expand


def test_the_old_rule_let_expanded_nodes_displace_better_runners_up(db: Path, hashing: Embedder) -> None:
    """The same memory under ``final_rank="loop"``: what the new rule fixes (the test can fail)."""
    profile = EXPANDING.with_(read__final_rank="loop")
    with _open(db, hashing, profile) as mem:
        displaced = 0
        for query in QUERIES:
            order = _pool_order(mem, query)
            found = mem.search(query, user="u", k=20)
            expanded = [e for e in found.evidence if e.round > 0]
            displaced += sum(1 for e in expanded if order.index(e.node.id) >= 20)
        assert displaced > 0


def test_evidence_keeps_the_edge_that_reached_it(db: Path, hashing: Embedder) -> None:
    with _open(db, hashing, EXPANDING) as mem:
        found = mem.search(QUERIES[0], user="u", k=len(TURNS))
        reached = [e for e in found.evidence if e.round > 0]
        assert reached
        assert all(e.via is not None and e.view == e.via.view for e in reached)


def test_expansion_reads_only_the_strongest_edges_per_node(db: Path, hashing: Embedder) -> None:
    counts = {}
    for per_node in (None, 2):
        profile = EXPANDING.with_(read__edges_per_node=per_node)
        with _open(db, hashing, profile) as mem:
            counts[per_node] = mem.search(QUERIES[1], user="u", k=10).trace.edges_inspected
    assert 0 < counts[2] < counts[None]


@pytest.mark.parametrize("query", QUERIES)
def test_the_builtin_profile_reads_no_edge_and_ranks_as_the_expanding_loop(
    db: Path, hashing: Embedder, query: str
) -> None:
    assert Profile.builtin().read.expansion is False
    with _open(db, hashing, Profile.builtin()) as mem:
        plain = mem.search(query, user="u", k=20)
    with _open(db, hashing, EXPANDING) as mem:
        expanded = mem.search(query, user="u", k=20)
    assert plain.trace.edges_inspected == 0
    assert expanded.trace.edges_inspected > 0
    assert plain.trace.route == expanded.trace.route  # routing is still asked and traced
    assert [e.node.id for e in plain.evidence] == [e.node.id for e in expanded.evidence]

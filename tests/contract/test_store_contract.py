"""The Store contract: every implementation must pass this whole file.

A new backend is done when it is added to ``BACKENDS`` and everything here passes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dualmem.errors import EmbedderMismatch, InvalidInput, NotFound
from dualmem.plane import Decision, InMemoryStore, MemoryStore, SQLiteStore, Store
from dualmem.plane.base import Candidate
from dualmem.types import Edge, Node, TemporalRef, Tenant, TypeScores

BACKENDS: dict[str, Callable[[Path], Store]] = {
    "memory": lambda _path: InMemoryStore(),
    "sqlite": lambda path: SQLiteStore.open(path / "store.db", timeout=1.0),
}
#: backends that need a server: opened through a fixture (``tests/pg_server.py``), one schema per store
SERVER_BACKENDS = ("postgres",)

UTC = dt.UTC
T0 = dt.datetime(2023, 5, 1, 12, 0, tzinfo=UTC)
ALICE = Tenant("alice")
BOB = Tenant("bob")
_ids = itertools.count()


def _opener(request: pytest.FixtureRequest) -> Callable[[Path], Store]:
    if request.param in SERVER_BACKENDS:
        factory = request.getfixturevalue("pg_store_factory")
        return lambda _path: factory()
    return BACKENDS[request.param]


@pytest.fixture(params=[*sorted(BACKENDS), *SERVER_BACKENDS])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made = _opener(request)(tmp_path)
    yield made
    made.close()


def unit(rng: np.random.Generator, dim: int = 16) -> np.ndarray:
    v = rng.normal(size=dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def make_node(
    rng: np.random.Generator,
    content: str = "a plain memory",
    *,
    tenant: Tenant = ALICE,
    dim: int = 16,
    **fields: object,
) -> Node:
    node_id = fields.pop("id", None) or f"n{next(_ids):06d}"
    return Node(
        id=str(node_id), tenant=tenant, content=content, at=fields.pop("at", T0),  # type: ignore[arg-type]
        embedding=unit(rng, dim), **fields,  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


# -- nodes ----------------------------------------------------------------------------------


def test_node_round_trip_keeps_every_field(store: Store, rng: np.random.Generator) -> None:
    node = make_node(
        rng,
        "Caroline went to the LGBTQ support group on 7 May 2023.",
        tenant=Tenant("alice", "agent-1", "run-9"),
        at=dt.datetime(2023, 5, 7, 13, 56, 1, 123456, tzinfo=UTC),
        speaker="Caroline",
        source="chat",
        session="s1",
        turn_id="D1:3",
        metadata={"k": [1, 2.5, "x", None, True], "nested": {"a": {"b": "ü"}}},
        entities=("Caroline", "LGBTQ support group"),
        temporal_refs=(TemporalRef("7 May 2023", dt.date(2023, 5, 7), dt.date(2023, 5, 7), "day"),),
        types=TypeScores(episodic=0.9, semantic=0.2, procedural=0.0, preference=0.1),
        created_at=dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        status="pending",
        valid_from=dt.datetime(2023, 5, 7, tzinfo=UTC),
        valid_to=dt.datetime(2023, 6, 7, tzinfo=UTC),
        derived=True,
    )
    store.put_nodes([node])
    back = store.get_node(node.id)
    assert back == node
    assert back is not None
    assert back.embedding is not None
    assert back.embedding.dtype == np.float32
    np.testing.assert_array_equal(back.embedding, node.embedding)
    assert store.get_nodes([node.id, "missing"]) == {node.id: node}
    assert store.entities_of(node.id) == ("Caroline", "LGBTQ support group")
    assert store.get_node("missing") is None
    assert store.entities_of("missing") == ()


def test_node_without_types_or_time(store: Store, rng: np.random.Generator) -> None:
    node = make_node(rng, "no time here", at=None)
    store.put_nodes([node])
    assert store.get_node(node.id) == node


def test_put_rejects_duplicates_and_missing_embeddings(store: Store, rng: np.random.Generator) -> None:
    node = make_node(rng)
    store.put_nodes([node])
    with pytest.raises(InvalidInput):
        store.put_nodes([make_node(rng, id=node.id)])
    fresh = make_node(rng)
    with pytest.raises(InvalidInput):
        store.put_nodes([fresh, dataclasses.replace(fresh, content="twin")])
    with pytest.raises(InvalidInput):
        store.put_nodes([dataclasses.replace(make_node(rng), embedding=None)])
    assert store.count(ALICE) == 1


def test_dimension_is_fixed_per_store(store: Store, rng: np.random.Generator) -> None:
    store.put_nodes([make_node(rng, dim=16)])
    with pytest.raises(EmbedderMismatch):
        store.put_nodes([make_node(rng, dim=8)])
    with pytest.raises(InvalidInput):
        store.vector_search(ALICE, unit(rng, 8), 3)
    assert store.count() == 1


def test_update_node_replaces_mutable_fields(store: Store, rng: np.random.Generator) -> None:
    node = make_node(rng, "the cat sat on the mat", entities=("Cat",))
    store.put_nodes([node])
    updated = dataclasses.replace(
        node,
        content="the dog barked loudly",
        types=TypeScores(0.1, 0.8, 0.0, 0.3),
        status="pending",
        valid_to=T0 + dt.timedelta(days=3),
        metadata={"merged": True},
        entities=("Dog",),
        embedding=unit(rng),
    )
    store.update_node(updated)
    assert store.get_node(node.id) == updated
    assert store.lexical_search(ALICE, "cat mat", 5) == []
    assert [h[0] for h in store.lexical_search(ALICE, "dog barked", 5)] == [node.id]
    assert store.entity_search(ALICE, ["cat"], 5) == []
    assert store.entity_search(ALICE, ["dog"], 5) == [(node.id, 1)]
    assert updated.embedding is not None
    assert store.vector_search(ALICE, updated.embedding, 1)[0][0] == node.id
    assert store.vector_search(ALICE, updated.embedding, 1)[0][1] == pytest.approx(1.0, abs=1e-5)
    # no embedding given: the stored one stays
    store.update_node(dataclasses.replace(updated, embedding=None, status="complete"))
    again = store.get_node(node.id)
    assert again is not None
    assert again.status == "complete"
    assert again.embedding is not None
    np.testing.assert_array_equal(again.embedding, updated.embedding)


def test_update_node_errors(store: Store, rng: np.random.Generator) -> None:
    with pytest.raises(NotFound):
        store.update_node(make_node(rng))
    node = make_node(rng)
    store.put_nodes([node])
    with pytest.raises(InvalidInput):
        store.update_node(dataclasses.replace(node, tenant=BOB))
    assert store.get_node(node.id) == node


def test_iter_nodes_order_status_and_count(store: Store, rng: np.random.Generator) -> None:
    late = make_node(rng, "late", at=T0 + dt.timedelta(days=2))
    early = make_node(rng, "early", at=T0 - dt.timedelta(days=2), status="pending")
    middle = make_node(rng, "middle", at=T0)
    timeless = make_node(rng, "timeless", at=None, created_at=T0 + dt.timedelta(days=1))
    other = make_node(rng, "other user", tenant=BOB)
    store.put_nodes([late, early, middle, timeless, other])
    assert [n.id for n in store.iter_nodes(ALICE)] == [early.id, middle.id, timeless.id, late.id]
    assert [n.id for n in store.iter_nodes(ALICE, status="pending")] == [early.id]
    assert {n.id for n in store.iter_nodes()} == {late.id, early.id, middle.id, timeless.id, other.id}
    assert next(iter(store.iter_nodes(ALICE))) == early
    assert store.count(ALICE) == 4
    assert store.count(BOB) == 1
    assert store.count() == 5


# -- edges ----------------------------------------------------------------------------------


def _pair(store: Store, rng: np.random.Generator) -> tuple[Node, Node, Node]:
    nodes = (make_node(rng, "one"), make_node(rng, "two"), make_node(rng, "three"))
    store.put_nodes(list(nodes))
    return nodes


def test_several_typed_edges_join_one_pair(store: Store, rng: np.random.Generator) -> None:
    a, b, c = _pair(store, rng)
    edges = [
        Edge(a.id, b.id, "temporal", "before", 0.9),
        Edge(a.id, b.id, "causal", "causes", 0.7),
        Edge(a.id, b.id, "semantic", "related", 0.5),
        Edge(c.id, a.id, "entity", "shared_entity", 1.0),
    ]
    store.put_edges(edges)
    assert set(store.edges_of(a.id)) == set(edges)
    assert set(store.edges_of(b.id)) == set(edges[:3])
    assert store.edges_of(a.id, ["causal"]) == [edges[1]]
    assert set(store.edges_of(a.id, ["entity", "temporal"])) == {edges[0], edges[3]}
    assert store.edges_of(c.id, ["semantic"]) == []
    assert store.edges_of("nobody") == []


def test_edges_of_with_a_limit_reads_the_strongest(store: Store, rng: np.random.Generator) -> None:
    a, b, c = _pair(store, rng)
    edges = [
        Edge(a.id, b.id, "temporal", "before", 0.4),
        Edge(c.id, a.id, "entity", "shared_entity", 0.9),
        Edge(a.id, b.id, "semantic", "related", 0.4),
        Edge(a.id, c.id, "temporal", "before", 1.0),
        Edge(b.id, a.id, "causal", "causes", 0.7),
    ]
    store.put_edges(edges)
    # strongest first, ties in write order; both directions count
    assert store.edges_of(a.id, limit=3) == [edges[3], edges[1], edges[4]]
    assert store.edges_of(a.id, limit=5) == [edges[3], edges[1], edges[4], edges[0], edges[2]]
    assert store.edges_of(a.id, limit=99) == store.edges_of(a.id, limit=5)
    assert store.edges_of(a.id, ["temporal", "semantic"], limit=2) == [edges[3], edges[0]]
    assert store.edges_of(a.id, ["semantic"], limit=2) == [edges[2]]
    assert store.edges_of(a.id, limit=0) == []
    assert store.edges_of(a.id, [], limit=2) == []
    assert store.edges_of("nobody", limit=2) == []
    # without a limit: every edge, in write order
    assert store.edges_of(a.id) == edges


def test_same_key_edge_is_replaced(store: Store, rng: np.random.Generator) -> None:
    a, b, _ = _pair(store, rng)
    store.put_edges([Edge(a.id, b.id, "semantic", "related", 0.2)])
    newer = Edge(a.id, b.id, "semantic", "related", 0.8, valid_to=T0)
    store.put_edges([newer])
    assert store.edges_of(a.id) == [newer]
    reverse = Edge(b.id, a.id, "semantic", "related", 0.4)
    store.put_edges([reverse])
    assert set(store.edges_of(a.id)) == {newer, reverse}
    store.delete_edges([newer])
    assert store.edges_of(b.id) == [reverse]


def test_edges_to_unknown_nodes_are_refused(store: Store, rng: np.random.Generator) -> None:
    a, _, _ = _pair(store, rng)
    with pytest.raises(NotFound):
        store.put_edges([Edge(a.id, "ghost", "semantic", "related")])
    assert store.edges_of(a.id) == []


# -- deletion -------------------------------------------------------------------------------


def test_delete_removes_everything_about_a_node(store: Store, rng: np.random.Generator) -> None:
    gone = make_node(rng, "zebra crossing story", entities=("Zebra",))
    keep = make_node(rng, "another note", entities=("Zebra",))
    third = make_node(rng, "a third note")
    store.put_nodes([gone, keep, third])
    assert gone.embedding is not None
    assert store.vector_search(ALICE, gone.embedding, 1)[0][0] == gone.id  # warm any cache
    store.put_edges(
        [Edge(gone.id, keep.id, "causal", "causes"), Edge(third.id, gone.id, "temporal", "before")]
    )
    store.put_edges([Edge(keep.id, third.id, "semantic", "related")])
    store.put_decisions(
        [
            Decision(gone.id, "typing", "t", "episodic", 0.9),
            Decision(keep.id, "relations", "pair_0", "caused_by", 0.7, other_id=gone.id),
            Decision(keep.id, "typing", "t", "episodic", 0.4),
        ]
    )
    assert store.delete_nodes([gone.id, "never-existed"]) == 1
    assert store.get_node(gone.id) is None
    assert store.get_nodes([gone.id]) == {}
    assert [e.label for e in store.edges_of(keep.id)] == ["related"]
    assert [e.label for e in store.edges_of(third.id)] == ["related"]
    assert store.edges_of(gone.id) == []
    assert store.lexical_search(ALICE, "zebra crossing", 5) == []
    assert gone.id not in [h[0] for h in store.vector_search(ALICE, gone.embedding, 5)]
    assert store.entity_search(ALICE, ["zebra"], 5) == [(keep.id, 1)]
    assert store.entities_of(gone.id) == ()
    assert store.decisions_of(gone.id) == []
    assert [d.key for d in store.decisions_of(keep.id)] == ["episodic"]
    assert store.count(ALICE) == 2
    assert store.stats(ALICE).entities == 1
    assert store.delete_nodes([gone.id]) == 0


def test_stats_count_the_entities_of_each_scope(store: Store, rng: np.random.Generator) -> None:
    planner, writer = Tenant("alice", agent="planner"), Tenant("alice", agent="writer")
    store.put_nodes(
        [
            make_node(rng, "Melanie flew to Porto", tenant=planner, entities=("Melanie", "Porto")),
            make_node(rng, "Melanie moved to Lisbon", tenant=writer, entities=("Melanie", "Lisbon")),
            make_node(rng, "Melanie again", tenant=writer, entities=("Melanie",)),
            make_node(rng, "Melanie, Bob's friend", tenant=BOB, entities=("Melanie",)),
        ]
    )
    assert store.stats(ALICE).entities == 3  # Melanie, Porto, Lisbon
    assert store.stats(planner).entities == 2
    assert store.stats(writer).entities == 2
    assert store.stats(BOB).entities == 1
    assert store.stats(Tenant("carol")).entities == 0
    assert store.stats(None).entities == 4  # each user's Melanie is that user's entity
    (gone,) = [n.id for n in store.iter_nodes(planner)]
    store.delete_nodes([gone])
    assert store.stats(ALICE).entities == 2  # Porto went with its only node
    assert store.stats(planner).entities == 0


# -- tenants --------------------------------------------------------------------------------


def test_users_never_see_each_other(store: Store, rng: np.random.Generator) -> None:
    text = "Melanie painted a sunrise over the lake"
    mine = make_node(rng, text, tenant=ALICE, entities=("Melanie",))
    theirs = dataclasses.replace(mine, id="theirs", tenant=BOB)
    store.put_nodes([mine, theirs])
    assert mine.embedding is not None
    for me, other in ((ALICE, theirs), (BOB, mine)):
        assert store.get_node(other.id, me) is None
        assert store.get_nodes([mine.id, theirs.id], me).keys() == {mine.id, theirs.id} - {other.id}
        assert other.id not in {n.id for n in store.iter_nodes(me)}
        assert store.count(me) == 1
        assert other.id not in {h[0] for h in store.vector_search(me, mine.embedding, 10)}
        assert other.id not in {h[0] for h in store.lexical_search(me, text, 10)}
        assert other.id not in {h[0] for h in store.entity_search(me, ["Melanie"], 10)}
        assert other.id not in {h[0] for h in store.time_search(me, T0, 10)}
        assert store.stats(me).nodes == 1
    assert store.get_node(mine.id) == mine  # no tenant: admin read
    assert store.vector_search(Tenant("carol"), mine.embedding, 5) == []


def test_agent_and_run_narrow_reads(store: Store, rng: np.random.Generator) -> None:
    text = "shared words about gardening"
    specs = {
        "plain": Tenant("u"),
        "a1": Tenant("u", "a1"),
        "a1r1": Tenant("u", "a1", "r1"),
        "a2r1": Tenant("u", "a2", "r1"),
    }
    nodes = {
        key: make_node(rng, text, tenant=t, id=f"agent-{key}", entities=("Garden",))
        for key, t in specs.items()
    }
    store.put_nodes(list(nodes.values()))
    query = nodes["plain"].embedding
    assert query is not None
    expected = {
        Tenant("u"): {"plain", "a1", "a1r1", "a2r1"},
        Tenant("u", "a1"): {"a1", "a1r1"},
        Tenant("u", run="r1"): {"a1r1", "a2r1"},
        Tenant("u", "a2", "r1"): {"a2r1"},
        Tenant("u", "a3"): set(),
    }
    for reader, keys in expected.items():
        want = {nodes[k].id for k in keys}
        assert {k for k, n in nodes.items() if reader.covers(n.tenant)} == keys  # the rule itself
        assert {h[0] for h in store.vector_search(reader, query, 10)} == want
        assert {h[0] for h in store.lexical_search(reader, text, 10)} == want
        assert {h[0] for h in store.entity_search(reader, ["garden"], 10)} == want
        assert {h[0] for h in store.time_search(reader, T0, 10)} == want
        assert {n.id for n in store.iter_nodes(reader)} == want
        assert set(store.get_nodes([n.id for n in nodes.values()], reader)) == want
        assert store.count(reader) == len(want)
        for key, node in nodes.items():
            assert (store.get_node(node.id, reader) is not None) == (key in keys)


# -- searches -------------------------------------------------------------------------------


def test_vector_search_is_exact(store: Store) -> None:
    rng = np.random.default_rng(11)
    nodes = [make_node(rng, f"note {i}", dim=24) for i in range(60)]
    store.put_nodes(nodes[:30])
    store.put_nodes(nodes[30:])
    matrix = np.stack([n.embedding for n in nodes])  # type: ignore[misc]
    for _ in range(5):
        query = unit(rng, 24)
        sims = matrix @ query
        order = np.argsort(-sims)[:7]
        hits = store.vector_search(ALICE, query, 7)
        assert [h[0] for h in hits] == [nodes[i].id for i in order]
        np.testing.assert_allclose([h[1] for h in hits], sims[order], rtol=1e-5, atol=1e-6)
    assert store.vector_search(ALICE, unit(rng, 24), 0) == []
    assert len(store.vector_search(ALICE, unit(rng, 24), 500)) == 60


def test_lexical_search_finds_and_ranks(store: Store, rng: np.random.Generator) -> None:
    nodes = [
        make_node(rng, "Melanie went camping with her kids near the mountains"),
        make_node(rng, "camping camping camping trip gear list"),
        make_node(rng, "Caroline signed up for a pottery class"),
        make_node(rng, "a note about the weather today"),
    ]
    store.put_nodes(nodes)
    hits = store.lexical_search(ALICE, "When did Melanie go camping?", 10)
    assert {h[0] for h in hits} == {nodes[0].id, nodes[1].id}
    assert hits[0][0] == nodes[0].id  # matches both terms
    assert all(a[1] >= b[1] for a, b in itertools.pairwise(hits))
    assert all(h[1] > 0 for h in hits)
    assert [h[0] for h in store.lexical_search(ALICE, "POTTERY", 10)] == [nodes[2].id]
    assert store.lexical_search(ALICE, "pottery", 0) == []
    assert len(store.lexical_search(ALICE, "camping", 1)) == 1


@pytest.mark.parametrize(
    "query",
    ["", "   ", "AND", "OR NOT", '"', '""', "NEAR(", "NEAR(a b, 3)", "*", "a*", "^start", "col:val",
     "(((", "-", "'", "\\", "\x00", "ünïcödé 東京 🙂", "'; DROP TABLE nodes; --", "a" * 5000],
)  # fmt: skip
def test_lexical_search_accepts_any_text(store: Store, rng: np.random.Generator, query: str) -> None:
    store.put_nodes([make_node(rng, "AND OR NOT NEAR start val ünïcödé 東京 data")])
    hits = store.lexical_search(ALICE, query, 5)
    assert isinstance(hits, list)
    assert store.count() == 1


def test_entity_search_counts_shared(store: Store, rng: np.random.Generator) -> None:
    both = make_node(rng, "x", entities=("Caroline", "Melanie"))
    one = make_node(rng, "y", entities=("caroline",))
    none = make_node(rng, "z", entities=("Jon",))
    store.put_nodes([one, both, none])
    assert store.entity_search(ALICE, ["CAROLINE", "melanie", "nobody"], 10) == [(both.id, 2), (one.id, 1)]
    assert store.entity_search(ALICE, ["Caroline", "Melanie"], 1) == [(both.id, 2)]
    assert store.entity_search(ALICE, [], 10) == []
    assert store.entity_search(ALICE, ["Jon"], 0) == []


def test_time_search_nearest_first(store: Store, rng: np.random.Generator) -> None:
    days = [-10, -1, 0.5, 3, 30]
    nodes = [make_node(rng, f"day {d}", at=T0 + dt.timedelta(days=d)) for d in days]
    timeless = make_node(rng, "no time", at=None)
    store.put_nodes([*nodes, timeless])
    hits = store.time_search(ALICE, T0, 10)
    assert [h[0] for h in hits] == [nodes[2].id, nodes[1].id, nodes[3].id, nodes[0].id, nodes[4].id]
    assert hits[0][1] == pytest.approx(43200.0)
    assert hits[1][1] == pytest.approx(86400.0)
    assert timeless.id not in {h[0] for h in hits}
    assert [h[0] for h in store.time_search(ALICE, T0 + dt.timedelta(days=40), 2)] == [
        nodes[4].id,
        nodes[3].id,
    ]
    assert store.time_search(ALICE, T0, 0) == []


# -- transactions, metadata, decisions, stats -----------------------------------------------


class Boom(Exception):
    pass


def test_transaction_rolls_back_everything(store: Store, rng: np.random.Generator) -> None:
    base = make_node(rng, "kept")
    store.put_nodes([base])
    assert base.embedding is not None
    store.vector_search(ALICE, base.embedding, 1)  # warm caches: the rollback must drop them
    added = make_node(rng, "rolled back words")

    def failing() -> None:
        with store.transaction():
            store.put_nodes([added])
            store.put_edges([Edge(base.id, added.id, "semantic", "related")])
            store.set_meta("flag", {"on": True})
            store.delete_nodes([base.id])
            with store.transaction():  # re-entrant
                store.put_decisions([Decision(added.id, "typing", "t", "episodic", 0.5)])
            raise Boom

    with pytest.raises(Boom):
        failing()
    assert store.get_node(base.id) == base
    assert store.get_node(added.id) is None
    assert store.edges_of(base.id) == []
    assert store.get_meta("flag") is None
    assert store.lexical_search(ALICE, "rolled back", 5) == []
    assert [h[0] for h in store.vector_search(ALICE, base.embedding, 5)] == [base.id]


def _put_then_fail(store: Store, node: Node) -> None:
    with store.transaction():
        store.put_nodes([node])
        raise Boom


def test_inner_failure_keeps_outer_work(store: Store, rng: np.random.Generator) -> None:
    outer, inner = make_node(rng, "outer"), make_node(rng, "inner")
    with store.transaction():
        store.put_nodes([outer])
        with pytest.raises(Boom):
            _put_then_fail(store, inner)
    assert store.get_node(outer.id) == outer
    assert store.get_node(inner.id) is None


def test_meta_and_embedder_binding(store: Store) -> None:
    assert store.get_meta("missing") is None
    store.set_meta("k", {"a": [1, 2, {"b": None}]})
    assert store.get_meta("k") == {"a": [1, 2, {"b": None}]}
    store.set_meta("k", "replaced")
    assert store.get_meta("k") == "replaced"
    store.bind_embedder("minilm", 16)
    store.bind_embedder("minilm", 16)
    with pytest.raises(EmbedderMismatch) as info:
        store.bind_embedder("hashing", 16)
    assert info.value.hint is not None
    assert "minilm" in info.value.hint
    with pytest.raises(EmbedderMismatch):
        store.bind_embedder("minilm", 384)
    stats = store.stats()
    assert (stats.embedder, stats.dim) == ("minilm", 16)
    with pytest.raises(EmbedderMismatch):
        store.put_nodes([make_node(np.random.default_rng(1), dim=8)])


def test_decisions_round_trip(store: Store, rng: np.random.Generator) -> None:
    a, b, _ = _pair(store, rng)
    decisions = [
        Decision(a.id, "typing", "episodic", "episodic", 0.83, backend="builtin", latency_ms=1.5),
        Decision(a.id, "relations", "pair_0_kind", "relation_kind", 0.6, label="causal", other_id=b.id,
                 created_at=dt.datetime(2024, 2, 3, 4, 5, 6, 789, tzinfo=UTC)),
    ]  # fmt: skip
    store.put_decisions(decisions)
    assert store.decisions_of(a.id) == decisions
    assert store.decisions_of(b.id) == []
    # one key's records only (the read path's version pass reads relation.supersedes alone)
    assert store.decisions_of(a.id, key="relation_kind") == decisions[1:]
    assert store.decisions_of(a.id, key="episodic") == decisions[:1]
    assert store.decisions_of(a.id, key="absent") == []
    with pytest.raises(NotFound):
        store.put_decisions([Decision("ghost", "typing", "t", "episodic", 0.1)])


def test_stats(store: Store, rng: np.random.Generator) -> None:
    a = make_node(rng, "a", entities=("X", "Y"))
    b = make_node(rng, "b", entities=("x",), status="pending")
    c = make_node(rng, "c", tenant=BOB, entities=("Z",))
    store.put_nodes([a, b, c])
    store.put_edges([Edge(a.id, b.id, "semantic", "related"), Edge(a.id, b.id, "causal", "causes")])
    stats = store.stats(ALICE)
    assert (stats.nodes, stats.pending, stats.entities) == (2, 1, 2)
    assert stats.edges_by_view == {"semantic": 1, "temporal": 0, "causal": 1, "entity": 0}
    assert (stats.embedder, stats.dim) == (None, None)
    everyone = store.stats()
    assert (everyone.nodes, everyone.entities) == (3, 3)
    assert store.stats(BOB).edges_by_view["semantic"] == 0


def test_tenant_counts_list_every_user_agent_and_run(store: Store, rng: np.random.Generator) -> None:
    assert store.tenant_counts() == []
    planner = Tenant("alice", agent="planner")
    store.put_nodes(
        [
            make_node(rng, "b1", tenant=BOB),
            make_node(rng, "a1"),
            make_node(rng, "a2", tenant=planner),
            make_node(rng, "a3", tenant=Tenant("alice", agent="planner", run="r1")),
            make_node(rng, "a4", tenant=planner),
        ]
    )
    assert store.tenant_counts() == [
        (ALICE, 1),
        (planner, 2),
        (Tenant("alice", agent="planner", run="r1"), 1),
        (BOB, 1),
    ]
    assert store.users() == ["alice", "bob"]  # each user once, sorted (migration lists them)


def test_every_backend_is_a_memory_store(store: Store) -> None:
    """What a ``Memory`` asks of its store is one protocol of capabilities; a backend has them all."""
    assert isinstance(store, MemoryStore)
    assert store.read_only is False


# -- properties -----------------------------------------------------------------------------

_text = st.text(min_size=1, max_size=60).filter(lambda s: s.strip() != "")
_opt = st.none() | st.text(max_size=12)
_when = st.datetimes(
    min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1), timezones=st.just(UTC)
)
_json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
_json = st.recursive(
    _json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_score = st.floats(0, 1)


def _maybe(value: str) -> st.SearchStrategy[str | None]:
    return st.none() | st.just(value)


def _refs(start: dt.date) -> st.SearchStrategy[TemporalRef]:
    end = start + dt.timedelta(days=6)
    precision = st.sampled_from(["day", "week", "month", "year"])
    return st.builds(TemporalRef, _text, st.just(start), st.just(end), precision)


@st.composite
def nodes(draw: st.DrawFn) -> Node:
    dim = draw(st.integers(8, 32))
    seed = draw(st.integers(0, 2**32 - 1))
    start = draw(st.dates(dt.date(1990, 1, 1), dt.date(2100, 1, 1)))
    return Node(
        id=f"h{next(_ids):07d}",
        tenant=Tenant(draw(st.sampled_from(["u1", "u2"])), draw(_maybe("ag")), draw(_maybe("r"))),
        content=draw(_text), at=draw(st.none() | _when),
        speaker=draw(_opt), source=draw(_opt), session=draw(_opt), turn_id=draw(_opt),
        metadata=draw(st.dictionaries(st.text(max_size=6), _json, max_size=4)),
        entities=tuple(draw(st.lists(st.text(min_size=1, max_size=10), max_size=4, unique=True))),
        temporal_refs=tuple(draw(st.lists(_refs(start), max_size=2))),
        types=draw(st.none() | st.builds(TypeScores, _score, _score, _score, _score)),
        embedding=unit(np.random.default_rng(seed), dim),
        created_at=draw(_when), status=draw(st.sampled_from(["complete", "pending"])),
        valid_from=draw(st.none() | _when), valid_to=draw(st.none() | _when), derived=draw(st.booleans()),
    )  # fmt: skip


_settings = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(params=[*sorted(BACKENDS), *SERVER_BACKENDS])
def fresh_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    """A factory of empty stores of one backend (Hypothesis needs a fresh one per example)."""
    opener = _opener(request)

    def make() -> Store:
        folder = tmp_path / f"example{next(_ids)}"
        folder.mkdir()
        return opener(folder)

    return make


@_settings
@given(batch=st.lists(nodes(), min_size=1, max_size=4))
def test_property_round_trip(fresh_store: Callable[[], Store], batch: list[Node]) -> None:
    dim = batch[0].embedding.shape[0]  # type: ignore[union-attr]
    batch = [
        dataclasses.replace(n, embedding=unit(np.random.default_rng(i), dim)) for i, n in enumerate(batch)
    ]
    store = fresh_store()
    try:
        store.put_nodes(batch)
        for node in batch:
            assert store.get_node(node.id) == node
            assert store.get_node(node.id, node.tenant) == node
            assert store.entities_of(node.id) == node.entities
        assert store.get_nodes([n.id for n in batch]) == {n.id: n for n in batch}
        assert sorted(n.id for n in store.iter_nodes()) == sorted(n.id for n in batch)
    finally:
        store.close()


@_settings
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 40),
    dim=st.integers(8, 32),
    k=st.integers(1, 50),
    agent=st.none() | st.sampled_from(["a", "b"]),
)
def test_property_vector_top_k_is_brute_force(
    fresh_store: Callable[[], Store], seed: int, n: int, dim: int, k: int, agent: str | None
) -> None:
    rng = np.random.default_rng(seed)
    store = fresh_store()
    try:
        tenants = [Tenant("p", str(rng.choice(["a", "b"]))) for _ in range(n)]
        batch = [make_node(rng, "v", tenant=t, dim=dim) for t in tenants]
        store.put_nodes(batch[: n // 2])
        store.vector_search(Tenant("p"), unit(rng, dim), 1)  # a warm cache must see later puts
        store.put_nodes(batch[n // 2 :])
        query = unit(rng, dim)
        reader = Tenant("p", agent)
        visible = [i for i, t in enumerate(tenants) if reader.covers(t)]
        matrix = np.stack([batch[i].embedding for i in visible]) if visible else np.zeros((0, dim))  # type: ignore[misc]
        sims = matrix @ query
        order = [visible[i] for i in np.argsort(-sims, kind="stable")[:k]]
        hits = store.vector_search(reader, query, k)
        assert [h[0] for h in hits] == [batch[i].id for i in order]
        np.testing.assert_allclose(
            [h[1] for h in hits], sims[np.argsort(-sims, kind="stable")[:k]], rtol=1e-5, atol=1e-6
        )
    finally:
        store.close()


def test_recent_nodes_newest_written_first(store: Store, rng: np.random.Generator) -> None:
    # observation times run backwards: recency is about writing, not about ``at``
    nodes = [make_node(rng, f"memory {i}", at=T0 - dt.timedelta(days=i)) for i in range(5)]
    for node in nodes:
        store.put_nodes([node])
    store.put_nodes([make_node(rng, "bob's", tenant=BOB)])
    assert [n.id for n in store.recent_nodes(ALICE, 3)] == [nodes[4].id, nodes[3].id, nodes[2].id]
    assert store.recent_nodes(ALICE, 0) == []
    assert len(store.recent_nodes(ALICE, 50)) == 5


def test_lexical_search_indexes_the_speaker(store: Store, rng: np.random.Generator) -> None:
    painted = make_node(rng, "Yeah, I painted that lake sunrise last year!", speaker="Melanie")
    other = make_node(rng, "Caroline, you painted a lovely sunrise too.", speaker="Caroline")
    store.put_nodes([painted, other])
    hits = [i for i, _ in store.lexical_search(ALICE, "Melanie", 5)]
    assert hits == [painted.id]
    updated = dataclasses.replace(painted, speaker="Mel")
    store.update_node(updated)
    assert store.lexical_search(ALICE, "Melanie", 5) == []
    assert [i for i, _ in store.lexical_search(ALICE, "Mel", 5)] == [painted.id]


# -- session neighbours (retrieval's neighbour context) ------------------------------------------


def test_session_neighbours_follow_write_order_within_a_session(store: Store) -> None:
    rng = np.random.default_rng(7)
    s1 = [make_node(rng, f"s1 turn {i}", session="s1") for i in range(5)]
    s2 = [make_node(rng, f"s2 turn {i}", session="s2") for i in range(2)]
    loose = make_node(rng, "no session")
    other = make_node(rng, "bob in s1", tenant=BOB, session="s1")
    # interleaved writes: order within a session is what counts
    store.put_nodes([s1[0], s2[0], s1[1], other, s1[2], s2[1], s1[3], s1[4], loose])
    got = store.session_neighbours(ALICE, [s1[2].id, s1[0].id, s2[1].id, loose.id, "missing"], 2)
    assert got[s1[2].id] == ((s1[0].id, -2), (s1[1].id, -1), (s1[3].id, 1), (s1[4].id, 2))
    assert got[s1[0].id] == ((s1[1].id, 1), (s1[2].id, 2))
    assert got[s2[1].id] == ((s2[0].id, -1),)
    assert got[loose.id] == ()
    assert got["missing"] == ()
    assert store.session_neighbours(ALICE, [s1[2].id], 0) == {s1[2].id: ()}
    # another user's node in a session of the same name is never a neighbour
    assert other.id not in {i for pairs in got.values() for i, _ in pairs}
    assert store.session_neighbours(BOB, [s1[2].id], 2) == {s1[2].id: ()}


# -- write-time neighbour context (issue 10) ------------------------------------------------------


def _mean(*nodes: Node) -> np.ndarray:
    total = np.sum([n.embedding for n in nodes], axis=0)
    return total / np.linalg.norm(total)


def _context_ids(store: Store, query: str, tenant: Tenant = ALICE) -> set[str]:
    return {i for i, _ in store.context_search(tenant, query, 10)}


def test_context_is_built_at_write_and_follows_later_turns(store: Store) -> None:
    rng = np.random.default_rng(3)
    words = ["apple", "banana", "cherry", "damson", "elder"]
    turns = [make_node(rng, f"turn about {w}", session="s1") for w in words]
    loose = make_node(rng, "no session at all damson")
    store.put_nodes([*turns[:3], loose])
    got = store.node_context([turns[0].id, turns[2].id, loose.id, "missing"], ALICE)
    assert set(got) == {turns[0].id, turns[2].id}  # no neighbours: no context
    assert got[turns[0].id].neighbours == ((turns[1].id, 1), (turns[2].id, 2))
    vector = got[turns[0].id].vector
    assert vector is not None
    assert np.allclose(vector, _mean(turns[1], turns[2]), atol=2e-2)
    assert _context_ids(store, "cherry") == {turns[0].id, turns[1].id}  # never the node itself
    assert _context_ids(store, "damson") == set()
    # a later turn changes the context of the turns before it (one at a time, or in one batch)
    store.put_nodes([turns[3]])
    store.put_nodes([turns[4]])
    assert _context_ids(store, "damson") == {turns[1].id, turns[2].id, turns[4].id}
    after = store.node_context([turns[2].id], ALICE)[turns[2].id]
    assert after.neighbours == ((turns[0].id, -2), (turns[1].id, -1), (turns[3].id, 1), (turns[4].id, 2))
    assert after.vector is not None
    assert np.allclose(after.vector, _mean(turns[0], turns[1], turns[3], turns[4]), atol=2e-2)


def test_forget_and_update_rewrite_the_neighbours_context(store: Store) -> None:
    rng = np.random.default_rng(4)
    turns = [make_node(rng, f"turn {w}", session="s1") for w in ("kiwi", "lemon", "mango", "nectar")]
    store.put_nodes(turns)
    assert _context_ids(store, "lemon") == {turns[0].id, turns[2].id, turns[3].id}
    assert store.delete_nodes([turns[1].id]) == 1
    assert _context_ids(store, "lemon") == set()
    got = store.node_context([turns[0].id], ALICE)[turns[0].id]
    assert got.neighbours == ((turns[2].id, 1), (turns[3].id, 2))
    store.update_node(dataclasses.replace(turns[2], content="turn olive"))
    assert _context_ids(store, "mango") == set()
    assert _context_ids(store, "olive") == {turns[0].id, turns[3].id}


def test_context_never_crosses_tenants(store: Store) -> None:
    rng = np.random.default_rng(5)
    agent = Tenant("alice", "helper")
    mine = [make_node(rng, f"alice {w}", session="s1") for w in ("pear", "plum")]
    scoped = make_node(rng, "agent quince", tenant=agent, session="s1")
    bob = [make_node(rng, f"bob {w}", tenant=BOB, session="s1") for w in ("fig", "grape")]
    store.put_nodes([mine[0], bob[0], scoped, mine[1], bob[1]])
    assert _context_ids(store, "fig") == set()
    assert _context_ids(store, "fig", BOB) == {bob[1].id}
    assert _context_ids(store, "plum") == {mine[0].id}  # the agent's node does not see user-wide text
    assert _context_ids(store, "quince") == {mine[0].id, mine[1].id}
    assert _context_ids(store, "quince", agent) == set()
    assert store.node_context([mine[0].id], BOB) == {}
    assert store.node_context([scoped.id], agent) == {}


# -- pool candidates (Store.candidates) -------------------------------------------------------


def _same_candidate(store: Store, got: Candidate, node: Node, tenant: Tenant) -> None:
    """``got`` holds exactly what ``get_nodes`` and ``node_context`` give for ``node``."""
    full = store.get_nodes([node.id], tenant)[node.id]
    context = store.node_context([node.id], tenant).get(node.id)
    assert (got.id, got.tenant, got.content, got.speaker) == (
        full.id,
        full.tenant,
        full.content,
        full.speaker,
    )
    assert (got.at, got.temporal_refs, got.valid_to) == (full.at, full.temporal_refs, full.valid_to)
    assert got.embedding is not None
    assert full.embedding is not None
    assert got.embedding.dtype == np.float32
    assert got.embedding.tobytes() == full.embedding.tobytes()
    if context is None:
        assert got.context is None
    else:
        assert got.context is not None
        assert got.context.neighbours == context.neighbours
        assert (got.context.vector is None) == (context.vector is None)
        if context.vector is not None:
            assert got.context.vector is not None
            assert got.context.vector.tobytes() == context.vector.tobytes()


def test_candidates_are_the_projection_of_get_nodes_and_node_context(store: Store) -> None:
    rng = np.random.default_rng(11)
    ref = TemporalRef("on 2 May", dt.date(2023, 5, 2), dt.date(2023, 5, 2), "day")
    turns = [
        make_node(rng, "turn one", session="s1", speaker="Mira", temporal_refs=(ref,)),
        make_node(rng, "turn two", session="s1", speaker=None, at=None),
        make_node(rng, "turn three", session="s1", speaker="Jon", valid_to=T0 + dt.timedelta(days=1)),
    ]
    loose = make_node(rng, "no session")
    bob = make_node(rng, "bob's own", tenant=BOB, session="s1")
    store.put_nodes([*turns, loose, bob])
    ids = [turns[2].id, "missing", loose.id, bob.id, turns[0].id, turns[1].id, turns[0].id]
    got = store.candidates(ids, ALICE)
    assert list(got) == [turns[2].id, loose.id, turns[0].id, turns[1].id]  # order of ids, visible only
    for node in (*turns, loose):
        _same_candidate(store, got[node.id], node, ALICE)
    assert got[loose.id].context is None
    assert got[turns[0].id].context is not None
    assert store.candidates([bob.id], BOB)[bob.id].tenant == BOB
    assert store.candidates([], ALICE) == {}


def test_candidates_follow_updates_forgets_and_context_rewrites(store: Store) -> None:
    rng = np.random.default_rng(12)
    turns = [make_node(rng, f"turn {w}", session="s1", speaker="Mira") for w in ("kiwi", "lemon", "mango")]
    store.put_nodes(turns[:2])
    before = store.candidates([t.id for t in turns], ALICE)  # read (and cached, where a store caches)
    assert before[turns[0].id].context is not None
    assert before[turns[0].id].context.neighbours == ((turns[1].id, 1),)
    # a later turn rewrites the context of the turns before it, not the nodes themselves
    store.put_nodes([turns[2]])
    after = store.candidates([turns[0].id], ALICE)[turns[0].id]
    assert after.context is not None
    assert after.context.neighbours == ((turns[1].id, 1), (turns[2].id, 2))
    # an update changes the node's own fields
    changed = dataclasses.replace(turns[0], content="turn olive", speaker="Jon", valid_to=T0)
    store.update_node(changed)
    _same_candidate(store, store.candidates([turns[0].id], ALICE)[turns[0].id], changed, ALICE)
    assert store.candidates([turns[0].id], ALICE)[turns[0].id].content == "turn olive"
    # a forget removes the node and rewrites its neighbours' context
    assert store.delete_nodes([turns[1].id]) == 1
    now = store.candidates([t.id for t in turns], ALICE)
    assert turns[1].id not in now
    assert now[turns[0].id].context is not None
    assert now[turns[0].id].context.neighbours == ((turns[2].id, 1),)  # offsets count stored turns
    _same_candidate(store, now[turns[0].id], changed, ALICE)

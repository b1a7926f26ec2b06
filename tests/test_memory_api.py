"""The Python API: validation before anything is written, tenants, delete leaving nothing stale."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator

import pytest

from control_support import tell_the_story, with_views
from dualmem import InvalidInput, Memory, NotFound, Observation, TenantRequired
from dualmem.embed import Embedder, HashingEmbedder
from dualmem.errors import EmbedderMismatch
from dualmem.types import Tenant


@pytest.fixture
def mem(minilm: Embedder, memory_db: Callable[[str], str]) -> Iterator[Memory]:
    # the views on, so that a delete has edges to leave behind; SQLite and PostgreSQL
    with Memory.open(memory_db("m.db"), embedder=minilm, profile=with_views()) as opened:
        yield opened


@pytest.mark.parametrize("bad", ["", "   \n\t", 42, None, b"bytes"])
def test_bad_content_is_refused(mem: Memory, bad: object) -> None:
    with pytest.raises(InvalidInput):
        mem.add(bad, user="u")  # type: ignore[arg-type]
    assert mem.count(user="u") == 0


def test_bad_timestamp_and_missing_tenant(mem: Memory) -> None:
    with pytest.raises(InvalidInput, match="cannot read a time"):
        mem.add("hello", user="u", at="next blue moon")
    with pytest.raises(TenantRequired):
        mem.add("hello", user="")
    with pytest.raises(TenantRequired):
        mem.search("hello", user="  ")
    with pytest.raises(InvalidInput):
        mem.add("hello", user="u", colour="red")  # unknown provenance field


def test_one_bad_item_stores_nothing(mem: Memory) -> None:
    mem.add("Kept before.", user="u")
    with pytest.raises(InvalidInput):
        mem.add_many(["fine", {"text": "also fine"}, {"text": "  "}], user="u")
    assert [n.content for n in mem.nodes(user="u")] == ["Kept before."]


def test_accepts_observations_dicts_and_strings(mem: Memory) -> None:
    ids = mem.add_many(
        [
            Observation("As an observation.", speaker="Mira"),
            {"content": "As a dict.", "speaker": "Jon", "at": "8 May 2023", "metadata": {"k": 1}},
            "As a plain string.",
        ],
        user="u",
        agent="a1",
        run="r1",
    )
    node = mem.get(ids[1], user="u")
    assert node.speaker == "Jon"
    assert node.at is not None
    assert node.at.isoformat() == "2023-05-08T00:00:00+00:00"
    assert dict(node.metadata) == {"k": 1}
    assert node.tenant == Tenant("u", "a1", "r1")


def test_tenants_are_isolated(mem: Memory) -> None:
    a = mem.add("Alice's secret: the garden key is under the pot.", user="alice", agent="x")
    mem.add("Bob's note about the garden.", user="bob")
    mem.add("Alice's other agent note.", user="alice", agent="y")
    assert mem.count(user="alice") == 2
    assert mem.count(user="alice", agent="x") == 1
    assert mem.count(user="bob") == 1
    assert all(e.node.tenant.user == "bob" for e in mem.search("garden key", user="bob").evidence)
    assert [e.node.id for e in mem.search("garden key", user="alice", agent="x").evidence] == [a]
    with pytest.raises(NotFound):
        mem.get(a, user="bob")
    with pytest.raises(NotFound):
        mem.delete(a, user="bob")
    assert mem.count(user="alice") == 2


def test_delete_leaves_nothing_stale(mem: Memory) -> None:
    keep, gone = tell_the_story(mem, "u")
    assert mem.store.edges_of(keep)
    mem.delete(gone, user="u")
    t = Tenant("u")
    vec = mem.embedder.embed(["bought a new bicycle"])[0]
    assert gone not in [i for i, _ in mem.store.vector_search(t, vec, 10)]
    assert gone not in [i for i, _ in mem.store.lexical_search(t, "bought new bicycle", 10)]
    assert gone not in [i for i, _ in mem.store.entity_search(t, ["bicycle"], 10)]
    assert all(gone not in (e.source, e.target) for e in mem.store.edges_of(keep))
    assert mem.store.decisions_of(gone) == []
    assert gone not in mem.search("Why did Mira buy a new bicycle?", user="u").ids
    with pytest.raises(NotFound):
        mem.get(gone, user="u")


def test_database_remembers_its_embedder(memory_db: Callable[[str], str]) -> None:
    db = memory_db("m.db")
    with Memory.open(db, embedder=HashingEmbedder(64)) as mem:
        mem.add("written with hashing-64", user="u")
    with pytest.raises(EmbedderMismatch), Memory.open(db, embedder=HashingEmbedder(128)):
        pass
    with Memory.open(db, embedder=HashingEmbedder(64)) as mem:
        assert mem.count(user="u") == 1


def test_public_api_is_sorted_and_complete() -> None:
    import dualmem

    assert dualmem.__all__ == sorted(dualmem.__all__)
    for name in dualmem.__all__:
        assert hasattr(dualmem, name)


def test_search_where_filters_evidence() -> None:
    from dualmem import Filter

    with Memory.open(":memory:", embedder="hashing") as mem:
        s = mem.scope("u")
        s.add("Mira: I love green tea.", speaker="Mira", at="2024-01-01T00:00:00Z", session="a")
        s.add("Tom: I love black coffee.", speaker="Tom", at="2024-02-01T00:00:00Z", session="b")
        both = {e.node.speaker for e in s.search("what do they love?", k=5).evidence}
        assert both == {"Mira", "Tom"}
        tom = s.search("what do they love?", k=5, where=Filter(speaker="Tom")).evidence
        assert [e.node.speaker for e in tom] == ["Tom"]
        late = s.search("what do they love?", k=5, where=Filter(since="2024-01-15")).evidence
        assert [e.node.speaker for e in late] == ["Tom"]
        sess = mem.search("what do they love?", user="u", k=5, where=Filter(session="a")).evidence
        assert [e.node.speaker for e in sess] == ["Mira"]
        assert len(s.search("what do they love?", k=5, where=Filter()).evidence) == 2


def test_list_memories_filters_and_pages() -> None:
    from dualmem import Filter

    with Memory.open(":memory:", embedder="hashing") as mem:
        s = mem.scope("u")
        for i in range(5):
            s.add(f"note {i}", speaker="A" if i % 2 else "B", at=f"2024-01-0{i + 1}T00:00:00Z")
        mem.add("other tenant", user="v")
        assert [n.content for n in s.list_memories()] == [f"note {i}" for i in range(5)]
        assert [n.content for n in s.list_memories(limit=2, offset=1)] == ["note 1", "note 2"]
        assert [n.content for n in s.list_memories(where=Filter(speaker="A"))] == ["note 1", "note 3"]
        assert len(s.list_memories(limit=None)) == 5
        with pytest.raises(InvalidInput):
            s.list_memories(limit=0)
        with pytest.raises(InvalidInput):
            s.list_memories(offset=-1)
        # bounds past sys.maxsize (an HTTP caller can send any integer) page to nothing, not a crash
        assert s.list_memories(limit=1, offset=sys.maxsize - 1) == []
        assert s.list_memories(limit=2**70, offset=2**70) == []
        assert [n.content for n in s.list_memories(limit=sys.maxsize, offset=3)] == ["note 3", "note 4"]

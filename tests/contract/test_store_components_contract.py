"""The ``MemoryStore`` contract's components (issue 45): each backend's ``lexical``, ``vectors``,
``links``, ``context``, ``log`` and ``meta`` answer their protocols and share the store's
connection, so that a component call inside ``store.transaction()`` commits or rolls back with it.

Runs on every backend of ``test_store_contract.py`` (memory, sqlite, postgres).
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from dualmem.plane import Decision, MemoryStore, base, lexindex
from dualmem.types import Node, Tenant

USER = Tenant("u")
DIM = 16
T0 = dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC)


def _unit(rng: np.random.Generator, n: int | None = None) -> np.ndarray:
    v = rng.normal(size=(n or 1, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v if n is not None else v[0]


def _nodes(rng: np.random.Generator) -> list[Node]:
    texts = ["Mira adopted a collie called Pepper", "Jon planted quince trees", "Pepper chased a ball"]
    return [
        Node(
            id=f"n{i}", tenant=USER, content=text, at=T0 + dt.timedelta(hours=i), embedding=_unit(rng),
            session="s1", entities=("pepper",) if "Pepper" in text else (),
        )
        for i, text in enumerate(texts)
    ]  # fmt: skip


def test_each_component_answers_its_protocol(store: MemoryStore) -> None:
    assert isinstance(store, base.MemoryStore)
    assert isinstance(store.lexical, lexindex.LexicalComponent)
    assert isinstance(store.vectors, base.VectorComponent)
    assert isinstance(store.links, base.LinkComponent)
    assert isinstance(store.context, base.ContextComponent)
    assert isinstance(store.log, base.LogComponent)
    assert isinstance(store.meta, base.MetaComponent)


def test_the_components_read_what_the_store_wrote(store: MemoryStore) -> None:
    rng = np.random.default_rng(7)
    nodes = _nodes(rng)
    store.put_nodes(nodes)
    assert store.vectors.search(USER, nodes[1].embedding, 1)[0][0] == "n1"
    assert store.lexical.search("nodes", USER, "quince", 3)[0][0] == "n1"
    assert store.lexical.count("nodes", USER.user) == 3
    assert store.links.probe(USER, "quince trees", 3)[0][0] == "n1"
    assert {i for i, _ in store.links.entity_search(USER, ["Pepper"], 5)} == {"n0", "n2"}
    assert store.links.entities_of("n0") == ("pepper",)
    assert store.links.time_search(USER, T0 + dt.timedelta(hours=2), 1)[0][0] == "n2"
    assert store.context.session_neighbours(USER, ["n1"], 1)["n1"] == (("n0", -1), ("n2", 1))
    assert set(store.context.candidates(["n2", "n0"], USER)) == {"n2", "n0"}
    assert store.meta.stats(USER).nodes == 3
    assert store.meta.tenant_counts() == [(USER, 3)]
    assert store.meta.users() == ["u"]
    assert store.meta.check().healthy


def test_a_component_call_is_part_of_the_stores_transaction(store: MemoryStore) -> None:
    rng = np.random.default_rng(8)
    store.put_nodes(_nodes(rng))
    decision = Decision("n0", "typing", "t0", "fact", 0.9)

    def write_then_fail() -> None:
        with store.transaction():
            store.meta.set("k", 1)
            store.log.put_decisions([decision])
            store.log.put_keys("u", {"key-1": "n0"})
            store.vectors.put_chunks({"n1": _unit(rng, 2)})
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        write_then_fail()
    assert store.meta.get("k") is None
    assert store.log.decisions_of("n0") == []
    assert store.log.find_keys("u", ["key-1"]) == {}
    assert store.vectors.get_chunks(["n1"]) == {}
    with store.transaction():
        store.meta.set("k", 2)
        store.log.put_decisions([decision])
        store.log.put_keys("u", {"key-1": "n0"})
    assert store.meta.get("k") == 2
    assert [d.key for d in store.log.decisions_of("n0")] == ["fact"]
    assert store.log.find_keys("u", ["key-1"]) == {"key-1": "n0"}

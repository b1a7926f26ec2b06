"""The Store contract for chunk vectors (issue 10): a long node scores as its best chunk.

Runs on every backend of ``test_store_contract.py`` (memory, sqlite, postgres).
"""

from __future__ import annotations

import numpy as np
import pytest

from dualmem.errors import EmbedderMismatch, InvalidInput, NotFound
from dualmem.plane import Store
from dualmem.types import Node, Tenant

USER = Tenant("u")
DIM = 16


def unit(rng: np.random.Generator, n: int | None = None, dim: int = DIM) -> np.ndarray:
    v = rng.normal(size=(n or 1, dim)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v if n is not None else v[0]


def node(rng: np.random.Generator, node_id: str, tenant: Tenant = USER) -> Node:
    return Node(id=node_id, tenant=tenant, content=f"memory {node_id}", at=None, embedding=unit(rng))


def test_a_node_scores_as_its_best_chunk_and_is_returned_once(store: Store) -> None:
    rng = np.random.default_rng(1)
    nodes = [node(rng, f"n{i}") for i in range(12)]
    store.put_nodes(nodes)
    query = unit(rng)
    store.vector_search(USER, query, 3)  # a warm cache must see chunks put later
    chunks = unit(rng, 5)
    chunks[3] = query  # the long node's fourth window is exactly the query
    store.put_chunks({"n7": chunks})
    hits = store.vector_search(USER, query, 12)
    assert hits[0][0] == "n7"
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert sorted(h[0] for h in hits) == sorted(n.id for n in nodes)  # each node once
    assert len(store.vector_search(USER, query, 100)) == 12
    got = store.get_chunks(["n7", "n1", "missing"])
    assert list(got) == ["n7"]
    np.testing.assert_array_equal(got["n7"], chunks)


def test_search_with_chunks_is_the_brute_force_best_per_node(store: Store) -> None:
    rng = np.random.default_rng(5)
    tenants = [Tenant("u", ["a", "b"][i % 2]) for i in range(30)]
    nodes = [node(rng, f"m{i:02d}", t) for i, t in enumerate(tenants)]
    store.put_nodes(nodes[:15])
    store.vector_search(USER, unit(rng), 1)
    store.put_nodes(nodes[15:])
    extra = {f"m{i:02d}": unit(rng, int(rng.integers(1, 6))) for i in range(0, 30, 3)}
    store.put_chunks(extra)
    for reader in (USER, Tenant("u", "a"), Tenant("u", "b")):
        for _ in range(4):
            query = unit(rng)
            best = {n.id: _best(n, extra.get(n.id), query) for n in nodes if reader.covers(n.tenant)}
            for k in (1, 5, 40):
                want = sorted(best.items(), key=lambda item: -item[1])[:k]
                hits = store.vector_search(reader, query, k)
                assert [h[0] for h in hits] == [w[0] for w in want]
                np.testing.assert_allclose([h[1] for h in hits], [w[1] for w in want], atol=1e-5)
    assert store.vector_search(Tenant("other"), unit(rng), 5) == []


def _best(n: Node, chunks: np.ndarray | None, query: np.ndarray) -> float:
    assert n.embedding is not None
    scores = [float(n.embedding @ query)] + ([] if chunks is None else [float(s) for s in chunks @ query])
    return max(scores)


def test_put_chunks_replaces_and_an_empty_matrix_removes(store: Store) -> None:
    rng = np.random.default_rng(2)
    store.put_nodes([node(rng, "a"), node(rng, "b", Tenant("v"))])
    first, second = unit(rng, 3), unit(rng, 2)
    store.put_chunks({"a": first})
    store.vector_search(USER, first[0], 1)
    store.put_chunks({"a": second, "b": unit(rng, 1)})
    np.testing.assert_array_equal(store.get_chunks(["a"])["a"], second)
    assert store.vector_search(USER, first[0], 1)[0][1] < 0.999  # the old windows are gone
    assert store.vector_search(USER, second[1], 1)[0] == ("a", pytest.approx(1.0, abs=1e-5))
    assert set(store.get_chunks(["a", "b"], USER)) == {"a"}  # b is another user's
    assert set(store.get_chunks(["a", "b"])) == {"a", "b"}
    store.put_chunks({"a": np.zeros((0, DIM), dtype=np.float32)})
    assert store.get_chunks(["a"]) == {}
    assert store.vector_search(USER, second[1], 1)[0][1] < 0.999


def test_put_chunks_refuses_bad_input(store: Store) -> None:
    rng = np.random.default_rng(3)
    store.put_nodes([node(rng, "a")])
    with pytest.raises(NotFound):
        store.put_chunks({"ghost": unit(rng, 2)})
    with pytest.raises(EmbedderMismatch):
        store.put_chunks({"a": unit(rng, 2, dim=DIM + 1)})
    with pytest.raises(InvalidInput):
        store.put_chunks({"a": unit(rng)})  # one vector, not a matrix
    bad = unit(rng, 2)
    bad[1, 0] = np.nan
    with pytest.raises(InvalidInput):
        store.put_chunks({"a": bad})
    assert store.get_chunks(["a"]) == {}


def test_forget_removes_chunk_vectors(store: Store) -> None:
    rng = np.random.default_rng(4)
    store.put_nodes([node(rng, "long"), node(rng, "short")])
    chunks = unit(rng, 4)
    store.put_chunks({"long": chunks})
    assert store.vector_search(USER, chunks[2], 1)[0][0] == "long"  # warm every cache
    assert store.delete_nodes(["long"]) == 1
    assert store.get_chunks(["long"]) == {}
    assert [h[0] for h in store.vector_search(USER, chunks[2], 5)] == ["short"]
    assert store.check().healthy


def test_chunks_roll_back_with_their_transaction(store: Store) -> None:
    rng = np.random.default_rng(6)
    store.put_nodes([node(rng, "a")])
    chunks = unit(rng, 2)
    store.vector_search(USER, chunks[0], 1)

    def failing() -> None:
        with store.transaction():
            store.put_chunks({"a": chunks})
            assert store.vector_search(USER, chunks[0], 1)[0][1] == pytest.approx(1.0, abs=1e-5)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        failing()
    assert store.get_chunks(["a"]) == {}
    assert store.vector_search(USER, chunks[0], 1)[0][1] < 0.999

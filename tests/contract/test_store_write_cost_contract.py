"""The Store contract for write-time cost (issue 13): the lexical probe and narrow node updates.

Runs on every backend of ``test_store_contract.py`` (memory, sqlite, postgres). What is bounded in
the SQLite store at scale (``_sqlite_scale.lexical_probe``) is tested in ``tests/test_write_cost.py``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import numpy as np

from dualmem.plane import Store
from dualmem.types import Node, Tenant, TypeScores

T0 = dt.datetime(2023, 5, 1, 12, 0, tzinfo=dt.UTC)
USER = Tenant("u")
OTHER = Tenant("v")
TEXTS = (
    "Melanie went camping with her kids near the mountains",
    "camping camping camping trip gear list",
    "Caroline signed up for a pottery class",
    "a note about the weather today",
    "Melanie painted a sunrise over the lake",
)


def _nodes(tenant: Tenant, texts: tuple[str, ...], seed: int = 3) -> list[Node]:
    rng = np.random.default_rng(seed)
    out = []
    for i, text in enumerate(texts):
        v = rng.normal(size=16).astype(np.float32)
        out.append(
            Node(
                id=f"{tenant.user}-{i:03d}",
                tenant=tenant,
                content=text,
                at=T0 + dt.timedelta(minutes=i),
                session="s1",
                entities=tuple(w.lower() for w in text.split() if w[0].isupper()),
                embedding=v / np.linalg.norm(v),
            )
        )
    return out


def test_lexical_probe_is_lexical_search_in_a_small_memory(store: Store) -> None:
    store.put_nodes(_nodes(USER, TEXTS) + _nodes(OTHER, TEXTS))
    for text in (*TEXTS, "When did Melanie go camping?", "", "NEAR( ***"):
        for k in (0, 1, 3, 10):
            assert store.lexical_probe(USER, text, k) == store.lexical_search(USER, text, k)
    assert all(node_id.startswith("u-") for node_id, _ in store.lexical_probe(USER, "Melanie camping", 10))


def test_completing_a_node_keeps_its_text_links_and_context(store: Store) -> None:
    """The write path's last step (types and status only) leaves search, entities and context as they were."""
    nodes = _nodes(USER, TEXTS)
    store.put_nodes([dataclasses.replace(n, status="pending") for n in nodes])
    before = {
        "lexical": store.lexical_search(USER, "Melanie camping pottery", 10),
        "entities": store.entity_search(USER, ["melanie"], 10),
        "context": store.node_context([n.id for n in nodes], USER),
        "counts": store.entity_counts(USER, ["melanie", "caroline"]),
        "context_search": store.context_search(USER, "camping pottery weather", 10),
    }
    for node in nodes:
        store.update_node(dataclasses.replace(node, types=TypeScores(0.9, 0.1, 0.0, 0.2), status="complete"))
    assert store.lexical_search(USER, "Melanie camping pottery", 10) == before["lexical"]
    assert store.entity_search(USER, ["melanie"], 10) == before["entities"]
    assert store.entity_counts(USER, ["melanie", "caroline"]) == before["counts"]
    after = store.node_context([n.id for n in nodes], USER)
    assert after.keys() == before["context"].keys()  # type: ignore[union-attr]
    for node_id, ctx in after.items():
        held = before["context"][node_id]  # type: ignore[index]
        assert ctx.neighbours == held.neighbours
        assert (ctx.vector is None) == (held.vector is None)
        if ctx.vector is not None:
            assert np.allclose(ctx.vector, held.vector)
    assert store.context_search(USER, "camping pottery weather", 10) == before["context_search"]
    got = store.get_node(nodes[0].id)
    assert got is not None
    assert got.status == "complete"
    assert got.types == TypeScores(0.9, 0.1, 0.0, 0.2)
    # an entity no node links any more is gone; a text change is searchable at once
    store.update_node(dataclasses.replace(nodes[2], content="a pottery class", entities=()))
    assert store.entity_counts(USER, ["caroline"])[1] == {}
    assert store.lexical_search(USER, "Caroline", 10) == []
    assert [h[0] for h in store.lexical_search(USER, "pottery", 10)] == [nodes[2].id]

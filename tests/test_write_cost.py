"""The SQLite store's bounded write-time probes (issue 13): what one add reads does not grow with n."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dualmem.plane import SQLiteStore
from dualmem.plane import _sqlite_scale as scale
from dualmem.types import Node, Tenant

USER = Tenant("u")
T0 = dt.datetime(2023, 5, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    made = SQLiteStore.open(tmp_path / "m.db")
    rng = np.random.default_rng(5)
    nodes = []
    for i in range(40):
        words = ["common"] * (i < 30) + ["rare"] * (i % 20 == 0) + ["scarce"] * (i % 10 == 1) + [f"w{i}"]
        v = rng.normal(size=8).astype(np.float32)
        nodes.append(
            Node(
                id=f"n{i:03d}",
                tenant=USER if i % 4 else Tenant("other"),
                content=" ".join(words),
                at=T0 + dt.timedelta(minutes=i),
                embedding=v / np.linalg.norm(v),
            )
        )
    made.put_nodes(nodes)
    yield made
    made.close()


def test_counting_a_term_stops_at_the_cap(store: SQLiteStore) -> None:
    conn = store._conn
    assert scale._held_by(conn, "common", 5) == 6  # 30 rows hold it: counted up to cap + 1
    assert scale._held_by(conn, "rare", 5) == 2
    assert scale._held_by(conn, "absent", 5) == 0
    assert scale.rare_terms(conn, ["common", "scarce", "rare", "absent"], max_docs=5, max_terms=8) == [
        "scarce",
        "rare",
    ]
    assert scale.rare_terms(conn, ["common", "scarce", "rare"], max_docs=5, max_terms=1) == ["rare"]


def test_a_large_memory_ranks_only_the_rare_terms_rows(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "common rare scarce common"
    assert store.lexical_probe(USER, text, 10) == store.lexical_search(USER, text, 10)  # 40 rows < PROBE_FROM
    monkeypatch.setattr(scale, "PROBE_FROM", 20)
    monkeypatch.setattr(scale, "PROBE_DOCS", 5)
    probed = store.lexical_probe(USER, text, 10)
    assert probed == store.lexical_search(USER, "rare scarce", 10)  # "common" (30 rows) does not count
    assert probed
    assert all(store.get_node(i).tenant == USER for i, _ in probed)  # type: ignore[union-attr]
    assert store.lexical_probe(USER, "common", 10) == []  # no rare term: no lexical candidates
    assert store.lexical_probe(USER, "rare", 0) == []


def test_a_written_only_memory_turns_its_ann_delta_into_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Candidate discovery searches inside the write transaction, where no segment is built: the
    commit builds it once the delta is full, so the delta an add searches stays bounded."""
    from dualmem.plane import ann

    if not ann.available():
        pytest.skip("the scale extra (usearch) is not installed")
    monkeypatch.setattr(ann, "SEGMENT_ROWS", 8)
    rng = np.random.default_rng(9)

    def node(i: int) -> Node:
        v = rng.normal(size=8).astype(np.float32)
        return Node(
            id=f"a{i:03d}", tenant=USER, content=f"memory {i}", at=T0, embedding=v / np.linalg.norm(v)
        )

    with SQLiteStore.open(tmp_path / "m.db") as store:
        store.use_ann(1)
        store.put_nodes([node(i) for i in range(4)])
        query = node(999).embedding
        assert query is not None
        store.vector_search(USER, query, 3)  # outside a transaction: the first segment
        assert store._ann is not None
        assert len(store._ann.segments("u")) == 1
        for i in range(4, 14):  # as an add does: store, then search inside the same transaction
            with store.transaction():
                store.put_nodes([node(i)])
                store.vector_search(USER, query, 3)
        assert len(store._ann.segments("u")) == 2
        held = store.get_nodes([f"a{i:03d}" for i in range(14)])
        exact = sorted(held, key=lambda i: -float(held[i].embedding @ query))[:5]  # type: ignore[operator]
        assert [i for i, _ in store.vector_search(USER, query, 5)] == exact

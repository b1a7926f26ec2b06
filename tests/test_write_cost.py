"""The SQLite store's bounded write-time probes (issue 13): what one add reads does not grow with n."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dualmem.errors import NotFound
from dualmem.plane import SQLiteStore
from dualmem.plane.sqlite import _scale as scale
from dualmem.types import Edge, Node, Tenant

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


def test_rare_terms_skips_the_known_common_terms_and_learns_new_ones(store: SQLiteStore) -> None:
    conn = store._conn
    common: set[str] = set()
    terms = ["common", "scarce", "rare", "absent"]
    assert scale.rare_terms(conn, terms, max_docs=5, max_terms=8, common=common) == ["scarce", "rare"]
    assert common == {"common"}  # counted above the cap once: remembered
    common.add("scarce")  # a term the caller knows to be common is not counted again
    assert scale.rare_terms(conn, terms, max_docs=5, max_terms=8, common=common) == ["rare"]


def _probe_store(monkeypatch: pytest.MonkeyPatch, store: SQLiteStore) -> None:
    monkeypatch.setattr(scale, "PROBE_FROM", 20)
    monkeypatch.setattr(scale, "PROBE_DOCS", 5)
    counted: list[str] = []
    real = scale._held_by

    def held_by(conn: object, term: str, cap: int) -> int:
        counted.append(term)
        return real(conn, term, cap)  # type: ignore[arg-type]

    monkeypatch.setattr(scale, "_held_by", held_by)
    store.counted = counted  # type: ignore[attr-defined]


def _plain(store: SQLiteStore, text: str, cap: int = 5) -> list[tuple[str, float]]:
    """The probe's answer recomputed without the store's common-term memory."""
    rare = scale.rare_terms(store._conn, list(dict.fromkeys(text.split())), max_docs=cap, max_terms=8)
    return store.lexical_search(USER, " ".join(rare), 10) if rare else []


def test_the_probe_remembers_common_terms_only_while_rows_are_only_added(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _probe_store(monkeypatch, store)
    counted: list[str] = store.counted  # type: ignore[attr-defined]
    text = "common scarce rare"
    first = store.lexical_probe(USER, text, 10)
    assert counted == ["common", "scarce", "rare"]
    assert first == _plain(store, text)
    counted.clear()
    v = np.ones(8, dtype=np.float32) / np.sqrt(8)
    store.put_nodes([Node(id="x001", tenant=USER, content="scarce rare", at=T0, embedding=v)])
    assert store.lexical_probe(USER, text, 10) == _plain(store, text)  # the new row counts
    assert counted[:2] == ["scarce", "rare"]  # "common" was not counted again: rows were only added
    # a delete may make a common term rare again: everything is counted afresh
    store.delete_nodes([f"n{i:03d}" for i in range(1, 30) if i % 4])  # "common" now in 7 rows
    counted.clear()
    assert store.lexical_probe(USER, text, 10) == _plain(store, text)
    assert "common" in counted


def test_the_common_terms_are_forgotten_on_rollback_text_updates_and_other_writers(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _probe_store(monkeypatch, store)
    counted: list[str] = store.counted  # type: ignore[attr-defined]
    v = np.ones(8, dtype=np.float32) / np.sqrt(8)

    def failing_write() -> None:  # "fresh" becomes common inside the write, which is rolled back
        with store.transaction():
            store.put_nodes(
                [Node(id=f"y{i:03d}", tenant=USER, content="fresh", at=T0, embedding=v) for i in range(8)]
            )
            assert store.lexical_probe(USER, "fresh rare", 10) == _plain(store, "fresh rare")
            assert "fresh" in store._lexical.common_terms
            raise RuntimeError("fail the write")

    with pytest.raises(RuntimeError):
        failing_write()
    counted.clear()
    store.put_nodes([Node(id="y100", tenant=USER, content="fresh", at=T0, embedding=v)])
    assert store.lexical_probe(USER, "fresh rare", 10) == _plain(store, "fresh rare")  # one row again
    assert "fresh" in counted
    # a text update removes the old text's terms
    store.lexical_probe(USER, "common", 10)
    for i in range(1, 30):
        node = store.get_node(f"n{i:03d}")
        assert node is not None
        if i % 3:
            store.update_node(Node(**{**_fields(node), "content": f"edited {i}"}))
    counted.clear()
    assert store.lexical_probe(USER, "common rare", 10) == _plain(store, "common rare")
    assert "common" in counted
    # another connection's commit (it may have deleted rows)
    store.lexical_probe(USER, "common", 10)
    with SQLiteStore.open(store.path) as other:
        other.delete_nodes(["n000", "n003", "n006", "n009", "n012", "n015"])
    counted.clear()
    assert store.lexical_probe(USER, "common rare", 10) == _plain(store, "common rare")
    assert "common" in counted


def _fields(node: Node) -> dict[str, object]:
    import dataclasses

    return {f.name: getattr(node, f.name) for f in dataclasses.fields(node)}


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


def test_a_write_checks_for_other_connections_commits_once(store: SQLiteStore) -> None:
    """``PRAGMA data_version`` once per write transaction (the write lock keeps other writers out),
    and still at the start of each: another connection's commit between two writes is seen."""
    seen: list[str] = []
    store._conn.set_trace_callback(seen.append)
    with store.transaction():
        for _ in range(3):
            store.get_nodes(["n001", "n002"])
            store.node_context(["n001"], USER)
    store._conn.set_trace_callback(None)
    assert sum("data_version" in s for s in seen if not s.startswith("--")) == 1
    v = np.ones(8, dtype=np.float32) / np.sqrt(8)
    with SQLiteStore.open(store.path) as other:
        node = other.get_node("n001")
        assert node is not None
        other.update_node(Node(**{**_fields(node), "content": "changed elsewhere"}))
    with store.transaction():
        assert store.get_nodes(["n001"])["n001"].content == "changed elsewhere"  # the cache was dropped
        store.put_nodes([Node(id="z001", tenant=USER, content="mine", at=T0, embedding=v)])
        assert store.get_nodes(["z001"])["z001"].content == "mine"


def test_edges_resolve_their_nodes_once_per_batch_and_keep_their_order(store: SQLiteStore) -> None:
    """``put_edges`` reads the nodes' users and row numbers in one statement (not two lookups per
    edge); the rows are inserted in the given order, an upsert keeps its row, an unknown node's edge
    is refused by the store and left out by the SQL helper."""
    ids = [f"n{i:03d}" for i in range(1, 40) if i % 4]
    edges = [Edge(ids[i], ids[i + 1], "semantic", "related", 0.5 + i / 100) for i in range(20)]
    seen: list[str] = []
    store._conn.set_trace_callback(seen.append)
    store.put_edges(edges)
    store._conn.set_trace_callback(None)
    assert sum("FROM nodes" in s for s in seen if not s.startswith("--")) == 1
    seq = dict(store._conn.execute("SELECT id, seq FROM nodes").fetchall())
    rows = store._conn.execute("SELECT rowid, src, dst, weight FROM edges ORDER BY rowid").fetchall()
    assert [(src, dst) for _, src, dst, _ in rows] == [(seq[e.source], seq[e.target]) for e in edges]
    first = rows[0][0]
    store.put_edges([Edge(ids[0], ids[1], "semantic", "related", 0.9)])
    with pytest.raises(NotFound):  # the store refuses an unknown node's edge, storing none of the batch
        store.put_edges(
            [Edge(ids[0], ids[2], "semantic", "related"), Edge(ids[0], "nope", "semantic", "related")]
        )
    again = store._conn.execute("SELECT rowid, weight FROM edges WHERE src = ?", (seq[ids[0]],)).fetchall()
    assert again == [(first, 0.9)]
    assert store._conn.execute("SELECT COUNT(*) FROM edges").fetchone()[0] == 20

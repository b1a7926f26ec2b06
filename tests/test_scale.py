"""Issue 13: bounded candidate discovery, packed decisions (schema 2), lexical term selection, ANN search."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from dualmem.config import WriteProfile
from dualmem.plane import SQLiteStore, ann, codec
from dualmem.plane.base import Decision
from dualmem.plane.sqlite import MIGRATIONS, SCHEMA_VERSION
from dualmem.types import Node, Tenant
from dualmem.write.candidates import discover

USER = Tenant("u")
T0 = dt.datetime(2023, 5, 1, tzinfo=dt.UTC)

needs_usearch = pytest.mark.skipif(not ann.available(), reason="the scale extra (usearch) is not installed")


def unit(rng: np.random.Generator, dim: int = 16) -> np.ndarray:
    v = rng.normal(size=dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def make(i: int, rng: np.random.Generator, entities: tuple[str, ...], content: str = "") -> Node:
    return Node(
        id=f"n{i:06d}",
        tenant=USER,
        content=content or f"note {i} about things",
        at=T0 + dt.timedelta(minutes=i),
        entities=entities,
        embedding=unit(rng),
    )


# -- bounded candidate discovery ------------------------------------------------------------------
def _steps(store: SQLiteStore, call: object) -> int:
    """SQLite VM steps (in units of 100) that ``call()`` makes: a work count, not a time."""
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0

    store._conn.set_progress_handler(tick, 100)
    try:
        call()  # type: ignore[operator]
    finally:
        store._conn.set_progress_handler(None, 0)
    return count[0]


def _common_store(n: int) -> SQLiteStore:
    rng = np.random.default_rng(1)
    store = SQLiteStore.open(":memory:")
    nodes = [make(i, rng, ("garden",) + (("Zanzibar",) if i % 97 == 0 else ())) for i in range(n)]
    store.put_nodes(nodes)
    return store


def test_entity_probe_stays_bounded_for_a_very_common_entity() -> None:
    small, large = _common_store(600), _common_store(6000)
    try:
        cost_small = _steps(small, lambda: small.entity_search(USER, ["garden"], 30))
        cost_large = _steps(large, lambda: large.entity_search(USER, ["garden"], 30))
        assert len(large.entity_search(USER, ["garden"], 30)) == 30
        # ten times the links, (nearly) the same work: the probe is capped
        assert cost_large <= 1.5 * cost_small + 5
        assert large.entity_counts(USER, ["Garden", "zanzibar", "nowhere"]) == (
            6000,
            {"garden": 6000, "zanzibar": 62},
        )
    finally:
        small.close()
        large.close()


def test_a_common_entity_stops_seeding_candidates_a_rare_one_does() -> None:
    store = _common_store(600)
    try:
        rng = np.random.default_rng(9)
        new = make(10_000, rng, ("garden", "Zanzibar"))
        found = discover(store, new, profile=WriteProfile(**_only_entity()))
        # only the rare entity's nodes (every 97th) are candidates; "garden" is in every node
        seeded = {c.node.id for c in found if c.score > 0}
        assert seeded == {f"n{i:06d}" for i in range(0, 600, 97)}
        everyone = discover(store, new, profile=WriteProfile(cand_entity_share=1.0, **_only_entity()))
        assert all(c.score > 0 for c in everyone)  # share 1.0: the common entity seeds too
        assert len(everyone) == 10
    finally:
        store.close()


def _only_entity() -> dict[str, float]:
    return {"cand_vector": 0.0, "cand_lexical": 0.0, "cand_time": 0.0, "cand_entity": 1.0}


def test_entity_counts_follow_deletes() -> None:
    store = _common_store(200)
    try:
        store.delete_nodes([f"n{i:06d}" for i in range(50)])
        assert store.entity_counts(USER, ["garden"]) == (150, {"garden": 150})
    finally:
        store.close()


# -- packed decisions and the migration ------------------------------------------------------------
def _decisions(node_id: str, others: list[str]) -> list[Decision]:
    when = T0 + dt.timedelta(microseconds=17)
    out = [Decision(node_id, "typing", f"q_{k}", k, 0.25 * i, None, "builtin", 1.5, None, when)
           for i, k in enumerate(("episodic", "semantic"))]  # fmt: skip
    out += [
        Decision(
            node_id, "relations", f"c{j}_caused_by", "caused_by", 0.1 + j, "yes", "builtin", 3.0, o, when
        )
        for j, o in enumerate(others)
    ]
    return out


def test_v1_database_migrates_to_packed_decisions(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
    for statement in MIGRATIONS[0][1]:
        assert isinstance(statement, str)
        conn.execute(statement)
    conn.execute("INSERT INTO schema_migrations VALUES (1, '2023-01-01T00:00:00')")
    for nid in ("a", "b", "c"):
        conn.execute(
            "INSERT INTO nodes (id, user_id, content, metadata, entities, temporal_refs, created_at, "
            "created_ts, status) VALUES (?, 'u', 'x', '{}', '[\"Mira\"]', '[]', "
            "'2023-01-01T00:00:00+00:00', 0, 'complete')",
            (nid,),
        )
        conn.execute("INSERT INTO entities (user_id, name) VALUES ('u', 'mira') ON CONFLICT DO NOTHING")
        conn.execute("INSERT INTO node_entities SELECT ?, id FROM entities", (nid,))
    old = _decisions("a", ["b", "c"])
    conn.executemany(
        "INSERT INTO decisions (node_id, purpose, name, key, value, label, backend, latency_ms, other_id, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(d.node_id, d.purpose, d.name, d.key, d.value, d.label, d.backend, d.latency_ms, d.other_id,
          d.created_at.isoformat()) for d in old],
    )  # fmt: skip
    conn.close()
    with SQLiteStore.open(path) as store:
        assert store.decisions_of("a") == old
        assert store.entity_counts(USER, ["mira"]) == (3, {"mira": 3})
        store.delete_nodes(["b"])
        assert store.decisions_of("a") == [d for d in old if d.other_id != "b"]
    check = sqlite3.connect(path)
    try:
        tables = {r[0] for r in check.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "decisions" not in tables
        assert check.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == SCHEMA_VERSION
    finally:
        check.close()


def test_packed_decisions_round_trip_and_forget() -> None:
    rng = np.random.default_rng(2)
    with SQLiteStore.open(":memory:") as store:
        store.put_nodes([make(i, rng, ()) for i in range(4)])
        ds = _decisions("n000000", ["n000001", "n000002", "n000003"])
        store.put_decisions(ds)
        assert store.decisions_of("n000000") == ds
        (sets,) = store._conn.execute("SELECT COUNT(*) FROM decision_sets").fetchone()
        assert sets == 2  # one per request: typing, relations
        store.delete_nodes(["n000002"])
        assert store.decisions_of("n000000") == [d for d in ds if d.other_id != "n000002"]
        store.delete_nodes(["n000000"])
        assert store.decisions_of("n000000") == []


# -- lexical term selection ---------------------------------------------------------------------------
def test_common_terms_are_dropped_and_or_terms_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    with SQLiteStore.open(":memory:") as store:
        texts = ["gardening tomatoes daily"] * 40 + ["gardening with a rare zucchini"]
        store.put_nodes([make(i, rng, (), content=t) for i, t in enumerate(texts)])
        assert len(store.lexical_search(USER, "gardening zucchini", 100)) == 41  # below min_docs: all terms
        monkeypatch.setattr(codec, "QUERY_MIN_DOCS", 10)
        # "gardening" (stemmed "garden") is in every row: dropped; the rare term decides
        assert [i for i, _ in store.lexical_search(USER, "gardening zucchini", 100)] == ["n000040"]
        # every term common: the rarest one is kept, so a query still finds something
        assert len(store.lexical_search(USER, "gardening", 100)) == 41
        monkeypatch.setattr(codec, "QUERY_OR_TERMS", 1)
        hits = store.lexical_search(USER, "tomatoes zucchini", 100)
        assert [i for i, _ in hits] == ["n000040"]  # the rarer of the two is the one OR-ed


# -- approximate vector search ----------------------------------------------------------------------
def _vectors_store(path: str, n: int, dim: int = 32, seed: int = 5) -> SQLiteStore:
    rng = np.random.default_rng(seed)
    store = SQLiteStore.open(path)
    store.put_nodes([make(i, rng, (), content=f"m {i}") for i in range(n)])
    return store


def _unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_without_the_extra_search_stays_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ann, "available", lambda: False)
    with _vectors_store(":memory:", 50) as store:
        store.use_ann(10)
        assert store._ann is None
        q = unit(np.random.default_rng(0))
        assert len(store.vector_search(USER, q, 5)) == 5


@needs_usearch
def test_ann_persists_beside_the_file_and_reopens_without_a_rebuild(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    rng = np.random.default_rng(7)
    queries = [unit(rng) for _ in range(5)]
    with _vectors_store(path, 3000) as store:
        store.use_ann(1000)
        first = [store.vector_search(USER, q, 10) for q in queries]
        assert store._ann is not None
        assert store._ann.segments("u") == [(1, 3000, 3000, 0)]
    files = sorted(p.name for p in (tmp_path / "m.db.ann").iterdir())
    assert len(files) == 2  # the segment and its manifest
    assert all(".tmp" not in name for name in files)
    stamp = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "m.db.ann").iterdir()}
    with SQLiteStore.open(path) as store:
        store.use_ann(1000)
        assert [store.vector_search(USER, q, 10) for q in queries] == first
        assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "m.db.ann").iterdir()} == stamp
        # new rows are searched exactly until they fill a segment
        extra = make(5000, rng, (), content="new")
        store.put_nodes([extra])
        assert extra.embedding is not None
        assert store.vector_search(USER, extra.embedding, 1)[0][0] == extra.id


@needs_usearch
def test_ann_honours_forget_and_compacts(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    with _vectors_store(path, 2000) as store:
        store.use_ann(500)
        q = unit(np.random.default_rng(1))
        top = store.vector_search(USER, q, 10)
        gone = [node_id for node_id, _ in top[:5]]
        store.delete_nodes(gone)
        after = store.vector_search(USER, q, 10)
        assert not set(gone) & {i for i, _ in after}
        assert len(after) == 10
        assert store._ann is not None
        assert store._ann.segments("u")[0][3] == 5  # five dead rows counted
        store.delete_nodes([f"n{i:06d}" for i in range(600)])  # > 20% of the segment
        store.vector_search(USER, q, 10)
        (segment,) = store._ann.segments("u")
        assert segment[2] <= 1400
        assert segment[3] == 0  # rebuilt from the live rows
        compacted = store._ann.segments("u")
    with SQLiteStore.open(path) as store:
        store.use_ann(500)
        found = {i for i, _ in store.vector_search(USER, q, 2000)}
        assert not found & ({f"n{i:06d}" for i in range(600)} | set(gone))
        assert store._ann is not None
        assert store._ann.segments("u") == compacted  # the compacted segment was saved, not rebuilt


@needs_usearch
def test_an_index_of_another_database_at_the_same_path_is_rebuilt(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    with _vectors_store(path, 1200, seed=1) as store:
        store.use_ann(1000)
        store.vector_search(USER, unit(np.random.default_rng(0)), 5)
    for suffix in ("", "-wal", "-shm"):
        Path(path + suffix).unlink(missing_ok=True)
    with _vectors_store(path, 1100, seed=2) as store:
        store.use_ann(1000)
        q = unit(np.random.default_rng(4))
        exact = sorted(range(1100), key=lambda i: -float(store.get_node(f"n{i:06d}").embedding @ q))  # type: ignore[union-attr]
        got = [i for i, _ in store.vector_search(USER, q, 3)]
        assert store._ann is not None
        assert store._ann.segments("u")[0][2] == 1100
        (segment,) = store._ann._users["u"].segments
        held = np.stack([np.asarray(segment.index.get(i + 1), dtype=np.float32) for i in range(1100)])
        rows = np.stack([store.get_node(f"n{i:06d}").embedding for i in range(1100)])  # type: ignore[union-attr]
        assert np.abs(held - rows).max() < 2e-3  # this database's vectors (f16), not the other one's
        assert got == [f"n{i:06d}" for i in exact[:3]]


@needs_usearch
def test_a_small_segment_is_built_the_same_every_time(tmp_path: Path) -> None:
    """USearch's parallel insertion gives a different graph on each build (now and then one that
    loses a row); a segment of at most DETERMINISTIC_ROWS rows is built on one thread, byte-identical."""
    built = []
    for name in ("a", "b"):
        path = str(tmp_path / f"{name}.db")
        with _vectors_store(path, 1500, seed=3) as store:
            store.use_ann(1000)
            store.vector_search(USER, unit(np.random.default_rng(0)), 5)
        (segment,) = Path(path + ".ann").glob("*.usearch")
        built.append(segment.read_bytes())
    assert ann.DETERMINISTIC_ROWS >= 1500
    assert built[0] == built[1]


@needs_usearch
def test_ann_respects_agent_and_run_scopes() -> None:
    rng = np.random.default_rng(3)
    with SQLiteStore.open(":memory:") as store:
        nodes = [
            Node(id=f"n{i:05d}", tenant=Tenant("u", f"a{i % 2}"), content="x", at=T0, embedding=unit(rng))
            for i in range(1500)
        ]
        store.put_nodes(nodes)
        store.use_ann(1000)
        q = unit(rng)
        hits = store.vector_search(Tenant("u", "a1"), q, 10)
        assert len(hits) == 10
        assert all(int(i[1:]) % 2 == 1 for i, _ in hits)
        assert store.vector_search(Tenant("other"), q, 10) == []

"""The approximate vector index against exact search (issue 13): recall, the search beam of reopened
segments, grown layouts, stale or damaged index files, and no full matrix for a covered user."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from dualmem.conversations import load_conversations
from dualmem.embed import Embedder
from dualmem.plane import SQLiteStore, ann
from dualmem.types import Node, Tenant

pytestmark = pytest.mark.skipif(not ann.available(), reason="the scale extra (usearch) is not installed")

USER = Tenant("u")
T0 = dt.datetime(2023, 5, 1, tzinfo=dt.UTC)


def _rows(n: int, dim: int, seed: int) -> npt.NDArray[np.float32]:
    rows = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _nodes(matrix: npt.NDArray[np.float32], start: int = 0) -> list[Node]:
    return [
        Node(id=f"n{start + i:06d}", tenant=USER, content=f"m {start + i}", at=T0, embedding=row)
        for i, row in enumerate(matrix)
    ]


def _indexed(
    path: str, matrix: npt.NDArray[np.float32], queries: npt.NDArray[np.float32], *, k: int = 10
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """A store at ``path`` holding ``matrix`` (node i = row i), its approximate index built by one
    search (``use_ann(1000)``); the matrix and the queries."""
    with SQLiteStore.open(path) as store:
        store.put_nodes(_nodes(matrix))
        store.use_ann(1000)
        store.vector_search(USER, queries[0], k)
    return matrix, queries


@contextmanager
def _twelve_hundred_indexed(
    tmp_path: Path, seed: int
) -> Iterator[tuple[SQLiteStore, npt.NDArray[np.float32]]]:
    """A store holding rows 0-1199 of 1,300 (``_rows(1300, 16, seed)``), approximate search from
    1,000 rows on; the store and the whole matrix (rows 1200 on are the test's to add)."""
    matrix = _rows(1300, 16, seed)
    with SQLiteStore.open(str(tmp_path / "m.db")) as store:
        store.put_nodes(_nodes(matrix[:1200]))
        store.use_ann(1000)
        yield store, matrix


def _recall(store: SQLiteStore, matrix: npt.NDArray[np.float32], queries: npt.NDArray[np.float32]) -> float:
    """Strict recall@10 of the store's vector search against exact numpy over ``matrix`` (node i = row i)."""
    hits = 0
    for q in queries:
        exact = {f"n{i:06d}" for i in np.argsort(-(matrix @ q), kind="stable")[:10]}
        hits += len(exact & {i for i, _ in store.vector_search(USER, q, 10)})
    return hits / (10 * len(queries))


def _files(path: str) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in Path(path + ".ann").iterdir()}


def test_reopened_segments_search_with_the_configured_beam(tmp_path: Path) -> None:
    """Random 64-d vectors are hard for HNSW: USearch's default beam (64), which a restored segment
    had before, gives ~0.95 recall@10 here; the configured beam gives >= 0.99, also after reopening."""
    path = str(tmp_path / "m.db")
    matrix, queries = _rows(3000, 64, 1), _rows(100, 64, 2)
    with SQLiteStore.open(path) as store:
        store.put_nodes(_nodes(matrix))
        store.use_ann(1000)
        first = _recall(store, matrix, queries)
        assert first >= 0.99
        assert store._ann is not None
        assert [s[:3] for s in store._ann.segments("u")] == [(1, 3000, 3000)]
    with SQLiteStore.open(path) as store:
        store.use_ann(1000)
        again = _recall(store, matrix, queries)
        assert again == first
        assert store._ann is not None
        (seg,) = store._ann._users["u"].segments
        assert seg.index.expansion_search == ann.EXPANSION_SEARCH
        assert store._cache.loads == 0  # the exact path never read the user's matrix


def test_a_grown_layout_of_segments_and_delta_matches_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Incremental growth: several segments (merged down to MAX_SEGMENTS) plus an exact delta."""
    monkeypatch.setattr(ann, "SEGMENT_ROWS", 400)
    monkeypatch.setattr(ann, "MAX_SEGMENTS", 3)
    path = str(tmp_path / "m.db")
    matrix, queries = _rows(2350, 48, 3), _rows(60, 48, 4)
    with SQLiteStore.open(path) as store:
        store.use_ann(300)
        for start in range(0, 2350, 100):
            store.put_nodes(_nodes(matrix[start : start + 100], start))
            store.vector_search(USER, queries[0], 10)
        assert store._ann is not None
        layout = store._ann.segments("u")
        assert len(layout) == 3
        assert store._ann._users["u"].delta_ids  # the newest rows are searched exactly
        grown = _recall(store, matrix, queries)
    with SQLiteStore.open(path) as store:
        store.use_ann(300)
        assert _recall(store, matrix, queries) == grown
        assert store._ann is not None
        assert store._ann.segments("u") == layout
    assert grown >= 0.99


def test_an_index_built_with_other_settings_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "m.db")
    matrix, queries = _rows(1500, 32, 5), _rows(20, 32, 6)
    monkeypatch.setattr(ann, "CONNECTIVITY", 8)
    with SQLiteStore.open(path) as store:
        store.put_nodes(_nodes(matrix))
        store.use_ann(1000)
        store.vector_search(USER, queries[0], 10)
    old = _files(path)
    (manifest,) = (tmp_path / "m.db.ann").glob("*.json")
    assert json.loads(manifest.read_text())["index"]["connectivity"] == 8
    monkeypatch.setattr(ann, "CONNECTIVITY", 16)
    with SQLiteStore.open(path) as store:
        store.use_ann(1000)
        assert _recall(store, matrix, queries) >= 0.99
        assert store._ann is not None
        (seg,) = store._ann._users["u"].segments
        assert seg.index.connectivity == 16
    new = _files(path)
    segment_files = {name for name in new if name.endswith(".usearch")}
    assert len(segment_files) == 1
    assert not segment_files & old.keys()  # the old segment file is gone, a new one replaced it
    assert json.loads(manifest.read_text())["index"] == {
        "dtype": "f16",
        "connectivity": 16,
        "expansion_add": 128,
    }


def test_a_manifest_from_before_the_settings_were_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``index`` key: built with the first settings (f16, 16, 128); kept while those are current."""
    path = str(tmp_path / "m.db")
    matrix, queries = _indexed(path, _rows(1200, 32, 7), _rows(10, 32, 8), k=10)
    (manifest,) = (tmp_path / "m.db.ann").glob("*.json")
    body = json.loads(manifest.read_text())
    del body["index"]
    manifest.write_text(json.dumps(body))
    before = _files(path)
    with SQLiteStore.open(path) as store:
        store.use_ann(1000)
        store.vector_search(USER, queries[0], 10)
    assert _files(path) == before  # the same settings: read as it is, nothing rebuilt
    monkeypatch.setattr(ann, "EXPANSION_ADD", 64)
    with SQLiteStore.open(path) as store:
        store.use_ann(1000)
        assert _recall(store, matrix, queries) >= 0.99
    assert not {n for n in before if n.endswith(".usearch")} & _files(path).keys()


@pytest.mark.parametrize("damage", ["segment", "manifest"])
def test_a_damaged_index_is_rebuilt(tmp_path: Path, damage: str) -> None:
    path = str(tmp_path / "m.db")
    matrix, queries = _indexed(path, _rows(1200, 32, 9), _rows(10, 32, 10), k=10)
    (segment,) = (tmp_path / "m.db.ann").glob("*.usearch")
    (manifest,) = (tmp_path / "m.db.ann").glob("*.json")
    target = segment if damage == "segment" else manifest
    target.write_bytes(target.read_bytes()[:40])
    with SQLiteStore.open(path) as store:
        store.use_ann(1000)
        assert _recall(store, matrix, queries) >= 0.99
        assert store._ann is not None
        assert [s[:3] for s in store._ann.segments("u")] == [(1, 1200, 1200)]
    assert json.loads(manifest.read_text())["segments"][0]["size"] == 1200


def test_a_first_search_inside_a_write_transaction_streams_the_rows(tmp_path: Path) -> None:
    """Segments are built from committed rows only: until the commit, exact search in chunks, no
    delta matrix of the whole user; the commit then builds the segment."""
    with _twelve_hundred_indexed(tmp_path, 11) as (store, matrix):
        q = matrix[1250]
        with store.transaction():
            store.put_nodes(_nodes(matrix[1200:], 1200))
            hits = store.vector_search(USER, q, 5)
            assert store._ann is not None
            user = store._ann._users["u"]
            assert user.segments == []
            assert user.delta is None
        want = [f"n{i:06d}" for i in np.argsort(-(matrix @ q), kind="stable")[:5]]
        assert [i for i, _ in hits] == want
        assert [s[:3] for s in store._ann.segments("u")] == [(1, 1300, 1300)]  # built by the commit
        assert [i for i, _ in store.vector_search(USER, q, 5)] == want
        assert store._cache.loads == 0


@pytest.mark.slow
@pytest.mark.locomo
def test_ann_recall_against_exact_on_minilm_locomo(
    locomo_dir: Path, minilm: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real embeddings (MiniLM of LoCoMo turns, LoCoMo questions as queries), two layouts: one segment
    in memory, and a file grown into segments + delta, reopened."""
    convs = load_conversations(locomo_dir)
    turns = [o for c in convs for o in c.observations][:2500]
    questions = [qa.question for c in convs for qa in c.questions][:200]
    matrix = np.asarray(minilm.embed([t.content for t in turns]), dtype=np.float32)
    queries = np.asarray(minilm.embed(questions), dtype=np.float32)
    with SQLiteStore.open(":memory:") as store:
        store.put_nodes(_nodes(matrix))
        store.use_ann(1000)
        single = _recall(store, matrix, queries)
        assert store._ann is not None
        assert len(store._ann.segments("u")) == 1
    monkeypatch.setattr(ann, "SEGMENT_ROWS", 512)
    path = str(tmp_path / "m.db")
    with SQLiteStore.open(path) as store:
        store.use_ann(1000)
        for start in range(0, 2500, 250):
            store.put_nodes(_nodes(matrix[start : start + 250], start))
            store.vector_search(USER, queries[0], 10)
    with SQLiteStore.open(path) as store:
        store.use_ann(1000)
        grown = _recall(store, matrix, queries)
        assert store._ann is not None
        assert len(store._ann.segments("u")) >= 3
        assert store._cache.loads == 0
    assert single >= 0.99
    assert grown >= 0.99


def test_a_rollback_keeps_the_segments_open_and_undoes_its_rows(tmp_path: Path) -> None:
    """Segments hold committed rows only, so a rollback keeps them (no reopen); the rows and dead
    counts the transaction added are gone."""
    with _twelve_hundred_indexed(tmp_path, 12) as (store, matrix):
        q = matrix[1250]
        store.vector_search(USER, q, 5)
        assert store._ann is not None
        (seg,) = store._ann._users["u"].segments
        victim = store.vector_search(USER, matrix[7], 1)[0][0]

        def undone() -> None:
            with store.transaction():
                store.put_nodes(_nodes(matrix[1200:], 1200))
                store.delete_nodes([victim])
                assert store.vector_search(USER, q, 1)[0][0] == "n001250"
                assert store._ann is not None
                assert store._ann.segments("u")[0][3] == 1
                raise RuntimeError("undo")

        with pytest.raises(RuntimeError, match="undo"):
            undone()
        assert store._ann._users["u"].segments == [seg]  # the same open view, not reopened
        assert store._ann.segments("u") == [(1, 1200, 1200, 0)]
        want = [f"n{i:06d}" for i in np.argsort(-(matrix[:1200] @ q), kind="stable")[:5]]
        assert [i for i, _ in store.vector_search(USER, q, 5)] == want
        assert store.vector_search(USER, matrix[7], 1)[0][0] == victim

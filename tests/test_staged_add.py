"""One ``add`` embeds its text on a worker thread while its row is stored and its text probes run
(``Writer`` with a ``StagedNodes`` store): what it stores equals the sequential add, an embedder's
failure surfaces as its own typed error and leaves nothing stored."""

from __future__ import annotations

import datetime as dt
import itertools
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from control_support import with_views
from dualmem import Memory
from dualmem.config import Profile
from dualmem.control.builtin import BuiltinController
from dualmem.control.meter import Meter
from dualmem.embed import Embedder, HashingEmbedder
from dualmem.embed.base import Matrix
from dualmem.errors import EmbedderError, InvalidInput
from dualmem.plane import SQLiteStore
from dualmem.plane.base import StagedNodes
from dualmem.plane.memory import InMemoryStore
from dualmem.types import Node, Observation, Tenant
from dualmem.write import pipeline
from dualmem.write.pipeline import Writer

USER = Tenant("u")
TOPICS = [
    "my sister Ana visited Lisbon and we ate pastel de nata",
    "I adopted a border collie named Pepper last weekend",
    "the pottery class on Tuesday was about glazing bowls with Ana",
    "Jon started a new job at the bakery near the station in Lisbon",
    "we are planning a hiking trip to the Alps in July with Pepper",
]


def _observations(n: int = 36) -> list[Observation]:
    start = dt.datetime(2023, 5, 1, 10, 0, tzinfo=dt.UTC)
    out = []
    for i in range(n):
        s, t = divmod(i, 9)
        topic = TOPICS[(s + t) % len(TOPICS)]
        text = f"{topic}." if t % 3 else f"Oh really? Tell me more about {topic.split()[-1]}, {topic}."
        if i == 20:  # a long message: its chunk vectors are stored with it
            text = " ".join([topic] * 60)
        out.append(
            Observation(
                text,
                at=start + dt.timedelta(days=s, minutes=t),
                speaker="Mira" if t % 2 == 0 else "Jon",
                session=f"s{s}",
                turn_id=f"D{s}:{t}",
            )
        )
    return out


def _counted_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Node ids from a fresh counter (time-sortable, as ``new_id``'s): ties broken by id fall the same way
    in two builds."""
    counter = itertools.count(1)
    monkeypatch.setattr(pipeline, "new_id", lambda: f"{0x18C0000000 + next(counter):024x}")


def _writer(store: SQLiteStore, embedder: Embedder, *, overlap: bool) -> Writer:
    profile = with_views().write  # the views' edges are compared too
    return Writer(store, embedder, Meter(BuiltinController()), profile, overlap=overlap)


def _snapshot(store: SQLiteStore) -> dict[str, object]:
    """Everything an add stores, by node id: nodes (with vectors), edges, decisions, contexts, chunks."""
    nodes = sorted(store.iter_nodes(USER), key=lambda n: n.id)
    ids = [n.id for n in nodes]
    return {
        "nodes": [
            (n.id, n.content, n.status, n.types, n.entities, n.temporal_refs, n.embedding.tobytes())  # type: ignore[union-attr]
            for n in nodes
        ],
        "edges": sorted(
            {
                (e.source, e.target, e.view, e.label, round(e.weight, 9))
                for i in ids
                for e in store.edges_of(i)
            }
        ),
        "decisions": sorted(
            (d.node_id, d.purpose, d.name, d.key, round(d.value, 9), d.label, d.other_id)
            for i in ids
            for d in store.decisions_of(i)
        ),
        "context": {
            i: (c.neighbours, None if c.vector is None else c.vector.tobytes())
            for i, c in store.node_context(ids, USER).items()
        },
        "chunks": {i: v.tobytes() for i, v in store.get_chunks(ids, USER).items()},
    }


def _build(path: Path, embedder: Embedder, *, overlap: bool, ids: pytest.MonkeyPatch) -> dict[str, object]:
    _counted_ids(ids)
    store = SQLiteStore.open(path)
    try:
        writer = _writer(store, embedder, overlap=overlap)
        for obs in _observations():
            writer.write([obs], USER)
        return _snapshot(store)
    finally:
        store.close()


def test_sqlite_stores_nodes_in_two_halves() -> None:
    assert isinstance(SQLiteStore.open(":memory:"), StagedNodes)
    assert not isinstance(InMemoryStore(), StagedNodes)  # the sequential path, nothing else to offer


def test_the_threaded_add_stores_exactly_what_the_sequential_add_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = HashingEmbedder(256)
    threaded = _build(tmp_path / "threaded.db", embedder, overlap=True, ids=monkeypatch)
    sequential = _build(tmp_path / "sequential.db", embedder, overlap=False, ids=monkeypatch)
    assert len(threaded["nodes"]) == 36  # type: ignore[arg-type]
    assert threaded["edges"], "the conversation must relate its turns"
    assert threaded["context"], "session neighbours must have context"
    assert {d[1] for d in threaded["decisions"]} >= {"typing", "relations"}  # type: ignore[attr-defined]
    for part, value in sequential.items():
        assert threaded[part] == value, part


@pytest.mark.slow
def test_the_threaded_add_equals_the_sequential_add_with_minilm(
    minilm: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threaded = _build(tmp_path / "threaded.db", minilm, overlap=True, ids=monkeypatch)
    sequential = _build(tmp_path / "sequential.db", minilm, overlap=False, ids=monkeypatch)
    assert threaded["chunks"], "the long message must have chunk vectors"
    for part, value in sequential.items():
        assert threaded[part] == value, part


class _Failing:
    """An embedder that fails (as a model or a remote service can), on a thread it records."""

    name = "failing"
    dim = 256

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.inner = HashingEmbedder(256)

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.threads.append(threading.current_thread().name)
        if any("model-breaking" in t for t in texts):
            raise EmbedderError("the embedding model failed", hint="check the model files")
        return self.inner.embed(texts)


def _rows(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        tables = ["nodes", "nodes_fts", "vectors", "node_entities", "entities", "edges", "meta"]
        return {t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in tables}


@pytest.mark.parametrize("overlap", [True, False])
def test_a_failing_embedder_raises_its_own_error_and_stores_nothing(tmp_path: Path, overlap: bool) -> None:
    embedder = _Failing()
    path = tmp_path / "m.db"
    store = SQLiteStore.open(path)
    try:
        writer = _writer(store, embedder, overlap=overlap)  # type: ignore[arg-type]
        (first,) = writer.write(
            [Observation("Ana visited Lisbon in May", speaker="Mira", session="s1")], USER
        ).ids
        before = _rows(path)
        text = "Ana will fail her model-breaking driving test in Lisbon"
        with pytest.raises(EmbedderError, match="the embedding model failed") as caught:
            writer.write([Observation(text, speaker="Jon", session="s1")], USER)
        assert caught.value.hint == "check the model files"
        assert embedder.threads[-1].startswith("dualmem-embed") is overlap, "where the add embedded"
        assert _rows(path) == before
        assert [n.id for n in store.iter_nodes(USER)] == [first]
        # the store is usable afterwards, and the next turn follows the first (the failed one left no trace)
        (second,) = writer.write(
            [Observation("Jon passed his driving test", speaker="Jon", session="s1")], USER
        ).ids
        order = {(e.source, e.target) for e in store.edges_of(second) if e.view == "temporal"}
        assert (first, second) in order
        assert store.get_meta('session-last:["u", null, null, "s1"]') == second
    finally:
        store.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("dualmem-embed")]


def test_overlap_by_default_only_with_spare_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    store = SQLiteStore.open(":memory:")
    try:
        profile = Profile.builtin().write
        for cpus, expected in [(2, False), (pipeline.OVERLAP_MIN_CPUS, True), (None, False)]:
            monkeypatch.setattr(pipeline.os, "cpu_count", lambda cpus=cpus: cpus)
            assert Writer(store, HashingEmbedder(8), Meter(BuiltinController()), profile).overlap is expected
    finally:
        store.close()


def test_a_stored_key_is_not_written_again_and_a_failure_still_surfaces(tmp_path: Path) -> None:
    store = SQLiteStore.open(tmp_path / "m.db")
    try:
        writer = _writer(store, _Failing(), overlap=True)  # type: ignore[arg-type]
        obs = Observation("the first turn", session="s", turn_id="1")
        first = writer.write([obs], USER, keys=["k"])
        again = writer.write([obs], USER, keys=["k"])
        assert again.ids == first.ids
        assert again.existing == first.ids
        with pytest.raises(EmbedderError):
            writer.write([Observation("this model-breaking one")], USER, keys=["k"])
        assert store.count(USER) == 1
    finally:
        store.close()


def test_an_invalid_vector_rolls_the_whole_add_back(tmp_path: Path) -> None:
    class _NaN(HashingEmbedder):
        def embed(self, texts: Sequence[str]) -> Matrix:
            out = super().embed(texts)
            out[:, 0] = np.nan
            return out

    path = tmp_path / "m.db"
    store = SQLiteStore.open(path)
    try:
        writer = _writer(store, _NaN(256), overlap=True)
        with pytest.raises(InvalidInput, match="NaN"):
            writer.write([Observation("Ana visited Lisbon", speaker="Mira", session="s")], USER)
        assert store.count(USER) == 0
        assert store.lexical_search(USER, "Lisbon", 5) == []
    finally:
        store.close()
    assert _rows(path)["nodes_fts"] == 0


def _node(node_id: str, text: str, vector: np.ndarray | None = None) -> Node:
    return Node(id=node_id, tenant=USER, content=text, at=None, embedding=vector)  # type: ignore[arg-type]


def test_the_two_halves_belong_inside_one_write() -> None:
    store = SQLiteStore.open(":memory:")
    try:
        with pytest.raises(InvalidInput, match="put_node_rows"):
            store.put_node_rows([_node("a", "alone")])
        assert store.count(USER) == 0
        vec = np.ones(4, dtype=np.float32) / 2.0
        with pytest.raises(InvalidInput, match="put_node_vectors"), store.transaction():
            store.put_node_vectors([_node("b", "never stored", vec)])
        with store.transaction():
            store.put_node_rows([_node("c", "Ana visited Lisbon")])
            assert [i for i, _ in store.lexical_search(USER, "Lisbon", 5)] == ["c"]
            assert store.vector_search(USER, vec, 5) == []  # no vector yet
            store.put_node_vectors([_node("c", "Ana visited Lisbon", vec)])
        assert [i for i, _ in store.vector_search(USER, vec, 5)] == ["c"]
        got = store.get_node("c")
        assert got is not None
        assert got.embedding is not None
        assert np.array_equal(got.embedding, vec)
    finally:
        store.close()


def test_concurrent_threaded_adds_store_every_turn(tmp_path: Path) -> None:
    mem = Memory(
        SQLiteStore.open(tmp_path / "m.db"), HashingEmbedder(256), BuiltinController(), answerer=None
    )
    errors: list[BaseException] = []

    def run(w: int) -> None:
        try:
            for i in range(8):
                mem.add(
                    f"worker {w} turn {i} about Lisbon and Ana", user="u", speaker=f"w{w}", session=f"s{w}"
                )
        except BaseException as exc:  # re-raised by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert mem.count(user="u") == 32
        for node in mem.store.iter_nodes(USER):
            assert node.embedding is not None
            assert node.status == "complete"
    finally:
        mem.close()

"""The SQLite candidate read (schema v11): the compact neighbour text, its migration from JSON, and
candidates built through their slots equal to the classes' own constructors."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from dualmem.errors import DatabaseCorrupt
from dualmem.plane import SQLiteStore, ann
from dualmem.plane.base import Candidate, NodeContext, candidates_of
from dualmem.plane.context import SEP, decode_neighbours, encode_neighbours, neighbours_json
from dualmem.types import Node, TemporalRef, Tenant

USER = Tenant("u")


def _unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=16).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def _session(name: str, n: int, rng: np.random.Generator) -> list[Node]:
    return [
        Node(id=f"{name}-{i}", tenant=USER, content=f"{name} turn {i} about otters", at=None, session=name,
             embedding=_unit(rng))
        for i in range(n)
    ]  # fmt: skip


@pytest.mark.parametrize(
    "pairs",
    [
        (("b", -2), ("a", -1), ("c", 1), ("d", 2)),
        (("only", 1),),
        (("x", -300), ("y", 12345678901)),
        (("ünï cødé", -1), ("[bracket", 1), ("sp ace", 2), ("", 3)),
        (("has" + SEP + "sep", -1), ("plain", 1)),  # kept as JSON, read back the same
    ],
)
def test_neighbours_round_trip(pairs: tuple[tuple[str, int], ...]) -> None:
    text = encode_neighbours(pairs)
    got = decode_neighbours(text)
    assert got == pairs
    assert all(type(j) is str and type(off) is int for j, off in got)
    assert not text.startswith("[") or any(SEP in j for j, _ in pairs)


def test_json_of_schema_v6_reads_the_same() -> None:
    pairs = (("b", -2), ("a", -1), ("c", 1))
    assert decode_neighbours(json.dumps(neighbours_json(pairs))) == pairs
    assert len(encode_neighbours(pairs)) < len(json.dumps(neighbours_json(pairs)))


@pytest.mark.parametrize("text", ["", "x", f"1{SEP}a{SEP}2", f"a{SEP}1", "[1]", "[[", "null"])
def test_malformed_neighbours_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"context neighbour|invalid literal|Expecting|Extra data"):
        decode_neighbours(text)


def _to_v10(path: Path) -> dict[int, str]:
    """Rewrite every neighbour list as schema v10 stored it (JSON) and forget migration 11."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT seq, neighbours FROM node_context").fetchall()
        old = {
            seq: json.dumps(neighbours_json(decode_neighbours(text)), ensure_ascii=False)
            for seq, text in rows
        }
        trigger = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'node_context_update'").fetchone()
        conn.execute("DROP TRIGGER node_context_update")  # keep the FTS5 rows as they are
        conn.executemany(
            "UPDATE node_context SET neighbours = ? WHERE seq = ?", [(t, s) for s, t in old.items()]
        )
        conn.execute(trigger[0])
        conn.execute("DELETE FROM schema_migrations WHERE version = 11")
    conn.close()
    return old


def test_migration_11_rewrites_a_v10_file_and_keeps_everything_read(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    turns = [
        *_session("s1", 5, rng),
        *_session("s2", 3, rng),
        Node(id="alone", tenant=USER, content="x", at=None, embedding=_unit(rng)),
    ]
    path = tmp_path / "m.db"
    ids = [t.id for t in turns]
    with SQLiteStore.open(path) as store:
        store.put_nodes(turns)
        want = store.node_context(ids, USER)
        want_candidates = store.candidates(ids, USER)
        hits = store.context_search(USER, "otters", 20)
    with sqlite3.connect(path) as conn:
        trigger = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'node_context_update'").fetchone()
    conn.close()
    old = _to_v10(path)
    assert len(old) == 8
    assert all(text.startswith("[[") for text in old.values())
    with sqlite3.connect(path) as conn:  # one damaged row: left as it is, for check to find
        conn.execute("UPDATE node_context SET neighbours = '[[' WHERE seq = ?", (min(old),))
    conn.close()
    with SQLiteStore.open(path) as store:
        rows = dict(store._conn.execute("SELECT seq, neighbours FROM node_context").fetchall())
        assert rows.pop(min(old)) == "[["
        assert rows == {seq: encode_neighbours(decode_neighbours(old[seq])) for seq in rows}
        assert all(not text.startswith("[") for text in rows.values())
        assert 11 in {r[0] for r in store._conn.execute("SELECT version FROM schema_migrations")}
        found = store._conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'node_context_update'"
        ).fetchone()
        assert found == trigger
        store._conn.execute("INSERT INTO context_fts (context_fts) VALUES ('integrity-check')")
        assert store.context_search(USER, "otters", 20) == hits
        with pytest.raises(DatabaseCorrupt):  # the damaged row, as before migration 11
            store.node_context(ids, USER)
        store.rebuild_context()
        assert store.check().healthy
        assert store.node_context(ids, USER) == _without_vectors(want, store.node_context(ids, USER))
        got = store.candidates(ids, USER)
    assert list(got) == list(want_candidates)
    for node_id, candidate in got.items():
        _same(candidate, want_candidates[node_id])


def _without_vectors(want: dict[str, NodeContext], got: dict[str, NodeContext]) -> dict[str, NodeContext]:
    """``want`` with ``got``'s vector objects where the values are equal (arrays do not compare with ==)."""
    assert want.keys() == got.keys()
    out = {}
    for node_id, context in want.items():
        other = got[node_id].vector
        assert (context.vector is None) == (other is None)
        if context.vector is not None and other is not None:
            assert np.array_equal(context.vector, other)
        out[node_id] = NodeContext(context.neighbours, other)
    return out


def _same(a: Candidate, b: Candidate) -> None:
    for field in dataclasses.fields(Candidate):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if field.name == "embedding":
            assert (x is None) == (y is None)
            if x is not None:
                assert x.dtype == y.dtype
                assert np.array_equal(x, y)
        elif field.name == "context":
            assert (x is None) == (y is None)
            if x is not None:
                assert type(x) is NodeContext
                assert x.neighbours == y.neighbours
                assert (x.vector is None) == (y.vector is None)
                if x.vector is not None:
                    assert x.vector.dtype == y.vector.dtype
                    assert np.array_equal(x.vector, y.vector)
        else:
            assert x == y, field.name
            assert type(x) is type(y), field.name


def test_candidates_equal_the_nodes_and_contexts_they_project(tmp_path: Path) -> None:
    """Built through their slots, candidates are what ``Candidate.of(get_nodes, node_context)`` gives."""
    rng = np.random.default_rng(4)
    refs = (TemporalRef("next month", dt.date(2024, 11, 1), dt.date(2024, 11, 30), "month"),)
    turns = _session("s1", 4, rng)
    turns[1] = dataclasses.replace(turns[1], speaker="Ann", temporal_refs=refs)
    turns.append(
        Node(
            id="bare", tenant=Tenant("u", "agent", "run"), content="no session", at=None, embedding=_unit(rng)
        )
    )
    with SQLiteStore.open(tmp_path / "m.db") as store:
        store.put_nodes(turns)
        ids = [t.id for t in turns]
        got = store.candidates(ids, USER)
        want = candidates_of(store, ids, USER)
    assert list(got) == list(want) == ids
    for node_id in ids:
        _same(got[node_id], want[node_id])
        assert got[node_id].embedding is None or not got[node_id].embedding.flags.writeable
    with pytest.raises(dataclasses.FrozenInstanceError):
        got["s1-0"].content = "changed"  # type: ignore[misc]


def test_a_damaged_compact_row_is_a_corrupt_database(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SQLiteStore.open(path) as store:
        store.put_nodes(_session("s1", 3, np.random.default_rng(5)))
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE node_context SET neighbours = '1{SEP}s1-1{SEP}x' WHERE seq = 1")
    conn.close()
    with SQLiteStore.open(path, read_only=True) as store:
        with pytest.raises(DatabaseCorrupt):
            store.candidates(["s1-0"], USER)
        with pytest.raises(DatabaseCorrupt):
            store.node_context(["s1-0"], USER)


def test_the_write_path_stores_compact_neighbours(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    with SQLiteStore.open(tmp_path / "m.db") as store:
        store.put_nodes([*_session("s1", 3, rng), *_session("s" + SEP + "2", 2, rng)])
        rows = dict(
            store._conn.execute(
                "SELECT n.id, c.neighbours FROM node_context c JOIN nodes n ON n.seq = c.seq"
            ).fetchall()
        )
        contexts = store.node_context(list(rows), USER)
    assert rows["s1-0"] == f"1{SEP}s1-1{SEP}2{SEP}s1-2"
    assert rows["s1-1"] == f"-1{SEP}s1-0{SEP}1{SEP}s1-2"
    assert rows[f"s{SEP}2-0"] == json.dumps([[f"s{SEP}2-1", 1]])  # an id holding the separator: JSON
    assert {i: c.neighbours for i, c in contexts.items()} == {
        i: decode_neighbours(t) for i, t in rows.items()
    }


def test_rescore_is_exact_and_breaks_ties_by_rowid(tmp_path: Path) -> None:
    """The approximate index's rescore: each score is the stored vector's float32 dot with the query,
    best first, equal scores in rowid order (here half the rows are exact ties)."""
    rng = np.random.default_rng(7)
    base = [_unit(rng) for _ in range(6)]
    turns = [
        Node(id=f"n{i:02d}", tenant=USER, content=f"turn {i}", at=None, embedding=base[i % 6])
        for i in range(12)
    ]
    q = _unit(rng)
    with SQLiteStore.open(tmp_path / "m.db") as store:
        store.put_nodes(turns)
        rows = store._conn.execute("SELECT rowid, node_id, blob FROM vectors").fetchall()
        keys = sorted(r[0] for r in rows)
        got = ann._rescore(store._conn, USER, q, keys, 8)
    scored = sorted(
        ((float(np.frombuffer(blob, dtype=np.float32) @ q), rowid, node_id) for rowid, node_id, blob in rows),
        key=lambda item: (-item[0], item[1]),
    )
    assert got == [(node_id, score) for score, _, node_id in scored[:8]]
    assert all(type(score) is float for _, score in got)


def test_a_vector_away_from_its_nodes_seq_is_still_read(tmp_path: Path) -> None:
    """Candidates look a vector up at its node's seq first: vectors stored elsewhere (two swapped,
    one moved past the end) are read by node id, the same values as ``get_nodes``."""
    rng = np.random.default_rng(8)
    turns = _session("s1", 4, rng)
    with SQLiteStore.open(tmp_path / "m.db") as store:
        store.put_nodes(turns)
        conn = store._conn
        seq = dict(conn.execute("SELECT id, seq FROM nodes").fetchall())
        rows = {r[0]: r for r in conn.execute("SELECT node_id, user_id, dim, blob FROM vectors")}
        conn.execute("DELETE FROM vectors WHERE node_id IN ('s1-0', 's1-1', 's1-2')")
        insert = "INSERT INTO vectors (rowid, node_id, user_id, dim, blob) VALUES (?, ?, ?, ?, ?)"
        conn.execute(insert, (seq["s1-1"], *rows["s1-0"]))
        conn.execute(insert, (seq["s1-0"], *rows["s1-1"]))
        conn.execute(insert, (1000, *rows["s1-2"]))
        store._nodes.clear()
        ids = [t.id for t in turns]
        got = store.candidates(ids, USER)
        want = candidates_of(store, ids, USER)
    assert list(got) == ids
    for node_id in ids:
        _same(got[node_id], want[node_id])
        assert got[node_id].embedding is not None
        assert np.array_equal(got[node_id].embedding, turns[ids.index(node_id)].embedding)

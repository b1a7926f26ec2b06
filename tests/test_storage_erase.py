"""Finding 1 at the store level: a forgotten node's text and embedding leave the files on disk."""

from __future__ import annotations

import dataclasses
import secrets
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from dualmem.plane import SQLiteStore
from dualmem.plane.sqlite import JOURNAL_SIZE_LIMIT
from dualmem.types import Edge, Node, Tenant

USER = Tenant("u")
WORDS = ("tea", "river", "garden", "violin", "market", "lantern", "pebble", "orchard", "harbor", "meadow")


def unit(rng: np.random.Generator, dim: int = 64) -> np.ndarray:
    v = rng.normal(size=dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def filler(rng: np.random.Generator, n: int, prefix: str) -> list[Node]:
    return [
        Node(
            id=f"{prefix}{i}",
            tenant=USER,
            content=" ".join(rng.choice(WORDS, size=12)),
            at=None,
            entities=("Mira",),
            embedding=unit(rng),
        )
        for i in range(n)
    ]


def raw_hits(db: Path, needle: bytes) -> dict[str, int]:
    """Occurrences of ``needle`` in the bytes of the database and its -wal/-shm files."""
    out = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = db.with_name(db.name + suffix)
        if path.exists():
            out[suffix or "db"] = path.read_bytes().count(needle)
    return out


@pytest.mark.parametrize("filled", [0, 1500])
def test_forgotten_token_and_embedding_are_not_in_the_files(tmp_path: Path, filled: int) -> None:
    rng = np.random.default_rng(filled)
    db = tmp_path / "memory.db"
    token = f"zq{secrets.token_hex(6)}x"
    entity = f"Zorblax{secrets.token_hex(3)}"
    secret = Node(
        id="secret",
        tenant=USER,
        content=f"my locker code is {token} says {entity}",
        at=None,
        entities=(entity, "Mira"),
        embedding=unit(rng),
    )
    vector = secret.embedding
    assert vector is not None
    chunks = np.stack([unit(rng) for _ in range(3)])  # a long node's chunk vectors (issue 10)
    with SQLiteStore.open(db) as store:
        store.bind_embedder("test", 64)
        before = filler(rng, filled, "a")
        for start in range(0, len(before), 500):
            store.put_nodes(before[start : start + 500])
        store.put_nodes([secret])
        store.put_chunks({"secret": chunks})
        store.put_nodes(filler(rng, 30, "b"))
        store.put_edges([Edge("secret", "b0", "temporal", "before")])
        assert raw_hits(db, token.encode())["-wal"] > 0  # it really was written
        with store.transaction():
            assert store.delete_nodes(["secret"]) == 1
        # while still open, the WAL was truncated after the forget
        assert raw_hits(db, token.encode()).get("-wal", 0) == 0
        assert store.lexical_search(USER, token, 5) == []
        assert store.get_chunks(["secret"]) == {}
    needles = (token.encode(), entity.encode(), token[:8].encode(), vector.tobytes()[:24])
    for needle in (*needles, *(row.tobytes()[:24] for row in chunks)):
        assert sum(raw_hits(db, needle).values()) == 0, needle
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM nodes").fetchone()[0] == filled + 30
    finally:
        conn.close()


def test_text_replaced_by_update_node_is_erased_too(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    db = tmp_path / "memory.db"
    token = f"zq{secrets.token_hex(6)}y"
    with SQLiteStore.open(db) as store:
        store.put_nodes(filler(rng, 50, "a"))
        node = Node(id="x", tenant=USER, content=f"old text {token}", at=None, embedding=unit(rng))
        store.put_nodes([node])
        store.update_node(Node(id="x", tenant=USER, content="new text", at=None, embedding=unit(rng)))
    assert sum(raw_hits(db, token.encode()).values()) == 0


@pytest.mark.parametrize("filled", [0, 600])
def test_forgotten_turn_leaves_its_neighbours_context(tmp_path: Path, filled: int) -> None:
    """A turn's text lives in its session neighbours' context fields too: forget rewrites them."""
    rng = np.random.default_rng(filled + 1)
    db = tmp_path / "memory.db"
    token = f"zq{secrets.token_hex(6)}c"
    turns = [dataclasses.replace(n, session="s1") for n in filler(rng, 5, "t")]
    secret = Node(
        id="secret", tenant=USER, content=f"the gate code is {token}", at=None, session="s1",
        embedding=unit(rng),
    )  # fmt: skip
    with SQLiteStore.open(db) as store:
        store.bind_embedder("test", 64)
        for start in range(0, filled, 300):
            store.put_nodes(filler(rng, 300, f"f{start}-"))
        store.put_nodes(turns[:2])
        store.put_nodes([secret])
        store.put_nodes(turns[2:])  # the later turns take the secret into their context as well
        hits = {i for i, _ in store.context_search(USER, token, 10)}
        assert hits == {"t0", "t1", "t2", "t3"}
        with store.transaction():
            assert store.delete_nodes(["secret"]) == 1
        assert store.context_search(USER, token, 10) == []
        assert store.node_context(["t1"], USER)["t1"].neighbours == (("t0", -1), ("t2", 1), ("t3", 2))
    assert sum(raw_hits(db, token.encode()).values()) == 0
    assert sum(raw_hits(db, token[:8].encode()).values()) == 0


def test_connection_settings(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with SQLiteStore.open(db) as store:
        conn = store._conn
        assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
        assert conn.execute("PRAGMA journal_size_limit").fetchone()[0] == JOURNAL_SIZE_LIMIT
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    with SQLiteStore.open(db, synchronous="full") as store:
        assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL

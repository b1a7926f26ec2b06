"""A forgotten entity leaves no copy in the free space of a live page of the entities index (issue 49,
item 3).

SQLite's ``secure_delete`` zeroes a deleted cell where it lies, and a freed page. It does not zero the
unallocated gap of a page that stays in use: when a rebalance rebuilds a b-tree page (``rebuildPage``)
its cells are rewritten from the end of the page, and what the old cells left between the
cell-pointer array and the new content area stays. The entities' unique index ``(user_id, name)``
takes names in random order, so its pages are rebuilt as it grows, and copies of live names stay in
their gaps; when such a name's last memory is forgotten, the copy outlives it. Here: 1,500 memories
with random names, 300 of them holding a canary entity of their own, written in random order; the
canaries of which the file holds a third copy (the table's row, the index cell, a stale copy in an
index page's gap) are forgotten one forget each, and every byte of the database and its WAL is
scanned for them.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import numpy as np

from dualmem.plane import SQLiteStore
from dualmem.types import Node, Tenant

USER = Tenant("u")
INDEX = "sqlite_autoindex_entities_1"


def name(rng: np.random.Generator) -> str:
    letters = rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=int(rng.integers(5, 12)))
    return "".join(letters).capitalize()


def node(node_id: str, entities: tuple[str, ...], rng: np.random.Generator) -> Node:
    v = rng.normal(size=16).astype(np.float32)
    return Node(
        id=node_id,
        tenant=USER,
        content=f"note {node_id}",
        at=None,
        entities=entities,
        embedding=v / np.linalg.norm(v),
    )


def files(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (db, db.with_name(db.name + "-wal")) if p.exists())


def in_index_gaps(db: Path, key: bytes) -> int:
    """Copies of ``key`` in the unallocated gap (between the cell pointers and the cells) of a live
    page of the entities index."""
    with sqlite3.connect(db) as conn:
        size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        pages = [int(r[0]) for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ?", (INDEX,))]
    raw, found = db.read_bytes(), 0
    for page in pages:
        start = (page - 1) * size
        data = raw[start : start + size]
        header = 8 if data[0] == 0x0A else 12  # a leaf index page, or an interior one
        gap_from = header + 2 * int.from_bytes(data[3:5], "big")
        gap_to = int.from_bytes(data[5:7], "big") or 65536
        found += data[gap_from:gap_to].count(key)
    return found


def written(db: Path, seed: int) -> tuple[dict[str, str], dict[str, bytes]]:
    """The memories of the module docstring in ``db``: the canaries, and those of them with a stale
    copy in a gap of the index (entities are stored by their key, lower case)."""
    rng = np.random.default_rng(seed)
    canaries = {f"c{i}": f"Zq{rng.bytes(5).hex()}" for i in range(300)}
    nodes = [node(f"a{i}", (name(rng), name(rng)), rng) for i in range(1200)]
    nodes += [node(nid, (canary, name(rng)), rng) for nid, canary in canaries.items()]
    with SQLiteStore.open(db) as store:
        store.bind_embedder("test", 16)
        store.put_nodes([nodes[i] for i in rng.permutation(len(nodes))])
    keys = {nid: c.lower().encode() for nid, c in canaries.items()}
    return canaries, {nid: key for nid, key in keys.items() if in_index_gaps(db, key)}


def test_forget_leaves_no_copy_of_an_entity_in_a_live_index_page(tmp_path: Path) -> None:
    for seed in range(41, 49):  # about one layout in two leaves a canary's copy in a gap
        db = tmp_path / f"m{seed}.db"
        canaries, stale = written(db, seed)
        if stale:
            break
    assert stale, "no canary has a stale copy in an index page's gap: the scenario did not arise"
    with SQLiteStore.open(db) as store:
        for nid in stale:  # one forget each, as a user forgets
            with store.transaction():
                assert store.delete_nodes([nid]) == 1
    data = files(db)
    left = [key.decode() for key in stale.values() if key in data]
    assert left == [], f"{len(left)} of {len(stale)} forgotten entities are still in the file"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM entities").fetchone()[0] > 2500
        live = [c.lower() for nid, c in canaries.items() if nid not in stale]
        found = conn.execute(
            f"SELECT count(*) FROM entities WHERE name IN ({','.join('?' * len(live))})", live
        )
        assert found.fetchone()[0] == len(live)  # the other canaries are still there and found


def test_a_rewrite_that_drops_an_entity_leaves_no_copy_either(tmp_path: Path) -> None:
    """``update_node`` with new text and entities drops the old names the same way."""
    for seed in range(41, 49):
        db = tmp_path / f"m{seed}.db"
        _, stale = written(db, seed)
        if stale:
            break
    assert stale, "no canary has a stale copy in an index page's gap: the scenario did not arise"
    with SQLiteStore.open(db) as store:
        for nid in stale:
            before = store.get_node(nid)
            store.update_node(dataclasses.replace(before, content="rewritten", entities=("Mira",)))
    data = files(db)
    assert [key.decode() for key in stale.values() if key in data] == []

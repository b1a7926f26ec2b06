"""Erasing forgotten vectors from the approximate index's segment files (``forget`` erases).

A segment file (``ann.AnnIndex``) holds a copy of every row it was built over, in the index's
scalar type (``ann.DTYPE``, f16: the float32 embedding rounded), and the database's tombstones do
not reach it. After a transaction that deleted vectors commits, the store zeroes the deleted rows'
slots in place and syncs the file, so their bytes leave the disk (as far as an in-place overwrite
does: see docs/storage.md). The graph is left as it is: a zeroed row is still a node that searches
walk through (its neighbour lists and its key, a rowid, stay), is never returned (the database is the
tombstone list) and goes when its segment is compacted (``ann.DEAD_SHARE``).

The file layout read here is USearch's dense index as ``Index.save`` writes it (2.x):

- ``uint32 rows, uint32 bytes_per_vector``, then ``rows`` vectors in slot order;
- a 64-byte head starting with the magic ``usearch``;
- the graph: ``uint64 size, connectivity, connectivity_base, max_level, entry_slot``, one ``int16``
  level per slot, then per slot ``uint64 key, int16 level``, a ``uint32`` count and
  ``connectivity_base`` ``uint32`` neighbours for level 0, and a count and ``connectivity``
  neighbours for each higher level.

Every slot found is checked against the forgotten row before it is zeroed (its first components,
within the index's rounding). A file that does not read that way (another USearch layout, damage) is
not guessed at: it is overwritten with zeros and removed, and the index is rebuilt from the database.
"""

from __future__ import annotations

import mmap
import os
import sqlite3
import struct
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from dualmem.plane.ann import user_key

__all__ = ["Doomed", "EraseResult", "doomed", "erase", "still_deleted"]

#: float32 components of a row kept to check the slot it is found in (not the whole row: a bulk
#: forget of a large tenant would otherwise hold every embedding until its commit)
PROBE = 8
_MAGIC = b"usearch"
_HEAD = 64
_GRAPH = struct.Struct("<5Q")
_ZERO_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Doomed:
    """A vector row deleted by the open transaction (read before the delete)."""

    user_id: str
    rowid: int
    node_id: str
    dim: int
    probe: bytes  # the first ``PROBE`` float32 components


@dataclass(frozen=True, slots=True)
class EraseResult:
    zeroed: int  # slots overwritten with zeros
    files: tuple[str, ...]  # segment files changed in place
    shredded: tuple[str, ...]  # files that did not read as expected: zeroed whole and removed


class _Unreadable(Exception):
    """A segment file not in the layout this module reads (or not matching its rows)."""


def doomed(conn: sqlite3.Connection, node_ids: Sequence[str]) -> list[Doomed]:
    """The vector rows of ``node_ids``, read inside the deleting transaction before the delete."""
    if not node_ids:
        return []
    marks = ",".join("?" * len(node_ids))
    rows = conn.execute(
        f"SELECT user_id, rowid, node_id, dim, substr(blob, 1, {4 * PROBE}) FROM vectors "
        f"WHERE node_id IN ({marks})",
        list(node_ids),
    ).fetchall()
    return [Doomed(str(u), int(r), str(n), int(d), bytes(p)) for u, r, n, d, p in rows]


def still_deleted(conn: sqlite3.Connection, rows: Sequence[Doomed]) -> list[Doomed]:
    """``rows`` whose deletion committed: a savepoint rolled back may have kept some (same rowid, same
    node id still stored), and those must keep their slots."""
    kept: set[tuple[int, str]] = set()
    for start in range(0, len(rows), 500):
        part = rows[start : start + 500]
        marks = ",".join("?" * len(part))
        kept.update(
            (int(r), str(n))
            for r, n in conn.execute(
                f"SELECT rowid, node_id FROM vectors WHERE rowid IN ({marks})", [d.rowid for d in part]
            )
        )
    return [d for d in rows if (d.rowid, d.node_id) not in kept]


def erase(folder: Path, rows: Iterable[Doomed]) -> EraseResult:
    """Zero the slots of ``rows`` in every segment file of their users in ``folder`` that covers them.
    Files are found by name (``<user key>-<lo>-<hi>-*.usearch``), not by a manifest, so a segment
    another process saved is cleared too."""
    by_user: dict[str, dict[int, Doomed]] = defaultdict(dict)
    for row in rows:
        by_user[row.user_id][row.rowid] = row
    zeroed: int = 0
    files: list[str] = []
    shredded: list[str] = []
    for user_id, wanted in by_user.items():
        for path, lo, hi in _segment_files(folder, user_key(user_id)):
            mine = {key: row for key, row in wanted.items() if lo <= key <= hi}
            if not mine:
                continue
            try:
                count = _zero_slots(path, mine)
            except _Unreadable:
                _shred(path)
                shredded.append(path.name)
                continue
            except FileNotFoundError:  # replaced by a merge or compaction meanwhile
                continue
            if count:
                zeroed += count
                files.append(path.name)
    return EraseResult(zeroed, tuple(files), tuple(shredded))


def _segment_files(folder: Path, key: str) -> list[tuple[Path, int, int]]:
    found = []
    for path in folder.glob(f"{key}-*.usearch"):
        parts = path.name[len(key) + 1 :].split("-")
        if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
            found.append((path, int(parts[0]), int(parts[1])))
    return found


def _zero_slots(path: Path, wanted: dict[int, Doomed]) -> int:
    """Overwrite the vectors of the keys in ``wanted`` with zeros and sync; the number zeroed."""
    with path.open("r+b") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < 8:
            raise _Unreadable(f"{path.name}: {size} bytes")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as view:
            slots, width = _slots(view, size, wanted)
        if not slots:
            return 0
        zeros = bytes(width)
        for slot in slots:
            os.pwrite(fh.fileno(), zeros, 8 + slot * width)
        os.fsync(fh.fileno())
    return len(slots)


def _slots(view: mmap.mmap, size: int, wanted: dict[int, Doomed]) -> tuple[list[int], int]:
    """The slots holding ``wanted``'s keys (each checked against its probe) and the bytes per vector."""
    rows, width = struct.unpack_from("<II", view, 0)
    head = 8 + rows * width
    graph = head + _HEAD
    if graph + _GRAPH.size > size or view[head : head + len(_MAGIC)] != _MAGIC:
        raise _Unreadable("no USearch head where the vectors end")
    count, conn, base, _, _ = _GRAPH.unpack_from(view, graph)
    levels_at = graph + _GRAPH.size
    if count != rows or levels_at + 2 * count > size:
        raise _Unreadable("the graph does not cover the vectors")
    levels = np.frombuffer(view, dtype="<i2", count=count, offset=levels_at).astype(np.int64)
    sizes = 8 + 2 + (4 + 4 * base) + levels * (4 + 4 * conn)
    starts = levels_at + 2 * count + np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    if count and int(starts[-1] + sizes[-1]) != size:
        raise _Unreadable("the graph's nodes do not end with the file")
    keys = _keys_at(view, starts) if count else np.empty(0, dtype=np.uint64)
    found: list[int] = []
    for slot in np.flatnonzero(np.isin(keys, np.fromiter(wanted, dtype=np.uint64))).tolist():
        row = wanted[int(keys[slot])]
        kind = {2 * row.dim: "<f2", 4 * row.dim: "<f4"}.get(width)
        if kind is None:
            raise _Unreadable(f"{width} bytes per vector of {row.dim} dimensions")
        probe = np.frombuffer(row.probe, dtype=np.float32)
        stored = np.frombuffer(view, dtype=kind, count=len(probe), offset=8 + slot * width)
        if not np.allclose(stored.astype(np.float32), probe, rtol=1e-3, atol=1e-3):
            raise _Unreadable(f"slot {slot} does not hold row {row.rowid}")
        found.append(int(slot))
    return found, width


def _keys_at(view: mmap.mmap, starts: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
    """The uint64 key at each node start (nodes are not aligned: gathered byte by byte)."""
    raw = np.frombuffer(view, dtype=np.uint8)
    gathered = np.ascontiguousarray(raw[starts[:, None] + np.arange(8)])
    return gathered.view("<u8").reshape(-1).astype(np.uint64)


def _shred(path: Path) -> None:
    """Overwrite a whole file with zeros, sync it and remove it."""
    try:
        with path.open("r+b") as fh:
            left = os.fstat(fh.fileno()).st_size
            while left > 0:
                step = min(left, _ZERO_CHUNK)
                fh.write(bytes(step))
                left -= step
            fh.flush()
            os.fsync(fh.fileno())
    except FileNotFoundError:
        return
    path.unlink(missing_ok=True)

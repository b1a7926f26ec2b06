"""Approximate vector search for large tenants: USearch HNSW segments beside the SQLite file.

Used by :class:`dualmem.plane.SQLiteStore` for a user with at least ``Profile.ann_threshold`` nodes
when the ``scale`` extra (``usearch``) is installed; otherwise the store keeps exact numpy search.

- **Keys** are the ``vectors`` table's rowids. A user's index is a list of *segments*, each an HNSW
  graph over a contiguous rowid range, saved as ``<db>.ann/<user-hash>-<lo>-<hi>.usearch`` and
  opened as a memory-mapped view (never read whole on open). Rows newer than the last segment (the
  *delta*) are searched exactly; when the delta reaches ``SEGMENT_ROWS`` it becomes a segment, and
  adjacent small segments are merged (rebuilt from the database) so a user has at most
  ``MAX_SEGMENTS``. Segments are only built outside a transaction, from committed rows.
- **Scores are exact**: the candidates a graph returns are rescored with their stored vectors, so an
  index never changes a similarity, only which rows are looked at.
- **Deletes** are honoured twice: a deleted row has no ``vectors`` row, so it can never come back
  (the database is the tombstone list), and each segment counts its dead rows; one with more than
  ``DEAD_SHARE`` dead is rebuilt from the live rows (compaction). Once the delete commits, the
  store zeroes the row's slot in every segment file covering it and syncs the file
  (``_ann_erase``): a forgotten embedding does not stay on disk until its segment is compacted.
- **Settings are part of the index**: each manifest records what its segments were built with
  (``dtype``, ``connectivity``, ``expansion_add``; a manifest without them predates the record and
  was built with the first settings, f16 / 16 / 128). An index built otherwise, a damaged manifest
  or segment file, or one of another database is discarded (its files removed) and rebuilt from the
  database, never read with the wrong layout. The search beam (``EXPANSION_SEARCH``) is not stored
  in a file: it is set on every segment opened (USearch's ``restore`` would leave its default, 64).
- **No full matrix in memory** for a covered user: segments are memory-mapped views, the delta holds
  only the rows after the last segment. A user with no segment yet who is searched inside a write
  transaction (segments are built from committed rows only) is searched exactly by streaming its rows
  in chunks; the commit then builds the segment.
- A ``:memory:`` database keeps its segments in memory only.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import json
import os
import sqlite3
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dualmem.types import Tenant, Vector

__all__ = ["DEAD_SHARE", "DETERMINISTIC_ROWS", "MAX_SEGMENTS", "SEGMENT_ROWS", "AnnIndex", "available"]

SEGMENT_ROWS = 4096
MAX_SEGMENTS = 8
DEAD_SHARE = 0.2
#: segments of at most this many rows are built on one thread, deterministically (``_build_threads``)
DETERMINISTIC_ROWS = 2048
#: HNSW settings: stored scalar type, graph degree, build and search beam widths. Measured on 100k
#: MiniLM embeddings (docs/decisions/007-ann-search-beam.md): f32 storage changed no recall figure, degree 32
#: with build beam 256 gained what a wider search beam gains at 2.8x the build time; the search beam
#: decides (recall@10 0.981-0.987 at 128, 0.996-0.999 at 256, 0.999-1.0 at 384, +1-2 ms)
DTYPE = "f16"
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 384
#: what a manifest written before the settings were recorded was built with
_LEGACY = {"dtype": "f16", "connectivity": 16, "expansion_add": 128}
_CHUNK = 20_000


def available() -> bool:
    """Whether the ``scale`` extra (usearch) is installed."""
    return importlib.util.find_spec("usearch") is not None


@dataclass(slots=True)
class _Segment:
    lo: int
    hi: int
    size: int
    dead: int = 0
    file: str | None = None
    index: Any = None  # usearch.index.Index, viewed or in memory


@dataclass(slots=True)
class _User:
    dim: int
    segments: list[_Segment] = field(default_factory=list)
    delta_ids: list[int] = field(default_factory=list)
    delta: npt.NDArray[np.float32] | None = None  # a view of the first len(delta_ids) rows of _rows
    _rows: npt.NDArray[np.float32] | None = None  # room for appends: doubled when full

    @property
    def covered(self) -> int:
        return self.segments[-1].hi if self.segments else 0

    def append(self, ids: list[int], matrix: npt.NDArray[np.float32]) -> None:
        """Add rows to the delta in amortised O(rows): one add never copies the whole delta."""
        held = len(self.delta_ids) if self.delta is not None else 0
        need = held + len(ids)
        if self._rows is None or self._rows.shape[0] < need or self._rows.shape[1] != matrix.shape[1]:
            grown = np.empty((max(need, 2 * held, 64), matrix.shape[1]), dtype=np.float32)
            if self.delta is not None and held:
                grown[:held] = self.delta
            self._rows = grown
        self._rows[held:need] = matrix
        del self.delta_ids[held:]
        self.delta_ids.extend(ids)
        self.delta = self._rows[:need]

    def remove(self, i: int) -> None:
        """Drop delta row ``i``."""
        if self.delta is None:
            return
        self.delta_ids.pop(i)
        kept = np.delete(self.delta, i, axis=0)
        self._rows, self.delta = kept, kept

    def clear_delta(self) -> None:
        self.delta_ids, self.delta, self._rows = [], None, None


class AnnIndex:
    """The approximate indexes of one SQLite database, per user (thread-safe under the store's lock)."""

    def __init__(self, db_path: str, *, folder: str | Path | None = None) -> None:
        """``folder``: where the segments live (default ``<db_path>.ann``; a benchmark builds copies)."""
        if folder is not None:
            self._dir: Path | None = Path(folder)
        else:
            self._dir = None if db_path == ":memory:" else Path(db_path + ".ann")
        self._users: dict[str, _User] = {}
        self._undo: list[_Segment] = []  # dead counts added inside the open write transaction
        self._lock = threading.RLock()

    # -- public ------------------------------------------------------------------------------
    def search(
        self, conn: sqlite3.Connection, tenant: Tenant, query: Vector, k: int
    ) -> list[tuple[str, float]]:
        """Top-k (node id, exact cosine) among the rows ``tenant`` covers, best first."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        with self._lock:
            user = self._user(conn, tenant.user, q.shape[0])
            fetch = max(2 * k, 32) if tenant.agent is None and tenant.run is None else max(8 * k, 128)
            keys: set[int] = set()
            if not user.segments:  # none yet, inside a write transaction: exact, streamed
                keys.update(_stream_top(conn, tenant.user, q, fetch))
            for seg in user.segments:
                if seg.size - seg.dead <= 0:
                    continue
                found = seg.index.search(q, min(fetch, seg.size), threads=1)
                keys.update(np.asarray(found.keys).reshape(-1).tolist())
            if user.delta is not None and user.delta_ids:
                scores = user.delta @ q
                top = np.argsort(-scores, kind="stable")[:fetch]
                delta_ids = user.delta_ids
                keys.update([delta_ids[i] for i in top.tolist()])
        return _rescore(conn, tenant, q, sorted(keys), k)

    @property
    def folder(self) -> Path | None:
        """Where the segment files live (None: in memory only)."""
        return self._dir

    def forget(self, conn: sqlite3.Connection, rows: Iterable[tuple[str, int]]) -> None:
        """Before the vector rows ``(user id, rowid)`` are deleted: count them dead in their segments,
        drop them from the delta. (Their bytes leave the segment files after the commit:
        ``_ann_erase``, run by the store.)"""
        with self._lock:
            for user_id, rowid in rows:
                user = self._users.get(user_id)
                if user is None:
                    continue
                for seg in user.segments:
                    if seg.lo <= rowid <= seg.hi:
                        seg.dead += 1
                        if conn.in_transaction:
                            self._undo.append(seg)
                if rowid in user.delta_ids and user.delta is not None:
                    user.remove(user.delta_ids.index(rowid))

    def discard(self, files: Iterable[str]) -> None:
        """Segment files removed under the index (``_ann_erase`` could not read them): their users
        are loaded again on their next search (and, their files missing, rebuilt from the database)."""
        gone = set(files)
        with self._lock:
            for user_id, user in list(self._users.items()):
                if any(seg.file in gone for seg in user.segments):
                    for seg in user.segments:
                        seg.index = None
                    del self._users[user_id]

    def settle(self, conn: sqlite3.Connection) -> None:
        """After a commit (outside any transaction): a loaded user whose delta has reached
        ``SEGMENT_ROWS``, or who has no segment yet, gets its segment now, so a memory that is only
        written (its searches all inside write transactions, as candidate discovery's are) does not
        search a growing delta (or stream all its rows)."""
        if conn.in_transaction:
            return
        with self._lock:
            self._undo.clear()
            for user_id, user in list(self._users.items()):
                if not user.segments:
                    self._user(conn, user_id, user.dim)
                elif user.delta is not None and len(user.delta_ids) >= SEGMENT_ROWS:
                    self._maintain(conn, user, user_id)

    def rolled_back(self) -> None:
        """After a rollback (or a savepoint's): the segments stay open, as they only hold committed
        rows (built outside transactions); the deltas, which may hold undone rows, are re-read on the
        next search, and the dead counts the transaction added are taken back (an undercount is
        harmless: a deleted row is never returned, the database being the tombstone list)."""
        with self._lock:
            for seg in self._undo:
                seg.dead = max(0, seg.dead - 1)
            self._undo.clear()
            for user in self._users.values():
                user.clear_delta()

    def drop(self) -> None:
        """Forget what is loaded (on close; the next search reopens the segments)."""
        with self._lock:
            self._users.clear()
            self._undo.clear()

    def segments(self, user: str) -> list[tuple[int, int, int, int]]:
        """(lo, hi, size, dead) of ``user``'s loaded segments (for tests and the benchmark)."""
        with self._lock:
            found = self._users.get(user)
            return [] if found is None else [(s.lo, s.hi, s.size, s.dead) for s in found.segments]

    # -- loading and maintenance ------------------------------------------------------------------
    def _user(self, conn: sqlite3.Connection, user_id: str, dim: int) -> _User:
        user = self._users.get(user_id)
        if user is None:
            user = self._users[user_id] = _User(dim, segments=self._load(conn, user_id, dim))
        if not user.segments:
            if conn.in_transaction:  # searched by streaming until a commit builds the first segment
                return user
            row = conn.execute("SELECT MAX(rowid) FROM vectors WHERE user_id = ?", (user_id,)).fetchone()
            if row[0] is not None:  # first use: one segment over every row
                user.segments.append(self._build(conn, user_id, dim, 1, int(row[0])))
                self._save_manifest(conn, user_id, user)
        self._extend_delta(conn, user, user_id)
        if not conn.in_transaction:
            self._maintain(conn, user, user_id)
        return user

    def _extend_delta(self, conn: sqlite3.Connection, user: _User, user_id: str) -> None:
        start = max(user.covered, user.delta_ids[-1] if user.delta_ids else 0)
        rows = conn.execute(
            "SELECT rowid, blob FROM vectors WHERE user_id = ? AND rowid > ? ORDER BY rowid", (user_id, start)
        ).fetchall()
        if not rows:
            return
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), user.dim)
        user.append([int(r[0]) for r in rows], matrix)

    def _maintain(self, conn: sqlite3.Connection, user: _User, user_id: str) -> None:
        changed, dim = False, user.dim
        if len(user.delta_ids) >= SEGMENT_ROWS:
            lo, hi = user.covered + 1, user.delta_ids[-1]
            user.segments.append(self._build(conn, user_id, dim, lo, hi))
            user.clear_delta()
            changed = True
        while len(user.segments) > MAX_SEGMENTS:
            sizes = [s.size for s in user.segments]
            i = min(range(len(sizes) - 1), key=lambda j: sizes[j] + sizes[j + 1])
            a, b = user.segments[i], user.segments[i + 1]
            user.segments[i : i + 2] = [self._build(conn, user_id, dim, a.lo, b.hi)]
            self._remove_files(a, b)
            changed = True
        for i, seg in enumerate(user.segments):
            if seg.size and seg.dead > DEAD_SHARE * seg.size:
                user.segments[i] = self._build(conn, user_id, dim, seg.lo, seg.hi)
                self._remove_files(seg)
                changed = True
        if changed:
            self._save_manifest(conn, user_id, user)

    def _build(self, conn: sqlite3.Connection, user_id: str, dim: int, lo: int, hi: int) -> _Segment:
        Index = _usearch_index()

        index = Index(
            ndim=dim,
            metric="ip",
            dtype=DTYPE,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )
        rows = conn.execute(
            "SELECT COUNT(*) FROM vectors WHERE user_id = ? AND rowid BETWEEN ? AND ?", (user_id, lo, hi)
        ).fetchone()[0]
        threads, size = _build_threads(int(rows)), 0
        for keys, matrix in _chunks(conn, user_id, dim, lo, hi):
            index.add(keys, matrix, threads=threads)
            size += len(keys)
        seg = _Segment(lo=lo, hi=hi, size=size, index=index)
        if self._dir is not None and size:
            self._dir.mkdir(exist_ok=True)
            name = f"{user_key(user_id)}-{lo}-{hi}-{uuid.uuid4().hex[:8]}.usearch"
            tmp = self._dir / (name + ".tmp")
            index.save(str(tmp))
            os.replace(tmp, self._dir / name)
            seg.file = name
            seg.index = _view(self._dir / name)
        return seg

    def _load(self, conn: sqlite3.Connection, user_id: str, dim: int) -> list[_Segment]:
        """The user's saved segments, or [] (to be rebuilt) when the index does not fit the database:
        another database's, another dimension, other build settings, or a damaged file."""
        manifest = self._manifest_path(user_id)
        if manifest is None or not manifest.is_file():
            return []
        try:
            raw = json.loads(manifest.read_text())
            items = [
                (int(i["lo"]), int(i["hi"]), int(i["size"]), int(i["dead"]), str(i["file"]))
                for i in raw["segments"]
            ]
        except (OSError, ValueError, KeyError, TypeError):
            return []  # a damaged manifest: rebuilt from the database (and replaced)
        fits = (
            raw.get("dim") == dim
            and raw.get("database") == _identity(conn)
            and raw.get("index", _LEGACY) == _settings()
        )
        out: list[_Segment] = []
        for lo, hi, size, dead, file in items if fits else []:
            index = _view(manifest.parent / file)
            if index is None or not _matches(index, dim, size):
                fits = False
                break
            out.append(_Segment(lo, hi, size, dead, file, index))
        if not fits:  # not this index's files any more: removed, the manifest is rewritten on rebuild
            self._remove_files(*(_Segment(0, 0, 0, file=item[4]) for item in items))
            return []
        return out

    def _manifest_path(self, user_id: str) -> Path | None:
        return None if self._dir is None else self._dir / f"{user_key(user_id)}.json"

    def _save_manifest(self, conn: sqlite3.Connection, user_id: str, user: _User) -> None:
        manifest = self._manifest_path(user_id)
        if manifest is None:
            return
        dim = user.dim if user.segments else None
        body = {
            "database": _identity(conn),
            "user": user_id,
            "dim": dim,
            "index": _settings(),
            "segments": [
                {"lo": s.lo, "hi": s.hi, "size": s.size, "dead": s.dead, "file": s.file}
                for s in user.segments
                if s.file is not None
            ],
        }
        with tempfile.NamedTemporaryFile("w", dir=manifest.parent, delete=False, suffix=".tmp") as fh:
            json.dump(body, fh)
        os.replace(fh.name, manifest)

    def _remove_files(self, *segments: _Segment) -> None:
        if self._dir is None:
            return
        for seg in segments:
            if seg.file is not None and "/" not in seg.file and not seg.file.startswith("."):
                seg.index = None
                (self._dir / seg.file).unlink(missing_ok=True)


def _usearch_index() -> Any:
    """``usearch.index.Index``, loaded so that onnxruntime still works in this process afterwards.

    Loading usearch's native library (which carries its own, static C++ runtime) before onnxruntime's
    makes the first ONNX session crash the process (segfault, seen with usearch 2.26 and onnxruntime
    1.32 on Linux). Either of two orders avoids it: the system's shared C++ runtime loaded into the
    global symbol scope first (``_share_cxx_runtime``, ~2 ms), or onnxruntime imported first (~60 ms,
    which a process on the hashing embedder would otherwise never pay); the second where the first
    is not available.
    """
    if not _share_cxx_runtime() and importlib.util.find_spec("onnxruntime") is not None:
        importlib.import_module("onnxruntime")
    from usearch.index import Index

    return Index


def _share_cxx_runtime() -> bool:
    """Load the shared ``libstdc++.so.6`` with ``RTLD_GLOBAL`` (Linux; once per process: a loaded
    library is only referenced again); False where there is none."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return False
    return True


def _settings() -> dict[str, object]:
    """What a segment is built with (recorded in the manifest; a mismatch means a rebuild)."""
    return {"dtype": DTYPE, "connectivity": CONNECTIVITY, "expansion_add": EXPANSION_ADD}


def _view(path: Path) -> Any:
    """A memory-mapped view of a segment file searched with ``EXPANSION_SEARCH`` (None: unreadable).

    USearch stores the graph, not the search beam: a restored index searches with its default (64)
    unless told otherwise, which at 100k MiniLM rows cost 0.02-0.03 of recall@10.
    """
    Index = _usearch_index()
    try:
        index = Index.restore(str(path), view=True)
    except (OSError, RuntimeError, ValueError):
        return None
    if index is not None:
        index.expansion_search = EXPANSION_SEARCH
    return index


def _matches(index: Any, dim: int, size: int) -> bool:
    """Whether a viewed segment file has the layout its manifest entry and the settings promise."""
    return (
        int(index.ndim) == dim
        and str(index.dtype).rsplit(".", 1)[-1].lower() == DTYPE
        and int(index.connectivity) == CONNECTIVITY
        and len(index) == size
    )


def _build_threads(rows: int) -> int:
    """Threads for building a segment of ``rows`` rows (searches stay on one).

    USearch's parallel insertion is not deterministic: the same rows give a different graph on each
    build, and now and then one that leaves a row unreachable (1,100 rows of 16 dimensions: the true
    nearest row missing from the 32 fetched in 5 of 3,000 searches over 60 two-thread builds; none
    in 60 one-thread builds, which are byte-identical from run to run). A segment of at most
    ``DETERMINISTIC_ROWS`` rows is therefore built on one thread, so a small memory's index, and a
    search over it, is the same on every build (about 0.14 s here for 1,100 MiniLM rows, 0.3 s for
    2,048; two threads halve that). Larger builds use the machine's cores, at most four: at 30,000
    MiniLM rows a one-thread build took 17-20 s against 9.5-10 s, for the same recall@10
    (0.9935 against 0.992-0.994).
    """
    if rows <= DETERMINISTIC_ROWS:
        return 1
    return max(1, min(4, os.cpu_count() or 1))


def _chunks(
    conn: sqlite3.Connection, user_id: str, dim: int, lo: int, hi: int | None = None
) -> Iterator[tuple[npt.NDArray[np.uint64], npt.NDArray[np.float32]]]:
    """The user's rows with ``lo <= rowid <= hi`` (no bound: every row from ``lo``), ``_CHUNK`` at a time."""
    last, top = lo - 1, 2**63 - 1 if hi is None else hi
    while True:
        rows = conn.execute(
            "SELECT rowid, blob FROM vectors WHERE user_id = ? AND rowid > ? AND rowid <= ? "
            "ORDER BY rowid LIMIT ?",
            (user_id, last, top, _CHUNK),
        ).fetchall()
        if not rows:
            return
        keys = np.asarray([r[0] for r in rows], dtype=np.uint64)
        yield keys, np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
        last = int(rows[-1][0])


def _stream_top(conn: sqlite3.Connection, user_id: str, q: npt.NDArray[np.float32], fetch: int) -> list[int]:
    """The rowids of the ``fetch`` best rows of the user by exact search, one chunk in memory at a time."""
    best_keys: npt.NDArray[np.uint64] = np.empty(0, dtype=np.uint64)
    best: npt.NDArray[np.float32] = np.empty(0, dtype=np.float32)
    for keys, matrix in _chunks(conn, user_id, int(q.shape[0]), 1):
        scores = np.concatenate([best, np.einsum("ij,j->i", matrix, q)])
        held = np.concatenate([best_keys, keys])
        top = np.lexsort((held, -scores))[:fetch]
        best, best_keys = scores[top], held[top]
    return [int(key) for key in best_keys]


def _identity(conn: sqlite3.Connection) -> str | None:
    """When the database was created (its first migration): tells a reused path from the same file."""
    row = conn.execute("SELECT applied_at FROM schema_migrations WHERE version = 1").fetchone()
    return None if row is None else str(row[0])


def user_key(user_id: str) -> str:
    """The file name prefix of a user's segments and manifest."""
    return hashlib.sha256(user_id.encode()).hexdigest()[:20]


def _rescore(
    conn: sqlite3.Connection, tenant: Tenant, q: npt.NDArray[np.float32], keys: list[int], k: int
) -> list[tuple[str, float]]:
    found: list[tuple[float, int, str]] = []
    extra, params = "", []
    if tenant.agent is not None:
        extra += " AND n.agent_id = ?"
        params.append(tenant.agent)
    if tenant.run is not None:
        extra += " AND n.run_id = ?"
        params.append(tenant.run)
    for start in range(0, len(keys), 500):
        part = keys[start : start + 500]
        marks = ",".join("?" * len(part))
        rows = conn.execute(
            f"SELECT v.rowid, v.node_id, v.blob FROM vectors v JOIN nodes n ON n.id = v.node_id "
            f"WHERE v.rowid IN ({marks}) AND v.user_id = ?{extra}",
            [*part, tenant.user, *params],
        ).fetchall()
        # (-score, rowid, id): sorted as (-score, rowid), rowids being unique; negation is exact
        found.extend([(-float(_frombuffer(blob, _F32) @ q), rowid, node_id) for rowid, node_id, blob in rows])
    found.sort()
    return [(node_id, -score) for score, _, node_id in found[:k]]


_F32 = np.dtype(np.float32)
_frombuffer = np.frombuffer

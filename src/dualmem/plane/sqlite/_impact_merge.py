"""Incremental upkeep of the impact-ordered lexical index (``_sqlite_impact``; schema v10).

A full build costs ~0.25 ms a row (26 s at 100k, 4 min at 1M on two cores), too long for one request,
and the index goes stale as a store grows. Instead the store merges in small steps:

- **Delta merge** (``merge_step``): the next ``rows`` rows written since the build (``seq > upto``,
  leaving the newest ``LAG`` alone: an add rewrites its recent neighbours' context, so merging them at
  once would turn each into a change) are tokenized by the one index rule (``lexindex.terms``) and
  appended to their users' posting lists as a new *run*: a list is the union of its runs, each
  sorted by impact and cut into blocks as a build's list is (a block's number is ``run x RUN`` plus
  its place; every block of a run carries the run's postings as ``df``, so a list's ``df`` is the sum
  over its runs and the build's run 0 reads as before). ``upto`` then moves past the rows. Max-score
  reads a list's blocks by their maximum, highest first, whatever run they belong to.
- **Tiering**: a list whose runs of one size tier (``df`` by powers of ``TIER``) number more than
  ``TIER`` has them merged into one (at most ``MERGE_MAX`` postings), so a list holds O(log n) runs.
- **Norms**: impacts use the user's mean row length at the time of their run (``lex_users.norm``
  records the one the index was built with); the user's statistics grow with each merge, and a query
  of a user whose current mean differs from that norm by more than ``DRIFT`` rescores its best rows
  from their text (exact BM25 of the current statistics), as a budget-cut query does.
- **Rebuild after an erase** (``rebuild_step``): an erase drops the user's postings (the erased words
  leave the file); the user's rows are then indexed again ``rows`` at a time from their current text
  (``lex_users.cursor``: the last seq done), one user at a time, while FTS5 ranks the user; the
  last step publishes the user's statistics.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections import defaultdict
from typing import Any

import numpy as np

from dualmem.plane.sqlite import _impact as impact

__all__ = [
    "FROM",
    "LAG",
    "RUN",
    "STEP",
    "V10",
    "merge_step",
    "norm",
    "pending",
    "rebuild_step",
    "rebuilding",
    "start",
]

RUN = impact.RUN
#: rows merged per step, once FROM rows wait; the newest LAG rows are left to the next steps
STEP, FROM, LAG = 32, 32, 64
#: runs of one size tier (df in [TIER^t, TIER^(t+1))) merged once there are more than TIER of them
TIER, MERGE_MAX = 8, 1 << 20

V10: tuple[str, ...] = (
    """CREATE TABLE lex_users (
        tbl INTEGER NOT NULL, user_id TEXT NOT NULL, norm REAL NOT NULL, cursor INTEGER,
        docs INTEGER NOT NULL DEFAULT 0, tokens INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (tbl, user_id)) WITHOUT ROWID""",
)


def norm(conn: sqlite3.Connection, tbl: int, user: str, avgdl: float) -> float:
    """The mean row length the user's postings were computed with (``avgdl`` when never merged)."""
    row = conn.execute("SELECT norm FROM lex_users WHERE tbl = ? AND user_id = ?", (tbl, user)).fetchone()
    return avgdl if row is None else float(row[0])


def _blocks(
    tbl: int, user: str, term: str, run: int, seq: Any, quant: Any, *, ordered: bool = False
) -> list[tuple[Any, ...]]:
    """One run of a list as block rows: by impact descending (then seq), blocks of growing size."""
    if not ordered:
        order = np.lexsort((seq, -quant.astype(np.int32)))
        seq, quant = seq[order], quant[order]
    out: list[tuple[Any, ...]] = []
    lo, size, block, df = 0, impact.FIRST_BLOCK, 0, len(seq)
    while lo < df:
        end = min(df, lo + size)
        out.append(
            (tbl, user, term, run * RUN + block, df, int(quant[lo]),
             seq[lo:end].astype("<i4").tobytes(), quant[lo:end].astype("<u2").tobytes())
        )  # fmt: skip
        lo, block, size = end, block + 1, min(impact.MAX_BLOCK, size * 2)
    return out


_COLUMNS = "tbl, user_id, term, block, df, top, seqs, impacts"
_INSERT = f"INSERT INTO lex_blocks ({_COLUMNS}) VALUES ({', '.join('?' * 8)})"


def _append(
    conn: sqlite3.Connection, table: str, user: str, seqs: list[int], run: int, avgdl: float
) -> tuple[int, int, list[str]]:
    """Append the rows ``seqs`` of ``user`` as run ``run`` of each of their terms' lists (impacts by
    ``avgdl``); ``(rows held, tokens, terms)``."""
    tbl = impact.TABLES[table]
    length, counts = impact.tokenize(conn, table, seqs)
    if not counts:
        return len(length), sum(length.values()), []
    names, term = np.unique(np.asarray([c[1] for c in counts], dtype=object), return_inverse=True)
    seq = np.asarray([c[0] for c in counts], dtype=np.int64)
    tf = np.asarray([c[2] for c in counts], dtype=np.float64)
    dl = np.asarray([length[int(d)] for d in seq], dtype=np.float64)
    quant = impact.impacts(tf, dl, avgdl)
    order = np.lexsort((seq, -quant.astype(np.int32), term))
    term, seq, quant = term[order], seq[order], quant[order]
    bounds = np.concatenate(([0], np.flatnonzero(np.diff(term)) + 1, [len(term)])).tolist()
    rows: list[tuple[Any, ...]] = []
    for lo, hi in itertools.pairwise(bounds):
        rows += _blocks(tbl, user, str(names[term[lo]]), run, seq[lo:hi], quant[lo:hi], ordered=True)
    conn.executemany(_INSERT, rows)
    return len(length), sum(length.values()), [str(n) for n in names]


def _tier(df: int) -> int:
    tier = 0
    while df >= TIER:
        df //= TIER
        tier += 1
    return tier


def _compact(conn: sqlite3.Connection, tbl: int, user: str, terms: list[str]) -> int:
    """Merge the runs of each list of ``terms`` whose tier holds more than ``TIER`` runs (the build's
    run 0 stays as it is); the postings rewritten."""
    runs: dict[str, dict[int, int]] = defaultdict(dict)
    found = conn.execute(
        "SELECT w.value, b.block, b.df FROM json_each(?) w CROSS JOIN lex_blocks b "
        "ON b.tbl = ? AND b.user_id = ? AND b.term = w.value AND b.block >= ?",
        (json.dumps(terms), tbl, user, RUN),
    )
    for term, block, df in found:
        runs[term][int(block) // RUN] = int(df)
    done = 0
    for term, sizes in runs.items():
        tiers: dict[int, list[int]] = defaultdict(list)
        for run, df in sizes.items():
            tiers[_tier(df)].append(run)
        for group in tiers.values():
            if len(group) <= TIER or sum(sizes[r] for r in group) > MERGE_MAX:
                continue
            done += _merge_runs(conn, tbl, user, term, group)
    return done


def _merge_runs(conn: sqlite3.Connection, tbl: int, user: str, term: str, group: list[int]) -> int:
    """Rewrite the runs ``group`` of one list as one run (numbered as the newest of them)."""
    seqs: list[Any] = []
    quants: list[Any] = []
    for run in group:
        for blob, imp in conn.execute(
            "SELECT seqs, impacts FROM lex_blocks WHERE tbl = ? AND user_id = ? AND term = ? "
            "AND block >= ? AND block < ?",
            (tbl, user, term, run * RUN, (run + 1) * RUN),
        ):
            seqs.append(np.frombuffer(blob, dtype="<i4"))
            quants.append(np.frombuffer(imp, dtype="<u2"))
        conn.execute(
            "DELETE FROM lex_blocks WHERE tbl = ? AND user_id = ? AND term = ? AND block >= ? AND block < ?",
            (tbl, user, term, run * RUN, (run + 1) * RUN),
        )
    seq = np.concatenate(seqs).astype(np.int64)
    quant = np.concatenate(quants)
    conn.executemany(_INSERT, _blocks(tbl, user, term, max(group), seq, quant))
    return len(seq)


def _grow(conn: sqlite3.Connection, tbl: int, user: str, docs: int, tokens: int) -> None:
    conn.execute(
        "INSERT INTO lex_stats (tbl, user_id, docs, tokens) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (tbl, user_id) DO UPDATE SET docs = docs + excluded.docs, "
        "tokens = tokens + excluded.tokens",
        (tbl, user, docs, tokens),
    )


def merge_step(conn: sqlite3.Connection, table: str, *, rows: int = STEP, lag: int = LAG) -> int:
    """Merge up to ``rows`` of the rows written since the build into the index (inside the caller's
    write); the rows merged (0: nothing to do, or no index)."""
    done = impact.built(conn, table)
    if done is None:
        return 0
    tbl = impact.TABLES[table]
    head = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM nodes").fetchone()[0])
    picked = conn.execute(
        "SELECT n.seq, n.user_id, s.docs, s.tokens FROM nodes n LEFT JOIN lex_stats s "
        "ON s.tbl = ? AND s.user_id = n.user_id WHERE n.seq > ? AND n.seq <= ? ORDER BY n.seq LIMIT ?",
        (tbl, done.upto, head - lag, rows),
    ).fetchall()
    if not picked:
        return 0
    last = int(picked[-1][0])
    users: dict[str, list[int]] = defaultdict(list)
    stats: dict[str, tuple[int, int]] = {}
    for seq, user, docs, tokens in picked:
        if docs is None or docs >= 0:  # a purged user's rows are indexed by its rebuild
            users[user].append(int(seq))
            stats[user] = (int(docs or 0), int(tokens or 0))
    held = 0
    for user, seqs in users.items():
        docs, tokens = stats[user]
        if docs > 0:
            avgdl = norm(conn, tbl, user, tokens / docs)
            conn.execute(
                "INSERT OR IGNORE INTO lex_users (tbl, user_id, norm) VALUES (?, ?, ?)", (tbl, user, avgdl)
            )
        else:
            avgdl = 0.0
        if avgdl <= 0:  # a user new to the index: its first rows' mean length is its norm
            length, _ = impact.tokenize(conn, table, seqs)
            avgdl = sum(length.values()) / len(length) if length else 1.0
            conn.execute(
                "INSERT OR REPLACE INTO lex_users (tbl, user_id, norm) VALUES (?, ?, ?)", (tbl, user, avgdl)
            )
        count, tokens_, terms = _append(conn, table, user, seqs, last, avgdl)
        if count:
            _grow(conn, tbl, user, count, tokens_)
            _compact(conn, tbl, user, terms)
        held += count
    conn.execute("UPDATE lex_built SET upto = ?, rows = rows + ? WHERE tbl = ?", (last, held, tbl))
    return len(picked)


def rebuild_step(conn: sqlite3.Connection, table: str, *, rows: int = STEP, span: int = 50_000) -> int:
    """Index up to ``rows`` rows of one purged user again (its rows among the next ``span`` seqs);
    the rows read (0: no user to rebuild)."""
    done = impact.built(conn, table)
    if done is None:
        return 0
    tbl = impact.TABLES[table]
    row = conn.execute(
        "SELECT user_id, norm, cursor FROM lex_users WHERE tbl = ? AND cursor IS NOT NULL LIMIT 1", (tbl,)
    ).fetchone()
    if row is None:
        return 0
    user, avgdl, cursor = str(row[0]), float(row[1]), int(row[2])
    end = min(done.upto, cursor + span)
    seqs = [
        int(r[0])
        for r in conn.execute(
            "SELECT seq FROM nodes WHERE seq > ? AND seq <= ? AND user_id = ? ORDER BY seq LIMIT ?",
            (cursor, end, user, rows),
        )
    ]
    if len(seqs) == rows:
        end = seqs[-1]
    if seqs:
        count, tokens, terms = _append(conn, table, user, seqs, end, avgdl)
        conn.execute(
            "UPDATE lex_users SET docs = docs + ?, tokens = tokens + ? WHERE tbl = ? AND user_id = ?",
            (count, tokens, tbl, user),
        )
        _compact(conn, tbl, user, terms)
    if end >= done.upto:  # done: the user's statistics are published, FTS5 stops ranking it
        conn.execute(
            "INSERT OR REPLACE INTO lex_stats (tbl, user_id, docs, tokens) "
            "SELECT tbl, user_id, docs, tokens FROM lex_users WHERE tbl = ? AND user_id = ?",
            (tbl, user),
        )
        conn.execute("UPDATE lex_users SET cursor = NULL WHERE tbl = ? AND user_id = ?", (tbl, user))
    else:
        conn.execute("UPDATE lex_users SET cursor = ? WHERE tbl = ? AND user_id = ?", (end, tbl, user))
    return max(1, len(seqs))


def start(conn: sqlite3.Connection, table: str) -> None:
    """An index never built starts empty: every row is then one written since its build, merged by
    steps (a full build holds the write for seconds to minutes)."""
    if impact.built(conn, table) is None:
        conn.execute("INSERT INTO lex_built (tbl, upto, rows) VALUES (?, 0, 0)", (impact.TABLES[table],))


def pending(conn: sqlite3.Connection, table: str, *, lag: int) -> int:
    """Rows written since the build that a merge step would take now (all of them when none is built)."""
    done = impact.built(conn, table)
    head = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM nodes").fetchone()[0])
    return max(0, head - lag - (done.upto if done else 0))


def rebuilding(conn: sqlite3.Connection, table: str) -> bool:
    """Whether a purged user waits to be indexed again."""
    found = conn.execute(
        "SELECT 1 FROM lex_users WHERE tbl = ? AND cursor IS NOT NULL LIMIT 1", (impact.TABLES[table],)
    )
    return found.fetchone() is not None

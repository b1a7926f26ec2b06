"""The SQLite store's bounded indexes: entity frequencies, packed decisions, term selection.

Everything here is a function of a connection so that ``sqlite.py`` only delegates. Schema version 2
(:data:`V2`) adds what these need, in one migration step:

- ``entities.nodes``: how many nodes link the entity (kept by triggers), and ``user_counts``: how
  many nodes each user has (triggers), so that rarity is an O(1) lookup, never a count;
- ``decision_sets``: one row per System-One request of a node, its answers packed (zlib JSON), and
  ``decision_refs``: (other node's seq, set) for pair decisions, so ``forget`` can drop them;
- the redundant ``edges_source`` index goes (the unique index starts with ``source``).
"""

from __future__ import annotations

import datetime as dt
import heapq
import itertools
import json
import sqlite3
import zlib
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any, cast

from dualmem.plane.base import Decision
from dualmem.plane.sqlite import _sql as sql
from dualmem.text.lexical import fts_or
from dualmem.types import Tenant

__all__ = [
    "PROBE_DOCS",
    "PROBE_FROM",
    "PROBE_TERMS",
    "V2",
    "entity_counts",
    "entity_search",
    "forget_decisions",
    "get_decisions",
    "lexical_probe",
    "node_total",
    "put_decisions",
    "session_neighbours",
    "top_shared",
    "user_total",
]

#: a bounded entity probe reads at most this many links of one entity
ENTITY_PROBE = 256
#: the write-time lexical probe (``lexical_probe``): from PROBE_FROM indexed rows on, only terms held
#: by at most PROBE_DOCS rows count (each counted by a scan that stops there), the PROBE_TERMS rarest
PROBE_FROM = 4096
PROBE_DOCS = 512
PROBE_TERMS = 8

_V2_SQL: tuple[str, ...] = (
    "ALTER TABLE entities ADD COLUMN nodes INTEGER NOT NULL DEFAULT 0",
    "UPDATE entities SET nodes = (SELECT COUNT(*) FROM node_entities ne WHERE ne.entity_id = entities.id)",
    """CREATE TRIGGER node_entities_count_insert AFTER INSERT ON node_entities BEGIN
        UPDATE entities SET nodes = nodes + 1 WHERE id = new.entity_id;
    END""",
    """CREATE TRIGGER node_entities_count_delete AFTER DELETE ON node_entities BEGIN
        UPDATE entities SET nodes = nodes - 1 WHERE id = old.entity_id;
    END""",
    "CREATE TABLE user_counts (user_id TEXT PRIMARY KEY, nodes INTEGER NOT NULL) WITHOUT ROWID",
    "INSERT INTO user_counts (user_id, nodes) SELECT user_id, COUNT(*) FROM nodes GROUP BY user_id",
    """CREATE TRIGGER nodes_count_insert AFTER INSERT ON nodes BEGIN
        INSERT INTO user_counts (user_id, nodes) VALUES (new.user_id, 1)
            ON CONFLICT (user_id) DO UPDATE SET nodes = nodes + 1;
    END""",
    """CREATE TRIGGER nodes_count_delete AFTER DELETE ON nodes BEGIN
        UPDATE user_counts SET nodes = nodes - 1 WHERE user_id = old.user_id;
    END""",
    """CREATE TABLE decision_sets (
        seq INTEGER PRIMARY KEY,
        node_id TEXT NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
        purpose TEXT NOT NULL,
        backend TEXT NOT NULL,
        latency_ms REAL NOT NULL,
        created_at TEXT NOT NULL,
        answers BLOB NOT NULL
    )""",
    "CREATE INDEX decision_sets_node ON decision_sets (node_id)",
    """CREATE TABLE decision_refs (
        other_seq INTEGER NOT NULL,
        set_seq INTEGER NOT NULL,
        PRIMARY KEY (other_seq, set_seq)
    ) WITHOUT ROWID""",
    "DROP INDEX edges_source",
    "CREATE VIRTUAL TABLE nodes_vocab USING fts5vocab (nodes_fts, 'row')",
)


def _pack_old_decisions(conn: sqlite3.Connection) -> None:
    """Stream the v1 rows into packed sets (a set cut at a chunk boundary is still lossless)."""
    cursor = conn.execute(
        "SELECT node_id, purpose, name, key, value, label, backend, latency_ms, other_id, created_at "
        "FROM decisions ORDER BY seq"
    )
    while rows := cursor.fetchmany(20_000):
        decisions = [
            Decision(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], dt.datetime.fromisoformat(r[9]))
            for r in rows
        ]
        put_decisions(conn, decisions)
    conn.execute("DROP TABLE decisions")


def _v2(conn: sqlite3.Connection) -> None:
    for statement in _V2_SQL:
        conn.execute(statement)
    _pack_old_decisions(conn)


#: schema version 2 as one callable migration step
V2 = _v2


# -- rarity --------------------------------------------------------------------------------
def node_total(conn: sqlite3.Connection) -> int:
    """Every stored node, all users (the kept per-user counts: no scan)."""
    return int(conn.execute("SELECT COALESCE(SUM(nodes), 0) FROM user_counts").fetchone()[0])


def user_total(conn: sqlite3.Connection, user: str) -> int:
    row = conn.execute("SELECT nodes FROM user_counts WHERE user_id = ?", (user,)).fetchone()
    return 0 if row is None else int(row[0])


def entity_counts(conn: sqlite3.Connection, user: str, keys: Sequence[str]) -> dict[str, int]:
    """How many of ``user``'s nodes link each entity key (unknown keys are left out)."""
    if not keys:
        return {}
    marks = ",".join("?" * len(keys))
    rows = conn.execute(
        f"SELECT name, nodes FROM entities WHERE user_id = ? AND name IN ({marks})", [user, *keys]
    )
    return {row[0]: int(row[1]) for row in rows}


def entity_search(
    conn: sqlite3.Connection, tenant: Tenant, keys: Sequence[str], k: int, where: tuple[str, list[Any]]
) -> list[tuple[str, int]]:
    """Nodes sharing ``keys``, most shared first; each entity's links are read at most ENTITY_PROBE deep.

    The probe walks the entity's links newest node first (node ids are time-sortable), so the cost is
    O(len(keys) x ENTITY_PROBE) whatever the entity's frequency.
    """
    clause, params = where
    shared: Counter[str] = Counter()
    for key in keys:
        rows = conn.execute(
            "SELECT ne.node_id FROM entities e JOIN node_entities ne ON ne.entity_id = e.id "
            "WHERE e.user_id = ? AND e.name = ? ORDER BY ne.node_id DESC LIMIT ?",
            (tenant.user, key, ENTITY_PROBE),
        )
        shared.update([row[0] for row in rows])
    if not shared:
        return []
    if tenant.agent is None and tenant.run is None:
        return top_shared(shared, k)
    ranked = sorted(shared.items(), key=lambda kv: (-kv[1], kv[0]))
    out: list[tuple[str, int]] = []
    for start in range(0, len(ranked), 500):
        part = ranked[start : start + 500]
        marks = ",".join("?" * len(part))
        seen = {
            row[0]
            for row in conn.execute(
                f"SELECT n.id FROM nodes n WHERE n.id IN ({marks}) AND {clause}",
                [node_id for node_id, _ in part] + params,
            )
        }
        out += [item for item in part if item[0] in seen]
        if len(out) >= k:
            break
    return out[:k]


def top_shared(shared: Mapping[str, int], k: int) -> list[tuple[str, int]]:
    """``sorted(shared.items(), key=(-count, id))[:k]`` without sorting every id: the counts are
    small integers (at most one per probed entity), so the ids are taken level by level, most
    shared first, and only the level that fills ``k`` is cut (by id, smallest first)."""
    levels: dict[int, list[str]] = {}
    for node_id, count in shared.items():
        levels.setdefault(count, []).append(node_id)
    out: list[tuple[str, int]] = []
    for count in sorted(levels, reverse=True):
        room = k - len(out)
        if room <= 0:
            break
        ids = levels[count]
        chosen = sorted(ids) if len(ids) <= room else heapq.nsmallest(room, ids)
        out += [(node_id, count) for node_id in chosen]
    return out


# -- session neighbours ------------------------------------------------------------------------
def _tenant_rows(
    conn: sqlite3.Connection, tenant: Tenant, node_ids: Sequence[str]
) -> list[tuple[str, str, str, int]]:
    """(id, user, session, seq) of the nodes among ``node_ids`` that ``tenant`` covers and that have a
    session: by the id index alone (the planner must never walk a user's session index for these)."""
    out: list[tuple[str, str, str, int]] = []
    for start in range(0, len(node_ids), 500):
        part = list(node_ids[start : start + 500])
        marks = ",".join("?" * len(part))
        for node_id, user, agent, run, session, seq in conn.execute(
            f"SELECT id, user_id, agent_id, run_id, session, seq FROM nodes WHERE id IN ({marks})", part
        ):
            if session is not None and tenant.covers(Tenant(user, agent, run)):
                out.append((node_id, user, session, int(seq)))
    return out


def session_neighbours(
    conn: sqlite3.Connection, tenant: Tenant, node_ids: Sequence[str], window: int
) -> dict[str, tuple[tuple[str, int], ...]]:
    """Each node's ``window`` nearest nodes before and after it in its session (write order), as
    (id, offset): at most ``2 x window`` index probes per node, whatever the session's length.

    Positions count only the nodes ``tenant`` covers, as the offsets mean "the n-th visible turn".
    """
    extra, params = "", []
    for column, value in (("agent_id", tenant.agent), ("run_id", tenant.run)):
        if value is not None:
            extra += f" AND p.{column} = ?"
            params.append(value)
    found: dict[str, tuple[tuple[str, int], ...]] = {}
    rows = _tenant_rows(conn, tenant, node_ids)
    for start in range(0, len(rows), 200):
        part = rows[start : start + 200]
        values = ",".join("(?, ?, ?, ?)" for _ in part)
        side = (
            "SELECT q.id, m.id, m.seq, {sign} FROM q JOIN nodes m ON m.seq IN (SELECT p.seq FROM nodes p "
            "WHERE p.user_id = q.user_id AND p.session = q.session AND p.seq {op} q.seq" + extra + " "
            "ORDER BY p.seq {order} LIMIT ?)"
        )
        statement = (
            f"WITH q (id, user_id, session, seq) AS (VALUES {values}) "
            + side.format(sign=-1, op="<", order="DESC")
            + " UNION ALL "
            + side.format(sign=1, op=">", order="ASC")
        )
        args = [x for row in part for x in row] + [*params, window, *params, window]
        pairs: dict[str, list[tuple[int, int, str]]] = {}
        for a, b, seq, sign in conn.execute(statement, args):
            pairs.setdefault(a, []).append((int(sign), int(seq), b))
        for a, items in pairs.items():
            before = sorted((x for x in items if x[0] < 0), key=lambda x: -x[1])
            after = sorted((x for x in items if x[0] > 0), key=lambda x: x[1])
            offsets = [(b, -(i + 1)) for i, (_, _, b) in enumerate(before)]
            offsets += [(b, i + 1) for i, (_, _, b) in enumerate(after)]
            found[a] = tuple(sorted(offsets, key=lambda x: x[1]))
    return found


# -- packed decisions ------------------------------------------------------------------------
def put_decisions(conn: sqlite3.Connection, decisions: Sequence[Decision]) -> None:
    """One ``decision_sets`` row per run of decisions of one request (node, purpose, backend, latency).

    Answers are packed as zlib JSON ``[others, [[name, key, value, label, other index, +µs], ...]]``:
    the time of each answer is kept exactly, as microseconds after the set's ``created_at``.
    """
    runs = itertools.groupby(decisions, key=lambda d: (d.node_id, d.purpose, d.backend, float(d.latency_ms)))
    for (node_id, purpose, backend, latency), group in runs:
        items = list(group)
        first = items[0].created_at
        others = list(dict.fromkeys(d.other_id for d in items if d.other_id is not None))
        index = {other: i for i, other in enumerate(others)}
        answers = [
            [d.name, d.key, float(d.value), d.label, None if d.other_id is None else index[d.other_id],
             (d.created_at - first) // dt.timedelta(microseconds=1)]
            for d in items
        ]  # fmt: skip
        cur = conn.execute(
            "INSERT INTO decision_sets (node_id, purpose, backend, latency_ms, created_at, answers) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (node_id, purpose, backend, latency, first.isoformat(), _pack(others, answers)),
        )
        if others:
            conn.executemany(
                "INSERT OR IGNORE INTO decision_refs (other_seq, set_seq) VALUES (?, ?)",
                [(seq, cur.lastrowid) for seq in _seqs(conn, others)],
            )


def _seqs(conn: sqlite3.Connection, ids: Sequence[str]) -> list[int]:
    marks = ",".join("?" * len(ids))
    return [int(row[0]) for row in conn.execute(f"SELECT seq FROM nodes WHERE id IN ({marks})", list(ids))]


def _pack(others: list[str], answers: list[list[Any]]) -> bytes:
    return zlib.compress(json.dumps([others, answers], separators=(",", ":")).encode(), 6)


def _unpack(blob: bytes) -> tuple[list[str], list[list[Any]]]:
    others, answers = json.loads(zlib.decompress(blob))
    return cast(list[str], others), cast(list[list[Any]], answers)


def get_decisions(conn: sqlite3.Connection, node_id: str, *, key: str | None = None) -> list[Decision]:
    """The decisions of ``node_id`` in the order written; with ``key``, only that key's (the others
    are never decoded into records)."""
    rows = conn.execute(
        "SELECT purpose, backend, latency_ms, created_at, answers FROM decision_sets "
        "WHERE node_id = ? ORDER BY seq",
        (node_id,),
    ).fetchall()
    out: list[Decision] = []
    for purpose, backend, latency, created, blob in rows:
        others, answers = _unpack(blob)
        when = dt.datetime.fromisoformat(created)
        for name, kind, value, label, other, micros in answers:
            if key is not None and kind != key:
                continue
            other_id = None if other is None else others[other]
            at = when + dt.timedelta(microseconds=micros)
            out.append(Decision(node_id, purpose, name, kind, value, label, backend, latency, other_id, at))
    return out


def _drop_own_refs(conn: sqlite3.Connection, ids: Sequence[str]) -> None:
    """Delete the ``decision_refs`` rows of the sets that belong to the nodes ``ids``."""
    marks = ",".join("?" * len(ids))
    pairs: list[tuple[int, int]] = []
    sets = conn.execute(f"SELECT seq, answers FROM decision_sets WHERE node_id IN ({marks})", list(ids))
    for set_seq, blob in sets.fetchall():
        others, _ = _unpack(blob)
        if others:
            pairs += [(seq, int(set_seq)) for seq in _seqs(conn, others)]
    conn.executemany("DELETE FROM decision_refs WHERE other_seq = ? AND set_seq = ?", pairs)


def forget_decisions(conn: sqlite3.Connection, gone: Collection[str]) -> None:
    """Drop the pair decisions (of other nodes) that name a node of ``gone``; repack those sets.

    Call it before the nodes are deleted: references are by node ``seq``. The references of the
    gone nodes' own sets (which the delete cascades away) go too, looked up by primary key from each
    set's packed list of other nodes, so no reference outlives its set (``dualmem check``).
    """
    ids = list(gone)
    touched: set[int] = set()
    for start in range(0, len(ids), 500):
        _drop_own_refs(conn, ids[start : start + 500])
        seqs = _seqs(conn, ids[start : start + 500])
        if not seqs:
            continue
        marks = ",".join("?" * len(seqs))
        refs = conn.execute(f"SELECT set_seq FROM decision_refs WHERE other_seq IN ({marks})", seqs)
        touched.update(row[0] for row in refs)
        conn.execute(f"DELETE FROM decision_refs WHERE other_seq IN ({marks})", seqs)
    removed = set(ids)
    for seq in sorted(touched):
        row = conn.execute("SELECT answers FROM decision_sets WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            continue
        others, answers = _unpack(row[0])
        kept = [a for a in answers if a[4] is None or others[a[4]] not in removed]
        conn.execute("UPDATE decision_sets SET answers = ? WHERE seq = ?", (_pack(others, kept), seq))


# -- the write-time lexical probe ---------------------------------------------------------------
def _held_by(conn: sqlite3.Connection, term: str, cap: int) -> int:
    """How many indexed rows hold ``term``, counted up to ``cap + 1`` (the scan stops there)."""
    row = conn.execute(
        "SELECT COUNT(*) FROM (SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ? LIMIT ?)",
        (fts_or([term]), cap + 1),
    ).fetchone()
    return int(row[0])


def rare_terms(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    *,
    max_docs: int,
    max_terms: int,
    common: set[str] | None = None,
) -> list[str]:
    """The terms held by between 1 and ``max_docs`` indexed rows; the ``max_terms`` rarest, in order.

    ``common``: terms known to be held by more than ``max_docs`` rows (not counted again); every term
    counted above ``max_docs`` is added to it. Adding rows never makes a common term rare, so the
    caller keeps the set while rows are only added and empties it when rows may have gone (a delete,
    a text update, a rollback, another connection's commit).
    """
    counted: list[tuple[int, int]] = []
    for i, term in enumerate(terms):
        if common is not None and term in common:
            continue
        n = _held_by(conn, term, max_docs)
        if n > max_docs:
            if common is not None:
                common.add(term)
        elif n > 0:
            counted.append((n, i))
    keep = sorted(i for _, i in sorted(counted)[:max_terms])
    return [terms[i] for i in keep]


def lexical_probe(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    k: int,
    where: tuple[str, list[Any]],
    *,
    user: str,
    common: set[str] | None = None,
) -> list[tuple[str, float]] | None:
    """BM25 top-k over the rows holding the query's rare terms: O(PROBE_TERMS x PROBE_DOCS) rows,
    whatever the index's size. ``None`` below PROBE_FROM indexed rows (the caller's plain search
    then answers, so a small memory's candidates are exactly the lexical search's). ``common``: see
    :func:`rare_terms`.

    The ranking is ``_sqlite_sql.fts_top``'s: FTS5 orders the matches by ``rank`` (its ``bm25``) and
    only a window of the best is joined to ``nodes`` for ``where`` (``user``'s share of the rows sizes
    it), the same rows, scores and order as joining every match (``MATCH ... AND where ORDER BY
    -bm25 DESC, seq``) without a ``nodes`` lookup per matching row."""
    total = node_total(conn)
    if total < PROBE_FROM:
        return None
    rare = rare_terms(conn, terms, max_docs=PROBE_DOCS, max_terms=PROBE_TERMS, common=common)
    if not rare:
        return []
    share = user_total(conn, user) / total
    return sql.fts_top(conn, "nodes_fts", fts_or(rare), k, where, share)

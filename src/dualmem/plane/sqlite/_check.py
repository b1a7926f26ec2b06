"""The SQLite store's health checks and repairs (``SQLiteStore.check``): its SQL over one connection."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from dualmem.plane import lexindex
from dualmem.plane.check import RULE_NOTICE, CheckReport, Problem
from dualmem.plane.sqlite import _rule as lexical

__all__ = ["sqlite_check", "sqlite_repair"]


#: kind -> (SQL selecting one row per instance with a description, SQL deleting them or None)
_COUNTED: dict[str, tuple[str, str | None]] = {
    "vectors_without_node": (
        "SELECT v.node_id FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = v.node_id)",
        "DELETE FROM vectors WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = vectors.node_id)",
    ),
    "vectors_wrong_user": (
        "SELECT v.node_id FROM vectors v JOIN nodes n ON n.id = v.node_id WHERE v.user_id != n.user_id",
        "UPDATE vectors SET user_id = (SELECT n.user_id FROM nodes n WHERE n.id = vectors.node_id) "
        "WHERE user_id != (SELECT n.user_id FROM nodes n WHERE n.id = vectors.node_id)",
    ),
    "vectors_bad_size": (
        "SELECT node_id FROM vectors WHERE length(blob) != 4 * dim OR dim != "
        "(SELECT dim FROM vectors ORDER BY rowid LIMIT 1)",
        None,
    ),
    "chunks_without_node": (
        "SELECT c.node_id FROM chunk_vectors c "
        "WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = c.node_id)",
        "DELETE FROM chunk_vectors "
        "WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = chunk_vectors.node_id)",
    ),
    "chunks_wrong_user": (
        "SELECT c.node_id FROM chunk_vectors c JOIN nodes n ON n.id = c.node_id WHERE c.user_id != n.user_id",
        "UPDATE chunk_vectors SET user_id = "
        "(SELECT n.user_id FROM nodes n WHERE n.id = chunk_vectors.node_id) "
        "WHERE user_id != (SELECT n.user_id FROM nodes n WHERE n.id = chunk_vectors.node_id)",
    ),
    "chunks_bad_size": (
        "SELECT node_id FROM chunk_vectors WHERE parts < 1 OR length(blob) != 4 * dim * parts OR dim != "
        "(SELECT dim FROM vectors ORDER BY rowid LIMIT 1)",
        "DELETE FROM chunk_vectors WHERE parts < 1 OR length(blob) != 4 * dim * parts OR dim != "
        "(SELECT dim FROM vectors ORDER BY rowid LIMIT 1)",
    ),
    "nodes_without_vector": (
        "SELECT n.id FROM nodes n WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.node_id = n.id)",
        None,
    ),
    "orphan_edges": (
        "SELECT e.src || ' -> ' || e.dst FROM edges e "
        "WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.seq = e.src) "
        "OR NOT EXISTS (SELECT 1 FROM nodes n WHERE n.seq = e.dst)",
        "DELETE FROM edges WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.seq = edges.src) "
        "OR NOT EXISTS (SELECT 1 FROM nodes n WHERE n.seq = edges.dst)",
    ),
    "cross_user_edges": (
        "SELECT a.id || ' -> ' || b.id FROM edges e JOIN nodes a ON a.seq = e.src "
        "JOIN nodes b ON b.seq = e.dst WHERE a.user_id != b.user_id",
        "DELETE FROM edges WHERE (SELECT user_id FROM nodes WHERE seq = edges.src) "
        "!= (SELECT user_id FROM nodes WHERE seq = edges.dst)",
    ),
    "orphan_entity_links": (
        "SELECT ne.node_id FROM node_entities ne "
        "WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = ne.node_id) "
        "OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = ne.entity_id)",
        "DELETE FROM node_entities WHERE NOT EXISTS "
        "(SELECT 1 FROM nodes n WHERE n.id = node_entities.node_id) "
        "OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = node_entities.entity_id)",
    ),
    "unlinked_entities": (
        "SELECT e.name FROM entities e WHERE NOT EXISTS "
        "(SELECT 1 FROM node_entities ne WHERE ne.entity_id = e.id)",
        "DELETE FROM entities WHERE NOT EXISTS "
        "(SELECT 1 FROM node_entities ne WHERE ne.entity_id = entities.id)",
    ),
    "orphan_decisions": (
        "SELECT s.node_id FROM decision_sets s "
        "WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = s.node_id)",
        "DELETE FROM decision_sets "
        "WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = decision_sets.node_id)",
    ),
    "orphan_decision_refs": (
        "SELECT CAST(r.other_seq AS TEXT) FROM decision_refs r "
        "WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.seq = r.other_seq) "
        "OR NOT EXISTS (SELECT 1 FROM decision_sets s WHERE s.seq = r.set_seq)",
        "DELETE FROM decision_refs "
        "WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.seq = decision_refs.other_seq) "
        "OR NOT EXISTS (SELECT 1 FROM decision_sets s WHERE s.seq = decision_refs.set_seq)",
    ),
    "orphan_write_keys": (
        "SELECT k.key FROM write_keys k WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = k.node_id)",
        "DELETE FROM write_keys WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = write_keys.node_id)",
    ),
    "pending_nodes": ("SELECT id FROM nodes WHERE status = 'pending'", None),
}
_DETAILS = 5


def _integrity(conn: sqlite3.Connection) -> Problem:
    try:
        rows = [str(row[0]) for row in conn.execute("PRAGMA integrity_check(100)")]
    except sqlite3.DatabaseError as exc:
        return Problem("integrity", 1, (str(exc),), repairable=False)
    if rows == ["ok"]:
        return Problem("integrity", 0)
    return Problem("integrity", len(rows), tuple(rows[:_DETAILS]), repairable=True)


def _fts(conn: sqlite3.Connection) -> Problem:
    """FTS5's own check, comparing the index with the ``nodes`` table too (``rank = 1``) where FTS5
    was given the raw text (rule 1); else its index alone and its row count against ``nodes``."""
    try:
        if lexical.rule_of(conn) == 1:
            conn.execute("INSERT INTO nodes_fts (nodes_fts, rank) VALUES ('integrity-check', 1)")
        else:
            conn.execute("INSERT INTO nodes_fts (nodes_fts, rank) VALUES ('integrity-check', 0)")
            rows = conn.execute(
                "SELECT (SELECT COUNT(*) FROM nodes_fts_docsize), (SELECT COUNT(*) FROM nodes)"
            ).fetchone()
            if rows[0] != rows[1]:
                return Problem("fts", 1, (f"the FTS5 index holds {rows[0]} rows for {rows[1]} nodes",))
    except sqlite3.OperationalError as exc:
        if "readonly" in str(exc):
            return Problem("fts_unchecked", 0)
        return Problem("fts", 1, (str(exc),))
    except sqlite3.DatabaseError as exc:
        return Problem("fts", 1, (str(exc),))
    return Problem("fts", 0)


def _counted(conn: sqlite3.Connection, kind: str) -> Problem:
    select, fix = _COUNTED[kind]
    try:
        rows = [str(row[0]) for row in conn.execute(select)]
    except sqlite3.DatabaseError as exc:
        if kind.startswith("chunks_") and "no such table: chunk_vectors" in str(exc):
            return Problem(kind, 0)  # a file before schema v5 opened read-only: it has no chunks
        return Problem(kind, 1, (f"could not check: {exc}",), repairable=False)
    return Problem(kind, len(rows), tuple(rows[:_DETAILS]), repairable=fix is not None)


def _rule(conn: sqlite3.Connection) -> Problem:
    """Rows whose FTS5 terms an older index rule made (``_sqlite_lexical.reindex`` makes them again)."""
    try:
        if lexical.rule_of(conn) >= lexindex.RULE_VERSION:
            return Problem("lexical_rule", 0)
        nodes, context = lexical.stale_rows(conn)
    except sqlite3.DatabaseError as exc:
        return Problem("lexical_rule", 1, (f"could not check: {exc}",), repairable=False)
    count = len(nodes) + len(context)
    return Problem("lexical_rule", count, (RULE_NOTICE.format(rule=lexindex.RULE_VERSION, count=count),))


def sqlite_check(conn: sqlite3.Connection, *, repair: bool = False) -> CheckReport:
    """Every check over one SQLite connection (``repair`` is accepted for symmetry and ignored)."""
    del repair
    problems = [_integrity(conn), _fts(conn)]
    problems += [_counted(conn, kind) for kind in _COUNTED]
    problems.append(_rule(conn))
    return CheckReport.of(problems)


def sqlite_repair(conn: sqlite3.Connection, report: CheckReport) -> tuple[str, ...]:
    """Fix what ``report`` found that SQL can fix (call inside a write transaction); kinds repaired."""
    steps: dict[str, Callable[[], object]] = {
        "integrity": lambda: conn.execute("REINDEX"),
        "fts": lambda: lexical.rebuild_fts(conn),
        "lexical_rule": lambda: lexical.reindex(conn),
    }
    done: list[str] = []
    for problem in report.problems:
        fix = _COUNTED.get(problem.kind, ("", None))[1]
        step = steps.get(problem.kind)
        if fix is not None:
            conn.execute(fix)
        elif step is not None:
            step()
        else:
            continue
        done.append(problem.kind)
    if "integrity" in done and "fts" not in done:  # a reindexed file gets a fresh FTS5 index too
        steps["fts"]()
    return tuple(done)

"""Making forgotten memories unrecoverable from a store's files: what ``dualmem erase`` runs.

SQLite erases on every forget (docs/storage.md); its ``erase`` only truncates a WAL that readers kept
from being truncated then. PostgreSQL does not: a ``DELETE`` leaves the row's bytes in its heap page,
its index entries and the planner's column samples (``pg_statistic``) until they are rewritten, and the
WAL segments that logged the row keep it until they are removed. :func:`erase_postgres` rewrites them,
as the table owner and, for the server-wide steps, a superuser (or a role granted what each needs):

1. ``VACUUM (FULL, ANALYZE)`` of every table of the schema: each is written anew from its live rows
   with fresh indexes (the HNSW graph included); the old files are truncated at commit. Its samples
   in ``pg_statistic`` are replaced by ones of the live rows;
   ``ANALYZE`` of a table left without rows (``forget_all``, a user's last long or keyed memory)
   writes nothing, so its old samples are deleted from ``pg_statistic`` (a superuser) or cleared with
   ``pg_clear_attribute_stats`` (PostgreSQL 18, the table's owner), and checked gone at the end;
2. ``VACUUM FULL pg_catalog.pg_statistic``: the replaced samples leave that catalog's files too;
3. ``CHECKPOINT``, ``pg_switch_wal()``, ``CHECKPOINT``: every WAL segment written before the erase is
   then behind the redo point and removed, unlinked when ``wal_recycle = off``.

Each step it cannot take, and every setting that keeps old bytes anyway (``wal_recycle = on``, which
renames old segments for reuse with their bytes; ``wal_keep_size``, replication slots, archiving,
statement logging; a session whose snapshot or open writing transaction predates the erase, whose
deleted rows VACUUM FULL must keep; samples of an emptied table left in ``pg_statistic``), is a
``problem`` of the report, which is ``complete`` only without any (docs/postgres.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dualmem.types import JSONValue

if TYPE_CHECKING:
    import psycopg

__all__ = ["EraseReport", "erase_postgres"]


@dataclass(frozen=True, slots=True)
class EraseReport:
    """What one erase did (``done``) and what still keeps forgotten bytes on disk (``problems``)."""

    backend: str
    done: tuple[str, ...]
    problems: tuple[str, ...]
    seconds: float

    @property
    def complete(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "backend": self.backend,
            "complete": self.complete,
            "done": list(self.done),
            "problems": list(self.problems),
            "seconds": round(self.seconds, 3),
        }


def erase_postgres(conn: psycopg.Connection[Any], schema: str) -> EraseReport:
    """Run the steps of the module docstring on ``conn`` (autocommit, outside any transaction)."""
    import psycopg
    from psycopg import sql

    started = time.perf_counter()
    done: list[str] = []
    problems = _settings(conn) + _old_snapshots(conn)

    def step(name: str, statement: str, needs: str) -> bool:
        try:
            conn.execute(statement)
        except psycopg.errors.InsufficientPrivilege:
            problems.append(f"{name} was not run: it needs {needs}")
            return False
        done.append(name)
        return True

    tables = [
        str(row[0])
        for row in conn.execute(
            "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = %s ORDER BY tablename", (schema,)
        )
    ]
    for table in tables:
        statement = sql.SQL("VACUUM (FULL, ANALYZE) {}.{}").format(
            sql.Identifier(schema), sql.Identifier(table)
        )
        conn.execute(statement)
    done.append(f"VACUUM (FULL, ANALYZE) of {len(tables)} tables of schema {schema}")
    empty = _empty_tables(conn, schema, tables)
    cleared = not empty or _clear_statistics(conn, schema, empty, done, problems)
    if _may_maintain_statistics(conn):
        step("VACUUM FULL pg_catalog.pg_statistic", "VACUUM FULL pg_catalog.pg_statistic", "a superuser")
    else:
        problems.append(
            "pg_catalog.pg_statistic (the planner's column samples, which can hold forgotten text) was "
            "not rewritten: it needs a superuser (or, from PostgreSQL 17, MAINTAIN on it)"
        )
    checkpoint = "a superuser or the pg_checkpoint role"
    if step("CHECKPOINT", "CHECKPOINT", checkpoint):
        switch = "a superuser or EXECUTE on pg_switch_wal()"
        if step("pg_switch_wal()", "SELECT pg_catalog.pg_switch_wal()", switch):
            step("CHECKPOINT after the WAL switch", "CHECKPOINT", checkpoint)
    if cleared:  # verify: the samples of every table now empty are gone (else named above)
        problems += _stale_statistics(conn, schema, _empty_tables(conn, schema, tables))
    return EraseReport("postgresql", tuple(done), tuple(problems), time.perf_counter() - started)


def _empty_tables(conn: psycopg.Connection[Any], schema: str, tables: list[str]) -> list[str]:
    """The tables of ``schema`` without a row: ``ANALYZE`` leaves their old samples in place."""
    from psycopg import sql

    out = []
    for table in tables:
        statement = sql.SQL("SELECT NOT EXISTS (SELECT 1 FROM {}.{})").format(
            sql.Identifier(schema), sql.Identifier(table)
        )
        row = conn.execute(statement).fetchone()
        if row is not None and row[0]:
            out.append(table)
    return out


def _clear_statistics(
    conn: psycopg.Connection[Any], schema: str, tables: list[str], done: list[str], problems: list[str]
) -> bool:
    """Drop the column samples of ``tables`` (and of their indexes) from ``pg_statistic``.

    ``ANALYZE`` of a table without rows writes nothing, so the samples of the rows it held before a
    forget emptied it stay. A superuser deletes them; from PostgreSQL 18 the table's owner may clear
    them with ``pg_clear_attribute_stats``. Without either, the step is a problem of the report."""
    import psycopg

    rows = conn.execute(
        "SELECT s.tablename, s.attname, s.inherited FROM pg_catalog.pg_stats s "
        "LEFT JOIN pg_catalog.pg_class i ON i.relname = s.tablename "
        "AND i.relnamespace = %s::regnamespace AND i.relkind = 'i' "
        "LEFT JOIN pg_catalog.pg_index x ON x.indexrelid = i.oid "
        "LEFT JOIN pg_catalog.pg_class t ON t.oid = x.indrelid "
        "WHERE s.schemaname = %s AND coalesce(t.relname, s.tablename) = ANY(%s) "
        "ORDER BY 1, 2, 3",
        (schema, schema, tables),
    ).fetchall()
    if not rows:
        return True
    held = sorted({str(row[0]) for row in rows})
    step = f"statistics of {len(held)} emptied table(s)/index(es) reset: {', '.join(held)}"
    superuser = conn.execute(
        "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user"
    ).fetchone()
    try:
        if superuser is not None and superuser[0]:
            conn.execute(
                "DELETE FROM pg_catalog.pg_statistic WHERE starelid IN ("
                "SELECT c.oid FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_index x "
                "ON x.indexrelid = c.oid WHERE c.relnamespace = %s::regnamespace AND "
                "(c.relname = ANY(%s) OR x.indrelid IN (SELECT oid FROM pg_catalog.pg_class "
                "WHERE relnamespace = %s::regnamespace AND relname = ANY(%s))))",
                (schema, tables, schema, tables),
            )
            done.append(step)
            return True
        if _server_version(conn) >= 180000:
            for relname, attname, inherited in rows:
                conn.execute(
                    "SELECT pg_catalog.pg_clear_attribute_stats(%s, %s, %s, %s)",
                    (schema, relname, attname, inherited),
                )
            done.append(step)
            return True
    except psycopg.errors.InsufficientPrivilege:
        pass
    problems.append(
        f"the planner's samples of emptied table(s) {', '.join(tables)} were not reset (ANALYZE keeps "
        "them when a table has no rows): it needs a superuser, or PostgreSQL 18 and the tables' owner"
    )
    return False


def _stale_statistics(conn: psycopg.Connection[Any], schema: str, tables: list[str]) -> list[str]:
    """Verify: no table of ``schema`` without rows (nor an index of one) has samples left."""
    if not tables:
        return []
    row = conn.execute(
        "SELECT string_agg(DISTINCT s.tablename, ', ') FROM pg_catalog.pg_stats s "
        "LEFT JOIN pg_catalog.pg_class i ON i.relname = s.tablename "
        "AND i.relnamespace = %s::regnamespace AND i.relkind = 'i' "
        "LEFT JOIN pg_catalog.pg_index x ON x.indexrelid = i.oid "
        "LEFT JOIN pg_catalog.pg_class t ON t.oid = x.indrelid "
        "WHERE s.schemaname = %s AND coalesce(t.relname, s.tablename) = ANY(%s)",
        (schema, schema, tables),
    ).fetchone()
    if row is None or row[0] is None:
        return []
    return [f"{row[0]} hold(s) no rows but the planner's samples of former rows are still in pg_statistic"]


def _server_version(conn: psycopg.Connection[Any]) -> int:
    return int(conn.execute("SHOW server_version_num").fetchone()[0])  # type: ignore[index]


def _settings(conn: psycopg.Connection[Any]) -> list[str]:
    """The server settings under which removed WAL segments, or copies of them, keep old bytes."""
    out: list[str] = []
    row = conn.execute(
        "SELECT current_setting('wal_recycle'), current_setting('wal_keep_size'), "
        "current_setting('archive_mode'), current_setting('log_statement'), "
        "current_setting('log_min_duration_statement')::int, "
        "(SELECT count(*) FROM pg_catalog.pg_replication_slots WHERE restart_lsn IS NOT NULL)"
    ).fetchone()
    assert row is not None
    recycle, keep, archive, log_statement, log_duration, slots = row
    if recycle != "off":
        out.append(
            "wal_recycle is on: old WAL segments are renamed for reuse and keep their bytes until "
            "overwritten; set it off (ALTER SYSTEM SET wal_recycle = off; SELECT pg_reload_conf()) "
            "and run erase again"
        )
    if keep not in ("0", "0B", "0kB", "0MB"):
        out.append(f"wal_keep_size is {keep}: that much old WAL is kept; set it to 0 and run erase again")
    if int(slots):
        out.append(f"{slots} replication slot(s) keep old WAL until their consumers catch up")
    if archive != "off":
        out.append("archive_mode is on: archived WAL segments are copies outside this server's reach")
    if log_statement in ("mod", "all") or int(log_duration) >= 0:
        out.append(
            "the server log may hold the text of statements (log_statement / log_min_duration_statement)"
        )
    return out


def _old_snapshots(conn: psycopg.Connection[Any]) -> list[str]:
    """Sessions (and prepared transactions) whose snapshot or transaction may predate the erase:
    VACUUM FULL keeps the rows deleted while they run. A session with a snapshot (``backend_xmin``)
    as old as the erase's own, and any session whose transaction has written (``backend_xid``: an
    ``idle in transaction`` writer holds no snapshot between statements, but its transaction id
    holds the horizon all the same). Without ``pg_read_all_stats`` only the role's own are seen."""
    holders = [
        (str(pid), str(state or "active"))
        for pid, state in conn.execute(
            "SELECT a.pid, a.state FROM pg_catalog.pg_stat_activity a, "
            "(SELECT backend_xmin AS mine FROM pg_catalog.pg_stat_activity WHERE pid = pg_backend_pid()) m "
            "WHERE a.pid <> pg_backend_pid() AND (a.backend_xid IS NOT NULL "
            "OR (a.backend_xmin IS NOT NULL AND age(a.backend_xmin) >= age(m.mine))) ORDER BY a.pid"
        )
    ]
    prepared = conn.execute("SELECT count(*) FROM pg_catalog.pg_prepared_xacts").fetchone()
    out = []
    if holders:
        named = ", ".join(f"{pid} ({state})" for pid, state in holders)
        out.append(
            f"sessions {named} held a snapshot or an open transaction id from before the erase began: "
            "rows deleted while it was open may be kept; run erase again once they have ended"
        )
    if prepared is not None and prepared[0]:
        out.append(f"{prepared[0]} prepared transaction(s) hold old snapshots: commit or roll them back")
    return out


def _may_maintain_statistics(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user").fetchone()
    if row is not None and row[0]:
        return True
    if _server_version(conn) < 170000:
        return False
    maintain = conn.execute("SELECT has_table_privilege('pg_catalog.pg_statistic', 'MAINTAIN')").fetchone()
    return bool(maintain and maintain[0])

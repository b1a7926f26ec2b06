"""The index rule in the SQLite store's FTS5 tables (``lexindex``; schema v12).

FTS5 keeps its own tokenizer (the rule's split and stem) and its triggers give it
``lexindex.index_text`` of each text through the SQL function ``dualmem_index_text`` (``register``:
on every connection the store opens), so its tokens are the rule's. A file written before the rule
(its triggers give FTS5 the raw text: rule 1) takes it at once when it holds no CJK text
(``adopt``: the same terms) and otherwise keeps it until ``reindex`` (``dualmem check --repair``).
"""

from __future__ import annotations

import sqlite3

from dualmem.plane import lexindex
from dualmem.plane.sqlite import _impact as impact

__all__ = [
    "INDEX_TEXT",
    "RULE_KEY",
    "TRIGGERS",
    "adopt",
    "rebuild_fts",
    "register",
    "reindex",
    "rule_of",
    "stale_rows",
]

#: the meta key holding the index rule's version the FTS5 tables were written by (absent: 1)
RULE_KEY = "lexical_rule"

#: the SQL function the FTS5 triggers give each text through (``lexindex.index_text``): registered on
#: every connection the store opens (``register``)
INDEX_TEXT = "dualmem_index_text"
_HAS_CJK = "dualmem_has_cjk"


def _index_text(value: str | None) -> str | None:
    return lexindex.index_text(value) if isinstance(value, str) else value


def _has_cjk(value: object) -> int:
    return int(isinstance(value, str) and lexindex.has_cjk(value))


def register(conn: sqlite3.Connection) -> None:
    """The rule's SQL functions on ``conn`` (the FTS5 triggers of a rule-2 file call them)."""
    conn.create_function(INDEX_TEXT, 1, _index_text, deterministic=True)
    conn.create_function(_HAS_CJK, 1, _has_cjk, deterministic=True)


_NODES_INSERT = (
    f"INSERT INTO nodes_fts (rowid, speaker, content) VALUES (new.seq, {INDEX_TEXT}(new.speaker), "
    f"{INDEX_TEXT}(new.content));"
)
_NODES_DELETE = (
    f"INSERT INTO nodes_fts (nodes_fts, rowid, speaker, content) VALUES ('delete', old.seq, "
    f"{INDEX_TEXT}(old.speaker), {INDEX_TEXT}(old.content));"
)
_CONTEXT_INSERT = f"INSERT INTO context_fts (rowid, text) VALUES (new.seq, {INDEX_TEXT}(new.text));"
_CONTEXT_DELETE = (
    f"INSERT INTO context_fts (context_fts, rowid, text) VALUES ('delete', old.seq, {INDEX_TEXT}(old.text));"
)
#: the FTS5 triggers of a file written by the current rule (those of schema v1 and v6 give FTS5 the
#: raw text: rule 1); the context's fires on a change of its text only (a neighbour list or vector
#: rewritten alone leaves FTS5 as it is). A connection that writes such a file needs ``register``.
TRIGGERS = {
    "nodes_fts_insert": f"CREATE TRIGGER nodes_fts_insert AFTER INSERT ON nodes BEGIN {_NODES_INSERT} END",
    "nodes_fts_delete": f"CREATE TRIGGER nodes_fts_delete AFTER DELETE ON nodes BEGIN {_NODES_DELETE} END",
    "nodes_fts_update": "CREATE TRIGGER nodes_fts_update AFTER UPDATE OF content, speaker ON nodes BEGIN "
    f"{_NODES_DELETE} {_NODES_INSERT} END",
    "node_context_insert": f"CREATE TRIGGER node_context_insert AFTER INSERT ON node_context BEGIN "
    f"{_CONTEXT_INSERT} END",
    "node_context_delete": f"CREATE TRIGGER node_context_delete AFTER DELETE ON node_context BEGIN "
    f"{_CONTEXT_DELETE} END",
    "node_context_update": f"CREATE TRIGGER node_context_update AFTER UPDATE OF text ON node_context BEGIN "
    f"{_CONTEXT_DELETE} {_CONTEXT_INSERT} END",
}


def rule_of(conn: sqlite3.Connection) -> int:
    """The rule version the file's FTS5 tables were written by (no marker: 1)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (RULE_KEY,)).fetchone()
    return 1 if row is None else int(row[0])


def stale_rows(conn: sqlite3.Connection) -> tuple[list[int], list[int]]:
    """The nodes and the context rows an FTS5 table of rule 1 holds other terms for than the current
    rule gives (their text has a CJK character): their seqs."""
    nodes = [
        int(r[0])
        for r in conn.execute(f"SELECT seq FROM nodes WHERE {_HAS_CJK}(content) OR {_HAS_CJK}(speaker)")
    ]
    context = [int(r[0]) for r in conn.execute(f"SELECT seq FROM node_context WHERE {_HAS_CJK}(text)")]
    return nodes, context


def _adopt_rule(conn: sqlite3.Connection) -> None:
    for name, statement in TRIGGERS.items():
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        conn.execute(statement)
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (RULE_KEY, str(lexindex.RULE_VERSION)),
    )


def adopt(conn: sqlite3.Connection) -> None:
    """The migration to the current rule (schema v12): a file whose text the new rule indexes as the
    old one did (no CJK character anywhere: every new file, every English one) takes the new
    triggers at once; any other keeps its index (and rule 1) until ``reindex``."""
    register(conn)  # a migration may run on a connection of its own
    if rule_of(conn) == lexindex.RULE_VERSION:
        return
    if stale_rows(conn) == ([], []):
        _adopt_rule(conn)


def reindex(conn: sqlite3.Connection) -> int:
    """Index every row whose terms the current rule changes again, and take its triggers (inside the
    caller's write): FTS5's entries of the old text are deleted with the text they were made of and
    the rule's are inserted; the impact-ordered index, if built, is rebuilt. The rows reindexed."""
    register(conn)
    if rule_of(conn) == lexindex.RULE_VERSION:
        return 0
    nodes, context = stale_rows(conn)
    for start in range(0, len(nodes), 500):
        marks = ",".join("?" * len(nodes[start : start + 500]))
        part = nodes[start : start + 500]
        conn.execute(
            "INSERT INTO nodes_fts (nodes_fts, rowid, speaker, content) "
            f"SELECT 'delete', seq, speaker, content FROM nodes WHERE seq IN ({marks})",
            part,
        )
        conn.execute(
            f"INSERT INTO nodes_fts (rowid, speaker, content) SELECT seq, {INDEX_TEXT}(speaker), "
            f"{INDEX_TEXT}(content) FROM nodes WHERE seq IN ({marks})",
            part,
        )
    for start in range(0, len(context), 500):
        part = context[start : start + 500]
        marks = ",".join("?" * len(part))
        conn.execute(
            "INSERT INTO context_fts (context_fts, rowid, text) "
            f"SELECT 'delete', seq, text FROM node_context WHERE seq IN ({marks})",
            part,
        )
        conn.execute(
            f"INSERT INTO context_fts (rowid, text) SELECT seq, {INDEX_TEXT}(text) FROM node_context "
            f"WHERE seq IN ({marks})",
            part,
        )
    _adopt_rule(conn)
    if nodes or context:
        for table in impact.TABLES:
            if impact.built(conn, table) is not None:
                impact.build(conn, table)
    return len(nodes) + len(context)


def rebuild_fts(conn: sqlite3.Connection) -> None:
    """FTS5's index of the nodes made again from the ``nodes`` table, by the file's rule (a repair)."""
    if rule_of(conn) == 1:
        conn.execute("INSERT INTO nodes_fts (nodes_fts) VALUES ('rebuild')")
        return
    conn.execute("INSERT INTO nodes_fts (nodes_fts) VALUES ('delete-all')")
    conn.execute(
        f"INSERT INTO nodes_fts (rowid, speaker, content) SELECT seq, {INDEX_TEXT}(speaker), "
        f"{INDEX_TEXT}(content) FROM nodes"
    )

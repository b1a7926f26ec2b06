"""The SQLite store's lexical search: FTS5 (``porter``) BM25, and the impact-ordered index of a
large store (``_sqlite_impact``, kept up by ``_sqlite_impact_merge``).

:class:`Lexical` is what ``SQLiteStore`` sees of it: ``search`` (the BM25 top-k of one of the two
FTS5 tables, ``nodes_fts`` or ``context_fts``), ``probe`` (write-time candidates: the rows holding a
text's rare terms, ``_sqlite_scale.lexical_probe``), ``configure`` / ``build`` / ``state`` (the
impact-ordered index) and ``forget_terms`` (after a write that may have removed rows).

- Below ``threshold`` nodes a search is FTS5's, bounded by the query's term split
  (``_sqlite_terms``: only the rows holding a rare term are ranked, each with the whole query's
  score).
- From ``threshold`` nodes it ranks from the impact-ordered index when that is fresh, reading at
  most ``budget`` postings; a search builds a missing or stale index itself only while the store
  holds at most ``auto_build`` nodes (by default never: ``dualmem check --repair`` does), and does
  one bounded step of its upkeep (``step`` rows) otherwise.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from dualmem.errors import DatabaseLocked, InvalidInput
from dualmem.plane import codec, lexindex
from dualmem.plane.sqlite import _impact as impact
from dualmem.plane.sqlite import _impact_merge as merge
from dualmem.plane.sqlite import _scale as scale
from dualmem.plane.sqlite import _sql as sql
from dualmem.plane.sqlite import _terms as term_sql
from dualmem.plane.sqlite._rule import reindex, rule_of
from dualmem.plane.sqlite._tx import Transactions
from dualmem.text.lexical import fts_or
from dualmem.types import Tenant

__all__ = ["FIELDS", "Lexical"]

#: the contract's fields (``lexindex.Field``) -> their FTS5 tables
FIELDS = {"nodes": "nodes_fts", "context": "context_fts"}


class Lexical:
    """Lexical search over the FTS5 tables of one connection (its ``Transactions`` lock guards it):
    the SQLite store's ``lexindex.LexicalComponent``."""

    def __init__(self, conn: sqlite3.Connection, tx: Transactions) -> None:
        self._conn = conn
        self._tx = tx
        #: FTS5 terms held by more than ``scale.PROBE_DOCS`` rows (``probe`` skips counting them);
        #: kept while rows are only added, emptied when rows may have gone (``forget_terms``)
        self.common_terms: set[str] = set()
        #: FTS5 tables of at least this many rows are ranked by the impact-ordered index (0: never)
        self.threshold = impact.THRESHOLD
        self.budget = impact.BUDGET
        self.auto_build = impact.AUTO_BUILD
        self.step = merge.STEP

    def forget_terms(self) -> None:
        """Rows may have gone (a delete, an edit, a rollback, another connection's commit)."""
        self.common_terms.clear()

    # -- the impact-ordered index --------------------------------------------------------------
    def configure(
        self,
        threshold: int,
        *,
        budget: int = impact.BUDGET,
        auto_build: int = impact.AUTO_BUILD,
        step: int = merge.STEP,
    ) -> None:
        if budget < 1 or threshold < 0 or auto_build < 0 or step < 0:
            raise InvalidInput(
                f"lexical index: threshold {threshold}, budget {budget}, auto_build {auto_build}, "
                f"step {step}",
                hint="threshold and auto_build are node counts (0: off), budget at least 1 posting, "
                "step a row count (0: off)",
            )
        with self._tx.lock:
            self.threshold, self.budget, self.auto_build, self.step = threshold, budget, auto_build, step

    def build(self) -> int:
        """(Re)build the impact-ordered index of both FTS5 tables; the postings written."""
        with self._tx.lock, self._tx.write(), sql.translated("build the lexical index"):
            return sum(impact.build(self._conn, table) for table in impact.TABLES)

    def build_stale(self) -> tuple[str, ...]:
        """A repair's last step: the index (re)built where the store uses it and it is missing, stale
        or purged (a large store's searches never build it themselves)."""
        if all(stage in ("off", "fresh") for stage in self.state().values()):
            return ()
        self.build()
        return ("lexical_index",)

    def state(self) -> dict[str, str]:
        """Each FTS5 table's index: ``"off"`` (the store is below the threshold), ``"none"``,
        ``"stale"``, ``"purged"`` or ``"fresh"`` (see ``_sqlite_impact.state``)."""
        with self._tx.lock, self._tx.read(), sql.translated("check the lexical index"):
            total = scale.node_total(self._conn)
            if self.threshold <= 0 or total < self.threshold:
                return dict.fromkeys(impact.TABLES, "off")
            return {table: impact.state(self._conn, table) for table in impact.TABLES}

    def _indexed(self, table: str) -> bool:
        """Whether ``table`` is ranked by the impact-ordered index: the store is large enough and the
        index is fresh (an erase's purged users are ranked by FTS5 inside ``impact.search``). A store
        that allows it (``auto_build=N``, at most N nodes) (re)builds a missing or stale index here,
        if writable and no transaction is open (never inside a write); by default only ``build``
        (``dualmem check --repair``) builds it: a build takes seconds to minutes, too long to hold a
        search, and FTS5 ranks until then."""
        if self.threshold <= 0:
            return False
        with self._tx.lock, self._tx.read(), sql.translated("check the lexical index"):
            total = scale.node_total(self._conn)
            if total < self.threshold:
                return False
            stage = impact.state(self._conn, table)
        if self._tx.read_only or self._tx.reading or self._tx.writing:
            return stage in ("fresh", "purged")
        if stage != "fresh" and total <= self.auto_build:
            with self._tx.lock, self._tx.write(), sql.translated("build the lexical index"):
                if impact.needs_build(self._conn, table):
                    impact.build(self._conn, table)
            return True
        if self.step > 0:
            stage = self._upkeep(table) or stage
        return stage in ("fresh", "purged")

    def _upkeep(self, table: str) -> str | None:
        """One bounded step of the index's upkeep (``_sqlite_impact_merge``) when there is work: a
        missing index is started empty (every row is then written since its build), the rows written
        since the build are merged ``step`` at a time once ``merge.FROM`` of them wait, a purged
        user is indexed again; the table's state after it (None: nothing done)."""
        with self._tx.lock, self._tx.read(), sql.translated("check the lexical index"):
            work = merge.pending(self._conn, table, lag=merge.LAG)
        if work < merge.FROM and not merge.rebuilding(self._conn, table):
            return None
        with self._tx.lock:
            wait = int(self._conn.execute("PRAGMA busy_timeout").fetchone()[0])
            self._conn.execute("PRAGMA busy_timeout = 0")  # another writer holds the file: skip the step
            try:
                with self._tx.write(), sql.translated("update the lexical index"):
                    merge.start(self._conn, table)
                    if not merge.rebuild_step(self._conn, table, rows=self.step):
                        merge.merge_step(self._conn, table, rows=self.step, lag=merge.LAG)
                    return impact.state(self._conn, table)
            except DatabaseLocked:
                return None
            finally:
                self._conn.execute(f"PRAGMA busy_timeout = {wait}")

    # -- queries -------------------------------------------------------------------------------
    def query_split(self, table: str, query: str, share: float = 1.0) -> tuple[list[str], list[str]]:
        """The query's (rare, common) terms over FTS5 ``table`` for a tenant holding ``share`` of its
        rows (``_sqlite_terms``); call locked."""
        terms = lexindex.query_terms(query, max_terms=codec.QUERY_MAX_TERMS)
        if not terms:
            return [], []
        return term_sql.split_terms(
            self._conn,
            table,
            terms,
            max_terms=codec.QUERY_OR_TERMS,
            common_share=codec.QUERY_COMMON_SHARE,
            # every rule counts the tenant's own rows (a term's expected rows of it: its rows x share),
            # so a small tenant of a large shared table is ranked exactly: its rows that hold only
            # common terms may be most of what it has, and leaving them out would leave it with few
            # or no results
            min_docs=codec.QUERY_MIN_DOCS / max(share, 1e-9),
            postings=codec.QUERY_POSTINGS / max(share, 1e-9),
        )

    def query_terms(self, table: str, query: str) -> list[str]:
        """The query's terms whose rows are ranked (its rare terms); call locked."""
        return self.query_split(table, query)[0]

    def share(self, tenant: Tenant) -> float:
        """The tenant's user's part of every stored node (sizes the bounded FTS5 window); call locked."""
        total = scale.node_total(self._conn)
        return scale.user_total(self._conn, tenant.user) / total if total else 1.0

    def _impact_search(
        self, table: str, tenant: Tenant, query: str, k: int
    ) -> list[tuple[str, float]] | None:
        """``search`` from the impact-ordered index; None where it cannot answer (call locked)."""
        terms = lexindex.query_terms(query, max_terms=codec.QUERY_MAX_TERMS)
        found = term_sql.tokens(terms)
        if any(len(parts) > 1 for parts in found):  # a phrase: FTS5 ranks it
            return None
        kept = [term for term, parts in zip(terms, found, strict=True) if parts]
        if not kept:
            return []
        tokens = tuple(parts[0] for parts in found if parts)
        query_ = impact.Query(tenant.user, tokens, fts_or(kept), k, self.budget)
        return impact.search(self._conn, table, sql.tenant_sql(tenant), query_)

    def count(self, field: str, user: str) -> int:
        """The rows of ``field`` (``"nodes"`` or ``"context"``) the index holds for ``user``."""
        table = FIELDS.get(field, field)
        statement = {
            "nodes_fts": "SELECT COUNT(*) FROM nodes WHERE user_id = ?",
            "context_fts": "SELECT COUNT(*) FROM node_context c JOIN nodes n ON n.seq = c.seq "
            "WHERE n.user_id = ?",
        }[table]
        with self._tx.lock, self._tx.read(), sql.translated("count the lexical index"):
            return int(self._conn.execute(statement, (user,)).fetchone()[0])

    def rule(self) -> int:
        """The index rule's version the FTS5 tables were written by."""
        with self._tx.lock, self._tx.read(), sql.translated("read the lexical index's rule"):
            return rule_of(self._conn)

    def reindex(self) -> int:
        """Bring the FTS5 tables to the current rule (``reindex``); the rows indexed again."""
        with self._tx.lock, self._tx.write(), sql.translated("reindex the lexical index"):
            done = reindex(self._conn)
        self.forget_terms()
        return done

    def search(self, table: str, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        """BM25 top-k of FTS5 ``table`` (or its field, ``"nodes"`` / ``"context"``) for ``tenant``:
        from the impact-ordered index for a large store, else FTS5 bounded by the query's term split."""
        table = FIELDS.get(table, table)
        if k <= 0:
            return []
        label = "lexical search" if table == "nodes_fts" else "context search"
        indexed = self._indexed(table)
        with self._tx.lock, self._tx.read(), sql.translated(label):
            if indexed:
                found = self._impact_search(table, tenant, query, k)
                if found is not None:
                    return found
            where, share = sql.tenant_sql(tenant), self.share(tenant)
            rare, common = self.query_split(table, query, share)
            if not rare:
                return []
            return sql.fts_top_split(self._conn, table, rare, common, k, where, share)

    def probe(self, tenant: Tenant, terms: Sequence[str], k: int) -> list[tuple[str, float]] | None:
        """Write-time candidates from the rows holding ``terms``' rare ones (``_sqlite_scale``);
        ``None`` below ``scale.PROBE_FROM`` indexed rows, where ``search`` answers (call in a
        snapshot, locked)."""
        return scale.lexical_probe(
            self._conn, list(terms), k, sql.tenant_sql(tenant), user=tenant.user, common=self.common_terms
        )

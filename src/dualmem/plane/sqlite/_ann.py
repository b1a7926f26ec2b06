"""The SQLite store's approximate vector search: an ``ann.AnnIndex`` and the upkeep around it.

:class:`Approximate` is what ``SQLiteStore`` sees of it: ``use`` (turn it on above a user size, or
off), ``search`` (an answer, or ``None`` where exact search answers), ``deleting`` (rows a write
deletes), ``committed`` / ``rolled_back`` (after the store's outermost commit or a rollback) and
``close``. After a commit that deleted vectors, their slots are zeroed in the segment files
(``_ann_erase``; docs/storage.md, "Forget erases") and a full delta becomes a segment. Both run
after the commit: a failure is logged, never raised.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from dualmem.errors import StoreError
from dualmem.plane import ann
from dualmem.plane.sqlite import _ann_erase as ann_erase
from dualmem.plane.sqlite import _scale as scale
from dualmem.plane.sqlite import _sql as sql
from dualmem.types import Tenant, Vector

__all__ = ["Approximate"]

log = logging.getLogger("dualmem")


class Approximate:
    """Approximate vector search for the users of at least ``threshold`` nodes of one database."""

    def __init__(self, path: str) -> None:
        self.path = path
        #: the loaded index (``None``: approximate search is off, or ``usearch`` is not installed)
        self.index: ann.AnnIndex | None = None
        self.threshold = 0
        #: vector rows deleted since the last commit, to be zeroed in the segment files after it
        self._doomed: list[ann_erase.Doomed] = []

    def use(self, threshold: int, *, folder: str | Path | None = None) -> None:
        """On for users with at least ``threshold`` nodes (0: off) when ``ann.available()``; the index
        lives in ``folder`` (default: ``<file>.ann`` beside the database; in memory for ``:memory:``)."""
        self.threshold = threshold
        usable = threshold > 0 and ann.available()
        self.index = ann.AnnIndex(self.path, folder=folder) if usable else None

    def search(
        self, conn: sqlite3.Connection, tenant: Tenant, query: Vector, k: int
    ) -> list[tuple[str, float]] | None:
        """The index's top-k for a user at or above the threshold; ``None`` for search to be exact."""
        if self.index is None or scale.user_total(conn, tenant.user) < self.threshold:
            return None
        return self.index.search(conn, tenant, query, k)

    def deleting(self, conn: sqlite3.Connection, node_ids: Sequence[str]) -> None:
        """Before a write deletes ``node_ids``: their rows leave the index, and their slots are
        zeroed in the files after the commit (also while search is off: an earlier open indexed them)."""
        if self.index is None and self._folder() is None:
            return
        rows = ann_erase.doomed(conn, node_ids)
        self._doomed.extend(rows)
        if self.index is not None:
            self.index.forget(conn, [(row.user_id, row.rowid) for row in rows])

    def committed(self, conn: sqlite3.Connection) -> None:
        """After the outermost commit: erase what it deleted from the files, extend the segments."""
        if self._doomed:
            self._erase_segments(conn)
        if self.index is not None:
            try:
                with sql.translated("build an approximate index segment"):
                    self.index.settle(conn)
            except (StoreError, OSError) as exc:
                log.warning("could not extend the approximate index of %s: %s", self.path, exc)

    def rolled_back(self) -> None:
        if self.index is not None:
            self.index.rolled_back()

    def close(self) -> None:
        if self.index is not None:
            self.index.drop()

    def _folder(self) -> Path | None:
        """The segment folder, when there is one on disk (also while search is off)."""
        folder = self.index.folder if self.index is not None else None
        if folder is None and self.index is None and self.path != ":memory:":
            folder = Path(self.path + ".ann")
        return folder if folder is not None and folder.is_dir() else None

    def _erase_segments(self, conn: sqlite3.Connection) -> None:
        doomed, self._doomed = self._doomed, []
        folder = self._folder()
        if folder is None:
            return
        try:
            with sql.translated("erase forgotten vectors from the approximate index"):
                done = ann_erase.erase(folder, ann_erase.still_deleted(conn, doomed))
        except (StoreError, OSError) as exc:
            log.warning("could not erase forgotten vectors from the index files of %s: %s", self.path, exc)
            return
        if done.shredded:
            log.warning("rebuilding unreadable approximate index files of %s: %s", self.path, done.shredded)
            if self.index is not None:
                self.index.discard(done.shredded)

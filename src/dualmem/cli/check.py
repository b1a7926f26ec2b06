"""``dualmem check``: is the database healthy? A report on stdout (readable on a terminal or with
``--format human``, JSON in a pipe or with ``--json``); exit 0 healthy, 1 not.

Opens the store directly (no embedder, no controller). ``--repair`` fixes what the store can (FTS5
rebuild, links to missing nodes, stray vectors), then completes pending nodes through the write path
(with ``--embedder`` and ``--controller``), and reports what was found before and after. ``--repair
--reembed`` also embeds every memory again (``write/reembed.py``): for databases written before the
speaker left the embedded text and long texts got chunk vectors. With the
global ``--read-only`` nothing is written (the FTS5 check, which needs a writable connection, is skipped).
``--lexical-index`` only (re)builds the SQLite store's lexical index (``--repair``'s last step, without
the integrity checks before it).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dualmem.errors import ConfigError, DatabaseCorrupt

if TYPE_CHECKING:  # the store is imported when the command runs (a fast ``dualmem --version``)
    from dualmem.plane import MemoryStore
    from dualmem.plane.check import CheckReport

__all__ = ["Outcome", "cmd_check", "register"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """A command's JSON result with the exit code it chose (the CLI prints ``data`` and exits ``code``)."""

    data: object
    code: int


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from dualmem.cli.options import output_options
    from dualmem.cli.render import render_check

    p = sub.add_parser(
        "check",
        help="check the database: SQLite, FTS5, vectors, links, pending writes",
        parents=[output_options()],
    )
    p.add_argument("--repair", action="store_true", help="fix what can be fixed, then check again")
    p.add_argument(
        "--reembed",
        action="store_true",
        help="with --repair: embed every memory again with today's rules (content only, long texts as "
        "chunks; for a database whose vectors hold the speaker's name) using --embedder",
    )
    p.add_argument(
        "--lexical-index",
        action="store_true",
        help="only (re)build the SQLite store's lexical index (no integrity checks; what --repair does "
        "last; a large store also keeps it up by small steps in its searches)",
    )
    p.set_defaults(handler=cmd_check, render=render_check)


def _build_index(store: MemoryStore, path: str) -> Outcome:
    """``--lexical-index``: the impact-ordered index of an SQLite store, built in one write."""
    from dualmem.plane.base import LexicalIndexAdmin

    if not isinstance(store, LexicalIndexAdmin):
        raise ConfigError(
            "--lexical-index is for an SQLite database", hint="PostgreSQL ranks with its own index"
        )
    postings = store.build_lexical_index()
    return Outcome({"db": path, "lexical_index": {"postings": postings, **store.lexical_index_state()}}, 0)


def cmd_check(args: argparse.Namespace) -> Outcome:
    from dualmem.cli.options import default_db
    from dualmem.plane import open_store
    from dualmem.plane.check import CheckReport, Problem

    path = args.db or default_db()
    if "://" not in path and path != ":memory:" and not Path(path).is_file():
        raise ConfigError(f"no database at {path}", hint="pass --db PATH or set DUALMEM_DB")
    try:
        store = open_store(path, timeout=args.lock_timeout, read_only=args.read_only and not args.repair)
    except DatabaseCorrupt as exc:
        report = CheckReport(False, (Problem("open", 1, (exc.one_line(),), repairable=False),))
        return Outcome({"db": path, **report.to_json()}, 1)
    try:
        if args.lexical_index:
            if args.read_only:
                raise ConfigError("--lexical-index writes the index", hint="drop --read-only")
            return _build_index(store, path)
        report = store.meta.check(repair=args.repair)
        if args.reembed and not args.repair:
            raise ConfigError("--reembed rewrites vectors", hint="pass it together with --repair")
        if args.repair and args.reembed:
            report = _reembed(store, args, report)
        if args.repair and "pending_nodes" in report.kinds():
            report = _repair_pending(store, args, report)
    finally:
        store.close()
    return Outcome({"db": path, **report.to_json()}, 0 if report.healthy else 1)


def _reembed(store: MemoryStore, args: argparse.Namespace, report: CheckReport) -> CheckReport:
    """Every node's vector (and chunks) made again by the write path's rules (``write/reembed.py``)."""
    from dualmem.embed import create_embedder
    from dualmem.plane.check import CheckReport
    from dualmem.write.reembed import reembed

    count = reembed(store, create_embedder(args.embedder))
    after = store.meta.check()
    kinds = (*report.repaired, "reembedded") if count else report.repaired
    return CheckReport(after.healthy, after.problems, kinds, report.before or report.problems)


def _repair_pending(store: MemoryStore, args: argparse.Namespace, report: CheckReport) -> CheckReport:
    """Pending nodes need the embedder and the controller: the write path's ``repair``."""
    from dualmem.cli.options import controller_options
    from dualmem.control import create_controller
    from dualmem.embed import create_embedder
    from dualmem.memory import Memory
    from dualmem.plane.check import CheckReport

    opts = controller_options(args)
    controller = (
        create_controller(args.controller, **opts)
        if isinstance(opts, dict)
        else create_controller(args.controller, config=opts)
    )
    memory = Memory(store, create_embedder(args.embedder), controller, answerer=None)
    memory.repair_all()
    memory.wait_for_consolidation()
    after = store.meta.check()
    before = report.before or report.problems
    return CheckReport(after.healthy, after.problems, (*report.repaired, "pending_nodes"), before)

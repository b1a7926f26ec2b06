"""``dualmem erase``: make forgotten memories unrecoverable from the database's files.

PostgreSQL keeps a deleted row's bytes in its table and index files, the planner's samples and the
WAL until they are rewritten; this runs what rewrites them (``dualmem.plane.erase``, docs/postgres.md)
and reports what it could not do. SQLite already erases on every forget (docs/storage.md); here it
only truncates a WAL that other readers kept from being truncated then. A readable report on a
terminal (JSON in a pipe or with ``--json``); exit 0 when the erase is complete, 1 when something
still keeps forgotten bytes (each named in ``problems``).
"""

from __future__ import annotations

import argparse
from urllib.parse import urlsplit, urlunsplit

from dualmem.cli.check import Outcome
from dualmem.cli.options import db_path, require_database
from dualmem.errors import ConfigError

__all__ = ["cmd_erase", "register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from dualmem.cli.options import output_options
    from dualmem.cli.render import render_erase

    p = sub.add_parser(
        "erase",
        help="make forgotten memories unrecoverable from the database's files (PostgreSQL: rewrite the "
        "schema's tables, checkpoint, switch the WAL; run it after forgetting, in a quiet moment)",
        parents=[output_options()],
    )
    p.set_defaults(handler=cmd_erase, render=render_erase)


def cmd_erase(args: argparse.Namespace) -> Outcome:
    from dualmem.plane import open_store
    from dualmem.plane.base import Erasable

    path = db_path(args)
    require_database(path)
    if args.read_only:
        raise ConfigError("erase rewrites the database", hint="drop --read-only")
    store = open_store(path, timeout=args.lock_timeout)
    try:
        if not isinstance(store, Erasable):
            raise ConfigError(f"erase does not know the store at {path}")
        report = store.erase()
    finally:
        store.close()
    return Outcome({"db": _shown(path), **report.to_json()}, 0 if report.complete else 1)


def _shown(path: str) -> str:
    """``path`` as printed: a URL's password replaced by ``***``."""
    if "://" not in path:
        return path
    parts = urlsplit(path)
    if parts.password is None:
        return path
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))

"""``dualmem migrate --from A --to B``: copy a memory between stores (SQLite file <-> PostgreSQL URL)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dualmem.cli.options import require_database

if TYPE_CHECKING:
    from dualmem.plane.migrate import UserReport

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "migrate",
        help="copy every tenant from one store to another, verified and resumable",
        description="Copy a memory tenant by tenant (e.g. mem.db -> postgresql://...); run it again to "
        "resume an interrupted copy. Users already finished in the target are skipped.",
    )
    p.add_argument("--from", dest="source", required=True, help="source store: a file path or a URL")
    p.add_argument("--to", dest="target", required=True, help="target store: a file path or a URL")
    p.add_argument("--chunk", type=int, default=500, help="nodes per transaction (default 500)")
    p.set_defaults(handler=cmd_migrate)


def _open(where: str, timeout: float) -> Any:
    from dualmem.plane import open_store

    return open_store(where if "://" in where else Path(where).expanduser(), timeout=timeout)


def cmd_migrate(args: argparse.Namespace) -> dict[str, object]:
    from dualmem.plane.migrate import migrate_store

    quiet = bool(getattr(args, "quiet", False))

    def progress(report: UserReport) -> None:
        if not quiet:
            print(f"dualmem: migrated user {report.user!r}: {report.nodes} nodes", file=sys.stderr)

    if "://" not in args.source:
        require_database(str(Path(args.source).expanduser()))  # a missing source is not an empty one
    source = _open(args.source, args.lock_timeout)
    try:
        target = _open(args.target, args.lock_timeout)
        try:
            return migrate_store(source, target, chunk=max(1, args.chunk), on_user=progress).to_json()
        finally:
            target.close()
    finally:
        source.close()

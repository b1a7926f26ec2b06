"""Lifecycle subcommands: consolidate, update, history, forget, export, import."""

from __future__ import annotations

import argparse
import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dualmem.cli.options import db_path, filter_from_args, is_file_path, open_memory, progress_for, scope_of
from dualmem.cli.render import node_json, render_fields, render_history
from dualmem.errors import InvalidInput

__all__ = ["register"]


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    tenant: list[argparse.ArgumentParser],
    filters: list[argparse.ArgumentParser],
) -> None:
    """``tenant``: the parents of a tenant command (tenant and output flags); ``filters``: those and
    the memory filter flags."""
    p = sub.add_parser(
        "consolidate", help="run one consolidation pass over the tenant's recent memories", parents=tenant
    )
    p.set_defaults(handler=cmd_consolidate, render=render_fields)

    p = sub.add_parser("update", help="correct a memory; the old text stays as history", parents=tenant)
    p.add_argument("id")
    p.add_argument("text")
    p.set_defaults(handler=cmd_update, render=lambda d: f"updated {d['old']} -> {d['new']}")

    p = sub.add_parser("history", help="every version of a memory, oldest first", parents=tenant)
    p.add_argument("id")
    p.set_defaults(handler=cmd_history, render=render_history)

    p = sub.add_parser(
        "forget",
        help="remove memories for good (all versions, derived summaries, cached answers): id, filter, --all",
        parents=filters,
    )
    p.add_argument("id", nargs="?")
    p.add_argument("--all", action="store_true", help="every memory of the tenant")
    p.set_defaults(handler=cmd_forget, render=render_fields)

    p = sub.add_parser("export", help="write the tenant's memory as JSON Lines", parents=tenant)
    p.add_argument("file", type=Path)
    p.set_defaults(handler=cmd_export, render=render_fields)

    p = sub.add_parser(
        "import",
        help="load a JSON Lines export into the tenant (all or nothing; another tenant's file is refused)",
        parents=tenant,
    )
    p.add_argument("file", type=Path)
    p.set_defaults(handler=cmd_import, render=render_fields)


def cmd_consolidate(args: argparse.Namespace) -> dict[str, Any]:
    with open_memory(args) as mem:
        return scope_of(mem, args).consolidate().to_json()


def cmd_update(args: argparse.Namespace) -> dict[str, Any]:
    with open_memory(args) as mem:
        scope = scope_of(mem, args)
        new = scope.update(args.id, args.text)
        return {"old": args.id, "new": new, "node": node_json(scope.get(new))}


def cmd_history(args: argparse.Namespace) -> dict[str, Any]:
    with open_memory(args) as mem:
        return {
            "id": args.id,
            "versions": [node_json(n) for n in scope_of(mem, args).history(args.id)],
        }


def cmd_forget(args: argparse.Namespace) -> dict[str, Any]:
    where = filter_from_args(args)
    chosen = sum((args.id is not None, not where.empty(), args.all))
    if chosen != 1:
        raise InvalidInput("give exactly one of: an id, filter options (--speaker/--since/...), or --all")
    with open_memory(args) as mem:
        scope = scope_of(mem, args)
        if args.all:
            removed = scope.forget_all()
        elif args.id is not None:
            removed = scope.forget(args.id)
        else:
            removed = scope.forget(where=where)
        return {"forgotten": removed}


def cmd_export(args: argparse.Namespace) -> dict[str, Any]:
    with open_memory(args) as mem:
        lines = scope_of(mem, args).export_jsonl(args.file)
        return {"file": str(args.file), "lines": lines}


def cmd_import(args: argparse.Namespace) -> dict[str, Any]:
    # one transaction without steps to count: the heartbeat shows the time it has taken so far
    with (
        _removed_on_failure(db_path(args)),
        open_memory(args, create=True) as mem,
        progress_for(args, f"import {args.file.name}"),
    ):
        report = scope_of(mem, args).import_jsonl(args.file)
        return {
            "file": str(args.file),
            "nodes": report.nodes,
            "edges": report.edges,
            "decisions": report.decisions,
        }


@contextlib.contextmanager
def _removed_on_failure(path: str) -> Iterator[None]:
    """A database file this command creates is removed again if the command fails, with its SQLite
    side files and the folders made for it: a failed import leaves nothing behind. A database that
    existed before is left as it is (the import wrote nothing to it)."""
    if not is_file_path(path) or Path(path).exists():
        yield
        return
    target = Path(path).absolute()
    folders = [d for d in target.parents if not d.exists()]  # innermost first
    try:
        yield
    except BaseException:
        for side in ("", "-wal", "-shm", "-journal"):
            Path(f"{target}{side}").unlink(missing_ok=True)
        shutil.rmtree(f"{target}.ann", ignore_errors=True)
        for folder in folders:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise

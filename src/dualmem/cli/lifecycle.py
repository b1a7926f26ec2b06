"""Lifecycle subcommands: consolidate, update, history, forget, export, import."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dualmem.cli.options import (
    db_path,
    filter_from_args,
    is_file_path,
    open_memory,
    progress_for,
    scope_of,
    tenant_user,
)
from dualmem.cli.render import node_json, render_fields, render_forget, render_history, truncate
from dualmem.errors import InvalidInput, NotFound, UserError

if TYPE_CHECKING:
    from dualmem.types import Node

__all__ = ["ConfirmationRequired", "register"]


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
    p.add_argument(
        "--at",
        help="when the correction was observed (ISO-8601, epoch seconds, '8 May 2023'...): the new "
        "version's time and the old one's end; default: the new version keeps the old time, the old "
        "one ends now",
    )
    p.set_defaults(handler=cmd_update, render=lambda d: f"updated {d['old']} -> {d['new']}")

    p = sub.add_parser("history", help="every version of a memory, oldest first", parents=tenant)
    p.add_argument("id")
    p.set_defaults(handler=cmd_history, render=render_history)

    p = sub.add_parser(
        "forget",
        help="remove memories for good (all versions, derived summaries, cached answers): id, filter, --all",
        description="Remove memories for good, each with all its versions, derived summaries and cached "
        "answers. 'forget ID' is immediate. --all and the filter options first say how many memories "
        "would go and ask (y/N) on a terminal; without one they need --yes. --dry-run only shows "
        "what would go.",
        parents=filters,
    )
    p.add_argument("id", nargs="?", help="one memory (forgotten at once, without asking)")
    p.add_argument("--all", action="store_true", help="every memory of the tenant")
    p.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="do not ask: for scripts (--all and filters need it without a terminal)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="show how many memories would go, and which; forget nothing"
    )
    p.set_defaults(handler=cmd_forget, render=render_forget)

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
        new = scope.update(args.id, args.text, at=args.at)
        return {"old": args.id, "new": new, "node": node_json(scope.get(new))}


def cmd_history(args: argparse.Namespace) -> dict[str, Any]:
    with open_memory(args) as mem:
        return {
            "id": args.id,
            "versions": [node_json(n) for n in scope_of(mem, args).history(args.id)],
        }


class ConfirmationRequired(UserError):
    """A destructive command was run without a terminal to ask on and without ``--yes``."""

    code = "confirmation-required"


def cmd_forget(args: argparse.Namespace) -> dict[str, Any]:
    where = filter_from_args(args)
    chosen = sum((args.id is not None, not where.empty(), args.all))
    if chosen != 1:
        raise InvalidInput("give exactly one of: an id, filter options (--speaker/--since/...), or --all")
    matching = None if args.all or args.id is not None else where
    with open_memory(args) as mem:
        scope = scope_of(mem, args)
        if args.dry_run:  # HTTP POST /v1/forget/preview's document
            from dualmem.wire.schemas import would_forget_out

            return would_forget_out(scope.would_forget(args.id, where=matching)).model_dump(mode="json")
        if args.id is None and not args.yes and not _confirmed(scope.would_forget(where=matching), args):
            print("dualmem: nothing forgotten", file=sys.stderr)
            return {"forgotten": 0}
        if args.all:
            removed = scope.forget_all()
        elif args.id is not None:
            removed = scope.forget(args.id)
        else:
            removed = scope.forget(where=where)
        return {"forgotten": removed}


def _what(args: argparse.Namespace) -> str:
    """``forget --all`` or ``forget --speaker Jon --since 2024-01-01``, for the prompt and errors."""
    if args.all:
        return "forget --all"
    flags = [(f"--{name}", getattr(args, name)) for name in ("speaker", "session", "since", "until")]
    shown = [f"{flag} {value}" for flag, value in flags if value is not None]
    shown += [f"--metadata {item}" for item in args.meta]
    return "forget " + " ".join(shown)


def _confirmed(doomed: list[Node], args: argparse.Namespace) -> bool:
    """Ask on the terminal before a forget by filter or ``--all``; without a terminal refuse
    (``ConfirmationRequired``, exit 2): a script says ``--yes``. Nothing to forget needs no answer."""
    if not doomed:  # a filter that matches nothing forgets nothing: no question, exit 0
        return True
    count = f"{len(doomed)} {'memory' if len(doomed) == 1 else 'memories'}"
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise ConfirmationRequired(
            f"{_what(args)} would remove {count} and no terminal is there to confirm it",
            hint="pass --yes to confirm, or --dry-run to see what would go",
        )
    shown = doomed[:5]
    lines = [f"  {n.id}  {truncate(n.content, 60)}" for n in shown]
    if len(doomed) > len(shown):
        lines.append(f"  ... and {len(doomed) - len(shown)} more (--dry-run lists them all)")
    tenant = scope_label(args)
    sys.stderr.write("\n".join([f"{_what(args)}: {count} of {tenant} would go for good:", *lines]) + "\n")
    sys.stderr.write(f"Forget {count}? [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def scope_label(args: argparse.Namespace) -> str:
    """``user 'mira'`` (with its agent and run when given)."""
    label = f"user {tenant_user(args)!r}"
    if args.agent:
        label += f", agent {args.agent!r}"
    if args.run:
        label += f", run {args.run!r}"
    return label


def cmd_export(args: argparse.Namespace) -> dict[str, Any]:
    folder = args.file.parent
    if not folder.is_dir():
        raise NotFound(
            f"no folder {folder} to write {args.file.name} in"
            if not folder.exists()
            else f"{folder} is not a folder",
            hint="create the folder first, or export to another path",
        )
    with open_memory(args) as mem:
        try:
            lines = scope_of(mem, args).export_jsonl(args.file)
        except OSError as exc:  # a folder in the file's place, no permission, a full disk
            raise InvalidInput(f"cannot write {args.file}: {exc.strerror or exc}") from None
        return {"file": str(args.file), "lines": lines}


def cmd_import(args: argparse.Namespace) -> dict[str, Any]:
    # one transaction without steps to count: the heartbeat shows the time it has taken so far
    with (
        _removed_on_failure(db_path(args)),
        open_memory(args, create=True, announce=True) as mem,
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

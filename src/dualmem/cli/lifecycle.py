"""Lifecycle subcommands: consolidate, update, history, forget, export, import."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dualmem.cli.commands import node_json, open_memory, scope_of
from dualmem.errors import InvalidInput

__all__ = ["register"]


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], tenant: list[argparse.ArgumentParser]
) -> None:
    p = sub.add_parser(
        "consolidate", help="run one consolidation pass over the tenant's recent memories", parents=tenant
    )
    p.set_defaults(handler=cmd_consolidate)

    p = sub.add_parser("update", help="correct a memory; the old text stays as history", parents=tenant)
    p.add_argument("id")
    p.add_argument("text")
    p.set_defaults(handler=cmd_update)

    p = sub.add_parser("history", help="every version of a memory, oldest first", parents=tenant)
    p.add_argument("id")
    p.set_defaults(handler=cmd_history)

    p = sub.add_parser(
        "forget",
        help="remove memories for good (all versions, derived summaries, cached answers): id, filter, --all",
        parents=tenant,
    )
    p.add_argument("id", nargs="?")
    p.add_argument("--speaker")
    p.add_argument("--session")
    p.add_argument("--since", help="observed at or after this time")
    p.add_argument("--until", help="observed before this time")
    p.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE", help="metadata equality")
    p.add_argument("--all", action="store_true", help="every memory of the tenant")
    p.set_defaults(handler=cmd_forget)

    p = sub.add_parser("export", help="write the tenant's memory as JSON Lines", parents=tenant)
    p.add_argument("file", type=Path)
    p.set_defaults(handler=cmd_export)

    p = sub.add_parser(
        "import",
        help="load a JSON Lines export into the tenant (all or nothing; another tenant's file is refused)",
        parents=tenant,
    )
    p.add_argument("file", type=Path)
    p.set_defaults(handler=cmd_import)


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
    from dualmem.memory import Filter
    from dualmem.text.timeparse import parse_time

    metadata: dict[str, Any] = {}
    for item in args.meta:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--meta needs KEY=VALUE, got {item!r}")
        metadata[key] = value
    where = Filter(
        speaker=args.speaker,
        session=args.session,
        since=parse_time(args.since),
        until=parse_time(args.until),
        metadata=metadata or None,
    )
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
    with open_memory(args) as mem:
        report = scope_of(mem, args).import_jsonl(args.file)
        return {
            "file": str(args.file),
            "nodes": report.nodes,
            "edges": report.edges,
            "decisions": report.decisions,
        }

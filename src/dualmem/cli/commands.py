"""Subcommands of the ``dualmem`` CLI. Each parses, calls the facade, and returns JSON-able data; the
``render`` default of a subcommand draws the same data as readable text (a terminal, ``--format human``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from dualmem.cli import render
from dualmem.cli.options import (
    filter_from_args,
    filter_options,
    note_if_empty,
    open_memory,
    output_options,
    progress_for,
    scope_of,
    tenant_options,
)
from dualmem.cli.render import node_json
from dualmem.errors import InvalidInput

# The memory core, its schemas (pydantic) and the embedder are imported by the commands that use them:
# building the parser imports none of them, so ``dualmem --version`` or a typo answers at once.

#: Evidence a search may return at most: ``dualmem.types.MAX_K`` (tests/test_cli_startup.py checks
#: they agree; that module imports numpy).
MAX_K = 100

__all__ = ["add_text", "k_value", "node_json", "open_memory", "register"]


def k_value(text: str) -> int:
    """``-k``: how much evidence, 1 to ``MAX_K`` (the limit every adapter shares)."""
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"k must be an integer, not {text!r}") from None
    if not 1 <= k <= MAX_K:
        raise argparse.ArgumentTypeError(f"k must be from 1 to {MAX_K}, got {k}")
    return k


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tenant = [tenant_options(), output_options()]
    filters = [*tenant, filter_options()]
    p = sub.add_parser("add", help="store one observation", parents=tenant)
    p.add_argument("text", nargs="?", help="the text to store; '-' reads it from stdin")
    p.add_argument(
        "--file", type=Path, metavar="PATH", help="read the text from a UTF-8 file (instead of TEXT)"
    )
    p.add_argument("--speaker")
    p.add_argument(
        "--at",
        help="when it was observed (ISO-8601, epoch seconds, '8 May 2023'...); default: now (UTC)",
    )
    p.add_argument("--session")
    p.add_argument("--source")
    p.add_argument("--turn-id", help="the turn's id: adding the same turn again returns the stored one")
    p.add_argument("--key", help="an idempotency key: a retried add with the same key stores nothing new")
    p.set_defaults(handler=cmd_add, render=lambda d: f"added {d['id']}")

    p = sub.add_parser(
        "ingest", help="store every turn of a conversation file (dualmem JSON or LoCoMo)", parents=tenant
    )
    p.add_argument("file", type=Path)
    p.set_defaults(handler=cmd_ingest, render=render.render_fields)

    search_parents = [
        tenant_options(),
        output_options(json_help="JSON with the full trace"),
        filter_options(),
    ]
    p = sub.add_parser("search", help="adaptive retrieval: evidence for a query", parents=search_parents)
    p.add_argument("query")
    p.add_argument("-k", type=k_value, default=10, help=f"evidence to return (1 to {MAX_K})")
    p.add_argument("--trace", action="store_true", help="print a readable trace to stdout instead of JSON")
    p.set_defaults(handler=cmd_search, render=render.render_search)

    p = sub.add_parser(
        "ask", aliases=["answer"], help="retrieve, then answer with System Two", parents=filters
    )
    p.add_argument("query")
    p.add_argument("-k", type=k_value, default=10, help=f"evidence to return (1 to {MAX_K})")
    p.add_argument("--trace", action="store_true", help="include the retrieval trace")
    p.set_defaults(handler=cmd_ask, render=render.render_answer)

    _register_reads(sub, tenant, filters)
    from dualmem.cli import calibrate, demo, learn, lifecycle

    demo.register(sub)
    lifecycle.register(sub, tenant, filters)
    _register_bench(sub)
    calibrate.register(sub)
    learn.register(sub)


def _register_reads(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    tenant: list[argparse.ArgumentParser],
    filters: list[argparse.ArgumentParser],
) -> None:
    p = sub.add_parser("get", help="one memory by id", parents=tenant)
    p.add_argument("id")
    p.set_defaults(handler=cmd_get, render=render.render_node)

    p = sub.add_parser(
        "list", help="the tenant's memories in time order, filtered and paged", parents=filters
    )
    p.add_argument("--limit", type=int, default=100, help="memories to print at most (default 100)")
    p.add_argument("--offset", type=int, default=0, help="memories to skip first (default 0)")
    p.add_argument(
        "--status",
        choices=["current", "superseded", "pending", "complete", "all"],
        default="all",
        help="current: not superseded by a later version; superseded: an older version (valid_to set); "
        "pending: a write a controller outage left unfinished; complete: not pending; all (default)",
    )
    p.set_defaults(handler=cmd_list, render=render.render_list)

    p = sub.add_parser("stats", help="the tenant's counts of nodes, edges by view, entities", parents=tenant)
    p.add_argument(
        "--all-users", action="store_true", help="admin: every tenant of the database, with each user's count"
    )
    p.add_argument("--plot", type=Path, metavar="FILE.png", help="also draw memory growth and edges per view")
    p.add_argument("--by", choices=["observed", "written"], default="observed", help="the plot's time axis")
    p.set_defaults(handler=cmd_stats, render=render.render_stats)

    p = sub.add_parser(
        "delete",
        help="alias of 'forget ID': the memory, all its versions and everything derived from it",
        parents=tenant,
    )
    p.add_argument("id")
    p.set_defaults(handler=cmd_delete, render=render.render_fields)

    p = sub.add_parser("inspect", help="a memory with its edges and recorded decisions", parents=tenant)
    p.add_argument("id")
    p.set_defaults(handler=cmd_inspect, render=render.render_inspect)

    p = sub.add_parser(
        "repair",
        help="complete the tenant's writes left pending by a controller outage; --views: give older "
        "memories the edges of views turned on since",
        parents=tenant,
    )
    p.add_argument("--all-users", action="store_true", help="admin: repair every tenant of the database")
    p.add_argument(
        "--views",
        action="store_true",
        help="also add the edges of the profile's views (e.g. --profile views) that memories written "
        "while those views were off do not have",
    )
    p.set_defaults(handler=cmd_repair, render=render.render_fields)


def _register_bench(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="benchmarks")
    bench_sub = p.add_subparsers(dest="bench", required=True, metavar="BENCH")
    b = bench_sub.add_parser("locomo", help="the LoCoMo benchmark: recall, QA, build time, latency")
    from dualmem.cli.bench import add_bench_arguments

    add_bench_arguments(b)
    b.set_defaults(handler=cmd_bench_locomo)


# -- commands ----------------------------------------------------------------------------------
def add_text(args: argparse.Namespace) -> str:
    """``add``'s text: the argument, stdin for ``-``, or ``--file``'s UTF-8 text (read whole: a long
    text does not fit in a command line). Text read from stdin or a file loses its trailing newlines."""
    if (args.text is None) == (args.file is None):
        raise InvalidInput(
            "give the text to store, '-' to read it from stdin, or --file PATH (one of them)",
            hint="e.g. dualmem add 'Mira rides a blue bike.'",
        )
    from dualmem.text.textfile import decode_text, read_text_file

    hint = "add stores UTF-8 text; for a conversation file use ingest"
    if args.file is not None:
        text = read_text_file(args.file, hint=hint)
    elif args.text == "-":
        if sys.stdin.isatty():
            print("dualmem: reading the text from stdin (end it with Ctrl-D)", file=sys.stderr)
        raw = getattr(sys.stdin, "buffer", None)
        text = decode_text(raw.read(), "stdin", hint=hint) if raw is not None else sys.stdin.read()
    else:
        return str(args.text)
    return text.rstrip("\r\n")


def cmd_add(args: argparse.Namespace) -> dict[str, Any]:
    from dualmem.memory import observed_at
    from dualmem.text.timeparse import parse_time
    from dualmem.types import Observation

    text = add_text(args)
    at = parse_time(observed_at(args.at))  # the rule HTTP and MCP follow: no time given is now (UTC)
    fields = {
        "speaker": args.speaker,
        "session": args.session,
        "source": args.source,
        "turn_id": args.turn_id,
    }
    Observation(content=text, at=at, **fields)  # bad input is refused before a database is made
    with open_memory(args, create=True, announce=True) as mem:
        scope = scope_of(mem, args)
        node_id = scope.add(
            text,
            at=at,
            key=args.key,
            **fields,
        )
        return node_json(scope.get(node_id))


def cmd_ingest(args: argparse.Namespace) -> dict[str, Any]:
    from dualmem.conversations import load_observations

    load_observations(args.file)  # a missing, binary or malformed file is refused before a database is made
    with (
        open_memory(args, create=True, announce=True) as mem,
        progress_for(args, f"ingest {args.file.name}") as progress,
    ):
        scope = scope_of(mem, args)
        started = time.perf_counter()
        ids = scope.ingest(args.file, on_progress=progress)
        elapsed = time.perf_counter() - started
        return {
            "file": str(args.file),
            "stored": len(ids),
            "seconds": round(elapsed, 3),
            "turns_per_s": round(len(ids) / elapsed, 1) if elapsed > 0 else None,
            "pending": scope.stats()["pending"],
        }


def cmd_search(args: argparse.Namespace) -> dict[str, Any] | str:
    from dualmem.read.trace import render_trace
    from dualmem.wire.schemas import search_out

    where = filter_from_args(args)
    with open_memory(args) as mem:
        found = scope_of(mem, args).search(args.query, k=args.k, where=where)
        if not found.evidence:
            note_if_empty(mem, args)
        full = bool(getattr(args, "json", False))
        if args.trace and not full:
            lines = [render_trace(found.trace), "", "evidence:"]
            for i, e in enumerate(found.evidence, 1):
                when = e.node.at.date().isoformat() if e.node.at else "-"
                lines.append(
                    f"{i:>2}. [{e.score:.3f} {e.view}] ({when}) {e.node.speaker or ''}: {e.node.content}"
                )
            return "\n".join(lines)
        return search_out(found, with_trace=full).model_dump(mode="json")


def cmd_ask(args: argparse.Namespace) -> dict[str, Any]:
    from dualmem.wire.schemas import answer_out

    where = filter_from_args(args)
    with open_memory(args) as mem:
        ans = scope_of(mem, args).answer(args.query, k=args.k, where=where)
        if not ans.evidence:
            note_if_empty(mem, args)
        return answer_out(args.query, ans, with_trace=args.trace).model_dump(mode="json")


def cmd_get(args: argparse.Namespace) -> dict[str, Any]:
    with open_memory(args) as mem:
        return node_json(scope_of(mem, args).get(args.id))


def cmd_list(args: argparse.Namespace) -> dict[str, Any]:
    from dualmem.wire.schemas import node_list

    where = filter_from_args(args)
    if args.limit < 1:  # one more is asked for below (it tells whether a next page exists)
        raise InvalidInput("--limit must be at least 1")
    with open_memory(args) as mem:
        scope = scope_of(mem, args)
        status = None if args.status == "all" else args.status
        nodes = scope.list_memories(where=where, limit=args.limit + 1, offset=args.offset, status=status)
        if not nodes and not args.offset:
            note_if_empty(mem, args)
        return node_list(nodes, limit=args.limit, offset=args.offset).model_dump(mode="json")


def cmd_stats(args: argparse.Namespace) -> dict[str, Any]:
    with open_memory(args) as mem:
        out = dict(mem.stats_all() if args.all_users else scope_of(mem, args).stats())
        if args.plot is not None:
            from dualmem.server.ui.growth import growth, plot_growth

            if args.all_users:
                raise InvalidInput("--plot draws one tenant", hint="drop --all-users")
            tenant = scope_of(mem, args).tenant
            data = growth(mem.store, tenant, by=args.by)
            out["plot"] = str(plot_growth(data, args.plot, title=f"Memory growth: {tenant.user}", by=args.by))
        return out


def cmd_delete(args: argparse.Namespace) -> dict[str, Any]:
    with open_memory(args) as mem:
        removed = scope_of(mem, args).delete(args.id)
        return {"deleted": args.id, "forgotten": removed}


def cmd_inspect(args: argparse.Namespace) -> dict[str, Any]:
    from dualmem.wire.schemas import inspection_out

    with open_memory(args) as mem:
        return inspection_out(scope_of(mem, args).inspect(args.id)).model_dump(mode="json")


def cmd_repair(args: argparse.Namespace) -> dict[str, Any]:
    with open_memory(args) as mem:
        report = mem.repair_all() if args.all_users else scope_of(mem, args).repair()
        out: dict[str, Any] = {
            "repaired": len(report.ids) - len(report.pending),
            "still_pending": len(report.pending),
        }
        if args.views:
            if not mem.profile.write.views:
                raise InvalidInput(
                    f"the profile {mem.profile.name!r} writes no view edges",
                    hint="pass --profile views (the database then keeps it) or a profile with write.views",
                )
            filled = mem.backfill_views() if args.all_users else scope_of(mem, args).backfill_views()
            out["views"] = filled.to_json()
        return out


def cmd_bench_locomo(args: argparse.Namespace) -> dict[str, Any]:
    from dualmem.bench import run_locomo
    from dualmem.cli.bench import bench_from_args
    from dualmem.cli.options import progress_enabled

    show = progress_enabled(args)
    config = bench_from_args(args)
    try:
        import matplotlib  # noqa: F401  (the plots need it; say so before the long run, not after)
    except ImportError:
        print(
            "dualmem: no PNG plots: matplotlib is not installed (pip install 'dualmem[bench]')",
            file=sys.stderr,
        )
    result = run_locomo(config, progress=show)
    return {
        "report": str(result.report),
        "results": str(result.results),
        "plots": [str(p) for p in result.plots],
        "summary": result.summary,
    }

"""Subcommands of the ``dualmem`` CLI. Each parses, calls the facade, and returns JSON-able data."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

from dualmem.bench._progress import Progress
from dualmem.errors import ConfigError, InvalidInput
from dualmem.memory import Memory, OpenOptions
from dualmem.read.trace import render_trace
from dualmem.scope import Scope
from dualmem.types import MAX_K, Evidence, Node

__all__ = ["k_value", "open_memory", "register"]


def k_value(text: str) -> int:
    """``-k``: how much evidence, 1 to ``MAX_K`` (the limit every adapter shares)."""
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"k must be an integer, not {text!r}") from None
    if not 1 <= k <= MAX_K:
        raise argparse.ArgumentTypeError(f"k must be from 1 to {MAX_K}, got {k}")
    return k


def tenant_options() -> argparse.ArgumentParser:
    """``--user``/``--agent``/``--run`` for a subcommand (they may also come before it)."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("tenant")
    group.add_argument(
        "--user", default=argparse.SUPPRESS, help="tenant user id (env DUALMEM_USER; default 'local')"
    )
    group.add_argument("--agent", default=argparse.SUPPRESS, help="narrow to one agent of the user")
    group.add_argument("--run", default=argparse.SUPPRESS, help="narrow to one run of the user")
    return parent


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tenant = [tenant_options()]
    p = sub.add_parser("add", help="store one observation", parents=tenant)
    p.add_argument("text")
    p.add_argument("--speaker")
    p.add_argument("--at", help="when it was observed (ISO-8601, epoch seconds, '8 May 2023'...)")
    p.add_argument("--session")
    p.add_argument("--source")
    p.add_argument("--turn-id", help="the turn's id: adding the same turn again returns the stored one")
    p.add_argument("--key", help="an idempotency key: a retried add with the same key stores nothing new")
    p.set_defaults(handler=cmd_add)

    p = sub.add_parser(
        "ingest", help="store every turn of a conversation file (dualmem JSON or LoCoMo)", parents=tenant
    )
    p.add_argument("file", type=Path)
    p.set_defaults(handler=cmd_ingest)

    p = sub.add_parser("search", help="adaptive retrieval: evidence for a query", parents=tenant)
    p.add_argument("query")
    p.add_argument("-k", type=k_value, default=10, help=f"evidence to return (1 to {MAX_K})")
    p.add_argument("--trace", action="store_true", help="print a readable trace to stdout instead of JSON")
    p.add_argument("--json", action="store_true", help="JSON with the full trace")
    p.set_defaults(handler=cmd_search)

    p = sub.add_parser("ask", help="retrieve, then answer with System Two", parents=tenant)
    p.add_argument("query")
    p.add_argument("-k", type=k_value, default=10, help=f"evidence to return (1 to {MAX_K})")
    p.add_argument("--trace", action="store_true", help="include the retrieval trace")
    p.set_defaults(handler=cmd_ask)

    p = sub.add_parser("stats", help="the tenant's counts of nodes, edges by view, entities", parents=tenant)
    p.add_argument("--all-users", action="store_true", help="admin: count every tenant of the database")
    p.add_argument("--plot", type=Path, metavar="FILE.png", help="also draw memory growth and edges per view")
    p.add_argument("--by", choices=["observed", "written"], default="observed", help="the plot's time axis")
    p.set_defaults(handler=cmd_stats)

    p = sub.add_parser(
        "delete",
        help="alias of 'forget ID': the memory, all its versions and everything derived from it",
        parents=tenant,
    )
    p.add_argument("id")
    p.set_defaults(handler=cmd_delete)

    p = sub.add_parser("inspect", help="a memory with its edges and recorded decisions", parents=tenant)
    p.add_argument("id")
    p.set_defaults(handler=cmd_inspect)

    p = sub.add_parser(
        "repair", help="complete the tenant's writes left pending by a controller outage", parents=tenant
    )
    p.add_argument("--all-users", action="store_true", help="admin: repair every tenant of the database")
    p.set_defaults(handler=cmd_repair)

    p = sub.add_parser("demo", help="ingest the bundled sample conversation and answer questions over it")
    p.add_argument("--keep", action="store_true", help="keep the demo database (default: a temp file)")
    p.set_defaults(handler=cmd_demo)

    from dualmem.cli import lifecycle

    lifecycle.register(sub, tenant)
    _register_bench(sub)
    from dualmem.cli import calibrate

    calibrate.register(sub)
    from dualmem.cli import learn

    learn.register(sub)


def _register_bench(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="benchmarks")
    bench_sub = p.add_subparsers(dest="bench", required=True, metavar="BENCH")
    b = bench_sub.add_parser("locomo", help="the LoCoMo benchmark: recall, QA, build time, latency")
    from dualmem.bench import add_bench_arguments

    add_bench_arguments(b)
    b.set_defaults(handler=cmd_bench_locomo)


# -- building a memory from flags ------------------------------------------------------------
def tenant_user(args: argparse.Namespace) -> str:
    user = args.user if args.user is not None else os.environ.get("DUALMEM_USER", "local")
    if not user.strip():
        raise InvalidInput("the user id is empty", hint="pass --user NAME or set DUALMEM_USER")
    return str(user)


def scope_of(mem: Memory, args: argparse.Namespace) -> Scope:
    """The tenant the flags name: ``--user`` (or DUALMEM_USER, or 'local'), ``--agent``, ``--run``."""
    return mem.scope(tenant_user(args), agent=args.agent, run=args.run)


def controller_options(args: argparse.Namespace) -> Any:
    """The typed config of a remote controller from the flags and the environment ({} for builtin)."""
    from dualmem.cli.backend import jev_config_from_args, llm_config_from_args

    if args.controller == "jev":
        return jev_config_from_args(args)
    if args.controller == "llm":
        return llm_config_from_args(args)
    return {}


def answerer_options(name: str) -> dict[str, Any]:
    if name != "chat":
        return {}
    env = os.environ
    url = env.get("DUALMEM_CHAT_URL", "https://api.openai.com/v1")
    model = env.get("DUALMEM_CHAT_MODEL", "gpt-4o-mini")
    return {"base_url": url, "model": model, "api_key": env.get("OPENAI_API_KEY")}


def embedder_options(args: argparse.Namespace) -> dict[str, Any]:
    """The embedder's options from the flags: ``--graph-cache DIR`` (or ``DUALMEM_GRAPH_CACHE``), the
    folder where MiniLM saves its optimised graph. The variable applies to the MiniLM embedder only;
    the flag with another embedder is a ``ConfigError``."""
    flag = getattr(args, "graph_cache", None)
    folder = flag or os.environ.get("DUALMEM_GRAPH_CACHE")
    from dualmem.embed import is_minilm

    minilm = is_minilm(str(getattr(args, "embedder", "minilm")))
    if flag and not minilm:
        raise ConfigError(
            f"--graph-cache is a MiniLM setting; the embedder is {args.embedder!r}",
            hint="drop --graph-cache or use --embedder minilm",
        )
    if not folder or not minilm:
        return {}
    return {"graph_cache": str(Path(folder).expanduser())}


def open_memory(args: argparse.Namespace, db: str | None = None) -> Memory:
    """A memory from the flags; backend settings come from the environment (this adapter only)."""
    path = db or args.db or os.environ.get("DUALMEM_DB") or _default_db()
    read_only = bool(getattr(args, "read_only", False))
    if path != ":memory:" and "://" not in path:
        path = str(Path(path).expanduser())
        if not read_only:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
    options = OpenOptions(
        controller=controller_options(args),
        answerer=answerer_options(args.answerer),
        embedder=embedder_options(args),
        lock_timeout=args.lock_timeout,
        synchronous=getattr(args, "synchronous", "normal"),
    )
    return Memory.open(
        path,
        embedder=args.embedder,
        controller=args.controller,
        answerer=args.answerer,
        profile=args.profile or None,
        options=options,
        read_only=read_only,
    )


def _default_db() -> str:
    from dualmem.cli.main import default_db

    return default_db()


# -- rendering ---------------------------------------------------------------------------------
_NODE_FIELDS = (
    *("id", "content", "speaker", "at", "session", "turn_id", "entities", "temporal_refs", "types"),
    *("status", "valid_to"),
)


def node_json(node: Node) -> dict[str, Any]:
    """The CLI's view of a node: a projection of :meth:`Node.to_json`."""
    full = node.to_json()
    return {key: full[key] for key in _NODE_FIELDS}


def evidence_json(e: Evidence) -> dict[str, Any]:
    out = node_json(e.node)
    out["score"] = round(e.score, 4)
    out["view"] = e.view
    out["via"] = (
        {"source": e.via.source, "target": e.via.target, "view": e.via.view, "label": e.via.label}
        if e.via
        else None
    )
    return out


# -- commands ----------------------------------------------------------------------------------
def cmd_add(args: argparse.Namespace) -> dict[str, Any]:
    with open_memory(args) as mem:
        scope = scope_of(mem, args)
        node_id = scope.add(
            args.text,
            speaker=args.speaker,
            at=args.at,
            session=args.session,
            source=args.source,
            turn_id=args.turn_id,
            key=args.key,
        )
        return node_json(scope.get(node_id))


def cmd_ingest(args: argparse.Namespace) -> dict[str, Any]:
    progress = Progress(f"ingest {args.file.name}", enabled=not args.quiet and sys.stderr.isatty())
    with open_memory(args) as mem:
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
    with open_memory(args) as mem:
        found = scope_of(mem, args).search(args.query, k=args.k)
        if args.trace and not args.json:
            lines = [render_trace(found.trace), "", "evidence:"]
            for i, e in enumerate(found.evidence, 1):
                when = e.node.at.date().isoformat() if e.node.at else "-"
                lines.append(
                    f"{i:>2}. [{e.score:.3f} {e.view}] ({when}) {e.node.speaker or ''}: {e.node.content}"
                )
            return "\n".join(lines)
        out: dict[str, Any] = {"query": args.query, "evidence": [evidence_json(e) for e in found.evidence]}
        out["trace"] = found.trace.to_json() if args.json else _trace_summary(found.trace.to_json())
        return out


def _trace_summary(trace: dict[str, Any]) -> dict[str, Any]:
    keys = ("route", "active_views", "depth", "stop_reason", "controller_calls", "latency_ms")
    return {k: trace[k] for k in keys}


def cmd_ask(args: argparse.Namespace) -> dict[str, Any]:
    with open_memory(args) as mem:
        ans = scope_of(mem, args).answer(args.query, k=args.k)
        out: dict[str, Any] = {
            "query": args.query,
            "answer": ans.text,
            "abstained": ans.abstained,
            "answerer": ans.answerer,
            "evidence": [evidence_json(e) for e in ans.evidence],
        }
        out["trace"] = ans.trace.to_json() if args.trace else _trace_summary(ans.trace.to_json())
        return out


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
    with open_memory(args) as mem:
        info = scope_of(mem, args).inspect(args.id)
        return {
            "node": node_json(info.node),
            "edges": [
                {"source": e.source, "target": e.target, "view": e.view, "label": e.label, "weight": e.weight}
                for e in info.edges
            ],
            "decisions": [
                {
                    "purpose": d.purpose,
                    "name": d.name,
                    "key": d.key,
                    "value": round(d.value, 4),
                    "label": d.label,
                    "backend": d.backend,
                    "latency_ms": round(d.latency_ms, 3),
                    "other_id": d.other_id,
                }
                for d in info.decisions
            ],
        }


def cmd_repair(args: argparse.Namespace) -> dict[str, Any]:
    with open_memory(args) as mem:
        report = mem.repair_all() if args.all_users else scope_of(mem, args).repair()
        return {"repaired": len(report.ids) - len(report.pending), "still_pending": len(report.pending)}


DEMO_QUESTIONS = (
    "When did Mira buy a new bicycle, and why?",
    "What is the name of Mira's dog?",
    "Does Mira still eat sushi?",
    "Who helped Mira choose her new bicycle?",
    "When did Biscuit eat a sock?",
    "What is the name of Mira's cat?",
)


def cmd_demo(args: argparse.Namespace) -> dict[str, Any]:
    sample = resources.files("dualmem.data").joinpath("sample_conversation.json")
    with tempfile.TemporaryDirectory(prefix="dualmem-demo-") as tmp:
        db = args.db if args.keep and args.db else str(Path(tmp) / "demo.db")
        with resources.as_file(sample) as path, open_memory(args, db=db) as mem:
            user = "demo"
            started = time.perf_counter()
            progress = Progress("ingest sample", enabled=not args.quiet and sys.stderr.isatty())
            ids = mem.ingest(path, user=user, on_progress=progress)
            build = time.perf_counter() - started
            print(f"dualmem demo: stored {len(ids)} turns in {build:.2f} s", file=sys.stderr)
            answers = []
            for q in DEMO_QUESTIONS:
                ans = mem.answer(q, user=user, k=5)
                print(f"\nQ: {q}\nA: {ans.text}", file=sys.stderr)
                answers.append(
                    {
                        "question": q,
                        "answer": ans.text,
                        "abstained": ans.abstained,
                        "evidence": [evidence_json(e) for e in ans.evidence[:3]],
                        "stop_reason": ans.trace.stop_reason,
                        "controller_calls": ans.trace.controller_calls,
                        "latency_ms": round(ans.trace.latency_ms, 2),
                    }
                )
            return {
                "stored": len(ids),
                "build_seconds": round(build, 3),
                "stats": mem.stats(user=user),
                "answers": answers,
            }


def cmd_bench_locomo(args: argparse.Namespace) -> dict[str, Any]:
    from dualmem.bench import bench_from_args, run_locomo

    if args.cv:
        from dualmem.bench.cv import cv_from_args, run_cv

        cv = run_cv(cv_from_args(args), progress=not args.quiet, log=lambda m: print(m, file=sys.stderr))
        return {"report": str(cv.report), "results": str(cv.out_json)}
    config = bench_from_args(args)
    try:
        import matplotlib  # noqa: F401  (the plots need it; say so before the long run, not after)
    except ImportError:
        print(
            "dualmem: no PNG plots: matplotlib is not installed (pip install 'dualmem[bench]')",
            file=sys.stderr,
        )
    result = run_locomo(config, progress=not args.quiet)
    return {
        "report": str(result.report),
        "results": str(result.results),
        "plots": [str(p) for p in result.plots],
        "summary": result.summary,
    }

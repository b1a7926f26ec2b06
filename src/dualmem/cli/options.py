"""What every subcommand of the CLI shares: the tenant, the database, the output format, memory filters,
and building a memory from the flags (backend settings come from the environment: this adapter only)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dualmem._progress import Progress
from dualmem.errors import ConfigError, InvalidInput, NotFound, TenantRequired

if TYPE_CHECKING:  # the memory core (numpy, pydantic) is imported by the commands that open one
    from dualmem.memory import Filter, Memory
    from dualmem.scope import Scope

__all__ = [
    "answerer_options",
    "controller_options",
    "db_path",
    "default_db",
    "embedder_options",
    "filter_from_args",
    "filter_options",
    "human_output",
    "memory_from_args",
    "note_if_empty",
    "open_memory",
    "output_options",
    "progress_enabled",
    "progress_for",
    "require_database",
    "scope_of",
    "tenant_options",
    "tenant_user",
]


# -- parents of subcommands -------------------------------------------------------------------
def default_db() -> str:
    """The database of a command without ``--db``: ``$DUALMEM_DB``, else the user's data folder."""
    env = os.environ.get("DUALMEM_DB")
    if env:
        return env
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(base) / "dualmem" / "memory.db")


def tenant_options() -> argparse.ArgumentParser:
    """``--user``/``--agent``/``--run`` for a subcommand (they may also come before it)."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("tenant")
    group.add_argument(
        "--user", default=argparse.SUPPRESS, help="tenant user id (required; env DUALMEM_USER)"
    )
    group.add_argument("--agent", default=argparse.SUPPRESS, help="narrow to one agent of the user")
    group.add_argument("--run", default=argparse.SUPPRESS, help="narrow to one run of the user")
    return parent


def output_options(*, json_help: str = "print JSON (the default when stdout is not a terminal)") -> Any:
    """``--json`` and ``--format`` after a subcommand (they may also come before it)."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("output")
    group.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=json_help)
    group.add_argument(
        "--format",
        choices=["auto", "human", "json"],
        default=argparse.SUPPRESS,
        help="human: readable text; json: what scripts read; auto (default): human on a terminal",
    )
    return parent


def filter_options() -> argparse.ArgumentParser:
    """``--speaker``/``--session``/``--since``/``--until``/``--metadata KEY=VALUE``: a :class:`Filter`."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("filter")
    group.add_argument("--speaker", help="only memories of this speaker (case-insensitive)")
    group.add_argument("--session", help="only memories of this session")
    group.add_argument("--since", help="only memories observed at or after this time")
    group.add_argument("--until", help="only memories observed before this time")
    group.add_argument(
        "--metadata",
        "--meta",
        dest="meta",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only memories whose metadata KEY equals VALUE (repeatable)",
    )
    return parent


def filter_from_args(args: argparse.Namespace) -> Filter:
    from dualmem.memory import Filter

    metadata: dict[str, Any] = {}
    for item in args.meta:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--metadata needs KEY=VALUE, got {item!r}")
        metadata[key] = value
    return Filter(
        speaker=args.speaker,
        session=args.session,
        since=args.since,
        until=args.until,
        metadata=metadata or None,
    )


def human_output(args: argparse.Namespace, *, default: bool | None = None) -> bool:
    """Readable text or JSON: ``--json``/``--format json`` JSON, ``--format human`` text; otherwise
    ``default``, else text when stdout is a terminal (pipes get JSON)."""
    if getattr(args, "json", False):
        return False
    chosen = getattr(args, "format", "auto")
    if chosen != "auto":
        return bool(chosen == "human")
    if default is not None:
        return default
    return bool(sys.stdout.isatty())


def progress_enabled(args: argparse.Namespace) -> bool:
    """Progress on stderr: with ``--progress``, else when stderr is a terminal and not ``--quiet``."""
    if getattr(args, "progress", False):
        return True
    return not getattr(args, "quiet", False) and bool(sys.stderr.isatty())


def progress_for(args: argparse.Namespace, label: str) -> Progress:
    """A progress line for a long command (use it as a context manager: its heartbeat draws at least
    every second or two while the work is busy); redrawn in place on a terminal, one line per
    report (every 2 s at most) in a log."""
    return Progress(label, enabled=progress_enabled(args), inline=bool(sys.stderr.isatty()))


# -- the tenant ----------------------------------------------------------------------------------
def tenant_user(args: argparse.Namespace) -> str:
    """``--user``, else ``$DUALMEM_USER``; neither is ``TenantRequired`` (no silent default tenant)."""
    user = args.user if args.user is not None else os.environ.get("DUALMEM_USER")
    if user is None:
        raise TenantRequired("no user given", hint="pass --user NAME or set DUALMEM_USER")
    if not user.strip():
        raise InvalidInput("the user id is empty", hint="pass --user NAME or set DUALMEM_USER")
    return str(user)


def scope_of(mem: Memory, args: argparse.Namespace) -> Scope:
    """The tenant the flags name: ``--user`` (or DUALMEM_USER), ``--agent``, ``--run``."""
    return mem.scope(tenant_user(args), agent=args.agent, run=args.run)


def note_if_empty(mem: Memory, args: argparse.Namespace) -> None:
    """On stderr, when the tenant has no memories at all: say so and name the users there are (a
    wrong ``--user`` or ``--db`` otherwise looks like a search that found nothing)."""
    scope = scope_of(mem, args)
    if scope.count() > 0:
        return
    users = list(dict.fromkeys(t.user for t, _ in mem.store.meta.tenant_counts()))
    shown = ", ".join(users[:5]) + (f" and {len(users) - 5} more" if len(users) > 5 else "")
    where = db_path(args)
    print(
        f"dualmem: note: {scope.tenant.user!r}"
        + (f" (agent {scope.tenant.agent!r})" if scope.tenant.agent else "")
        + (f" (run {scope.tenant.run!r})" if scope.tenant.run else "")
        + f" has no memories in {where}"
        + (f"; users there: {shown}" if users else "; the database is empty"),
        file=sys.stderr,
    )


# -- the database ------------------------------------------------------------------------------
def db_path(args: argparse.Namespace, db: str | None = None) -> str:
    """``--db`` (or ``db``), else ``$DUALMEM_DB``, else the default file; a file path expanded."""
    path = str(db or args.db or os.environ.get("DUALMEM_DB") or default_db())
    if path != ":memory:" and "://" not in path:
        path = str(Path(path).expanduser())
    return path


def is_file_path(path: str) -> bool:
    return path != ":memory:" and "://" not in path


def require_database(path: str) -> None:
    """A read never creates a database: a file path that does not exist is ``NotFound`` (exit 2)."""
    if is_file_path(path) and not Path(path).is_file():
        raise NotFound(f"no database at {path}", hint="add something first or check --db (or DUALMEM_DB)")


# -- building a memory ---------------------------------------------------------------------------
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


def memory_from_args(
    args: argparse.Namespace, path: str, *, read_only: bool = False, **options: Any
) -> Memory:
    """``Memory.open(path)`` with the flags' embedder, controller, answerer, profile and their options
    (``--lock-timeout``...); ``options``: more ``OpenOptions`` fields."""
    from dualmem.memory import Memory, OpenOptions

    opts = OpenOptions(
        controller=controller_options(args),
        answerer=answerer_options(args.answerer),
        embedder=embedder_options(args),
        lock_timeout=args.lock_timeout,
        **options,
    )
    return Memory.open(
        path,
        embedder=args.embedder,
        controller=args.controller,
        answerer=args.answerer,
        profile=args.profile or None,
        options=opts,
        read_only=read_only,
    )


def open_memory(
    args: argparse.Namespace, db: str | None = None, *, create: bool = False, announce: bool = False
) -> Memory:
    """A memory from the flags. Only a command that writes new memories passes ``create`` (the file
    and its folder are made); every other one refuses a database file that does not exist. With
    ``announce`` (``add``, ``ingest``, ``import``), a file that had to be made is noted in
    ``args.created_database``: once the command succeeded the CLI says ``created new database at
    PATH`` on stderr, even with ``-q`` (a mistyped ``--db`` otherwise goes unseen; a failed command
    keeps its one-line error)."""
    path = db_path(args, db)
    read_only = bool(getattr(args, "read_only", False))
    new = False
    if not create or read_only:
        require_database(path)
    elif is_file_path(path):
        new = not Path(path).exists()
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    memory = memory_from_args(
        args, path, read_only=read_only, synchronous=getattr(args, "synchronous", "normal")
    )
    if new and announce:
        args.created_database = path
    return memory

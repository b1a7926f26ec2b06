"""The ``dualmem`` command: JSON on stdout, logs and progress on stderr, one-line errors.

Settings come from flags, then environment variables (``DUALMEM_DB``, ``DUALMEM_USER``,
``TYPESAFE_API_KEY``/``TYPESAFE_BASE_URL`` for Jev, ``--llm-*`` flags or ``DUALMEM_LLM_*`` for an
OpenAI-compatible controller (``dualmem.cli.backend``), ``DUALMEM_CHAT_URL``/``DUALMEM_CHAT_MODEL``/
``OPENAI_API_KEY`` for the chat answerer). Only this adapter reads the environment.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dualmem.cli.check import Outcome
from dualmem.errors import DualmemError, UserError

__all__ = ["build_parser", "main"]

EXIT_USER = 2
EXIT_RUNTIME = 1


def default_db() -> str:
    env = os.environ.get("DUALMEM_DB")
    if env:
        return env
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(base) / "dualmem" / "memory.db")


def build_parser() -> argparse.ArgumentParser:
    from dualmem.cli import check, commands
    from dualmem.cli import migrate as migrate_command

    parser = argparse.ArgumentParser(
        prog="dualmem",
        description="Agent memory with a fast System-One controller (Jev-Mem).",
    )
    parser.add_argument(
        "--db", default=None, help="database path (env DUALMEM_DB; default ~/.local/share/dualmem/memory.db)"
    )
    parser.add_argument(
        "--lock-timeout",
        type=_seconds,
        default=5.0,
        help="seconds to wait for a locked database (default 5)",
    )
    parser.add_argument(
        "--read-only", action="store_true", help="open an existing database without ever writing it"
    )
    parser.add_argument(
        "--synchronous",
        choices=["normal", "full"],
        default="normal",
        help="full: every commit survives power loss (slower); normal (default): survives a killed process",
    )
    parser.add_argument("--user", default=None, help="tenant user id (env DUALMEM_USER; default 'local')")
    parser.add_argument("--agent", default=None, help="tenant agent id")
    parser.add_argument("--run", default=None, help="tenant run/session id")
    parser.add_argument(
        "--embedder", default="minilm", help="minilm (default), hashing[:DIM] or openai:MODEL"
    )
    parser.add_argument(
        "--graph-cache",
        default=None,
        metavar="DIR",
        help="folder where the MiniLM embedder keeps its optimised graph, so later calls skip the "
        "optimisation (~90 MB; env DUALMEM_GRAPH_CACHE)",
    )
    parser.add_argument("--controller", default="builtin", choices=["builtin", "jev", "llm"])
    parser.add_argument("--answerer", default="extractive", choices=["extractive", "chat"])
    from dualmem.cli.backend import add_llm_arguments

    add_llm_arguments(parser)
    parser.add_argument(
        "--profile", default=None, help="profile preset (paper, builtin, jev, llm) or a profile .json file"
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging on stderr")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.register(sub)
    check.register(sub)
    migrate_command.register(sub)
    from dualmem.cli import hook, keys, mcp, serve

    serve.register(sub)
    keys.register(sub)
    mcp.register(sub)
    hook.register(sub)
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(argv) if argv is not None else sys.argv[1:]  # as given, for provenance records
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        stream=sys.stderr,
        format="dualmem: %(levelname)s: %(message)s",
    )
    handler: Callable[[argparse.Namespace], Any] = args.handler
    try:
        result = handler(args)
    except UserError as exc:
        print(f"dualmem: error: {exc.one_line()}", file=sys.stderr)
        return EXIT_USER
    except DualmemError as exc:
        print(f"dualmem: failed: {exc.one_line()}", file=sys.stderr)
        return EXIT_RUNTIME
    except KeyboardInterrupt:
        print("dualmem: interrupted", file=sys.stderr)
        return 130
    if isinstance(result, Outcome):
        emit(result.data)
        return result.code
    if result is not None:
        emit(result)
    return 0


def emit(result: Any) -> None:
    if isinstance(result, str):
        sys.stdout.write(result if result.endswith("\n") else result + "\n")
    else:
        sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

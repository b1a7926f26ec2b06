"""The ``dualmem`` command: readable text on a terminal, JSON in a pipe or with ``--json`` (each
subcommand's ``render`` draws its JSON as text), logs and progress on stderr, one-line errors (a typo
gets the nearest known command or option).

Settings come from flags, then environment variables (``DUALMEM_DB``, ``DUALMEM_USER``,
``TYPESAFE_API_KEY``/``TYPESAFE_BASE_URL`` for Jev, ``--llm-*`` flags or ``DUALMEM_LLM_*`` for an
OpenAI-compatible controller (``dualmem.cli.backend``), ``DUALMEM_CHAT_URL``/``DUALMEM_CHAT_MODEL``/
``OPENAI_API_KEY`` for the chat answerer). Only this adapter reads the environment.
"""

from __future__ import annotations

import argparse
import copy as copy_module
import difflib
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from dualmem._registry import Registry
from dualmem.cli.check import Outcome
from dualmem.cli.options import default_db, human_output
from dualmem.errors import DualmemError, UserError

__all__ = ["build_parser", "default_db", "main"]

EXIT_USER = 2
EXIT_RUNTIME = 1


def build_parser() -> argparse.ArgumentParser:
    from dualmem.cli import check, commands, erase
    from dualmem.cli import migrate as migrate_command

    parser = Parser(
        prog="dualmem",
        description="Agent memory with a fast System-One controller (Jev-Mem).",
    )
    from dualmem._version import __version__

    parser.add_argument("--version", action="version", version=f"dualmem {__version__}")
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
    parser.add_argument(
        "--user", default=None, help="tenant user id (required by memory commands; env DUALMEM_USER)"
    )
    parser.add_argument("--agent", default=None, help="tenant agent id")
    parser.add_argument("--run", default=None, help="tenant run/session id")
    parser.add_argument(
        "--embedder",
        default="minilm",
        help="minilm (default), multilingual (any language: the multilingual extra), hashing[:DIM], "
        "openai:MODEL or an installed plug-in's name (dualmem doctor)",
    )
    parser.add_argument(
        "--graph-cache",
        default=None,
        metavar="DIR",
        help="folder where the MiniLM embedder keeps its optimised graph, so later calls skip the "
        "optimisation (~90 MB; env DUALMEM_GRAPH_CACHE)",
    )
    parser.add_argument(
        "--controller", default="builtin", help="builtin (default), jev, llm or an installed plug-in's name"
    )
    parser.add_argument(
        "--answerer", default="extractive", help="extractive (default), chat or an installed plug-in's name"
    )
    from dualmem.cli.backend import add_llm_arguments

    add_llm_arguments(parser)
    parser.add_argument(
        "--profile",
        default=None,
        help="profile preset (builtin: the default; views: the default with the paper's four views; "
        "paper: Appendix B exactly, no update detection; dualmem, jev, llm) or a profile .json file; "
        "the database keeps the first one given and later calls without --profile use it",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging on stderr")
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bars (notes and errors still go to stderr)"
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        help="progress on stderr even when it is not a terminal (a log line every 2 s at most)",
    )
    parser.add_argument(
        "--format",
        choices=["auto", "human", "json"],
        default="auto",
        help="human: readable text; json: what scripts read; auto (default): human when stdout is a terminal",
    )
    parser.add_argument("--json", action="store_true", help="JSON on stdout (same as --format json)")
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(  # type: ignore[assignment]
        dest="command", required=True, metavar="COMMAND"
    )
    commands.register(sub)
    check.register(sub)
    erase.register(sub)
    migrate_command.register(sub)
    from dualmem.cli import doctor, hook, keys, mcp, serve

    serve.register(sub)
    keys.register(sub)
    mcp.register(sub)
    hook.register(sub)
    doctor.register(sub)
    _accept_global_options(parser)
    return parser


def _accept_global_options(parser: argparse.ArgumentParser) -> None:
    """Let every subcommand (nested ones too) take the global options after its name:
    ``dualmem search x --db m.db`` is ``dualmem --db m.db search x``. A copy of each global option
    is added to each subcommand that has no option of the same name (``bench locomo --embedder``
    keeps its own), hidden from its help and defaulting to ``SUPPRESS``: given after the command it
    overrides the value given (or defaulted) before it; not given, it changes nothing."""
    globals_ = [
        a
        for a in parser._actions
        if a.option_strings and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))
    ]

    def visit(sub_parser: argparse.ArgumentParser) -> None:
        for action in sub_parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in dict.fromkeys(action.choices.values()):  # aliases share a parser
                    for option in globals_:
                        if any(name in child._option_string_actions for name in option.option_strings):
                            continue
                        copy = copy_module.copy(option)
                        copy.default = argparse.SUPPRESS
                        copy.help = argparse.SUPPRESS
                        child._add_action(copy)
                    visit(child)

    visit(parser)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) that suggest the nearest known command or option."""

    argv: list[str] | None = None

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self.argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USER, f"{self.prog}: {_explain(self, message)}\n")


def _explain(parser: argparse.ArgumentParser, message: str) -> str:
    """``unknown command 'serach' (did you mean 'search'?)``, ``unknown option '--lmit' (did you mean
    '--limit'?)``, else argparse's message with a pointer to ``--help``."""
    choice = re.match(r"argument (\S+): invalid choice: '([^']*)'", message)
    if choice:
        name, value = choice.groups()
        action = next((a for a in parser._actions if argparse._get_action_name(a) == name), None)
        known = [str(c) for c in (action.choices or ())] if action is not None else []
        if isinstance(action, argparse._SubParsersAction):
            before = _option_before(parser, value)  # `--controler jev search`: the option is the typo
            if before is not None:
                return _explain(parser, f"unrecognized arguments: {before}")
            return f"unknown command {value!r}{_did_you_mean(value, known, parser.prog)}"
        return f"unknown {name} {value!r}{_did_you_mean(value, known, parser.prog)}"
    if message.startswith("unrecognized arguments:"):
        words = message.split(":", 1)[1].split()
        options = [w.split("=", 1)[0] for w in words if w.startswith("-")]
        if options:
            hint = _option_hint(options[0], _option_strings(parser), parser.prog)
            return f"unknown option {options[0]!r}{hint}"
        return f"unexpected argument {words[0]!r} (see {parser.prog} --help)"
    return f"error: {message} (see {parser.prog} --help)"


def _option_before(parser: argparse.ArgumentParser, value: str) -> str | None:
    """The unknown option just before ``value`` on the command line, if there is one."""
    argv = getattr(parser, "argv", None) or []
    if value not in argv:
        return None
    at = argv.index(value)
    before = argv[at - 1] if at > 0 else ""
    if before.startswith("--") and before.split("=", 1)[0] not in parser._option_string_actions:
        return before
    return None


def _did_you_mean(word: str, known: Sequence[str], prog: str) -> str:
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else f" (see {prog} --help)"


def _option_hint(word: str, known: set[str], prog: str) -> str:
    """The option ``word`` was meant to be: the same name with other dashes (``--k`` -> ``-k``), else
    the nearest long option."""
    bare = word.lstrip("-")
    same = sorted(o for o in known if o.lstrip("-") == bare and o != word)
    if same:
        return f" (did you mean {same[0]!r}?)"
    return _did_you_mean(word, sorted(o for o in known if o.startswith("--")), prog)


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option of ``parser`` and of its subcommands, their subcommands included."""
    found: set[str] = set()
    for action in parser._actions:
        found.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _option_strings(sub)
    return found


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, got {text!r}")
    return value


def _check_parts(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--controller``/``--answerer``/``--embedder`` name a builtin or installed part (their registry),
    else a one-line error with the nearest name; the defaults are not looked up (nothing imported).
    A subcommand with options of its own under those names (``bench locomo``) checks them itself."""
    own = getattr(args, "own_part_options", ())
    if args.controller != "builtin" and "controller" not in own:
        from dualmem.control import CONTROLLERS

        _check_name(parser, "--controller", args.controller, CONTROLLERS)
    if args.answerer != "extractive" and "answerer" not in own:
        from dualmem.reason import ANSWERERS

        _check_name(parser, "--answerer", args.answerer, ANSWERERS)


def _check_name(parser: argparse.ArgumentParser, option: str, value: str, registry: Registry) -> None:
    if value not in registry:
        hint = _did_you_mean(value, registry.names(), parser.prog)
        parser.exit(EXIT_USER, f"{parser.prog}: unknown {option} {value!r}{hint}\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_parts(parser, args)
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
    created = getattr(args, "created_database", None)
    if created:
        print(f"dualmem: created new database at {created}", file=sys.stderr)
    render: Callable[[Any], str] | None = getattr(args, "render", None)
    code = result.code if isinstance(result, Outcome) else 0
    if isinstance(result, Outcome):
        result = result.data
    if result is not None:
        human = render is not None and human_output(args, default=getattr(args, "human_default", None))
        try:
            emit(render(result) if human and render is not None and isinstance(result, dict) else result)
        except BrokenPipeError:
            # the reader stopped reading (`dualmem search x | head -1`): not an error of this command.
            # stdout goes to /dev/null so the interpreter's final flush does not fail again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
    return code


def emit(result: Any) -> None:
    """JSON on stdout (a string as it is: a command's readable text)."""
    if isinstance(result, str):
        sys.stdout.write(result if result.endswith("\n") else result + "\n")
    else:
        sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

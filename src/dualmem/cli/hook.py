"""``dualmem hook``: memory as context for coding agents (Claude Code hooks, or any agent that runs a
command and reads its stdout).

- ``dualmem hook session-start`` prints the memories most worth having at the start of a session:
  what memory holds on the project (the ``--project`` flag, else the last part of the hook input's
  ``cwd`` or of ``$CLAUDE_PROJECT_DIR``), the user's preferences and conventions (memories whose
  preference or procedural type score is high), and the most recent ones.
- ``dualmem hook user-prompt`` reads the prompt on stdin (Claude Code sends a JSON object with a
  ``prompt`` field; plain text works too) and prints what memory has on it.

Both are read-only, fast and silent on failure: whatever goes wrong (no database yet, a locked
file, bad input), they exit 0 with nothing on stdout, and say why on stderr only with ``--verbose``
(which also explains an empty result: no memories for the user, or none that matched).
``dualmem hook capture`` (``hook_capture.py``) is the one that writes: tool calls and turns.
By default they search without the embedder (full-text and entity indexes, fused by reciprocal
rank), which keeps them well under the agent's patience; ``--full`` runs dualmem's adaptive search
instead (the embedder and the System-One controller; slower to start).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dualmem import _json as bounded_json
from dualmem.cli.hook_capture import quietly
from dualmem.errors import ConfigError, InvalidInput, NotFound

if TYPE_CHECKING:
    from dualmem.embed.base import Matrix
    from dualmem.memory import Memory
    from dualmem.types import Node, Tenant

__all__ = ["HookInput", "read_input", "register"]

MAX_LINE = 280
MAX_INPUT = 1 << 20


@dataclass(frozen=True, slots=True)
class HookInput:
    """What the agent sent: the prompt (user-prompt) and the working directory, when given."""

    prompt: str | None = None
    cwd: str | None = None


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from dualmem.cli.options import tenant_options

    p = sub.add_parser("hook", help="context for coding agents (Claude Code hooks); silent on failure")
    events = p.add_subparsers(dest="event", required=True, metavar="EVENT")
    start = events.add_parser(
        "session-start",
        help="print the memories worth having at a session's start",
        parents=[tenant_options()],
    )
    start.add_argument("--project", help="project name (default: the last part of the input's cwd)")
    start.set_defaults(handler=cmd_session_start)
    prompt = events.add_parser(
        "user-prompt",
        help="read the prompt on stdin, print what memory has on it",
        parents=[tenant_options()],
    )
    prompt.add_argument("--prompt", dest="prompt_text", help="the prompt (default: read stdin)")
    prompt.set_defaults(handler=cmd_user_prompt)
    for q in (start, prompt):
        q.add_argument("--limit", type=int, default=8, help="memories to print at most (default 8)")
        q.add_argument("--full", action="store_true", help="adaptive search with the embedder (slower start)")
        q.add_argument(
            "--verbose",
            dest="hook_verbose",
            action="store_true",
            help="say on stderr why nothing was printed (no database, no memories for the user, no match)",
        )
    from dualmem.cli import hook_capture

    hook_capture.register(events, [tenant_options()])


def read_input(raw: str) -> HookInput:
    """A Claude Code hook object (``prompt``, ``cwd``) or plain text (the prompt)."""
    text = raw.strip()
    if not text:
        return HookInput()
    if text.startswith("{"):
        try:
            doc = bounded_json.loads(text)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            prompt, cwd = doc.get("prompt"), doc.get("cwd")
            return HookInput(
                prompt if isinstance(prompt, str) and prompt.strip() else None,
                cwd if isinstance(cwd, str) and cwd else None,
            )
    return HookInput(prompt=text)


def _stdin() -> HookInput:
    if sys.stdin is None or sys.stdin.isatty():
        return HookInput()
    return read_input(sys.stdin.read(MAX_INPUT))


# -- the two events --------------------------------------------------------------------------
def cmd_session_start(args: argparse.Namespace) -> None:
    quietly(args, _session_start)


def cmd_user_prompt(args: argparse.Namespace) -> None:
    quietly(args, _user_prompt)


def _user_prompt(args: argparse.Namespace) -> str:
    prompt = args.prompt_text or _stdin().prompt
    if not prompt or not prompt.strip():
        raise InvalidInput("no prompt on stdin")
    tenant = _tenant(args)
    found = _search(args, tenant, prompt, args.limit)
    if not found:
        _why_empty(args, tenant, "nothing matched the prompt")
        return ""
    return _render("dualmem: memories related to this prompt", [("", found)])


def _session_start(args: argparse.Namespace) -> str:
    given = _stdin()
    where = given.cwd or os.environ.get("CLAUDE_PROJECT_DIR")
    project = args.project or (Path(where).name if where else None)
    tenant = _tenant(args)
    limit = max(1, args.limit)
    shown: set[str] = set()
    sections: list[tuple[str, list[Node]]] = []
    if project:
        about = _search(args, tenant, project, max(1, limit // 2))
        sections.append((f"On {project}", about))
        shown |= {n.id for n in about}
    with _open_memory(args) as mem:
        recent = [
            n for n in mem.store.recent_nodes(tenant, 300) if n.valid_to is None and n.status == "complete"
        ]
    habits = sorted(
        (n for n in recent if n.id not in shown and _habit(n) >= 0.5),
        key=lambda n: -_habit(n),
    )[: max(1, limit // 2)]
    sections.append(("Preferences and conventions", habits))
    shown |= {n.id for n in habits}
    room = max(2, limit - len(shown))
    sections.append(("Recent", [n for n in recent if n.id not in shown][:room]))
    if not any(nodes for _, nodes in sections):
        _why_empty(args, tenant, "nothing to show")
        return ""
    who = f"user {tenant.user}" + (f", project {project}" if project else "")
    return _render(f"dualmem: what memory holds for {who}", sections)


def _why_empty(args: argparse.Namespace, tenant: Tenant, otherwise: str) -> None:
    """``--verbose``: why a hook printed nothing, on stderr (the user has no memories at all — which
    users the database holds —, or it has some and none matched)."""
    if not args.hook_verbose:
        return
    with _open_memory(args) as mem:
        count = mem.store.count(tenant)
        users = list(dict.fromkeys(t.user for t, _ in mem.store.meta.tenant_counts())) if count == 0 else []
    who = f"user {tenant.user!r}" + (f" agent {tenant.agent!r}" if tenant.agent else "")
    if count == 0:
        known = f"users there: {', '.join(users[:5])}" if users else "the database is empty"
        reason = f"no memories for {who} in {_db_path(args)} ({known})"
    else:
        how = (
            "the adaptive search kept nothing above its thresholds"
            if args.full
            else ("no memory shares a word or two entities with it (--full runs the adaptive search)")
        )
        reason = f"{otherwise}: {count} memories for {who}, {how}"
    print(f"dualmem hook: {reason}", file=sys.stderr)


# -- retrieval -------------------------------------------------------------------------------
def _habit(n: Node) -> float:
    return max(n.types.preference, n.types.procedural) if n.types else 0.0


def _tenant(args: argparse.Namespace) -> Tenant:
    from dualmem.cli.options import tenant_user
    from dualmem.types import Tenant

    return Tenant(tenant_user(args), args.agent, args.run)


def _db_path(args: argparse.Namespace) -> str:
    from dualmem.cli.options import default_db

    path = str(args.db or default_db())
    if path != ":memory:" and "://" not in path:
        path = str(Path(path).expanduser())
        if not os.path.exists(path):
            raise NotFound(f"no database at {path}", hint="set DUALMEM_DB or --db")
    return path


class _NoEmbedder:
    """The quick search embeds nothing: an embedder with no declared dimension (so the store's bound
    embedder is never checked against it) that refuses to be used."""

    name = "none"
    dim = 0
    declared_dim: int | None = None

    def embed(self, texts: Sequence[str]) -> Matrix:
        raise ConfigError(f"the hook's quick search embeds nothing ({len(texts)} texts)", hint="use --full")


@contextmanager
def _open_memory(args: argparse.Namespace) -> Iterator[Memory]:
    """The memory, read-only, for the quick search: no embedder, the builtin controller never asked."""
    from dualmem.config import Profile
    from dualmem.control import create_controller
    from dualmem.memory import Memory
    from dualmem.plane import open_store

    store = open_store(_db_path(args), timeout=min(1.0, args.lock_timeout), read_only=True)
    try:
        profile = Profile.builtin().with_(write__consolidation="off")
        memory = Memory(store, _NoEmbedder(), create_controller("builtin"), profile=profile)
    except BaseException:
        store.close()
        raise
    with memory:
        yield memory


def _search(args: argparse.Namespace, tenant: Tenant, text: str, k: int) -> list[Node]:
    if args.full:
        return _adaptive(args, tenant, text, k)
    with _open_memory(args) as mem:
        return mem.quick_search(text, user=tenant.user, agent=tenant.agent, run=tenant.run, k=k)


def _adaptive(args: argparse.Namespace, tenant: Tenant, text: str, k: int) -> list[Node]:
    from dualmem.cli.options import controller_options, embedder_options
    from dualmem.memory import Memory, OpenOptions

    path = _db_path(args)
    options = OpenOptions(
        controller=controller_options(args),
        embedder=embedder_options(args),
        lock_timeout=min(1.0, args.lock_timeout),
        profile_changes={"write__consolidation": "off"},  # the database's profile otherwise (issue 49)
    )
    with Memory.open(
        path, embedder=args.embedder, controller=args.controller, answerer=None,
        profile=args.profile or None, options=options,
    ) as mem:  # fmt: skip
        found = mem.search(text, user=tenant.user, agent=tenant.agent, run=tenant.run, k=k)
    return [e.node for e in found.evidence if e.node.valid_to is None]


# -- output ----------------------------------------------------------------------------------
def _line(n: Node) -> str:
    when = n.at.date().isoformat() if n.at else n.created_at.date().isoformat()
    who = f"{n.speaker}: " if n.speaker else ""
    text = " ".join(n.content.split())
    if len(text) > MAX_LINE:
        text = text[: MAX_LINE - 1] + "…"
    return f"- [{when}] {who}{text}"


def _render(title: str, sections: list[tuple[str, list[Node]]]) -> str:
    out: list[str] = [f"# {title}"]
    for heading, nodes in sections:
        if not nodes:
            continue
        if heading:
            out.append(f"{heading}:")
        out += [_line(n) for n in nodes]
    return "\n".join(out) + "\n"

"""``dualmem hook capture``: write what a coding agent did into memory (Claude Code's ``PostToolUse``
and ``Stop`` hooks, or any agent that can pipe the same JSON to a command).

- ``PostToolUse`` (``tool_name``, ``tool_input``, ``tool_response``, ``tool_use_id``): one memory,
  the call and its result summarised to a bounded text (``--max-chars``, default 1200).
- ``Stop`` / ``SubagentStop`` (``transcript_path``): the last user turn of the transcript (JSON
  Lines) and the assistant's reply to it, one memory each, at the transcript's timestamps.

Idempotent: every memory carries a natural key (source ``claude-code``, the hook's ``session_id``
as session, and a turn id: the tool call's id, else a digest of the call; a transcript entry's
``uuid``), so the same event delivered twice stores nothing the second time (``Memory.add``'s
turn-id rule). Like the read hooks it is silent on failure (exit 0, nothing on stdout; the reason
on stderr with ``--verbose``), and prints nothing on success but what it stored, with ``--verbose``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import logging
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dualmem.errors import InvalidInput

if TYPE_CHECKING:  # imported by the capture itself: ``dualmem --version`` stays fast
    from dualmem.types import Observation

__all__ = ["Capture", "from_event", "quietly", "register", "summarise_tool", "transcript_turns"]

SOURCE = "claude-code"
MAX_TRANSCRIPT_TAIL = 4 << 20  # bytes read from the end of a transcript
MAX_INPUT = 4 << 20


@dataclass(frozen=True, slots=True)
class Capture:
    """What one hook event asks to store (empty: nothing for this event)."""

    event: str
    observations: tuple[Observation, ...]


def quietly(args: argparse.Namespace, fn: Callable[[argparse.Namespace], str]) -> None:
    """Run ``fn`` and print its text; on any failure print nothing and exit 0 (``--verbose``: why)."""
    verbose = bool(args.hook_verbose)
    logger = logging.getLogger("dualmem")
    level = logger.level
    if not verbose:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings():
            if not verbose:
                warnings.simplefilter("ignore")
            text = fn(args)
    # a hook must never break the agent that runs it: every failure ends here, silently
    except Exception as exc:
        if verbose:
            print(f"dualmem hook: {type(exc).__name__}: {exc}", file=sys.stderr)
        return
    finally:
        logger.setLevel(level)
    if text:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()


def register(events: argparse._SubParsersAction[argparse.ArgumentParser], parents: list[Any]) -> None:
    p = events.add_parser(
        "capture",
        help="store a tool call (PostToolUse) or the last turns of the transcript (Stop); idempotent",
        parents=parents,
    )
    p.add_argument("--event", help="the hook event (default: the input's hook_event_name)")
    p.add_argument("--max-chars", type=int, default=1200, help="longest memory a tool call makes (1200)")
    p.add_argument("--verbose", dest="hook_verbose", action="store_true", help="say what was stored")
    p.set_defaults(handler=cmd_capture)


def cmd_capture(args: argparse.Namespace) -> None:
    quietly(args, _capture)


def _capture(args: argparse.Namespace) -> str:
    from dualmem.cli.options import open_memory, scope_of, tenant_user

    raw = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read(MAX_INPUT)
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise InvalidInput("the hook input is not JSON") from exc
    if not isinstance(doc, dict):
        raise InvalidInput("the hook input is not a JSON object")
    tenant_user(args)  # before the model loads: no tenant, no write
    capture = from_event(doc, event=args.event, max_chars=max(80, args.max_chars))
    if not capture.observations:
        raise InvalidInput(f"nothing to capture in a {capture.event or 'nameless'} event")
    with open_memory(args, create=True) as mem:
        scope = scope_of(mem, args)
        before = scope.count()
        ids = scope.add_many(list(capture.observations))
        added = scope.count() - before
    if args.hook_verbose:
        print(
            f"dualmem hook: {capture.event}: stored {added} memories ({len(ids) - added} already there)",
            file=sys.stderr,
        )
    return ""


# -- events -> observations ------------------------------------------------------------------
def from_event(doc: Mapping[str, Any], *, event: str | None = None, max_chars: int = 1200) -> Capture:
    """The memories a Claude Code hook event makes (pure: reads only the transcript file it names)."""
    name = event or str(doc.get("hook_event_name") or "")
    session = _text(doc.get("session_id"))
    meta: dict[str, Any] = {"hook": name}
    if _text(doc.get("cwd")):
        meta["project"] = Path(str(doc["cwd"])).name
    if name == "PostToolUse":
        return Capture(name, (_tool_observation(doc, session, meta, max_chars),))
    if name in ("Stop", "SubagentStop"):
        path = _text(doc.get("transcript_path"))
        if not path:
            raise InvalidInput(f"a {name} event without transcript_path")
        turns = transcript_turns(Path(path).expanduser())
        from dualmem.types import Observation

        return Capture(
            name,
            tuple(
                Observation(
                    content=_clip_turn(text, 4 * max_chars),
                    speaker=role,
                    at=_when(at),
                    source=SOURCE,
                    session=session,
                    turn_id=turn,
                    metadata=meta,
                )
                for role, turn, at, text in turns
            ),
        )
    return Capture(name, ())


def _tool_observation(
    doc: Mapping[str, Any], session: str | None, meta: dict[str, Any], limit: int
) -> Observation:
    from dualmem.types import Observation

    tool = _text(doc.get("tool_name")) or "tool"
    given, result = doc.get("tool_input"), doc.get("tool_response")
    call_id = _text(doc.get("tool_use_id"))
    if call_id is None:  # no id: the call itself is its identity
        canonical = json.dumps([tool, given, result], sort_keys=True, default=str, ensure_ascii=False)
        call_id = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return Observation(
        content=summarise_tool(tool, given, result, limit=limit),
        speaker="tool",
        at=None,
        source=SOURCE,
        session=session,
        turn_id=f"tool:{call_id}",
        metadata={**meta, "tool": tool},
    )


_INPUT_KEYS = ("command", "file_path", "path", "pattern", "url", "query", "description", "prompt")
_RESULT_KEYS = ("stdout", "stderr", "output", "content", "result", "error", "message")


def summarise_tool(tool: str, given: object, result: object, *, limit: int = 1200) -> str:
    """``Tool Bash: `pytest -q` -> 3 passed`` in at most ``limit`` characters: the input's telling
    fields (command, file path, pattern, ...) else its JSON, then the result's text fields."""
    head = f"Tool {tool}: {_clip(_describe(given, _INPUT_KEYS), max(40, limit // 3))}"
    room = max(20, limit - len(head) - 4)
    text = f"{head} -> {_clip(_describe(result, _RESULT_KEYS), room)}"
    return _clip(text, limit)


def _describe(value: object, keys: tuple[str, ...]) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        picked = [f"{k}: {value[k]}" if k not in ("command", "stdout") else str(value[k]) for k in keys
                  if isinstance(value.get(k), str | int | float) and str(value[k]).strip()]  # fmt: skip
        if picked:
            return "; ".join(picked)
    if value is None:
        return "(nothing)"
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _clip_turn(text: str, limit: int) -> str:
    """A turn keeps its lines; only a very long one is cut (at ``limit`` characters)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _when(stamp: str | None) -> dt.datetime | None:
    from dualmem.text.timeparse import parse_time

    if stamp is None:
        return None
    try:
        return parse_time(stamp)
    except InvalidInput:  # a transcript's odd timestamp is no reason to lose the turn
        return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


# -- transcripts -----------------------------------------------------------------------------
def transcript_turns(path: Path) -> list[tuple[str, str, str | None, str]]:
    """The last user turn with text and the assistant's text after it, as ``(role, uuid, timestamp,
    text)``; consecutive assistant entries are one reply (under the first entry's uuid). Tool results
    (user entries without text), meta and sidechain entries are left out."""
    entries = [e for e in _entries(path) if e[3]]
    last_user = max((i for i, e in enumerate(entries) if e[0] == "user"), default=None)
    if last_user is None:
        return []
    out = [entries[last_user]]
    reply = [e for e in entries[last_user + 1 :] if e[0] == "assistant"]
    if reply:
        role, uuid, at, _ = reply[0]
        out.append((role, uuid, at, "\n\n".join(e[3] for e in reply)))
    return out


def _entries(path: Path) -> Iterator[tuple[str, str, str | None, str]]:
    with path.open("rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - MAX_TRANSCRIPT_TAIL))
        data = f.read()
    lines = data.decode("utf-8", "replace").splitlines()
    if size > MAX_TRANSCRIPT_TAIL:
        lines = lines[1:]  # the first line read was cut
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("isMeta") or entry.get("isSidechain"):
            continue
        role, uuid = entry.get("type"), _text(entry.get("uuid"))
        message = entry.get("message")
        if role not in ("user", "assistant") or uuid is None or not isinstance(message, dict):
            continue
        at = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        yield str(role), uuid, at, _message_text(message.get("content"))


def _message_text(content: object) -> str:
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        texts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                 and isinstance(b.get("text"), str)]  # fmt: skip
        return "\n".join(t.strip() for t in texts if t.strip())
    return ""

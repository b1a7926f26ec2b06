"""JSON documents read from files and lines (imports, conversations, profiles, weights), bounded in depth.

``json.loads`` recurses once per nested array or object: a line of ``[`` repeated 100,000 times
raises ``RecursionError`` (not a ``ValueError``), which slipped past every reader's handler and came
out as an untyped error (a plain 500 over HTTP). :func:`loads` raises ``json.JSONDecodeError``
instead, at the position where the document first goes past ``MAX_DOCUMENT_DEPTH`` nested arrays
or objects, so each reader's existing handler turns it into its typed error (``InvalidInput`` with
the line number for an import, ``ConfigError`` for a profile or a weights file). A document that
parses but nests past the limit is refused the same way, so nothing downstream (pydantic, the
encoder, a walk of the value) recurses over it either.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from dualmem.errors import ConfigError

__all__ = ["MAX_DOCUMENT_DEPTH", "load_file", "loads"]

#: nested arrays/objects a document read from a file or a line may hold: an import line wraps
#: metadata (at most ``types.MAX_JSON_DEPTH`` = 64 levels below its top) in its record, and the
#: other files nest a few levels; far below where ``json.loads`` would recurse out (~1,000)
MAX_DOCUMENT_DEPTH = 100

_TOKENS = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]', re.DOTALL)


def loads(text: str, *, max_depth: int = MAX_DOCUMENT_DEPTH) -> Any:
    """``json.loads(text)``; ``json.JSONDecodeError`` ("nests deeper than N levels", with where)
    for a document of more than ``max_depth`` nested arrays or objects, never ``RecursionError``."""
    try:
        value = json.loads(text)
    except RecursionError:
        value = _TOO_DEEP
    if value is _TOO_DEEP or _deeper(value, max_depth):
        raise json.JSONDecodeError(
            f"nests deeper than {max_depth} levels", text, _where_deeper(text, max_depth)
        )
    return value


_TOO_DEEP = object()


def load_file(path: Path | str, what: str) -> Any:
    """The JSON document of the file at ``path``; ``ConfigError`` ("cannot read {what} {path}: ...")
    when it cannot be read, is not UTF-8 or is not (bounded) JSON."""
    try:
        return loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc}") from exc


def _deeper(value: object, limit: int) -> bool:
    """Whether ``value`` holds more than ``limit`` nested lists or dicts (iterative)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth + 1 > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _where_deeper(text: str, limit: int) -> int:
    """The offset of the first ``[`` or ``{`` (outside strings) opening level ``limit + 1`` (0: none)."""
    depth = 0
    for token in _TOKENS.finditer(text):
        mark = token.group()
        if mark in {"[", "{"}:
            depth += 1
            if depth > limit:
                return token.start()
        elif mark in {"]", "}"}:
            depth -= 1
    return 0

"""Checks on a request body before FastAPI parses it: the media type, UTF-8, and how deep the JSON nests.

Python's JSON decoder recurses, so a body of 100,000 nested lists would end in a ``RecursionError``;
it is refused here, with a problem document, long before that. Scanning is cheap: a body with fewer
brackets than the limit cannot nest deeper, and is not scanned at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dualmem.vocab import MAX_JSON_DEPTH

__all__ = ["MAX_BODY_DEPTH", "BodyProblem", "check_json_body", "is_json_type", "nesting_depth"]

#: the request wrappers (observations -> item -> metadata) on top of the metadata's own depth
MAX_BODY_DEPTH = MAX_JSON_DEPTH + 8

_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


@dataclass(frozen=True, slots=True)
class BodyProblem:
    status: int
    code: str
    detail: str
    hint: str


def is_json_type(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def nesting_depth(body: bytes, *, stop_at: int | None = None) -> int:
    """The deepest ``[``/``{`` nesting of a JSON text (brackets inside strings do not count)."""
    depth = deepest = 0
    for match in _TOKENS.finditer(body):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
            if stop_at is not None and deepest > stop_at:
                break
        elif token in (b"]", b"}"):
            depth -= 1
    return deepest


def check_json_body(content_type: str | None, body: bytes) -> BodyProblem | None:
    """Why a JSON route cannot take this body (``None``: let the schema judge it)."""
    if not body:
        return None
    if not content_type or not is_json_type(content_type):
        return BodyProblem(
            415, "unsupported-media-type", f"the body must be JSON, not {content_type or 'untyped'}",
            "send Content-Type: application/json",
        )  # fmt: skip
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return BodyProblem(
            400, "malformed-json", f"the body is not UTF-8 (byte {exc.start})", "encode the JSON as UTF-8"
        )
    if body.count(b"[") + body.count(b"{") > MAX_BODY_DEPTH and (
        nesting_depth(body, stop_at=MAX_BODY_DEPTH) > MAX_BODY_DEPTH
    ):
        return BodyProblem(
            400, "too-deep", f"the JSON nests deeper than {MAX_BODY_DEPTH} levels",
            f"metadata may nest at most {MAX_JSON_DEPTH} levels",
        )  # fmt: skip
    return None

"""Shared helpers for the pydantic models at dualmem's file boundaries (export, conversations, weights)."""

from __future__ import annotations

from collections.abc import Sequence

import pydantic

__all__ = ["describe_error", "field_path"]


def field_path(loc: Sequence[int | str], prefix: str = "") -> str:
    """``("sessions", 0, "turns", 2, "text")`` as ``sessions[0].turns[2].text``."""
    out = prefix
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def describe_error(exc: pydantic.ValidationError, prefix: str = "") -> str:
    """The first error of ``exc`` as ``field.path: message``, and how many more there are."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    message = str(first["msg"]).removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{field_path(first['loc'], prefix)}: {message}{more}"

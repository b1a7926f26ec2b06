"""Building a backend from a name and keyword options, with a ``ConfigError`` instead of a ``TypeError``.

Every factory (controllers, answerers) goes through :func:`construct`, so a missing or unknown option
is reported as what it is — a configuration mistake, with the options the backend takes as the hint.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from dualmem.errors import ConfigError

__all__ = ["construct"]

T = TypeVar("T")


def construct(factory: Callable[..., T], options: Mapping[str, Any], *, what: str, hint: str = "") -> T:
    """``factory(**options)`` after checking ``options`` against its signature.

    ``what`` names the backend in the message (e.g. ``"controller 'llm'"``); ``hint`` says where the
    options come from. Errors raised by the constructor itself pass through unchanged.
    """
    params = inspect.signature(factory).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    named = {
        n: p
        for n, p in params.items()
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    }
    unknown = sorted(set(options) - set(named)) if not takes_any else []
    missing = [n for n, p in named.items() if p.default is inspect.Parameter.empty and n not in options]
    accepted = ", ".join(named) or "none"
    if unknown:
        raise ConfigError(
            f"{what} does not take option(s) {', '.join(unknown)}",
            hint=f"it takes: {accepted}" + (f"; {hint}" if hint else ""),
        )
    if missing:
        raise ConfigError(
            f"{what} needs option(s) {', '.join(missing)}",
            hint=hint or f"it takes: {accepted}",
        )
    return factory(**options)

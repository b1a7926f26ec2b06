"""System One: typed questions, the decision catalog, the Controller protocol and its backends.

Backends: ``builtin`` (offline feature-based decider, not a language model), ``jev`` (TypeSafe's
hosted Jev or any Jev-compatible server through ``typesafe-sdk``), ``llm`` (any OpenAI-compatible
chat endpoint read by single-token logprobs) and ``scripted`` (a fake for tests).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dualmem._options import construct
from dualmem.control.meter import ControllerStats, Meter
from dualmem.control.questions import (
    Answer,
    Batch,
    BatchResult,
    Choice,
    ChoiceAnswer,
    Controller,
    Noul,
    NoulAnswer,
    Question,
    Score,
    ScoreAnswer,
    Usage,
)
from dualmem.errors import ConfigError

__all__ = [
    "BACKENDS",
    "Answer",
    "Batch",
    "BatchResult",
    "Choice",
    "ChoiceAnswer",
    "Controller",
    "ControllerStats",
    "Meter",
    "Noul",
    "NoulAnswer",
    "Question",
    "Score",
    "ScoreAnswer",
    "Usage",
    "create_controller",
]

BACKENDS = ("builtin", "jev", "llm", "scripted")


#: where each backend's settings come from, shown when one is missing
_HINTS = {
    "jev": "pass controller_options={'api_key': ..., 'base_url': ...} (CLI: TYPESAFE_API_KEY/_BASE_URL)",
    "llm": "pass controller_options={'base_url': ..., 'model': ...} (CLI: DUALMEM_LLM_URL/_MODEL)",
}


def create_controller(name: str = "builtin", **options: Any) -> Controller:
    """Build a backend by name; ``options`` go to its constructor (api_key, base_url, model...).

    A missing or unknown option raises ``ConfigError`` with a hint; no backend opens a connection here.
    """
    factory: Callable[..., Controller]
    if name == "builtin":
        from dualmem.control.builtin import BuiltinController as factory
    elif name == "scripted":
        from dualmem.control.scripted import ScriptedController as factory
    elif name == "jev":
        from dualmem.control.jev import JevController as factory
    elif name == "llm":
        from dualmem.control.llm import LLMController as factory
    else:
        raise ConfigError(f"unknown controller {name!r}", hint=f"use one of {', '.join(BACKENDS)}")
    return construct(factory, options, what=f"controller {name!r}", hint=_HINTS.get(name, ""))

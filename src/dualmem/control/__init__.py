"""System One: typed questions, the decision catalog, the Controller protocol and its backends.

Backends: ``builtin`` (offline feature-based decider, not a language model), ``jev`` (TypeSafe's
hosted Jev or any Jev-compatible server through ``typesafe-sdk``), ``llm`` (any OpenAI-compatible
chat endpoint read by single-token logprobs) and ``scripted`` (a fake for tests).
"""

from __future__ import annotations

from typing import Any

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


def create_controller(name: str = "builtin", **options: Any) -> Controller:
    """Build a backend by name; ``options`` go to its constructor (api_key, base_url, model...)."""
    if name == "builtin":
        from dualmem.control.builtin import BuiltinController

        return BuiltinController(**options)
    if name == "scripted":
        from dualmem.control.scripted import ScriptedController

        return ScriptedController(options.pop("table", None), **options)
    if name == "jev":
        from dualmem.control.jev import JevController

        return JevController(**options)
    if name == "llm":
        from dualmem.control.llm import LLMController

        return LLMController(**options)
    raise ConfigError(f"unknown controller {name!r}", hint=f"use one of {', '.join(BACKENDS)}")

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
    "jev": (
        "pass options=OpenOptions(controller=JevConfig(api_key=...)) or JevConfig.from_env() "
        "(reads TYPESAFE_API_KEY/_BASE_URL; the CLI does the same)"
    ),
    "llm": (
        "pass options=OpenOptions(controller=LLMConfig(base_url=..., model=...)) or LLMConfig.from_env() "
        "(reads DUALMEM_LLM_URL/_MODEL; CLI: --llm-url/--llm-model)"
    ),
}


def create_controller(name: str = "builtin", *, config: object = None, **options: Any) -> Controller:
    """Build a backend by name from a typed ``config`` (``LLMConfig``, ``JevConfig``) or keyword options.

    A missing or unknown option raises ``ConfigError`` with a hint; no backend opens a connection here.
    """
    if config is not None:
        return _from_config(name, config, options)
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


def _from_config(name: str, config: object, options: dict[str, Any]) -> Controller:
    from dualmem.control.config import JevConfig, LLMConfig

    if options:
        raise ConfigError("pass either a controller config or keyword options, not both")
    if name == "llm" and isinstance(config, LLMConfig):
        from dualmem.control.llm import LLMController

        return LLMController.from_config(config)
    if name == "jev" and isinstance(config, JevConfig):
        from dualmem.control.jev import JevController

        return JevController.from_config(config)
    expected = {"llm": "LLMConfig", "jev": "JevConfig"}.get(name)
    raise ConfigError(
        f"controller {name!r} cannot take a {type(config).__name__}",
        hint=f"pass a {expected}" if expected else "only llm and jev take a config object",
    )

"""System One: typed questions, the decision catalog, the Controller protocol and its backends.

Backends: ``builtin`` (offline feature-based decider, not a language model), ``jev`` (TypeSafe's
hosted Jev or any Jev-compatible server through ``typesafe-sdk``), ``llm`` (any OpenAI-compatible
chat endpoint read by single-token logprobs) and ``scripted`` (a fake for tests).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dualmem._options import construct
from dualmem._registry import Registry
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
    "CONTROLLERS",
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

#: the controllers by name: the builtin backends and those of installed packages (entry point group
#: ``dualmem.controllers``); a factory takes keyword options, or a typed config through its
#: ``from_config`` classmethod
CONTROLLERS = Registry("controller", "dualmem.controllers")
CONTROLLERS.register("builtin", "dualmem.control.builtin:BuiltinController")
CONTROLLERS.register("jev", "dualmem.control.jev:JevController")
CONTROLLERS.register("llm", "dualmem.control.llm:LLMController")
CONTROLLERS.register("scripted", "dualmem.control.scripted:ScriptedController")

#: the builtin backends
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

#: the typed config each builtin backend's ``from_config`` takes
_CONFIGS = {"llm": "LLMConfig", "jev": "JevConfig"}


def create_controller(name: str = "builtin", *, config: object = None, **options: Any) -> Controller:
    """Build a backend by name from a typed ``config`` (``LLMConfig``, ``JevConfig``) or keyword options.

    ``name`` is a builtin backend or a plug-in's (see :data:`CONTROLLERS`). A missing or unknown option
    raises ``ConfigError`` with a hint; no backend opens a connection here.
    """
    factory: Callable[..., Controller] = CONTROLLERS.factory(name)
    if config is not None:
        return _from_config(name, factory, config, options)
    return construct(factory, options, what=f"controller {name!r}", hint=_HINTS.get(name, ""))


def _from_config(
    name: str, factory: Callable[..., Controller], config: object, options: dict[str, Any]
) -> Controller:
    if options:
        raise ConfigError("pass either a controller config or keyword options, not both")
    from dualmem.control import config as configs

    expected = _CONFIGS.get(name)
    from_config = getattr(factory, "from_config", None)
    if from_config is None or (expected is not None and not isinstance(config, getattr(configs, expected))):
        raise ConfigError(
            f"controller {name!r} cannot take a {type(config).__name__}",
            hint=f"pass a {expected}"
            if expected
            else "only a backend with a from_config takes a config object",
        )
    made: Controller = from_config(config)
    return made

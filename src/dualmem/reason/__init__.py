"""System Two: answerers that write the final answer from the selected evidence only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dualmem._options import construct
from dualmem._registry import Registry
from dualmem.reason.base import ABSTAIN_TEXT, Answerer, Draft
from dualmem.reason.extractive import ExtractiveAnswerer

__all__ = [
    "ABSTAIN_TEXT",
    "ANSWERERS",
    "Answerer",
    "Draft",
    "ExtractiveAnswerer",
    "create_answerer",
]

#: the answerers by name: the builtin ones and those of installed packages (entry point group
#: ``dualmem.answerers``); a factory takes keyword options
ANSWERERS = Registry("answerer", "dualmem.answerers")
ANSWERERS.register("extractive", ExtractiveAnswerer)
ANSWERERS.register("chat", "dualmem.reason.openai_chat:ChatAnswerer")

_HINTS = {
    "chat": (
        "pass answerer_options={'base_url': ..., 'model': ...} "
        "(CLI: DUALMEM_CHAT_URL, DUALMEM_CHAT_MODEL, OPENAI_API_KEY)"
    )
}


def create_answerer(name: str = "extractive", **options: Any) -> Answerer:
    """``extractive`` (offline), ``chat`` (OpenAI-compatible; needs base_url and model) or a plug-in's
    name (see :data:`ANSWERERS`).

    A missing or unknown option raises ``ConfigError`` with a hint; nothing connects here.
    """
    factory: Callable[..., Answerer] = ANSWERERS.factory(name)
    return construct(factory, options, what=f"answerer {name!r}", hint=_HINTS.get(name, ""))

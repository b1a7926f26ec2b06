"""System Two: answerers that write the final answer from the selected evidence only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dualmem._options import construct
from dualmem.errors import ConfigError
from dualmem.reason.base import ABSTAIN_TEXT, Answerer, Draft
from dualmem.reason.extractive import ExtractiveAnswerer

__all__ = ["ABSTAIN_TEXT", "ANSWERERS", "Answerer", "Draft", "ExtractiveAnswerer", "create_answerer"]

ANSWERERS = ("extractive", "chat")


def create_answerer(name: str = "extractive", **options: Any) -> Answerer:
    """``extractive`` (offline) or ``chat`` (OpenAI-compatible; needs base_url and model).

    A missing or unknown option raises ``ConfigError`` with a hint; nothing connects here.
    """
    factory: Callable[..., Answerer]
    if name == "extractive":
        factory = ExtractiveAnswerer
    elif name == "chat":
        from dualmem.reason.openai_chat import ChatAnswerer as factory
    else:
        raise ConfigError(f"unknown answerer {name!r}", hint=f"use one of {', '.join(ANSWERERS)}")
    hint = (
        "pass answerer_options={'base_url': ..., 'model': ...} "
        "(CLI: DUALMEM_CHAT_URL, DUALMEM_CHAT_MODEL, OPENAI_API_KEY)"
        if name == "chat"
        else ""
    )
    return construct(factory, options, what=f"answerer {name!r}", hint=hint)

"""System Two: answerers that write the final answer from the selected evidence only."""

from __future__ import annotations

from typing import Any

from dualmem.errors import ConfigError
from dualmem.reason.base import ABSTAIN_TEXT, Answerer, Draft
from dualmem.reason.extractive import ExtractiveAnswerer

__all__ = ["ABSTAIN_TEXT", "ANSWERERS", "Answerer", "Draft", "ExtractiveAnswerer", "create_answerer"]

ANSWERERS = ("extractive", "chat")


def create_answerer(name: str = "extractive", **options: Any) -> Answerer:
    """``extractive`` (offline) or ``chat`` (OpenAI-compatible; needs base_url and model)."""
    if name == "extractive":
        return ExtractiveAnswerer(**options)
    if name == "chat":
        from dualmem.reason.openai_chat import ChatAnswerer

        return ChatAnswerer(**options)
    raise ConfigError(f"unknown answerer {name!r}", hint=f"use one of {', '.join(ANSWERERS)}")

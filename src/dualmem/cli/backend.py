"""The System-One backend flags shared by ``dualmem``, ``dualmem bench locomo`` and ``calibrate-backend``.

Each flag has an environment variable; the flag wins. Only adapters read the environment.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when a config is made: the parser is built without the controller package
    from dualmem.control.config import JevConfig, LLMConfig

__all__ = ["add_llm_arguments", "jev_config_from_args", "llm_config_from_args"]

#: ``dualmem.control.config.DEBIAS_MODES`` (tests/test_cli_startup.py checks they agree).
DEBIAS_MODES = ("none", "both_orders", "cyclic")

_FLAGS: tuple[tuple[str, str, type, str], ...] = (
    (
        "--llm-url",
        "DUALMEM_LLM_URL",
        str,
        "API root of the OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1",
    ),
    ("--llm-model", "DUALMEM_LLM_MODEL", str, "model name the server knows"),
    ("--llm-timeout", "DUALMEM_LLM_TIMEOUT", float, "seconds one HTTP try may take (default 30)"),
    ("--llm-concurrency", "DUALMEM_LLM_CONCURRENCY", int, "requests in flight (default 1 local, 4 remote)"),
    ("--llm-retries", "DUALMEM_LLM_RETRIES", int, "extra tries of a transient failure (default 2)"),
    ("--llm-context", "DUALMEM_LLM_CONTEXT", int, "model context in tokens (default: ask the server)"),
    ("--llm-calibration", "DUALMEM_LLM_CALIBRATION", str, "calibration JSON from calibrate-backend"),
)


def add_llm_arguments(parser: argparse.ArgumentParser, *, with_key: bool = True) -> None:
    """``--llm-url``, ``--llm-model``, ``--llm-timeout``, ``--llm-concurrency``, ``--llm-retries``,
    ``--llm-context``, ``--llm-debias``, ``--llm-calibration`` (and the key's variable name)."""
    group = parser.add_argument_group("llm backend (flags win over DUALMEM_LLM_* variables)")
    for flag, var, kind, text in _FLAGS:
        group.add_argument(flag, type=kind, default=None, help=f"{text} (env {var})")
    group.add_argument(
        "--llm-debias",
        choices=DEBIAS_MODES,
        default=None,
        help="cyclic (default): a question of n options asked n times, each option once in each position; "
        "both_orders: asked as given and reversed; none: once (env DUALMEM_LLM_DEBIAS)",
    )
    if with_key:
        group.add_argument(
            "--llm-key-env",
            default="DUALMEM_LLM_KEY",
            help="environment variable holding the server's API key (default DUALMEM_LLM_KEY)",
        )


def llm_config_from_args(ns: argparse.Namespace, env: Mapping[str, str] | None = None) -> LLMConfig:
    """An ``LLMConfig`` from the flags over the environment; ``ConfigError`` with a hint if incomplete."""
    from dualmem.control.config import LLMConfig

    env = os.environ if env is None else env
    key_env = getattr(ns, "llm_key_env", "DUALMEM_LLM_KEY") or "DUALMEM_LLM_KEY"
    return LLMConfig.from_env(
        env,
        base_url=getattr(ns, "llm_url", None),
        model=getattr(ns, "llm_model", None),
        api_key=env.get(key_env) or None,
        timeout_s=getattr(ns, "llm_timeout", None),
        max_concurrency=getattr(ns, "llm_concurrency", None),
        retries=getattr(ns, "llm_retries", None),
        context_tokens=getattr(ns, "llm_context", None),
        debias=getattr(ns, "llm_debias", None),
        calibration=getattr(ns, "llm_calibration", None),
    )


def jev_config_from_args(ns: argparse.Namespace, env: Mapping[str, str] | None = None) -> JevConfig:
    """A ``JevConfig`` from ``TYPESAFE_API_KEY``/``TYPESAFE_BASE_URL``/``DUALMEM_JEV_*``."""
    from dualmem.control.config import JevConfig

    del ns
    return JevConfig.from_env(os.environ if env is None else env)

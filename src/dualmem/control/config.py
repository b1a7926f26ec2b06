"""Typed, frozen settings of the remote System-One backends: :class:`LLMConfig` and :class:`JevConfig`.

Pass one to :meth:`dualmem.Memory.open` through ``OpenOptions(controller=...)``::

    from dualmem import Memory, OpenOptions
    from dualmem.control.config import LLMConfig

    cfg = LLMConfig(base_url="http://127.0.0.1:8080/v1", model="qwen2.5-coder-0.5b")
    mem = Memory.open("m.db", controller="llm", options=OpenOptions(controller=cfg))

The core never reads the environment. ``LLMConfig.from_env()`` / ``JevConfig.from_env()`` do, for
adapters (the CLI, ``dualmem bench``, your own entry point): call them yourself and pass the result
on. A missing or malformed setting is a ``ConfigError`` whose hint names the flag or variable.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlparse

from dualmem.errors import ConfigError
from dualmem.http import RetryPolicy

__all__ = ["DEBIAS_MODES", "LLM_ENV", "ControllerConfig", "Debias", "JevConfig", "LLMConfig", "is_local_url"]

Debias = Literal["none", "both_orders", "cyclic"]
DEBIAS_MODES: tuple[Debias, ...] = ("none", "both_orders", "cyclic")

#: every variable ``LLMConfig.from_env`` reads, with the field it sets
LLM_ENV: Mapping[str, str] = {
    "DUALMEM_LLM_URL": "base_url",
    "DUALMEM_LLM_MODEL": "model",
    "DUALMEM_LLM_KEY": "api_key",
    "DUALMEM_LLM_TIMEOUT": "timeout_s",
    "DUALMEM_LLM_CONCURRENCY": "max_concurrency",
    "DUALMEM_LLM_RETRIES": "retries",
    "DUALMEM_LLM_CONTEXT": "context_tokens",
    "DUALMEM_LLM_DEBIAS": "debias",
    "DUALMEM_LLM_CALIBRATION": "calibration",
}


def is_local_url(url: str) -> bool:
    """True for a loopback host (``localhost``, 127.0.0.0/8, ``::1``): a server on this machine."""
    host = (urlparse(url).hostname or "").strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _positive(value: object, name: str, *, integer: bool = False) -> None:
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:
        what = "a positive integer" if integer else "a positive number"
        raise ConfigError(f"{name} must be {what}, got {value!r}")


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """Settings of the ``llm`` backend (any OpenAI-compatible ``/chat/completions`` with logprobs).

    - ``timeout_s``: the longest one HTTP try may take; a read's remaining time budget shortens it.
    - ``max_concurrency``: requests in flight; None means 1 for a loopback URL (a local server
      answers one request at a time: more only queue and time out) and 4 otherwise.
    - ``retries``: extra tries of a transient failure (timeouts, 408, 429, 5xx, queue-full),
      waiting at least the server's ``Retry-After``.
    - ``context_tokens``: the model's context size; None means: ask the server (llama.cpp
      ``/props`` ``n_ctx``), else assume ``DEFAULT_CONTEXT_TOKENS``. Prompts are fitted to it.
    - ``debias``: ``"cyclic"`` (default) asks a question of n options n times, the options shifted
      one place each time (each option once in each position), and averages the log-probabilities:
      an additive position bias cancels exactly. A Noul costs 2 forward passes, a Choice of n
      options n (``relation.time``: 7), a Score 1. ``"both_orders"`` asks each Noul and Choice twice
      (as given, reversed): the same for a Noul, only partly debiased for a Choice of 3 or more
      options (middle options never come first). ``"none"`` asks once.
    - ``calibration``: a calibration JSON (``dualmem calibrate-backend``) applied to Noul scores.
    """

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 30.0
    max_concurrency: int | None = None
    retries: int = 2
    context_tokens: int | None = None
    debias: Debias = "cyclic"
    calibration: str | None = None

    def __post_init__(self) -> None:
        for name in ("base_url", "model"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(
                    f"the llm backend needs {name}",
                    hint="pass --llm-url/--llm-model or DUALMEM_LLM_URL/_MODEL",
                )
        if urlparse(self.base_url).scheme not in ("http", "https"):
            raise ConfigError(f"llm base_url must be an http(s) URL, got {self.base_url!r}")
        _positive(self.timeout_s, "llm timeout_s")
        if self.max_concurrency is not None:
            _positive(self.max_concurrency, "llm max_concurrency", integer=True)
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ConfigError(f"llm retries must be an integer >= 0, got {self.retries!r}")
        if self.context_tokens is not None:
            _positive(self.context_tokens, "llm context_tokens", integer=True)
            if self.context_tokens < 256:
                raise ConfigError(f"llm context_tokens must be at least 256, got {self.context_tokens}")
        if self.debias not in DEBIAS_MODES:
            raise ConfigError(
                f"unknown llm debias mode {self.debias!r}", hint=f"use one of {', '.join(DEBIAS_MODES)}"
            )

    @property
    def concurrency(self) -> int:
        """Requests in flight: ``max_concurrency``, or 1 for a local server and 4 for a remote one."""
        if self.max_concurrency is not None:
            return self.max_concurrency
        return 1 if is_local_url(self.base_url) else 4

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(attempts=self.retries + 1, backoff_s=0.5, max_backoff_s=8.0)

    def public(self) -> dict[str, object]:
        """The settings as they may be logged or written to a report (never the key)."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "timeout_s": self.timeout_s,
            "max_concurrency": self.concurrency,
            "retries": self.retries,
            "context_tokens": self.context_tokens,
            "debias": self.debias,
            "calibration": self.calibration,
        }

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> LLMConfig:
        """Settings from ``DUALMEM_LLM_*`` variables (see ``LLM_ENV``); ``overrides`` that are not None win.

        For adapters only: the library itself never reads the environment.
        """
        values = _env_values(env, LLM_ENV, overrides)
        missing = [v for v, n in LLM_ENV.items() if n in ("base_url", "model") and not values.get(n)]
        if missing:
            raise ConfigError(
                f"the llm backend needs {' and '.join(missing)}",
                hint="set them, or pass --llm-url URL --llm-model NAME (e.g. http://127.0.0.1:8080/v1)",
            )
        return cls(**values)  # type: ignore[arg-type]


_INTS = {"max_concurrency", "retries", "context_tokens"}


def _env_values(
    env: Mapping[str, str] | None, names: Mapping[str, str], overrides: Mapping[str, object]
) -> dict[str, object]:
    """The settings named in ``names`` (variable -> setting) that ``env`` (default ``os.environ``)
    sets to a non-blank value, parsed; then ``overrides`` that are not None."""
    env = os.environ if env is None else env
    values: dict[str, object] = {}
    for var, name in names.items():
        raw = env.get(var)
        if raw is not None and raw.strip():
            values[name] = _parse(var, name, raw.strip())
    values.update({k: v for k, v in overrides.items() if v is not None})
    return values


def _parse(var: str, name: str, raw: str) -> object:
    if name in _INTS:
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{var} must be an integer, got {raw!r}") from None
    if name == "timeout_s":
        try:
            return float(raw)
        except ValueError:
            raise ConfigError(f"{var} must be a number of seconds, got {raw!r}") from None
    return raw


@dataclass(frozen=True, slots=True)
class JevConfig:
    """Settings of the ``jev`` backend (hosted Jev or a Jev-compatible server, via ``typesafe-sdk``).

    ``base_url`` and ``model`` None mean the SDK's defaults; ``max_concurrency`` None means 1 for a
    loopback URL and 4 otherwise.
    """

    api_key: str = field(repr=False)
    base_url: str | None = None
    model: str | None = None
    timeout_s: float = 15.0
    max_concurrency: int | None = None
    retries: int = 2

    def __post_init__(self) -> None:
        if not isinstance(self.api_key, str) or not self.api_key:
            raise ConfigError(
                "the jev backend needs an API key",
                hint="pass JevConfig(api_key=...), or set TYPESAFE_API_KEY for the CLI",
            )
        _positive(self.timeout_s, "jev timeout_s")
        if self.max_concurrency is not None:
            _positive(self.max_concurrency, "jev max_concurrency", integer=True)
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ConfigError(f"jev retries must be an integer >= 0, got {self.retries!r}")

    @property
    def concurrency(self) -> int:
        if self.max_concurrency is not None:
            return self.max_concurrency
        return 1 if self.base_url and is_local_url(self.base_url) else 4

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(attempts=self.retries + 1, backoff_s=0.5, max_backoff_s=8.0)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> JevConfig:
        """``TYPESAFE_API_KEY``, ``TYPESAFE_BASE_URL``, ``DUALMEM_JEV_MODEL``, ``DUALMEM_JEV_TIMEOUT``,
        ``DUALMEM_JEV_CONCURRENCY``, ``DUALMEM_JEV_RETRIES``; ``overrides`` that are not None win."""
        names = {
            "TYPESAFE_API_KEY": "api_key",
            "TYPESAFE_BASE_URL": "base_url",
            "DUALMEM_JEV_MODEL": "model",
            "DUALMEM_JEV_TIMEOUT": "timeout_s",
            "DUALMEM_JEV_CONCURRENCY": "max_concurrency",
            "DUALMEM_JEV_RETRIES": "retries",
        }
        values = _env_values(env, names, overrides)
        if not values.get("api_key"):
            raise ConfigError(
                "the jev backend needs TYPESAFE_API_KEY",
                hint="set it (the CLI reads only the environment for jev)",
            )
        return cls(**values)  # type: ignore[arg-type]


ControllerConfig = LLMConfig | JevConfig

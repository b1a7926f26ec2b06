"""LoCoMo benchmark configuration: the options and the systems compared (the CLI's arguments are
``dualmem.cli.bench``).

``dualmem bench locomo --data PATH`` runs every system below on every conversation at ``PATH``
(a LoCoMo ``conv-N.json``, a directory of them, or the public ``locomo10.json``):

* ``dualmem``: the full system (controller on write and read).
* ``bm25``, ``dense``, ``hybrid``: baselines over the same store (lexical top-k, vector top-k,
  and both fused by RRF with kappa = 60), no controller at query time.
* ``full-context``: every turn handed to the answerer (only with an answerer; no retrieval metrics).
* ablations: ``no-write-control`` (no relation decisions on write), ``no-read-control`` (plain RRF
  top-K at query time), ``no-<view>`` (the evidence loop without that relation view).

Read-side variants share one build per conversation; ``no-write-control`` has its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dualmem.config import Profile
from dualmem.control.config import LLMConfig
from dualmem.errors import ConfigError
from dualmem.types import VIEWS

__all__ = [
    "ALL_SYSTEMS",
    "DEFAULT_K",
    "BenchConfig",
    "Endpoint",
    "SystemSpec",
    "system_spec",
]

SystemKind = Literal["memory", "bm25", "dense", "hybrid", "full-context"]
BuildKind = Literal["full", "no-write-control"]

ALL_SYSTEMS: tuple[str, ...] = (
    "dualmem",
    "bm25",
    "dense",
    "hybrid",
    "full-context",
    "no-write-control",
    "no-read-control",
    *(f"no-{v}" for v in VIEWS),
)
DEFAULT_K: tuple[int, ...] = (1, 3, 5, 10, 20)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """An OpenAI-compatible (or Jev-compatible) endpoint: API root, model, key."""

    url: str
    model: str
    api_key: str | None = field(default=None, repr=False)

    def public(self) -> dict[str, str]:
        """What may be written to a report or a cache key (never the key)."""
        return {"url": self.url, "model": self.model}


@dataclass(frozen=True, slots=True)
class BenchConfig:
    """Everything a LoCoMo run depends on. ``limit`` caps conversations, ``max_questions`` questions."""

    data: Path
    out: Path = Path("bench-out")
    systems: tuple[str, ...] = ALL_SYSTEMS
    controller: str = "builtin"
    controller_endpoint: Endpoint | None = None
    llm: LLMConfig | None = None  # every setting of --controller llm (the endpoint's url/model too)
    answerer: str = "none"  # none | extractive | chat
    answerer_endpoint: Endpoint | None = None
    judges: tuple[Endpoint, ...] = ()
    judge_kinds: tuple[str, ...] = ("binary", "continuous")
    embedder: str = "minilm"
    limit: int | None = None
    max_questions: int | None = None
    k_values: tuple[int, ...] = DEFAULT_K
    top_k: int = 10  # evidence handed to the answerer
    use_cache: bool = True

    def __post_init__(self) -> None:
        for name in self.systems:
            system_spec(name)
        if self.answerer not in ("none", "extractive", "chat"):
            raise ConfigError(f"unknown answerer {self.answerer!r}", hint="use none, extractive or chat")
        if self.answerer == "chat" and self.answerer_endpoint is None:
            raise ConfigError(
                "--answerer chat needs an endpoint", hint="pass --answerer-url and --answerer-model"
            )
        if self.controller in ("llm",) and self.controller_endpoint is None and self.llm is None:
            raise ConfigError(
                "--controller llm needs an endpoint", hint="pass --controller-url and --controller-model"
            )
        for kind in self.judge_kinds:
            if kind not in ("binary", "continuous"):
                raise ConfigError(f"unknown judge kind {kind!r}", hint="use binary and/or continuous")
        if not self.k_values or min(self.k_values) < 1 or self.top_k < 1:
            raise ConfigError("k values and top_k must be positive")
        if (self.limit is not None and self.limit < 1) or (
            self.max_questions is not None and self.max_questions < 1
        ):
            raise ConfigError("--limit and --max-questions must be positive")

    @property
    def max_k(self) -> int:
        return max(*self.k_values, self.top_k)

    def public(self) -> dict[str, object]:
        """The configuration as written to results.json (no API keys)."""
        return {
            "data": str(self.data),
            "systems": list(self.systems),
            "controller": self.controller,
            "controller_endpoint": self.controller_endpoint.public() if self.controller_endpoint else None,
            "llm": self.llm.public() if self.llm is not None else None,
            "answerer": self.answerer,
            "answerer_endpoint": self.answerer_endpoint.public() if self.answerer_endpoint else None,
            "judges": [j.public() for j in self.judges],
            "judge_kinds": list(self.judge_kinds),
            "embedder": self.embedder,
            "limit": self.limit,
            "max_questions": self.max_questions,
            "k_values": list(self.k_values),
            "top_k": self.top_k,
        }


@dataclass(frozen=True, slots=True)
class SystemSpec:
    """How one compared system retrieves: its kind, the build it reads, and its profile changes."""

    name: str
    kind: SystemKind
    build: BuildKind = "full"
    read_changes: tuple[tuple[str, object], ...] = ()

    def profile(self, base: Profile) -> Profile:
        changes = dict(self.read_changes)
        if self.build == "no-write-control":
            changes["write__relations_enabled"] = False
        return base.with_(**changes) if changes else base


def system_spec(name: str) -> SystemSpec:
    """The spec of a system name (see the module docs); ``ConfigError`` for an unknown one."""
    if name == "dualmem":
        return SystemSpec(name, "memory")
    if name in ("bm25", "dense", "hybrid", "full-context"):
        return SystemSpec(name, name)  # type: ignore[arg-type]
    if name == "no-write-control":
        return SystemSpec(name, "memory", "no-write-control")
    if name == "no-read-control":
        return SystemSpec(name, "memory", read_changes=(("read__controller_enabled", False),))
    view = name.removeprefix("no-")
    if name.startswith("no-") and view in VIEWS:
        kept = tuple(v for v in VIEWS if v != view)
        return SystemSpec(name, "memory", read_changes=(("read__views", kept), ("read__expansion", True)))
    raise ConfigError(f"unknown system {name!r}", hint=f"choose from {', '.join(ALL_SYSTEMS)}")

"""LoCoMo benchmark configuration: the options, the systems compared, and the CLI arguments.

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

import argparse
import dataclasses
import os
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
    "add_bench_arguments",
    "bench_from_args",
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
        return SystemSpec(name, "memory", read_changes=(("read__views", kept),))
    raise ConfigError(f"unknown system {name!r}", hint=f"choose from {', '.join(ALL_SYSTEMS)}")


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``dualmem bench locomo``."""
    add = parser.add_argument
    add("--data", type=Path, required=True, help="conv-N.json, a directory of them, or locomo10.json")
    add(
        "--out",
        type=Path,
        default=Path("bench-out"),
        help="output directory (report.md, results.json, plots)",
    )
    add("--systems", nargs="+", default=list(ALL_SYSTEMS), metavar="NAME", help=", ".join(ALL_SYSTEMS))
    add("--controller", default="builtin", choices=["builtin", "jev", "llm"])
    add("--controller-url", default=None, help="API root of a Jev-compatible or OpenAI-compatible endpoint")
    add("--controller-model", default=None)
    from dualmem.cli.backend import add_llm_arguments

    add_llm_arguments(parser, with_key=False)
    add("--answerer", default="none", choices=["none", "extractive", "chat"])
    add("--answerer-url", default=None, help="OpenAI-compatible API root for --answerer chat")
    add("--answerer-model", default=None)
    add("--judge", nargs="+", default=["none"], metavar="URL", help="'none' or OpenAI-compatible API roots")
    add("--judge-model", default="gpt-4o-mini")
    add("--judge-kinds", nargs="+", default=["binary", "continuous"], choices=["binary", "continuous"])
    add("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the endpoints' API key")
    add("--embedder", default="minilm", help="minilm (default), hashing, openai:MODEL")
    add("--limit", type=int, default=None, help="at most N conversations")
    add("--max-questions", type=int, default=None, help="at most N questions per conversation")
    add("--top-k", type=int, default=10, help="evidence items handed to the answerer")
    add("--no-cache", action="store_true", help="rebuild memories even when a cached build exists")
    add(
        "--cv",
        action="store_true",
        help="leave-one-conversation-out CV of the learned System-One scorer against bm25/dense/hybrid "
        "(writes cv-report.md and cv-results.json; see dualmem.bench.cv)",
    )
    add("--cv-ablations", nargs="*", default=None, metavar="NAME", help="CV ablations (default: all)")


def bench_from_args(ns: argparse.Namespace) -> BenchConfig:
    """A ``BenchConfig`` from parsed arguments. Reads the API key from ``--api-key-env`` (adapter side)."""
    key = os.environ.get(ns.api_key_env) or None
    judges = tuple(Endpoint(u, ns.judge_model, key) for u in ns.judge if u.lower() != "none")
    llm = None
    endpoint = _endpoint(ns.controller_url, ns.controller_model, key, "controller")
    if ns.controller == "llm":
        from dualmem.cli.backend import llm_config_from_args

        url = ns.controller_url or getattr(ns, "llm_url", None)
        model = ns.controller_model or getattr(ns, "llm_model", None)
        llm = llm_config_from_args(argparse.Namespace(**{**vars(ns), "llm_url": url, "llm_model": model}))
        if key and not llm.api_key:
            llm = dataclasses.replace(llm, api_key=key)
        endpoint = Endpoint(llm.base_url, llm.model, llm.api_key)
    return BenchConfig(
        data=ns.data,
        out=ns.out,
        systems=tuple(dict.fromkeys(ns.systems)),
        controller=ns.controller,
        controller_endpoint=endpoint,
        llm=llm,
        answerer=ns.answerer,
        answerer_endpoint=_endpoint(ns.answerer_url, ns.answerer_model, key, "answerer"),
        judges=judges,
        judge_kinds=tuple(dict.fromkeys(ns.judge_kinds)),
        embedder=ns.embedder,
        limit=ns.limit,
        max_questions=ns.max_questions,
        top_k=ns.top_k,
        use_cache=not ns.no_cache,
    )


def _endpoint(url: str | None, model: str | None, key: str | None, what: str) -> Endpoint | None:
    if what == "controller" and url is None:
        # hosted Jev: the SDK's default URL and model unless given; empty fields are not passed on
        return Endpoint("", model or "", key) if (model or key) else None
    if url is None and model is None:
        return None
    if url is None or model is None:
        raise ConfigError(f"--{what}-url and --{what}-model go together")
    return Endpoint(url, model, key)

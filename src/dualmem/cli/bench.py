"""``dualmem bench locomo``'s arguments, and the ``BenchConfig`` they make (``dualmem.bench``)."""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from dualmem.cli.backend import add_llm_arguments, llm_config_from_args
from dualmem.errors import ConfigError

if TYPE_CHECKING:  # the bench package is imported when a bench runs
    from dualmem.bench.locomo import BenchConfig, Endpoint

__all__ = ["add_bench_arguments", "bench_from_args"]

#: ``dualmem.bench.locomo.ALL_SYSTEMS`` (tests/test_cli_startup.py checks they agree).
ALL_SYSTEMS = (
    "dualmem",
    "bm25",
    "dense",
    "hybrid",
    "full-context",
    "no-write-control",
    "no-read-control",
    "no-semantic",
    "no-temporal",
    "no-causal",
    "no-entity",
)


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``dualmem bench locomo``."""
    add = parser.add_argument
    # its own --controller/--answerer (choices checked by argparse; "none" is no registry's name)
    parser.set_defaults(own_part_options=("controller", "answerer"))
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
    add_llm_arguments(parser, with_key=False)
    add("--answerer", default="none", choices=["none", "extractive", "chat"])
    add("--answerer-url", default=None, help="OpenAI-compatible API root for --answerer chat")
    add("--answerer-model", default=None)
    add("--judge", nargs="+", default=["none"], metavar="URL", help="'none' or OpenAI-compatible API roots")
    add("--judge-model", default="gpt-4o-mini")
    add("--judge-kinds", nargs="+", default=["binary", "continuous"], choices=["binary", "continuous"])
    add("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the endpoints' API key")
    add("--embedder", default="minilm", help="minilm (default), multilingual, hashing, openai:MODEL")
    add("--limit", type=int, default=None, help="at most N conversations")
    add("--max-questions", type=int, default=None, help="at most N questions per conversation")
    add("--top-k", type=int, default=10, help="evidence items handed to the answerer")
    add("--no-cache", action="store_true", help="rebuild memories even when a cached build exists")


def bench_from_args(ns: argparse.Namespace) -> BenchConfig:
    """A ``BenchConfig`` from parsed arguments. Reads the API key from ``--api-key-env`` (adapter side)."""
    from dualmem.bench.locomo import BenchConfig, Endpoint

    key = os.environ.get(ns.api_key_env) or None
    judges = tuple(Endpoint(u, ns.judge_model, key) for u in ns.judge if u.lower() != "none")
    llm = None
    endpoint = _endpoint(ns.controller_url, ns.controller_model, key, "controller")
    if ns.controller == "llm":
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
    from dualmem.bench.locomo import Endpoint

    if what == "controller" and url is None:
        # hosted Jev: the SDK's default URL and model unless given; empty fields are not passed on
        return Endpoint("", model or "", key) if (model or key) else None
    if url is None and model is None:
        return None
    if url is None or model is None:
        raise ConfigError(f"--{what}-url and --{what}-model go together")
    return Endpoint(url, model, key)

"""Embedders: texts in, L2-normalised float32 rows out.

``create_embedder(spec)`` builds one from a short spec string. Importing this package loads no
model and does not import onnxruntime; :class:`MiniLMEmbedder` loads its session on first use.
"""

from __future__ import annotations

from typing import Any

from dualmem.embed.base import Embedder, Matrix, QueryEmbedder, embed_queries, normalize
from dualmem.embed.cache import CachedEmbedder
from dualmem.embed.e5 import MULTILINGUAL_DIM, MULTILINGUAL_NAME, MultilingualEmbedder
from dualmem.embed.hashing import HashingEmbedder
from dualmem.embed.onnx import MINILM_DIM, MINILM_NAME, MiniLMEmbedder
from dualmem.embed.openai import OpenAIEmbedder
from dualmem.errors import ConfigError

__all__ = [
    "MINILM_DIM",
    "MINILM_NAME",
    "MULTILINGUAL_DIM",
    "MULTILINGUAL_NAME",
    "SPECS",
    "CachedEmbedder",
    "Embedder",
    "HashingEmbedder",
    "Matrix",
    "MiniLMEmbedder",
    "MultilingualEmbedder",
    "OpenAIEmbedder",
    "QueryEmbedder",
    "create_embedder",
    "embed_queries",
    "is_minilm",
    "is_multilingual",
    "normalize",
]

#: the spec forms :func:`create_embedder` understands
SPECS = ("minilm", "default", "multilingual", "hashing", "hashing:DIM", "openai:MODEL")

#: names of :class:`MultilingualEmbedder` (multilingual-e5-small from the ``multilingual`` extra)
MULTILINGUAL_SPECS = ("multilingual", "e5")


def is_multilingual(spec: str) -> bool:
    """Whether ``create_embedder(spec)`` builds the multilingual (e5) embedder."""
    return spec.strip().lower() in MULTILINGUAL_SPECS


def is_minilm(spec: str) -> bool:
    """Whether ``create_embedder(spec)`` builds the MiniLM embedder."""
    kind, _, argument = spec.strip().partition(":")
    return kind.lower() in ("minilm", "default") and not argument


def create_embedder(spec: str = "minilm", *, cache_size: int = 0, **options: Any) -> Embedder:
    """Build an embedder from ``spec``; ``options`` go to its constructor.

    ``"minilm"`` / ``"default"``: :class:`MiniLMEmbedder` (batch_size, max_length, threads, model_path,
    tokenizer_path, model_sha256, graph_cache);
    ``"multilingual"`` (or ``"e5"``): :class:`MultilingualEmbedder`, multilingual-e5-small from the
    ``multilingual`` extra (batch_size; a ``ConfigError`` naming the extra when it is not installed);
    ``"hashing"`` / ``"hashing:DIM"``: :class:`HashingEmbedder`;
    ``"openai:MODEL"``: :class:`OpenAIEmbedder` (base_url, api_key, dim, batch_size, timeout, retry,
    transport).
    ``cache_size > 0`` wraps the result in a :class:`CachedEmbedder` of that size.
    """
    kind, _, argument = spec.strip().partition(":")
    kind = kind.lower()
    embedder: Embedder
    try:
        if is_minilm(spec):
            embedder = MiniLMEmbedder(**options)
        elif is_multilingual(spec):
            embedder = MultilingualEmbedder(**options)
        elif kind == "hashing":
            embedder = (
                HashingEmbedder(_dimension(argument, spec), **options)
                if argument
                else HashingEmbedder(**options)
            )
        elif kind == "openai" and argument:
            embedder = OpenAIEmbedder(model=argument, **options)
        else:
            raise ConfigError(f"unknown embedder {spec!r}", hint=f"choose one of: {', '.join(SPECS)}")
    except TypeError as exc:  # an option the chosen embedder does not take
        raise ConfigError(
            f"bad option for embedder {spec!r}: {exc}", hint="see create_embedder's docs"
        ) from exc
    return CachedEmbedder(embedder, size=cache_size) if cache_size > 0 else embedder


def _dimension(argument: str, spec: str) -> int:
    try:
        return int(argument)
    except ValueError as exc:
        raise ConfigError(f"bad dimension in embedder {spec!r}", hint="e.g. hashing:256") from exc

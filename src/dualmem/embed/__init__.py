"""Embedders: texts in, L2-normalised float32 rows out.

``create_embedder(spec)`` builds one from a short spec string. Importing this package loads no
model and does not import onnxruntime; :class:`MiniLMEmbedder` loads its session on first use.
"""

from __future__ import annotations

from typing import Any

from dualmem._registry import Registry
from dualmem.embed.base import Embedder, Matrix, QueryEmbedder, embed_queries, normalize
from dualmem.embed.cache import CachedEmbedder
from dualmem.embed.e5 import MULTILINGUAL_DIM, MULTILINGUAL_NAME, MultilingualEmbedder
from dualmem.embed.hashing import HashingEmbedder
from dualmem.embed.onnx import MINILM_DIM, MINILM_NAME, MiniLMEmbedder
from dualmem.embed.openai import OpenAIEmbedder
from dualmem.errors import ConfigError

__all__ = [
    "EMBEDDERS",
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
    "specs",
]

#: the spec forms the builtin embedders understand (a plug-in's name is one more, see ``EMBEDDERS``)
SPECS = ("minilm", "default", "multilingual", "hashing", "hashing:DIM", "openai:MODEL")

#: names of :class:`MultilingualEmbedder` (multilingual-e5-small from the ``multilingual`` extra)
MULTILINGUAL_SPECS = ("multilingual", "e5")

#: the embedders by name: the builtin ones and those of installed packages (entry point group
#: ``dualmem.embedders``). A factory is called ``factory(**options)``, or ``factory(ARGUMENT, **options)``
#: for a spec ``NAME:ARGUMENT``. Adding one is one line: ``EMBEDDERS.register("name", "module:Class")``.
EMBEDDERS = Registry("embedder", "dualmem.embedders")


def is_minilm(spec: str) -> bool:
    """Whether ``create_embedder(spec)`` builds the MiniLM embedder."""
    kind, _, argument = spec.strip().partition(":")
    return kind.lower() in ("minilm", "default") and not argument


def is_multilingual(spec: str) -> bool:
    """Whether ``create_embedder(spec)`` builds the multilingual (e5) embedder."""
    return spec.strip().lower() in MULTILINGUAL_SPECS


def specs() -> tuple[str, ...]:
    """The spec forms :func:`create_embedder` understands now: :data:`SPECS` and every other name
    registered in :data:`EMBEDDERS` (a builtin added with one line, a plug-in)."""
    known = {spec.partition(":")[0] for spec in SPECS}
    return SPECS + tuple(name for name in EMBEDDERS.names() if name not in known)


def create_embedder(spec: str = "minilm", *, cache_size: int = 0, **options: Any) -> Embedder:
    """Build an embedder from ``spec``; ``options`` go to its constructor.

    ``"minilm"`` / ``"default"``: :class:`MiniLMEmbedder` (batch_size, max_length, threads, model_path,
    tokenizer_path, model_sha256, graph_cache);
    ``"multilingual"`` (or ``"e5"``): :class:`MultilingualEmbedder`, multilingual-e5-small from the
    ``multilingual`` extra (batch_size; a ``ConfigError`` naming the extra when it is not installed);
    ``"hashing"`` / ``"hashing:DIM"``: :class:`HashingEmbedder`;
    ``"openai:MODEL"``: :class:`OpenAIEmbedder` (base_url, api_key, dim, batch_size, timeout, retry,
    transport); any other name: the embedder registered under it in :data:`EMBEDDERS` (a plug-in).
    ``cache_size > 0`` wraps the result in a :class:`CachedEmbedder` of that size.
    """
    kind, colon, argument = spec.strip().partition(":")
    if not kind or kind not in EMBEDDERS:
        raise _unknown(spec)
    factory = EMBEDDERS.factory(kind)
    try:
        embedder: Embedder = factory(argument, **options) if colon else factory(**options)
    except TypeError as exc:  # an option the chosen embedder does not take
        raise ConfigError(
            f"bad option for embedder {spec!r}: {exc}", hint="see create_embedder's docs"
        ) from exc
    return CachedEmbedder(embedder, size=cache_size) if cache_size > 0 else embedder


def _unknown(spec: str) -> ConfigError:
    return ConfigError(f"unknown embedder {spec!r}", hint=f"choose one of: {', '.join(specs())}")


def _minilm(argument: str | None = None, **options: Any) -> Embedder:
    if argument is not None:
        raise _unknown(f"minilm:{argument}")
    return MiniLMEmbedder(**options)


def _multilingual(argument: str | None = None, **options: Any) -> Embedder:
    if argument is not None:
        raise _unknown(f"multilingual:{argument}")
    return MultilingualEmbedder(**options)


def _hashing(argument: str | None = None, **options: Any) -> Embedder:
    if argument is None:
        return HashingEmbedder(**options)
    try:
        dim = int(argument)
    except ValueError as exc:
        raise ConfigError(f"bad dimension in embedder 'hashing:{argument}'", hint="e.g. hashing:256") from exc
    return HashingEmbedder(dim, **options)


def _openai(argument: str | None = None, **options: Any) -> Embedder:
    if not argument:
        raise _unknown(f"openai:{argument or ''}")
    return OpenAIEmbedder(model=argument, **options)


EMBEDDERS.register("minilm", _minilm)
EMBEDDERS.register("default", _minilm)
EMBEDDERS.register("multilingual", _multilingual)
EMBEDDERS.register("e5", _multilingual)
EMBEDDERS.register("hashing", _hashing)
EMBEDDERS.register("openai", _openai)

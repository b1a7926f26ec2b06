"""Loading a candidate scorer of either kind: a file ``dualmem calibrate`` wrote, or the packaged one.

``ranker_from_json`` tells a ``LinearRanker`` (``dualmem.ranker/1``, :mod:`dualmem.control.ranker`)
from a ``TreeRanker`` (``dualmem.trees/1``, :mod:`dualmem.control.trees`) by its format. The
packaged default (``default_ranker.json``, boosted trees) was fitted by ``dualmem calibrate`` on the
dev corpora; its provenance says on what. Fitting lives in :mod:`dualmem.learn`; this is inference.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path

from dualmem.control.ranker import FORMAT, LinearRanker, Ranker, read_json
from dualmem.control.trees import FORMAT as TREES
from dualmem.control.trees import TreeRanker
from dualmem.errors import ConfigError

__all__ = ["default_ranker", "load_ranker", "ranker_from_json"]

_PACKAGED = "default_ranker.json"


def ranker_from_json(data: object, *, source: str = "ranker") -> Ranker:
    """A ``LinearRanker`` (``dualmem.ranker/1``) or a ``TreeRanker`` (``dualmem.trees/1``) by its format."""
    fmt = data.get("format") if isinstance(data, Mapping) else None
    if fmt == TREES:
        return TreeRanker.from_json(data, source=source)
    if fmt == FORMAT:
        return LinearRanker.from_json(data, source=source)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: expected a JSON object")
    raise ConfigError(f"{source}: unsupported format {fmt!r}", hint=f"expected {FORMAT} or {TREES}")


def load_ranker(path: Path | str) -> Ranker:
    """The scorer in a file ``dualmem calibrate`` wrote, whichever kind it is."""
    return ranker_from_json(read_json(path), source=str(path))


@cache
def default_ranker() -> Ranker:
    """The packaged scorer (read once, on first use)."""
    ref = resources.files("dualmem.control").joinpath(_PACKAGED)
    try:
        data = json.loads(ref.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read the packaged {_PACKAGED}: {exc}") from exc
    return ranker_from_json(data, source=_PACKAGED)

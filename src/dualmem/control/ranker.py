"""The candidate scorers' common face (``Ranker``) and the linear one as data: named feature
weights, a bias, and where they came from.

The file format (``dualmem.ranker/1``)::

    {"format": "dualmem.ranker/1",
     "features": {"vec": 2.1, "lex": 3.0, ...},   # weight per feature name (dualmem.read.pool.FEATURES)
     "bias": -4.2,
     "provenance": {"data": "...", "command": "...", "version": "...", "created": "...", ...}}

``score`` is ``sigmoid(features @ w + b)`` over a pool's feature matrix: pure numpy, microseconds
for a few hundred candidates. Loading a scorer of either kind, and the packaged default, is
``dualmem.control.scorers``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt
import pydantic
from pydantic import BaseModel, ConfigDict, Field, PlainValidator

from dualmem import _json as bounded_json
from dualmem._boundary import describe_error
from dualmem.errors import ConfigError

__all__ = [
    "FORMAT",
    "LinearRanker",
    "Number",
    "Ranker",
    "ScorerFile",
    "column_index",
    "format_object",
    "read_json",
    "validated",
]

FORMAT = "dualmem.ranker/1"


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)


#: a JSON number (never a boolean or a numeric string), as a float
Number = Annotated[float, PlainValidator(_number)]


class ScorerFile(BaseModel):
    """A scorer file's model: fields it does not know are ignored (files may carry notes)."""

    model_config = ConfigDict(extra="ignore", frozen=True)


_F = TypeVar("_F", bound=BaseModel)


def validated(model: type[_F], data: object, *, source: str) -> _F:
    """``data`` as ``model`` (a ``ConfigError`` naming the first bad field)."""
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ConfigError(f"{source}: {describe_error(exc)}") from exc


class LinearFile(ScorerFile):
    """The ``dualmem.ranker/1`` file (module docstring)."""

    format: Literal["dualmem.ranker/1"]
    features: Annotated[dict[str, Number], Field(min_length=1)]
    bias: Number = 0.0
    provenance: dict[str, Any] = Field(default_factory=dict)


@runtime_checkable
class Ranker(Protocol):
    """A candidate scorer over a pool's named features: ``LinearRanker`` or
    ``dualmem.control.trees.TreeRanker`` (what ``dualmem calibrate`` writes and the builtin reads)."""

    @property
    def features(self) -> tuple[str, ...]: ...

    @property
    def provenance(self) -> Mapping[str, Any]: ...

    def logits(self, matrix: npt.NDArray[np.float64], names: Sequence[str]) -> npt.NDArray[np.float64]:
        """The scores before the sigmoid, one per row of ``matrix`` (columns named by ``names``)."""
        ...

    def score(self, matrix: npt.NDArray[np.float64], names: Sequence[str]) -> npt.NDArray[np.float64]:
        """Relevance in (0, 1), one per row."""
        ...

    def score_each(self, matrix: npt.NDArray[np.float64], names: Sequence[str]) -> npt.NDArray[np.float64]:
        """``score`` with each row's value exactly what that row alone would get."""
        ...

    def to_json(self) -> dict[str, Any]: ...

    def save(self, path: Path) -> None: ...

    def with_provenance(self, provenance: Mapping[str, Any]) -> Ranker:
        """The same scorer with another provenance record."""
        ...


@dataclass(frozen=True, slots=True)
class LinearRanker:
    """``sigmoid(bias + sum(w_f * x_f))`` over the named features of a candidate pool."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.features) != len(self.weights) or len(set(self.features)) != len(self.features):
            raise ConfigError("a ranker needs one weight per distinct feature name")
        if not all(math.isfinite(w) for w in (*self.weights, self.bias)):
            raise ConfigError("ranker weights must be finite numbers")

    def columns(self, names: Sequence[str]) -> list[int]:
        """Indexes of this ranker's features in a feature matrix whose columns are ``names``."""
        return [int(i) for i in _columns(self.features, tuple(names))]

    def logits(self, matrix: npt.NDArray[np.float64], names: Sequence[str]) -> npt.NDArray[np.float64]:
        """The raw linear scores of each row of ``matrix`` (columns named by ``names``)."""
        if matrix.shape[0] == 0:
            return np.zeros(0)
        cols, w = _columns(self.features, tuple(names)), _array(self.weights)
        out: npt.NDArray[np.float64] = matrix[:, cols] @ w + self.bias
        return out

    def score(self, matrix: npt.NDArray[np.float64], names: Sequence[str]) -> npt.NDArray[np.float64]:
        """Relevance scores in (0, 1), one per row."""
        z = self.logits(matrix, names)
        out: npt.NDArray[np.float64] = 0.5 * (1.0 + np.tanh(0.5 * z))
        return out

    def score_each(self, matrix: npt.NDArray[np.float64], names: Sequence[str]) -> npt.NDArray[np.float64]:
        """``score`` of each row on its own, in one call: row ``i`` gets exactly the value
        ``score(matrix[i:i + 1], names)[0]`` gives (a stack of (1, n) @ (n, 1) products over unit-stride
        rows runs numpy's dot per row, as a one-row ``score`` does; ``score`` over many rows is a
        matrix-vector product, and a strided dot another loop: both differ in the last bits)."""
        if matrix.shape[0] == 0:
            return np.zeros(0)
        cols, w = _columns(self.features, tuple(names)), _array(self.weights)
        rows = np.ascontiguousarray(matrix[:, cols])  # a unit stride per row, as a one-row copy has
        z = np.matmul(rows[:, None, :], w[:, None])[:, 0, 0] + self.bias
        out: npt.NDArray[np.float64] = 0.5 * (1.0 + np.tanh(0.5 * z))
        return out

    def with_provenance(self, provenance: Mapping[str, Any]) -> LinearRanker:
        return replace(self, provenance=dict(provenance))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "features": {f: round(w, 6) for f, w in zip(self.features, self.weights, strict=True)},
            "bias": round(self.bias, 6),
            "provenance": dict(self.provenance),
        }

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2, sort_keys=False) + "\n", encoding="utf-8")

    @classmethod
    def from_json(cls, data: object, *, source: str = "ranker") -> LinearRanker:
        """Parsed JSON of the file, validated by its model (``LinearFile``)."""
        model = validated(LinearFile, format_object(data, FORMAT, source=source), source=source)
        return cls(tuple(model.features), tuple(model.features.values()), model.bias, dict(model.provenance))

    @classmethod
    def from_file(cls, path: Path) -> LinearRanker:
        return cls.from_json(read_json(path), source=str(path))


def format_object(data: object, fmt: str, *, source: str) -> Mapping[str, Any]:
    """``data`` as a JSON object of format ``fmt`` (a ``ConfigError`` saying what it is not)."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: expected a JSON object")
    if data.get("format") != fmt:
        raise ConfigError(f"{source}: unsupported format {data.get('format')!r}", hint=f"expected {fmt}")
    return data


def read_json(path: Path | str) -> object:
    """A scorer file's JSON (a ``ConfigError`` when it cannot be read or parsed)."""
    return bounded_json.load_file(path, "ranker")


def column_index(features: tuple[str, ...], names: tuple[str, ...]) -> npt.NDArray[np.intp]:
    """Where each of ``features`` is among ``names`` (a ``ConfigError`` naming any that are not)."""
    return _columns(features, names)


@lru_cache(maxsize=64)
def _columns(features: tuple[str, ...], names: tuple[str, ...]) -> npt.NDArray[np.intp]:
    """Where each of ``features`` is among ``names`` (looked up once per pair of name lists)."""
    index = {n: i for i, n in enumerate(names)}
    missing = [f for f in features if f not in index]
    if missing:
        raise ConfigError(
            f"the ranker uses features the pool does not compute: {missing}",
            hint="refit it with `dualmem calibrate` for this version",
        )
    out = np.array([index[f] for f in features], dtype=np.intp)
    out.flags.writeable = False  # shared by every call
    return out


@lru_cache(maxsize=64)
def _array(weights: tuple[float, ...]) -> npt.NDArray[np.float64]:
    out = np.array(weights, dtype=np.float64)
    out.flags.writeable = False  # shared by every call
    return out

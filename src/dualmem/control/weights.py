"""The builtin decider's weights file at its boundary: a pydantic model of its JSON.

:func:`validate_weights` checks the shape of a weights file (version, known top-level fields, every
``bias`` and weight a finite number, every Choice with at least one label): the one place that
does. :class:`dualmem.control.builtin.BuiltinWeights` builds its weights from the validated model,
checking only what it alone knows (decision families, feature names). ``read_weights`` is the same
check on a file's text, returning the document as plain JSON in file order.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal, TypeVar

import pydantic
from pydantic import BaseModel, ConfigDict, Field, PlainValidator

from dualmem import _json as bounded_json
from dualmem._boundary import describe_error
from dualmem.errors import ConfigError

__all__ = [
    "WEIGHTS_VERSION",
    "WRITE_HEADS_FORMAT",
    "LinearSpec",
    "WeightsFile",
    "WriteHeadsFile",
    "read_weights",
    "validate_weights",
    "validate_write_heads",
]

WEIGHTS_VERSION = "1"
#: the format of a file of fitted write heads (``dualmem calibrate --write-heads-out``)
WRITE_HEADS_FORMAT = "dualmem.write-heads/1"
_HINT = "see dualmem/control/builtin_weights.json for the layout"


def _finite(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value!r}")
    return float(value)


Finite = Annotated[float, PlainValidator(_finite)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LinearSpec(_Strict):
    """``bias + sum(weights[f] * features[f])``."""

    bias: Finite = 0.0
    weights: dict[str, Finite] = Field(default_factory=dict)


class WeightsFile(_Strict):
    """A whole weights file: Noul decisions and Choice decisions (label -> linear logit) by key."""

    version: Literal["1"]
    comment: str | None = None
    decisions: dict[str, LinearSpec] = Field(default_factory=dict)
    choices: dict[str, Annotated[dict[str, LinearSpec], Field(min_length=1)]] = Field(default_factory=dict)


class WriteHeadsFile(_Strict):
    """Fitted write heads (``dualmem.learn.write_heads``; the packaged ``fitted_weights.json``): Noul
    decisions that replace the builtin's own, and where they came from."""

    format: Literal["dualmem.write-heads/1"]
    decisions: dict[str, LinearSpec] = Field(default_factory=dict)
    provenance: dict[str, Any] = Field(default_factory=dict)

    def as_weights(self) -> WeightsFile:
        """The heads as a weights file of Noul decisions only (what ``BuiltinWeights`` reads)."""
        return WeightsFile(version="1", decisions=self.decisions)


_M = TypeVar("_M", bound=BaseModel)


def _validated(model: type[_M], data: object, source: str) -> _M:
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ConfigError(f"{source}: {describe_error(exc)}", hint=_HINT) from exc


def validate_weights(data: object, *, source: str) -> WeightsFile:
    """A weights file's parsed JSON as its model; ``ConfigError`` names the bad field."""
    return _validated(WeightsFile, data, source)


def validate_write_heads(data: object, *, source: str) -> WriteHeadsFile:
    """A write-heads file's parsed JSON as its model; ``ConfigError`` says a file of another format is
    not one, else names the bad field."""
    if not isinstance(data, dict) or data.get("format") != WRITE_HEADS_FORMAT:
        raise ConfigError(f"{source}: not a {WRITE_HEADS_FORMAT} file")
    return _validated(WriteHeadsFile, data, source)


def read_weights(text: str, *, source: str) -> dict[str, Any]:
    """Parse and validate the JSON ``text`` of a weights file; ``ConfigError`` names the bad field."""
    try:
        data = bounded_json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"cannot read builtin weights {source}: not JSON (line {exc.lineno}: {exc.msg})", hint=_HINT
        ) from exc
    dumped: dict[str, Any] = validate_weights(data, source=source).model_dump(exclude_none=True)
    return dumped

"""A ``Profile`` as JSON and back: every field by name, nested sections as objects, strictly checked.

The file form is ``{"format": "dualmem-profile/1", "name": ..., "write": {...}, "read": {...}, ...}``.
Fields left out keep the value of a base profile: the caller's (``Profile.load(path, base=...)``,
the default profile of the memory's controller when a memory opens the file), else the dataclass
defaults; a file may name its own with ``"base": "builtin" | "dualmem" | "paper"`` (the preset's
name; ``Profile.named`` resolves it). So a file holding only ``write.views`` and ``read.views``
changes those two settings of the default profile, and a file written before a field existed still
loads. An unknown field, or a value of the wrong kind, is a ``ConfigError`` naming it. The per-backend
calibration (``Profile.calibration``) is stored inline in its own format (``dualmem calibrate-backend``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from dualmem import _json as bounded_json
from dualmem.control.calibration import Calibration
from dualmem.errors import ConfigError

__all__ = ["FORMAT", "profile_from_json", "profile_to_json", "read_profile", "write_profile"]

FORMAT = "dualmem-profile/1"

_P = TypeVar("_P")


def profile_to_json(profile: object) -> dict[str, Any]:
    """A profile dataclass (``dualmem.config.Profile``) as the file's JSON object."""
    out: dict[str, Any] = {"format": FORMAT}
    out.update(_dump(profile))
    return out


def _dump(obj: object) -> Any:
    if isinstance(obj, Calibration):
        return obj.to_json()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _dump(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple):
        return [_dump(x) for x in obj]
    return obj


def profile_from_json(cls: type[_P], data: object, *, source: str = "profile", base: _P | None = None) -> _P:
    """An instance of the profile dataclass ``cls`` from a file's parsed JSON, its missing fields
    taken from ``base`` (an instance of ``cls``; ``None``: the dataclass defaults). The file's own
    ``"base"`` entry is the caller's to resolve (``Profile.from_json``); it is not a field."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: a profile is a JSON object", hint="write one with Profile.save")
    doc = dict(data)
    fmt = doc.pop("format", FORMAT)
    doc.pop("base", None)
    if fmt != FORMAT:
        raise ConfigError(f"{source}: profile format {fmt!r}, expected {FORMAT!r}")
    profile: _P = _load(cls, doc, source, base)
    return profile


#: settings of older profile files that no longer exist (every profile runs one read pipeline now): ignored
RETIRED: frozenset[str] = frozenset({"pool_scoring", "final_rank"})


def _load(cls: type[Any], data: Mapping[str, Any], where: str, base: Any = None) -> Any:
    defaults = cls() if base is None else base
    data = {k: v for k, v in data.items() if k not in RETIRED}
    optional = {f.name: "None" in str(f.type) for f in dataclasses.fields(cls)}  # "float | None"
    unknown = sorted(set(data) - optional.keys())
    if unknown:
        raise ConfigError(f"{where}: unknown profile settings {unknown}")
    values: dict[str, Any] = {}
    for name, raw in data.items():
        if raw is None and optional[name]:
            values[name] = None
            continue
        values[name] = _value(getattr(defaults, name), raw, f"{where}.{name}", name)
    try:
        return dataclasses.replace(defaults, **values)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def _value(default: object, raw: object, where: str, name: str) -> object:
    if name == "calibration":
        return Calibration.from_json(raw, source=where)
    if dataclasses.is_dataclass(default):
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{where} must be an object")
        return _load(type(default), raw, where, default)
    if isinstance(default, tuple):
        if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
            raise ConfigError(f"{where} must be a list of strings")
        return tuple(raw)
    return _scalar(default, raw, where)


def _number(raw: object) -> bool:
    return isinstance(raw, int | float) and not isinstance(raw, bool)


#: a scalar setting's kind (by its default; bool before int, its subclass), the values it takes and
#: their name; a default of None is an optional number
_SCALARS: tuple[tuple[type, Any, str], ...] = (
    (bool, lambda raw: isinstance(raw, bool), "true or false"),
    (int, lambda raw: isinstance(raw, int) and not isinstance(raw, bool), "an integer"),
    (float, _number, "a number"),
    (type(None), _number, "a number"),
    (str, lambda raw: isinstance(raw, str), "a string"),
)


def _scalar(default: object, raw: object, where: str) -> object:
    for kind, takes, named in _SCALARS:
        if isinstance(default, kind):
            if not takes(raw):
                raise ConfigError(f"{where} must be {named}, got {raw!r}")
            return raw
    return raw


def write_profile(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Write a profile's JSON object (``profile_to_json``) to ``path``."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return out


def read_profile(path: str | Path) -> object:
    """The parsed JSON of a profile file (``ConfigError`` when unreadable or not JSON)."""
    try:
        return bounded_json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read profile {path}: {exc.strerror}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not a JSON profile", hint="write one with Profile.save") from exc

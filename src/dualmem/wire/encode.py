"""A call's arguments as request fields (the client's direction of :mod:`dualmem.wire`): the inverse of
the server's request models (``ObservationIn``, ``FilterFields``) in :mod:`dualmem.wire.schemas`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dualmem.errors import InvalidInput
from dualmem.vocab import Filter, Observation, TimeInput

__all__ = ["filter_fields", "observation_in", "time_in"]


def time_in(value: TimeInput) -> str | float | None:
    """A time as the request field takes it: text and epoch seconds as given, a date/datetime in ISO."""
    if value is None or isinstance(value, str | int | float):
        return value
    return value.isoformat()


def observation_in(o: Observation | str | Mapping[str, Any]) -> dict[str, Any]:
    """One observation as an ``ObservationIn`` document (a mapping's ``content`` is its ``text``)."""
    if isinstance(o, str):
        return {"text": o}
    if isinstance(o, Observation):
        return {
            "text": o.content, "speaker": o.speaker, "at": o.at.isoformat() if o.at else None,
            "source": o.source, "session": o.session, "turn_id": o.turn_id, "metadata": dict(o.metadata),
        }  # fmt: skip
    if isinstance(o, Mapping):
        data = dict(o)
        if "content" in data:
            data["text"] = data.pop("content")
        return data
    raise InvalidInput(f"an observation must be a str, a mapping or an Observation, not {type(o).__name__}")


def filter_fields(where: Filter | None) -> dict[str, Any]:
    """A ``Filter`` as the request fields of ``FilterFields`` (only those it sets)."""
    if where is None:
        return {}
    fields = {
        "speaker": where.speaker, "session": where.session, "since": time_in(where.since),
        "until": time_in(where.until), "metadata": dict(where.metadata) if where.metadata else None,
    }  # fmt: skip
    return {name: value for name, value in fields.items() if value is not None}

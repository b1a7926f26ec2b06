"""Parse timestamps given by callers into timezone-aware UTC datetimes.

Naive datetimes and strings without an offset are taken as UTC; aware ones are converted to UTC.
"""

from __future__ import annotations

import datetime as dt
import math
import re

from dualmem.errors import InvalidInput
from dualmem.text._words import MONTH_NAMES, MONTH_PATTERN, MONTHS

__all__ = ["TimeInput", "format_day", "parse_time"]

TimeInput = str | int | float | dt.datetime | dt.date | None

_HINT = (
    "use ISO-8601 ('2023-05-08', '2023-05-08T13:56:00Z'), epoch seconds, "
    "'1:56 pm on 8 May, 2023', '8 May 2023' or 'May 8, 2023'"
)

_CLOCK = r"(?:(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?)"
# "1:56 pm on 8 May, 2023" (LoCoMo), "8 May 2023", "8th May, 2023 at 1:56 pm"
_DAY_MONTH = re.compile(
    rf"^(?:{_CLOCK}\s+on\s+)?(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<month>{MONTH_PATTERN})\.?,?"
    rf"\s+(?P<year>\d{{4}})(?:,?\s+(?:at\s+)?{_CLOCK.replace('?P<', '?P<t')})?$",
    re.IGNORECASE,
)
# "May 8, 2023", "May 8th 2023 1:56 pm"
_MONTH_DAY = re.compile(
    rf"^(?P<month>{MONTH_PATTERN})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<year>\d{{4}})"
    rf"(?:,?\s+(?:at\s+)?{_CLOCK.replace('?P<', '?P<t')})?$",
    re.IGNORECASE,
)
_SPACES = re.compile(r"\s+")


def parse_time(value: TimeInput) -> dt.datetime | None:
    """Turn a caller's timestamp into an aware UTC ``datetime`` (``None`` stays ``None``).

    Raises ``InvalidInput`` (with a hint listing the accepted formats) when it cannot be read.
    """
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return _to_utc(value)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    if isinstance(value, bool):
        raise InvalidInput(f"cannot read a time from {value!r}", hint=_HINT)
    if isinstance(value, int | float):
        return _from_epoch(value)
    if isinstance(value, str):
        return _from_text(value)
    raise InvalidInput(f"cannot read a time from a {type(value).__name__}", hint=_HINT)


def format_day(d: dt.date) -> str:
    """A calendar day in words, e.g. ``15 May 2024``."""
    return f"{d.day} {MONTH_NAMES[d.month - 1]} {d.year}"


def _to_utc(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=dt.UTC)
    try:
        return value.astimezone(dt.UTC)
    except OverflowError as exc:
        raise InvalidInput(f"time {value.isoformat()!r} is out of range", hint=_HINT) from exc


def _from_epoch(value: float) -> dt.datetime:
    if not math.isfinite(value):
        raise InvalidInput(f"cannot read a time from {value!r}", hint=_HINT)
    try:
        return dt.datetime.fromtimestamp(value, dt.UTC)
    except (OverflowError, OSError, ValueError) as exc:
        raise InvalidInput(f"epoch seconds {value!r} are out of range", hint=_HINT) from exc


def _from_text(value: str) -> dt.datetime:
    text = _SPACES.sub(" ", value.strip())
    shown = value if len(value) <= 60 else value[:57] + "..."
    if not text:
        raise InvalidInput("cannot read a time from an empty string", hint=_HINT)
    iso = text[:-1] + "+00:00" if text[-1:] in {"Z", "z"} else text
    try:
        return _to_utc(dt.datetime.fromisoformat(iso))
    except ValueError:
        pass
    match = _DAY_MONTH.match(text) or _MONTH_DAY.match(text)
    if match is None:
        raise InvalidInput(f"cannot read a time from {shown!r}", hint=_HINT)
    try:
        return _from_match(match)
    except ValueError as exc:
        raise InvalidInput(f"cannot read a time from {shown!r}: {exc}", hint=_HINT) from exc


def _from_match(match: re.Match[str]) -> dt.datetime:
    groups = match.groupdict()
    month = MONTHS[groups["month"].lower()]
    day = dt.date(int(groups["year"]), month, int(groups["day"]))
    prefix = "t" if groups.get("thour") else ""
    hour_text = groups.get(f"{prefix}hour")
    hour, minute = 0, 0
    if hour_text:
        hour = int(hour_text)
        minute = int(groups.get(f"{prefix}minute") or 0)
        ampm = (groups.get(f"{prefix}ampm") or "").lower()
        if ampm:
            if not 1 <= hour <= 12:
                raise ValueError(f"hour {hour} is not a 12-hour clock hour")
            hour = hour % 12 + (12 if ampm.startswith("p") else 0)
    return dt.datetime(day.year, day.month, day.day, hour, minute, tzinfo=dt.UTC)

"""Calendar and number words shared by the text modules (private)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "MONTHS",
    "MONTH_NAMES",
    "MONTH_PATTERN",
    "NUMBER_WORDS",
    "WEEKDAYS",
    "WEEKDAY_ABBREVIATIONS",
    "WEEKDAY_PATTERN",
]

MONTH_NAMES: tuple[str, ...] = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip

#: lower-case month name or abbreviation -> month number
MONTHS: Mapping[str, int] = {
    **{name.lower(): i for i, name in enumerate(MONTH_NAMES, start=1)},
    **{name[:3].lower(): i for i, name in enumerate(MONTH_NAMES, start=1)},
    "sept": 9,
}

#: lower-case weekday name -> ``date.weekday()`` (Monday = 0)
WEEKDAYS: Mapping[str, int] = {
    name: i
    for i, name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
}

#: lower-case weekday abbreviation -> ``date.weekday()``
WEEKDAY_ABBREVIATIONS: Mapping[str, int] = {
    "mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3,
    "fri": 4, "sat": 5, "sun": 6,
}  # fmt: skip

#: lower-case number words -> value
NUMBER_WORDS: Mapping[str, int] = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
}  # fmt: skip

#: a regex alternation of month names (full names before abbreviations), to embed in patterns
MONTH_PATTERN = "|".join(sorted(MONTHS, key=len, reverse=True))
WEEKDAY_PATTERN = "|".join(WEEKDAYS)

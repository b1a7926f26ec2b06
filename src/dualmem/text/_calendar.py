"""Calendar arithmetic on ``datetime.date`` spans (private to ``dualmem.text``)."""

from __future__ import annotations

import calendar
import datetime as dt

__all__ = [
    "Span",
    "add_months",
    "month_span",
    "season_span",
    "week_span",
    "weekend_span",
    "year_span",
]

#: (first day, last day) inclusive
Span = tuple[dt.date, dt.date]

#: season -> first month; each season lasts three months (northern hemisphere, meteorological)
SEASON_START = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}


def week_span(d: dt.date) -> Span:
    """The Monday-Sunday week containing ``d``."""
    monday = d - dt.timedelta(days=d.weekday())
    return monday, monday + dt.timedelta(days=6)


def weekend_span(d: dt.date) -> Span:
    """The Saturday-Sunday weekend of the Monday-Sunday week containing ``d``."""
    monday = d - dt.timedelta(days=d.weekday())
    return monday + dt.timedelta(days=5), monday + dt.timedelta(days=6)


def add_months(year: int, month: int, delta: int) -> tuple[int, int]:
    """``(year, month)`` moved by ``delta`` months."""
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def month_span(year: int, month: int) -> Span:
    last = calendar.monthrange(year, month)[1]
    return dt.date(year, month, 1), dt.date(year, month, last)


def year_span(year: int) -> Span:
    return dt.date(year, 1, 1), dt.date(year, 12, 31)


def season_span(season: str, year: int) -> Span:
    """The three-month season that *starts* in ``year`` (winter 2023 = Dec 2023 - Feb 2024)."""
    first = SEASON_START[season]
    end_year, end_month = add_months(year, first, 2)
    return dt.date(year, first, 1), month_span(end_year, end_month)[1]

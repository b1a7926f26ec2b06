"""Temporal grounding: relative and absolute time expressions -> ``TemporalRef`` spans.

Relative expressions are grounded against the *observation* time ``at`` (paper Appendix B.5: a
timestamp says when a statement was observed, not when the event happened). Without ``at`` only
absolute expressions ("15 May 2024", "in 2022", "May 2023") are grounded.

Conventions (documented choices, tested as golden cases):

- weeks run Monday-Sunday; "last week" is the previous calendar week; "last weekend" is the
  Saturday-Sunday of the previous calendar week; "N weeks ago" is the calendar week containing
  ``at - 7N days``; "N months ago" the calendar month N months back; "N years ago" the calendar year.
- vague counts ("a few", "several", "a couple of") give a span and a coarser precision:
  "a few days ago" = 2-5 days before ``at`` with precision ``week``; "a few weeks ago" precision
  ``month``; months and years precision ``year``. "the other day" = 1-7 days before, ``week``.
- "last Saturday" / "on Saturday" = the most recent Saturday strictly before the observation day
  ("on Saturday" looks forward when its sentence has a future cue such as "will" or "going to");
  "next Friday" = the first Friday strictly after it; "this Friday" = today or the next one.
- "in May" = the most recent May up to the observation month (forward with a future cue);
  "last May" = the most recent May strictly before the observation month. Seasons are
  meteorological (summer = June-August), precision ``month``; winter 2023 = Dec 2023 - Feb 2024.
- a day and month without a year take the year that puts the date nearest the observation day.
- Chinese, Japanese and Korean expressions (2024年4月1日, 昨天, 上周三, 三天前, 去年五月, 下个月,
  周一晚上, 今年春节, 昨日, 先週, 3日前, 来月, 어제, 지난주 ...) follow the same conventions; their
  rules (``text/_cjk_time.py``) run only on a text holding a CJK character.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass

from dualmem.text._calendar import (
    SEASON_START,
    add_months,
    month_span,
    season_span,
    week_span,
    weekend_span,
    year_span,
)
from dualmem.text._cjk_time import CJK_RULES
from dualmem.text._words import (
    MONTH_NAMES,
    MONTH_PATTERN,
    MONTHS,
    NUMBER_WORDS,
    WEEKDAY_ABBREVIATIONS,
    WEEKDAYS,
)
from dualmem.text.cjk import has_cjk
from dualmem.text.cues import may_have_time, mentions_time, query_time_focus
from dualmem.text.timeparse import format_day
from dualmem.types import Precision, TemporalRef

__all__ = ["describe", "ground", "mentions_time", "query_time_focus"]

_I = re.IGNORECASE
_DAY = dt.timedelta(days=1)
_FULL_MONTHS = "|".join([*(n.lower() for n in MONTH_NAMES), "sept"])
_FULL_MONTH_SET = frozenset(_FULL_MONTHS.split("|"))
_WEEKDAY_NAMES = "|".join(WEEKDAYS)
_WEEKDAY_ABBR = "|".join(sorted(WEEKDAY_ABBREVIATIONS, key=len, reverse=True))
_SEASONS = "|".join(SEASON_START)
_NUM = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
_COUNT = rf"(?P<n>\d{{1,4}}|a\s+few|a\s+couple(?:\s+of)?|couple\s+of|few|several|{_NUM})"
_ORD = r"(?:st|nd|rd|th)?"

_FUTURE = re.compile(
    r"\b(?:will|won't|going\s+to|gonna|plan(?:s|ning)?\s+to|planning|next|tomorrow|soon|upcoming"
    r"|can't\s+wait|looking\s+forward)\b|'ll\b",
    _I,
)
_SENTENCE_END = re.compile(r"[.!?\n。！？]")


@dataclass(slots=True)
class _Ctx:
    text: str
    at: dt.datetime | None
    day: dt.date | None
    _ends: list[int] | None = None  # where each sentence ends, found on first use

    def sentence_start(self, pos: int) -> int:
        """Where the sentence holding ``pos`` starts: after the last sentence end at or before it (a
        bisection, so a long text with many expressions is not rescanned from the start each time)."""
        if self._ends is None:
            self._ends = [m.end() for m in _SENTENCE_END.finditer(self.text)]
        i = bisect.bisect_right(self._ends, pos)
        return self._ends[i - 1] if i else 0


Result = tuple[dt.date, dt.date, Precision] | None
Handler = Callable[[re.Match[str], _Ctx], Result]


def _group(m: re.Match[str], name: str) -> str | None:
    """A named group that only some rules' patterns define."""
    return m.groupdict().get(name)


def _future(m: re.Match[str], ctx: _Ctx) -> bool:
    """Whether the sentence around the match speaks about the future."""
    text = ctx.text
    start = ctx.sentence_start(m.start())
    end_match = _SENTENCE_END.search(text, m.end())
    end = end_match.start() if end_match else len(text)
    return _FUTURE.search(text, start, end) is not None


def _count(token: str) -> tuple[int, int, bool]:
    """(low, high, vague) for a count word: "two" -> (2, 2, False), "a few" -> (2, 5, True)."""
    word = " ".join(token.lower().split())
    if word in {"a few", "few"}:
        return 2, 5, True
    if word.startswith(("a couple", "couple")):
        return 2, 3, True
    if word == "several":
        return 3, 7, True
    value = int(word) if word.isdigit() else NUMBER_WORDS[word]
    return value, value, False


_COARSER: dict[str, Precision] = {"day": "week", "week": "month", "month": "year", "year": "year"}


def _shift(day: dt.date, unit: str, low: int, high: int) -> tuple[dt.date, dt.date]:
    """The span covering ``day`` moved by ``low``..``high`` units (signed), aligned to the unit."""
    a, b = sorted((low, high))
    if unit == "day":
        return day + a * _DAY, day + b * _DAY
    if unit == "week":
        return week_span(day + 7 * a * _DAY)[0], week_span(day + 7 * b * _DAY)[1]
    if unit == "month":
        return month_span(*add_months(day.year, day.month, a))[0], month_span(
            *add_months(day.year, day.month, b)
        )[1]
    return year_span(day.year + a)[0], year_span(day.year + b)[1]


def _offset(m: re.Match[str], ctx: _Ctx) -> Result:
    """ "two days ago", "a few weeks ago", "in three months", "3 hours ago"."""
    if ctx.at is None or ctx.day is None:
        return None
    low, high, vague = _count(m["n"])
    unit = m["unit"].lower()
    sign = -1 if m["dir"] else 1
    if unit in {"hour", "minute"}:
        delta = dt.timedelta(hours=high) if unit == "hour" else dt.timedelta(minutes=high)
        when = (ctx.at + sign * delta).date()
        return min(when, ctx.day), max(when, ctx.day), "day"
    start, end = _shift(ctx.day, unit, sign * low, sign * high)
    return start, end, _COARSER[unit] if vague else unit  # type: ignore[return-value]


def _window(m: re.Match[str], ctx: _Ctx) -> Result:
    """ "the past few days", "the last two weeks": a rolling window ending on the observation day."""
    if ctx.day is None:
        return None
    _, high, vague = _count(m["n"])
    unit = m["unit"].lower()
    start = _shift(ctx.day, unit, -high, -high)[0] if unit != "day" else ctx.day - high * _DAY
    return start, ctx.day, _COARSER[unit] if vague else unit  # type: ignore[return-value]


_DAY_WORDS = {
    "the day before yesterday": -2, "yesterday": -1, "last night": -1, "today": 0, "tonight": 0,
    "this morning": 0, "this afternoon": 0, "this evening": 0, "earlier today": 0,
    "later today": 0, "tomorrow": 1, "the day after tomorrow": 2,
}  # fmt: skip


def _day_word(m: re.Match[str], ctx: _Ctx) -> Result:
    if ctx.day is None:
        return None
    if m["w"].lower().startswith("the other"):
        return ctx.day - 7 * _DAY, ctx.day - _DAY, "week"
    day = ctx.day + _DAY_WORDS[" ".join(m["w"].lower().split())] * _DAY
    return day, day, "day"


_STEP = {"last": -1, "past": -1, "this past": -1, "this": 0, "next": 1, "coming": 1, "this coming": 1}


def _unit(m: re.Match[str], ctx: _Ctx) -> Result:
    """ "last week", "this month", "next year", "the past week", "earlier this month"."""
    day = ctx.day
    if day is None:
        return None
    mod, unit = " ".join(m["mod"].lower().split()), m["unit"].lower()
    if mod.startswith("the "):  # a rolling window ending (or starting) at the observation day
        length = {"weekend": 2, "week": 7, "month": 30, "year": 365}[unit]
        precision: Precision = "week" if unit == "weekend" else unit  # type: ignore[assignment]
        if mod == "the next":
            return day + _DAY, day + length * _DAY, precision
        return day - (length - 1) * _DAY, day, precision
    step = -2 if _group(m, "before") else _STEP[mod]
    if unit == "weekend":
        if mod in {"past", "this past"}:
            return *_past_weekend(day), "week"
        return *weekend_span(day + 7 * step * _DAY), "week"
    start, end = _shift(day, unit, step, step)
    rel = (_group(m, "rel") or "").lower()
    if rel == "earlier" and step == 0:
        end = day
    elif rel == "later" and step == 0:
        start = day
    return start, end, unit  # type: ignore[return-value]


def _weekend(m: re.Match[str], ctx: _Ctx) -> Result:
    """ "over the weekend": the most recent weekend (the next one with a future cue)."""
    day = ctx.day
    if day is None:
        return None
    if not _future(m, ctx):
        return *_past_weekend(day), "week"
    return *weekend_span(day if day.weekday() >= 5 else day + 7 * _DAY), "week"


def _past_weekend(day: dt.date) -> tuple[dt.date, dt.date]:
    """The most recent weekend that is over by the end of ``day`` (today's when ``day`` is a Sunday)."""
    return weekend_span(day if day.weekday() == 6 else day - 7 * _DAY)


def _weekday(m: re.Match[str], ctx: _Ctx) -> Result:
    """ "last Saturday", "next Friday", "this Monday", "on Saturday"."""
    day = ctx.day
    if day is None:
        return None
    mod = " ".join((m["mod"] or "").lower().split())
    name = m["wd"].lower().rstrip(".")
    wanted = WEEKDAYS[name] if name in WEEKDAYS else WEEKDAY_ABBREVIATIONS[name]
    ahead = (wanted - day.weekday()) % 7
    back = (day.weekday() - wanted) % 7 or 7
    if mod in {"next", "coming", "this coming"}:
        target = day + (ahead or 7) * _DAY
    elif mod == "this" or (mod in {"", "on"} and _future(m, ctx)):
        target = day + ahead * _DAY
    else:
        target = day - back * _DAY
    return target, target, "day"


_PARTS = {"early": (1, 10), "mid": (11, 20), "late": (21, 31), "beginning": (1, 10), "start": (1, 10)}
_PARTS |= {"middle": (11, 20), "end": (21, 31)}


def _month(m: re.Match[str], ctx: _Ctx) -> Result:
    """ "May 2023", "in May", "last May", "early June 2022", "the end of May"."""
    name = m["month"]
    mod = " ".join((m["mod"] or "").lower().split())
    if m["year"]:
        year = int(m["year"])
        month = MONTHS[name.lower()]
    else:
        if ctx.day is None or name == "may" or not (mod or m["part"]):
            return None
        month, day = MONTHS[name.lower()], ctx.day
        if mod in {"last", "past", "this past"}:
            year = day.year if month < day.month else day.year - 1
        elif mod in {"next", "coming", "this coming"}:
            year = day.year if month > day.month else day.year + 1
        elif mod == "this":
            year = day.year
        elif _future(m, ctx):
            year = day.year if month >= day.month else day.year + 1
        else:
            year = day.year if month <= day.month else day.year - 1
    start, end = month_span(year, month)
    if m["part"]:
        first, last = next(_PARTS[w] for w in m["part"].lower().split() if w in _PARTS)
        start, end = start.replace(day=first), end.replace(day=min(last, end.day))
    return start, end, "month"


def _season(m: re.Match[str], ctx: _Ctx) -> Result:
    """ "last summer", "this winter", "summer 2022", "the summer of 2022"."""
    season = m["season"].lower()
    if year := _group(m, "year"):
        return *season_span(season, int(year)), "month"
    day = ctx.day
    if day is None:
        return None
    mod = " ".join(m["mod"].lower().split())
    spans = [season_span(season, y) for y in range(day.year - 2, day.year + 2)]
    if mod in {"last", "past", "this past"}:
        return *max(s for s in spans if s[1] < day), "month"
    if mod in {"next", "coming", "this coming"}:
        return *min(s for s in spans if s[0] > day), "month"
    current = [s for s in spans if s[0] <= day <= s[1]]
    return *(current[0] if current else min(s for s in spans if s[0] > day)), "month"


def _date(year: int, month: int, day: int) -> Result:
    return dt.date(year, month, day), dt.date(year, month, day), "day"


def _iso(m: re.Match[str], _ctx: _Ctx) -> Result:
    return _date(int(m["y"]), int(m["m"]), int(m["d"]))


def _slash(m: re.Match[str], _ctx: _Ctx) -> Result:
    """ "5/15/2024" (US month/day/year; day/month when the first number is over 12)."""
    first, second, year = int(m["a"]), int(m["b"]), int(m["y"])
    year = year + 2000 if year < 100 else year
    return _date(year, second, first) if first > 12 else _date(year, first, second)


def _written(m: re.Match[str], ctx: _Ctx) -> Result:
    """ "15 May 2024", "May 15th, 2024", "on 15 May" (the nearest year when it is missing)."""
    name = m["month"]
    month, day = MONTHS[name.lower()], int(m["d"])
    if m["y"]:
        return _date(int(m["y"]), month, day)
    if ctx.day is None or name == "may" or name.lower() not in _FULL_MONTH_SET:
        return None  # without a year only full month names count ("Jan 3 friends" is no date)
    seen = ctx.day
    options = [dt.date(y, month, day) for y in (seen.year - 1, seen.year, seen.year + 1)]
    best = min(options, key=lambda d: abs((d - seen).days))
    return best, best, "day"


def _year(m: re.Match[str], _ctx: _Ctx) -> Result:
    return *year_span(int(m["y"])), "year"


_MOD = r"this\s+past|this\s+coming|last|this|next|past|coming"
_RULES: tuple[tuple[re.Pattern[str], Handler], ...] = (
    (re.compile(r"(?<![\d-])(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?!\d)"), _iso),
    (re.compile(r"(?<![\d/])(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<y>\d{4}|\d{2})(?![\d/])"), _slash),
    (
        re.compile(
            rf"\b(?P<d>\d{{1,2}}){_ORD}(?:\s+of)?\s+(?P<month>{MONTH_PATTERN})\b\.?(?:,?\s+(?P<y>\d{{4}})\b)?",
            _I,
        ),
        _written,
    ),
    (
        re.compile(
            rf"\b(?P<month>{MONTH_PATTERN})\.?\s+(?:the\s+)?(?P<d>\d{{1,2}}){_ORD}\b(?!:)(?:,?\s+(?P<y>\d{{4}})\b)?",
            _I,
        ),
        _written,
    ),
    (
        re.compile(
            rf"\b(?:(?P<mod>{_MOD}|in|since|during|by|until|from)\s+)?(?:(?P<part>early|mid|late"
            rf"|(?:the\s+)?(?:beginning|start|middle|end)\s+of)[\s-]+)?(?P<month>{_FULL_MONTHS}"
            rf"|{MONTH_PATTERN}(?=\.?,?\s+\d{{4}}))\b\.?(?:,?\s+(?P<year>\d{{4}})\b)?",
            _I,
        ),
        _month,
    ),
    (
        re.compile(
            rf"\b(?:(?:in|during)\s+)?(?:the\s+)?(?P<season>{_SEASONS})\s+(?:of\s+)?(?P<year>\d{{4}})\b", _I
        ),
        _season,
    ),
    (re.compile(rf"\b(?P<mod>{_MOD})\s+(?P<season>{_SEASONS})\b", _I), _season),
    (
        re.compile(
            rf"\b{_COUNT}\s+(?P<unit>day|week|month|year|hour|minute)s?\s+(?P<dir>ago|back|before\s+now)\b",
            _I,
        ),
        _offset,
    ),
    (re.compile(rf"\bin\s+{_COUNT}\s+(?P<unit>day|week|month|year)s?(?P<dir>)(?!\w)", _I), _offset),
    (
        re.compile(
            r"\b(?P<w>the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow|the\s+other\s+day"
            r"|yesterday|today|tonight|tomorrow|last\s+night|this\s+(?:morning|afternoon|evening)"
            r"|earlier\s+today|later\s+today)\b",
            _I,
        ),
        _day_word,
    ),
    (
        re.compile(r"\bthe\s+(?P<unit>weekend|week|month|year)\s+(?P<before>before)\s+(?P<mod>last)\b", _I),
        _unit,
    ),
    (
        re.compile(rf"\b(?:the\s+)?(?P<mod>past|last)\s+{_COUNT}\s+(?P<unit>day|week|month|year)s\b", _I),
        _window,
    ),
    (
        re.compile(
            rf"\b(?:(?P<rel>earlier|later)\s+)?(?P<mod>the\s+past|the\s+last|the\s+next|{_MOD})"
            r"\s+(?P<unit>weekend|week|month|year)\b",
            _I,
        ),
        _unit,
    ),
    (re.compile(r"\b(?:over|during|on|at)\s+the\s+weekend\b", _I), _weekend),
    (re.compile(rf"\b(?:(?P<mod>{_MOD}|on)\s+)?(?P<wd>{_WEEKDAY_NAMES})\b(?!s)", _I), _weekday),
    (re.compile(rf"\b(?P<mod>last|next|this)\s+(?P<wd>{_WEEKDAY_ABBR})\b\.?", _I), _weekday),
    (
        re.compile(
            r"\b(?:in|since|during|from|until|till|by|around|of|before|after)\s+(?:early\s+|late\s+|mid-?)?"
            r"(?P<y>(?:19|20)\d{2})\b(?!\s*(?:%|am|pm|people|dollars|\$))",
            _I,
        ),
        _year,
    ),
)


def ground(text: str, at: dt.datetime | None) -> tuple[TemporalRef, ...]:
    """The time expressions of ``text`` grounded against the observation time ``at``, in order.

    Relative expressions need ``at`` (naive is taken as UTC); without it only absolute ones are
    grounded. Never raises on any text: an expression that would fall outside the calendar
    (year 1-9999) is skipped.
    """
    cjk = has_cjk(text)  # Chinese, Japanese and Korean expressions: their own rules (_cjk_time)
    if not text or not (cjk or may_have_time(text)):
        return ()
    day: dt.date | None = None
    if at is not None:
        at = at.replace(tzinfo=dt.UTC) if at.tzinfo is None else at.astimezone(dt.UTC)
        day = at.date()
    ctx = _Ctx(text=text, at=at, day=day)
    # the spans taken so far, disjoint and sorted (so by start and by end alike): a new match overlaps
    # one of them exactly when it overlaps the last one starting before its end (a bisection)
    starts: list[int] = []
    ends: list[int] = []
    refs: list[TemporalRef] = []
    rules: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], _Ctx], Result]], ...] = (
        (*_RULES, *CJK_RULES) if cjk else _RULES
    )
    for pattern, handler in rules:
        for m in pattern.finditer(text):
            start, end = m.span()
            before = bisect.bisect_left(starts, end) - 1
            if before >= 0 and ends[before] > start:
                continue
            try:
                result = handler(m, ctx)
            except (ValueError, OverflowError, KeyError):
                continue  # out of the calendar, or not a date after all ("31 February")
            if result is not None:
                first, last, precision = result
                at_index = bisect.bisect_left(starts, start)
                starts.insert(at_index, start)
                ends.insert(at_index, end)
                refs.insert(at_index, TemporalRef(" ".join(m.group(0).split()), first, last, precision))
    return tuple(refs)


def describe(ref: TemporalRef) -> str:
    """A human rendering: "15 May 2024", "week of 6 May 2024", "May 2024", "2022", or a range."""
    start, end = ref.start, ref.end
    if start.month == 1 and start.day == 1 and end.month == 12 and end.day == 31:
        return str(start.year) if start.year == end.year else f"{start.year}–{end.year}"
    if start.day == 1 and end == month_span(end.year, end.month)[1]:
        first = MONTH_NAMES[start.month - 1]
        last = f"{MONTH_NAMES[end.month - 1]} {end.year}"
        if (start.year, start.month) == (end.year, end.month):
            return last
        return f"{first}–{last}" if start.year == end.year else f"{first} {start.year} – {last}"
    if start == end:
        return format_day(start)
    if ref.precision == "week" and start.weekday() == 0 and end == start + 6 * _DAY:
        return f"week of {format_day(start)}"
    if ref.precision == "week" and start.weekday() == 5 and end == start + _DAY:
        return f"weekend of {format_day(start)}"
    if (start.year, start.month) == (end.year, end.month):
        return f"{start.day}–{format_day(end)}"
    return f"{format_day(start)} – {format_day(end)}"

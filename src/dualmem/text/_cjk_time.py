"""Chinese, Japanese and Korean time expressions for :func:`dualmem.text.temporal.ground` (private).

The same conventions as the English rules (weeks run Monday-Sunday, relative expressions are
grounded against the observation day, a month without a year is the most recent one unless the
sentence speaks of the future). Only a text holding a CJK character reaches these rules, so
English grounding is unchanged.

Handled: ``2024年4月1日`` / ``4月1号`` / ``2024年4月`` / ``2024年`` (Arabic, full-width or Chinese
numerals); ``今天 昨天 前天 明天 后天 今晚 昨晚`` (``今日 昨日 一昨日 明日`` in Japanese, ``오늘 어제
내일`` in Korean), with a time of day after them (``昨天晚上``); ``上周 这周 下周 上个月 下个月 去年
今年 明年 前年`` (``先週 今週 来週 先月 今月 来月 昨年 来年``, ``지난주 다음주 지난달 다음달 작년 올해
내년``); ``上周三 / 下星期五 / 周一晚上 / 先週の水曜日 / 月曜日``; ``三天前 / 两周前 / 3个月后 /
几天前 / 3日前 / 2週間前 / 3ヶ月前 / 3일 전``; ``去年五月 / 今年3月 / 五月``; ``去年夏天``; and the
Spring Festival (``今年春节``, ``春節``, ``过年``) from a table of its dates (2000-2040), as the
holiday's first seven days.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Protocol

from dualmem.text._calendar import add_months, month_span, season_span, week_span, weekend_span, year_span
from dualmem.types import Precision

__all__ = ["CJK_RULES", "SPRING_FESTIVAL", "cjk_number"]

_DAY = dt.timedelta(days=1)


class _Context(Protocol):
    text: str
    day: dt.date | None

    def sentence_start(self, pos: int) -> int: ...


Result = tuple[dt.date, dt.date, Precision] | None
Handler = Callable[[re.Match[str], _Context], Result]

#: the first day of the lunar new year (Spring Festival, 春节 / 春節 / 설날), Gregorian
SPRING_FESTIVAL: dict[int, dt.date] = {
    year: dt.date(year, month, day)
    for year, month, day in (
        (2000, 2, 5), (2001, 1, 24), (2002, 2, 12), (2003, 2, 1), (2004, 1, 22), (2005, 2, 9),
        (2006, 1, 29), (2007, 2, 18), (2008, 2, 7), (2009, 1, 26), (2010, 2, 14), (2011, 2, 3),
        (2012, 1, 23), (2013, 2, 10), (2014, 1, 31), (2015, 2, 19), (2016, 2, 8), (2017, 1, 28),
        (2018, 2, 16), (2019, 2, 5), (2020, 1, 25), (2021, 2, 12), (2022, 2, 1), (2023, 1, 22),
        (2024, 2, 10), (2025, 1, 29), (2026, 2, 17), (2027, 2, 6), (2028, 1, 26), (2029, 2, 13),
        (2030, 2, 3), (2031, 1, 23), (2032, 2, 11), (2033, 1, 31), (2034, 2, 19), (2035, 2, 8),
        (2036, 1, 28), (2037, 2, 15), (2038, 2, 4), (2039, 1, 24), (2040, 2, 12),
    )
}  # fmt: skip

_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5, "六": 6}
_DIGITS |= {"七": 7, "八": 8, "九": 9}
#: a number in Arabic (ASCII or full-width) or Chinese numerals up to 99
_N = r"(?:\d{1,4}|[零〇一二两兩三四五六七八九十]{1,3})"
_FEW = r"(?:几|幾|数|數|몇)"
#: a count of days, weeks, months or years (not a year number: "2020年前" is no offset)
_COUNT = r"(?:\d{1,3}|[零〇一二两兩三四五六七八九十]{1,3})"


def cjk_number(token: str) -> int:
    """``"12"``, ``"１２"``, ``"十二"``, ``"二十三"``, ``"两"`` -> the number (``ValueError`` otherwise)."""
    if token.isdigit():
        return int(token)
    if "十" not in token:
        if len(token) != 1:
            raise ValueError(token)
        return _DIGITS[token]
    tens, _, ones = token.partition("十")
    return (_DIGITS[tens] if tens else 1) * 10 + (_DIGITS[ones] if ones else 0)


_FUTURE = re.compile(
    r"将|要|打算|计划|准备|下周|下个|明天|明年|以后|之后|予定|つもり|来週|来月|来年|明日|예정|내일|내년"
)
_END = re.compile(r"[。！？!?\n]")


def _future(m: re.Match[str], ctx: _Context) -> bool:
    start = ctx.sentence_start(m.start())
    end = _END.search(ctx.text, m.end())
    return _FUTURE.search(ctx.text, start, end.start() if end else len(ctx.text)) is not None


# -- absolute dates -----------------------------------------------------------------------------


def _ymd(m: re.Match[str], _ctx: _Context) -> Result:
    day = dt.date(int(m["y"]), cjk_number(m["m"]), cjk_number(m["d"]))
    return day, day, "day"


def _md(m: re.Match[str], ctx: _Context) -> Result:
    """``4月1日`` without a year: the year that puts it nearest the observation day (``今年``,
    ``去年``, ``明年`` before it name the year)."""
    month, number = cjk_number(m["m"]), cjk_number(m["d"])
    year = _year_word(m["yw"], ctx.day)
    if year is not None:
        day = dt.date(year, month, number)
        return day, day, "day"
    if ctx.day is None:
        return None
    seen = ctx.day
    best = min(
        (dt.date(y, month, number) for y in (seen.year - 1, seen.year, seen.year + 1)),
        key=lambda d: abs((d - seen).days),
    )
    return best, best, "day"


def _ym(m: re.Match[str], _ctx: _Context) -> Result:
    return *month_span(int(m["y"]), cjk_number(m["m"])), "month"


def _y(m: re.Match[str], _ctx: _Context) -> Result:
    return *year_span(int(m["y"])), "year"


_YEAR_STEP = {"去年": -1, "今年": 0, "明年": 1, "前年": -2, "后年": 2, "後年": 2, "昨年": -1, "来年": 1}
_YEAR_STEP |= {"작년": -1, "올해": 0, "내년": 1, "재작년": -2}
_YEAR_WORDS = "|".join(sorted(_YEAR_STEP, key=len, reverse=True))


def _year_word(word: str | None, day: dt.date | None) -> int | None:
    if not word or day is None:
        return None
    return day.year + _YEAR_STEP[word]


def _month(m: re.Match[str], ctx: _Context) -> Result:
    """``去年五月``, ``今年3月``, ``五月`` (the most recent May, the next with a future cue)."""
    day = ctx.day
    month = cjk_number(m["m"])
    if not 1 <= month <= 12 or day is None:
        return None
    year = _year_word(m["yw"], day)
    if year is None:
        ahead = _future(m, ctx)
        year = (
            day.year
            if (month >= day.month if ahead else month <= day.month)
            else day.year + (1 if ahead else -1)
        )
    return *month_span(year, month), "month"


def _year_rel(m: re.Match[str], ctx: _Context) -> Result:
    year = _year_word(m["yw"], ctx.day)
    return None if year is None else (*year_span(year), "year")


# -- days, weeks, months relative to the observation day ----------------------------------------

_DAY_STEP = {
    "大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "昨晚": -1, "昨夜": -1, "今天": 0, "今日": 0,
    "今晚": 0, "今早": 0, "今夜": 0, "今朝": 0, "明天": 1, "明日": 1, "后天": 2, "後天": 2, "大后天": 3,
    "一昨日": -2, "おととい": -2, "明後日": 2, "あさって": 2, "きのう": -1, "きょう": 0, "あした": 1,
    "그저께": -2, "어제": -1, "오늘": 0, "내일": 1, "모레": 2,
}  # fmt: skip
_DAY_WORDS = "|".join(sorted(_DAY_STEP, key=len, reverse=True))
_TIME_OF_DAY = (
    r"(?:早上|早晨|上午|中午|下午|傍晚|晚上|夜里|夜裡|凌晨|の?朝|の?昼|の?夜|の?晩|の?夕方|아침|저녁|밤)?"
)


def _day_word(m: re.Match[str], ctx: _Context) -> Result:
    if ctx.day is None:
        return None
    day = ctx.day + _DAY_STEP[m["w"]] * _DAY
    return day, day, "day"


_WEEK = r"(?:周|週|星期|礼拜|禮拜|个星期|個星期|个礼拜|個禮拜)"
_STEP_WORDS = {
    "上": -1, "上个": -1, "上個": -1, "这": 0, "這": 0, "这个": 0, "這個": 0, "本": 0, "下": 1, "下个": 1,
    "下個": 1, "先": -1, "今": 0, "来": 1, "來": 1, "翌": 1, "前": -1,
    "지난": -1, "이번": 0, "다음": 1, "저번": -1,
}  # fmt: skip
_ZH_STEP = r"(?P<mod>上个|上個|这个|這個|下个|下個|上|这|這|本|下)"


def _unit(m: re.Match[str], ctx: _Context) -> Result:
    """``上周``, ``下个月``, ``先週``, ``来月``, ``지난주``: the calendar week or month."""
    day = ctx.day
    if day is None:
        return None
    groups = m.groupdict()
    step = _STEP_WORDS[groups.get("mod") or groups["mod_ja"]]
    if groups.get("unit") in {"月", "달"}:
        return *month_span(*add_months(day.year, day.month, step)), "month"
    return *week_span(day + 7 * step * _DAY), "week"


def _weekend(m: re.Match[str], ctx: _Context) -> Result:
    day = ctx.day
    if day is None:
        return None
    mod = m["mod"] or m["mod2"]
    if mod is None:  # the most recent weekend, the next one with a future cue
        if _future(m, ctx):
            return *weekend_span(day if day.weekday() >= 5 else day + 7 * _DAY), "week"
        return *weekend_span(day if day.weekday() == 6 else day - 7 * _DAY), "week"
    return *weekend_span(day + 7 * _STEP_WORDS[mod] * _DAY), "week"


_WEEKDAY_ZH = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": -1}
_WEEKDAY_JA = {"月": 0, "火": 1, "水": 2, "木": 3, "金": 4, "土": 5, "日": 6}
_WEEKDAY_KO = {"월": 0, "화": 1, "수": 2, "목": 3, "금": 4, "토": 5, "일": 6}


def _weekday(m: re.Match[str], ctx: _Context) -> Result:
    """``上周三``, ``下星期五``, ``这周日``, ``周一(晚上)``, ``先週の水曜日``, ``月曜日``,
    ``지난주 월요일``."""
    day = ctx.day
    if day is None:
        return None
    name = m["wd"]
    wanted = _WEEKDAY_ZH.get(name, _WEEKDAY_JA.get(name, _WEEKDAY_KO.get(name)))
    if wanted is None:
        return None
    mod = m["mod"]
    if mod is not None:
        monday = week_span(day + 7 * _STEP_WORDS[mod] * _DAY)[0]
        target = monday + wanted * _DAY
    elif _future(m, ctx):
        target = day + ((wanted - day.weekday()) % 7) * _DAY
    else:
        target = day - ((day.weekday() - wanted) % 7 or 7) * _DAY
    return target, target, "day"


_OFFSET_UNITS = {
    "天": "day", "日": "day", "일": "day", "周": "week", "週": "week", "星期": "week", "礼拜": "week",
    "禮拜": "week", "週間": "week", "个星期": "week", "個星期": "week", "个礼拜": "week",
    "個禮拜": "week", "주": "week", "月": "month", "ヶ月": "month", "か月": "month",
    "カ月": "month", "ヵ月": "month", "个月": "month", "個月": "month", "개월": "month", "달": "month",
    "年": "year", "년": "year",
}  # fmt: skip
_OFFSET_UNIT = "|".join(sorted(_OFFSET_UNITS, key=len, reverse=True))


def _offset(m: re.Match[str], ctx: _Context) -> Result:
    """``三天前``, ``两个星期前``, ``3个月后``, ``几天前`` (2-5 days, precision week), ``3日前``."""
    day = ctx.day
    if day is None:
        return None
    unit = _OFFSET_UNITS[m["unit"]]
    sign = 1 if m["dir"] in {"后", "後", "以后", "以後", "후", "뒤"} else -1
    if m["n"] is None:  # 几天前: a few
        low, high = 2, 5
        precision: Precision = {"day": "week", "week": "month", "month": "year", "year": "year"}[unit]  # type: ignore[assignment]
    else:
        low = high = cjk_number(m["n"])
        precision = unit  # type: ignore[assignment]
    a, b = sorted((sign * low, sign * high))
    if unit == "day":
        return day + a * _DAY, day + b * _DAY, precision
    if unit == "week":
        return week_span(day + 7 * a * _DAY)[0], week_span(day + 7 * b * _DAY)[1], precision
    if unit == "month":
        return (
            month_span(*add_months(day.year, day.month, a))[0],
            month_span(*add_months(day.year, day.month, b))[1],
            precision,
        )
    return year_span(day.year + a)[0], year_span(day.year + b)[1], precision


_SEASONS = {"春": "spring", "夏": "summer", "秋": "autumn", "冬": "winter"}
_SEASONS_KO = {"봄": "spring", "여름": "summer", "가을": "autumn", "겨울": "winter"}


def _season(m: re.Match[str], ctx: _Context) -> Result:
    """``去年夏天``, ``今年冬天``, ``去年の夏``: the season starting in that year."""
    year = _year_word(m["yw"], ctx.day)
    if year is None:
        return None
    season = _SEASONS.get(m["s"]) or _SEASONS_KO[m["s"]]
    if season == "winter" and ctx.day is not None and m["yw"] in {"今年", "올해"} and ctx.day.month <= 2:
        year -= 1  # this winter, said in January, started last December
    return *season_span(season, year), "month"


def _festival(m: re.Match[str], ctx: _Context) -> Result:
    """``今年春节`` / ``去年过年`` / ``春節``: the first seven days of that lunar new year."""
    year = _year_word(m["yw"], ctx.day)
    if year is None:
        if ctx.day is None:
            return None
        seen = ctx.day
        known = [
            SPRING_FESTIVAL[y] for y in (seen.year - 1, seen.year, seen.year + 1) if y in SPRING_FESTIVAL
        ]
        if not known:
            return None
        first = min(known, key=lambda d: abs((d - seen).days))
    elif year in SPRING_FESTIVAL:
        first = SPRING_FESTIVAL[year]
    else:
        return None
    return first, first + 6 * _DAY, "week"


_Y = r"(?<!\d)(?P<y>\d{4})\s*年"
_M = rf"(?<!\d)(?P<m>{_N})\s*月"
_D = rf"(?P<d>{_N})\s*(?:日|号|號)"
_YW = rf"(?:(?P<yw>{_YEAR_WORDS})の?)"

CJK_RULES: tuple[tuple[re.Pattern[str], Handler], ...] = (
    (re.compile(rf"{_Y}{_M}{_D}"), _ymd),
    (re.compile(r"(?<!\d)(?P<y>\d{4})\s*년\s*(?P<m>\d{1,2})\s*월\s*(?P<d>\d{1,2})\s*일"), _ymd),
    (re.compile(rf"{_YW}?{_M}{_D}"), _md),
    (re.compile(rf"{_Y}{_M}(?!\s*{_N}\s*(?:日|号|號))"), _ym),
    (re.compile(r"(?<!\d)(?P<y>\d{4})\s*년\s*(?P<m>\d{1,2})\s*월"), _ym),
    (re.compile(rf"{_YW}?(?P<s>[春夏秋冬])(?:天|季)"), _season),
    (re.compile(rf"(?P<yw>{_YEAR_WORDS})の(?P<s>[春夏秋冬])"), _season),
    (re.compile(rf"(?P<yw>{_YEAR_WORDS})\s*(?P<s>봄|여름|가을|겨울)"), _season),
    (re.compile(rf"{_YW}?(?:春节|春節|过年|過年|旧正月|설날)"), _festival),
    (re.compile(rf"(?<!\d)(?P<y>\d{{4}})\s*(?:年|년)(?!\s*{_N}\s*(?:月|월))(?![前后後])"), _y),
    # 去年五月 / 五月 / 3月 (not 五月份的工资? still a month) but not 三个月 or 4月1日
    (
        re.compile(
            rf"{_YW}?(?P<m>\d{{1,2}}|十[一二]?|[一二三四五六七八九])\s*月(?:份)?(?!\s*{_N}\s*(?:日|号|號))"
        ),
        _month,
    ),
    (
        re.compile(
            rf"(?<!\d)(?:(?P<n>{_COUNT})|{_FEW})\s*(?P<unit>{_OFFSET_UNIT})\s*(?P<dir>以前|以后|以後|前|后|後|전|후|뒤)"
        ),
        _offset,
    ),
    (re.compile(rf"{_ZH_STEP}?{_WEEK}(?P<wd>[一二三四五六日天])(?:{_TIME_OF_DAY})"), _weekday),
    (re.compile(rf"(?:(?P<mod>先|今|来|來|翌)週の?)?(?P<wd>[月火水木金土日])曜日?{_TIME_OF_DAY}"), _weekday),
    (re.compile(r"(?:(?P<mod>지난|이번|다음|저번)\s*주\s*)?(?P<wd>[월화수목금토일])요일"), _weekday),
    (re.compile(rf"(?:{_ZH_STEP}{_WEEK}?|(?P<mod2>先|今|来|來)週の?)?(?:周末|週末)"), _weekend),
    (re.compile(rf"{_ZH_STEP}{_WEEK}(?![一二三四五六日天末])|(?P<mod_ja>先|今|来|來|翌)週(?!間)"), _unit),
    (
        re.compile(
            r"(?P<mod>上个|上個|这个|這個|下个|下個|本|上|下|先|今|来|來|翌)(?P<unit>月)(?!\s*\d)(?![一二三四五六七八九十份])"
        ),
        _unit,
    ),
    (re.compile(r"(?P<mod>지난|이번|다음|저번)\s*(?P<unit>주|달)"), _unit),
    (re.compile(rf"(?P<w>{_DAY_WORDS}){_TIME_OF_DAY}"), _day_word),
    (re.compile(rf"(?P<yw>{_YEAR_WORDS})"), _year_rel),
)

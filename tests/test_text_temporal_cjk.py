"""Chinese, Japanese and Korean time expressions grounded against the observation day (golden
cases, the English conventions), and the query-side cues; English grounding is unchanged."""

from __future__ import annotations

import datetime as dt

import pytest

from dualmem.text._cjk_time import SPRING_FESTIVAL, cjk_number
from dualmem.text.cues import mentions_time, query_time_focus
from dualmem.text.temporal import describe, ground

AT = dt.datetime(2024, 5, 15, 10, tzinfo=dt.UTC)  # a Wednesday


@pytest.mark.parametrize(
    ("text", "expression", "start", "end", "precision"),
    [
        ("2024年4月1日我们去了北京", "2024年4月1日", "2024-04-01", "2024-04-01", "day"),
        ("２０２３年１２月３日", "２０２３年１２月３日", "2023-12-03", "2023-12-03", "day"),
        ("二〇二四年?", None, None, None, None),
        ("4月1号交房租", "4月1号", "2024-04-01", "2024-04-01", "day"),
        ("十二月二十五日是圣诞节", "十二月二十五日", "2023-12-25", "2023-12-25", "day"),
        ("2023年3月换了工作", "2023年3月", "2023-03-01", "2023-03-31", "month"),
        ("2022年的时候", "2022年", "2022-01-01", "2022-12-31", "year"),
        ("昨天下雨了", "昨天", "2024-05-14", "2024-05-14", "day"),
        ("前天去了医院", "前天", "2024-05-13", "2024-05-13", "day"),
        ("昨天晚上没睡好", "昨天晚上", "2024-05-14", "2024-05-14", "day"),
        ("上周三我见了老王", "上周三", "2024-05-08", "2024-05-08", "day"),
        ("下星期五开会", "下星期五", "2024-05-24", "2024-05-24", "day"),
        ("周一晚上去看电影", "周一晚上", "2024-05-13", "2024-05-13", "day"),
        ("我打算周五出发", "周五", "2024-05-17", "2024-05-17", "day"),  # a future cue looks forward
        ("三天前买的", "三天前", "2024-05-12", "2024-05-12", "day"),
        ("两个星期前", "两个星期前", "2024-04-29", "2024-05-05", "week"),
        ("3个月后搬家", "3个月后", "2024-08-01", "2024-08-31", "month"),
        ("几天前", "几天前", "2024-05-10", "2024-05-13", "week"),
        ("去年五月我搬家了", "去年五月", "2023-05-01", "2023-05-31", "month"),
        ("今年3月", "今年3月", "2024-03-01", "2024-03-31", "month"),
        ("下个月要出差", "下个月", "2024-06-01", "2024-06-30", "month"),
        ("上个月", "上个月", "2024-04-01", "2024-04-30", "month"),
        ("上周很忙", "上周", "2024-05-06", "2024-05-12", "week"),
        ("下周末去爬山", "下周末", "2024-05-25", "2024-05-26", "week"),
        ("去年", "去年", "2023-01-01", "2023-12-31", "year"),
        ("去年夏天", "去年夏天", "2023-06-01", "2023-08-31", "month"),
        ("今年春节回老家", "今年春节", "2024-02-10", "2024-02-16", "week"),
        ("去年过年", "去年过年", "2023-01-22", "2023-01-28", "week"),
        ("昨日は雨でした", "昨日", "2024-05-14", "2024-05-14", "day"),
        ("一昨日", "一昨日", "2024-05-13", "2024-05-13", "day"),
        ("先週は忙しかった", "先週", "2024-05-06", "2024-05-12", "week"),
        ("先週の水曜日に", "先週の水曜日", "2024-05-08", "2024-05-08", "day"),
        ("3日前に買った", "3日前", "2024-05-12", "2024-05-12", "day"),
        ("2週間前", "2週間前", "2024-04-29", "2024-05-05", "week"),
        ("来月引っ越します", "来月", "2024-06-01", "2024-06-30", "month"),
        ("어제 비가 왔어요", "어제", "2024-05-14", "2024-05-14", "day"),
        ("지난주에", "지난주", "2024-05-06", "2024-05-12", "week"),
        ("3일 전에", "3일 전", "2024-05-12", "2024-05-12", "day"),
    ],
)
def test_golden_cases(
    text: str, expression: str | None, start: str | None, end: str | None, precision: str | None
) -> None:
    refs = ground(text, AT)
    if expression is None:
        assert refs == ()
        return
    assert len(refs) == 1, refs
    ref = refs[0]
    assert (ref.expression, ref.start.isoformat(), ref.end.isoformat(), ref.precision) == (
        expression,
        start,
        end,
        precision,
    )


def test_without_an_observation_time_only_absolute_dates_are_grounded() -> None:
    assert [r.expression for r in ground("2024年4月1日和昨天", None)] == ["2024年4月1日"]


def test_no_false_dates_in_ordinary_words() -> None:
    for text in (
        "日本に行きました",
        "我用 uv 管理 Python 包",
        "2020年前后",
        "12345年",
        "一个月一次",
        "五月天的歌",
    ):
        refs = ground(text, AT)
        assert all(r.expression not in {"2345年", "020年前"} for r in refs), refs
    assert ground("我用 uv 管理 Python 包", AT) == ()
    assert ground("日本に行きました", AT) == ()


def test_mixed_english_and_chinese_both_grounded_in_order() -> None:
    refs = ground("I met her 3 days ago, 昨天也见了", AT)
    assert [(r.expression, describe(r)) for r in refs] == [
        ("3 days ago", "12 May 2024"),
        ("昨天", "14 May 2024"),
    ]


def test_spring_festival_table_and_numbers() -> None:
    assert SPRING_FESTIVAL[2024] == dt.date(2024, 2, 10)
    assert SPRING_FESTIVAL[2025] == dt.date(2025, 1, 29)
    assert all(dt.date(y, 1, 21) <= d <= dt.date(y, 2, 20) for y, d in SPRING_FESTIVAL.items())
    assert [cjk_number(t) for t in ("十二", "二十三", "两", "7", "１２", "十")] == [12, 23, 2, 7, 12, 10]
    with pytest.raises((ValueError, KeyError)):
        cjk_number("百")


def test_query_cues() -> None:
    assert query_time_focus("我以前在哪里工作？") == "past"
    assert query_time_focus("我现在在哪里工作？") == "current"
    assert query_time_focus("前は何を使っていましたか") == "past"
    assert query_time_focus("我女儿喜欢什么？") == "none"
    assert mentions_time("我们什么时候去的北京？")
    assert mentions_time("いつ引っ越しましたか")
    assert not mentions_time("我女儿喜欢什么？")
    # English as before
    assert query_time_focus("Where did I use to work?") == "past"
    assert query_time_focus("Where do I work now?") == "current"

"""Temporal grounding: golden cases against an observation time, properties, rendering, cues."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dualmem.text import describe, ground, mentions_time, query_time_focus
from dualmem.types import TemporalRef

D = dt.date
# Thursday 16 May 2024, 10:00 UTC
AT = dt.datetime(2024, 5, 16, 10, 0, tzinfo=dt.UTC)

# (text, expression, start, end, precision), all observed at AT
GOLDEN: list[tuple[str, str, dt.date, dt.date, str]] = [
    ("yesterday", "yesterday", D(2024, 5, 15), D(2024, 5, 15), "day"),
    ("I went hiking last Saturday.", "last Saturday", D(2024, 5, 11), D(2024, 5, 11), "day"),
    ("two days ago", "two days ago", D(2024, 5, 14), D(2024, 5, 14), "day"),
    ("last week", "last week", D(2024, 5, 6), D(2024, 5, 12), "week"),
    ("next month", "next month", D(2024, 6, 1), D(2024, 6, 30), "month"),
    ("We moved in 2022.", "in 2022", D(2022, 1, 1), D(2022, 12, 31), "year"),
    ("on 15 May 2024", "15 May 2024", D(2024, 5, 15), D(2024, 5, 15), "day"),
    ("last year", "last year", D(2023, 1, 1), D(2023, 12, 31), "year"),
    ("today", "today", D(2024, 5, 16), D(2024, 5, 16), "day"),
    ("tonight", "tonight", D(2024, 5, 16), D(2024, 5, 16), "day"),
    ("this morning", "this morning", D(2024, 5, 16), D(2024, 5, 16), "day"),
    ("tomorrow", "tomorrow", D(2024, 5, 17), D(2024, 5, 17), "day"),
    ("last night", "last night", D(2024, 5, 15), D(2024, 5, 15), "day"),
    ("the day before yesterday", "the day before yesterday", D(2024, 5, 14), D(2024, 5, 14), "day"),
    ("5 days ago", "5 days ago", D(2024, 5, 11), D(2024, 5, 11), "day"),
    ("a few days ago", "a few days ago", D(2024, 5, 11), D(2024, 5, 14), "week"),
    ("three weeks ago", "three weeks ago", D(2024, 4, 22), D(2024, 4, 28), "week"),
    ("a month ago", "a month ago", D(2024, 4, 1), D(2024, 4, 30), "month"),
    ("five years ago", "five years ago", D(2019, 1, 1), D(2019, 12, 31), "year"),
    ("a few years ago", "a few years ago", D(2019, 1, 1), D(2022, 12, 31), "year"),
    ("this week", "this week", D(2024, 5, 13), D(2024, 5, 19), "week"),
    ("next week", "next week", D(2024, 5, 20), D(2024, 5, 26), "week"),
    ("last month", "last month", D(2024, 4, 1), D(2024, 4, 30), "month"),
    ("this year", "this year", D(2024, 1, 1), D(2024, 12, 31), "year"),
    ("next year", "next year", D(2025, 1, 1), D(2025, 12, 31), "year"),
    ("last weekend", "last weekend", D(2024, 5, 11), D(2024, 5, 12), "week"),
    ("this weekend", "this weekend", D(2024, 5, 18), D(2024, 5, 19), "week"),
    ("over the weekend", "over the weekend", D(2024, 5, 11), D(2024, 5, 12), "week"),
    ("the week before last", "the week before last", D(2024, 4, 29), D(2024, 5, 5), "week"),
    ("I saw her on Saturday.", "on Saturday", D(2024, 5, 11), D(2024, 5, 11), "day"),
    ("I will see her on Saturday.", "on Saturday", D(2024, 5, 18), D(2024, 5, 18), "day"),
    ("next Friday", "next Friday", D(2024, 5, 17), D(2024, 5, 17), "day"),
    ("last Thursday", "last Thursday", D(2024, 5, 9), D(2024, 5, 9), "day"),
    ("my car broke down last Fri", "last Fri", D(2024, 5, 10), D(2024, 5, 10), "day"),
    ("in May", "in May", D(2024, 5, 1), D(2024, 5, 31), "month"),
    ("in June", "in June", D(2023, 6, 1), D(2023, 6, 30), "month"),
    ("in May 2023", "in May 2023", D(2023, 5, 1), D(2023, 5, 31), "month"),
    ("last May", "last May", D(2023, 5, 1), D(2023, 5, 31), "month"),
    ("last August", "last August", D(2023, 8, 1), D(2023, 8, 31), "month"),
    ("the end of May", "the end of May", D(2024, 5, 21), D(2024, 5, 31), "month"),
    ("May 15, 2024", "May 15, 2024", D(2024, 5, 15), D(2024, 5, 15), "day"),
    ("2024-05-15", "2024-05-15", D(2024, 5, 15), D(2024, 5, 15), "day"),
    ("5/15/2024", "5/15/2024", D(2024, 5, 15), D(2024, 5, 15), "day"),
    ("15/5/2024", "15/5/2024", D(2024, 5, 15), D(2024, 5, 15), "day"),
    ("on 28 December", "28 December", D(2023, 12, 28), D(2023, 12, 28), "day"),
    ("Sept 2023", "Sept 2023", D(2023, 9, 1), D(2023, 9, 30), "month"),
    ("last summer", "last summer", D(2023, 6, 1), D(2023, 8, 31), "month"),
    ("next winter", "next winter", D(2024, 12, 1), D(2025, 2, 28), "month"),
    ("summer 2022", "summer 2022", D(2022, 6, 1), D(2022, 8, 31), "month"),
    ("the other day", "the other day", D(2024, 5, 9), D(2024, 5, 15), "week"),
    ("earlier this month", "earlier this month", D(2024, 5, 1), D(2024, 5, 16), "month"),
    ("in two weeks", "in two weeks", D(2024, 5, 27), D(2024, 6, 2), "week"),
    ("an hour ago", "an hour ago", D(2024, 5, 16), D(2024, 5, 16), "day"),
    ("since 2019", "since 2019", D(2019, 1, 1), D(2019, 12, 31), "year"),
    ("the last two weeks", "the last two weeks", D(2024, 4, 29), D(2024, 5, 16), "week"),
    ("the past few days", "the past few days", D(2024, 5, 11), D(2024, 5, 16), "week"),
    ("this Saturday", "this Saturday", D(2024, 5, 18), D(2024, 5, 18), "day"),
    ("this coming Friday", "this coming Friday", D(2024, 5, 17), D(2024, 5, 17), "day"),
    ("later this week", "later this week", D(2024, 5, 16), D(2024, 5, 19), "week"),
    ("next May", "next May", D(2025, 5, 1), D(2025, 5, 31), "month"),
    ("this May", "this May", D(2024, 5, 1), D(2024, 5, 31), "month"),
    ("We plan to go in June", "in June", D(2024, 6, 1), D(2024, 6, 30), "month"),
    ("this summer", "this summer", D(2024, 6, 1), D(2024, 8, 31), "month"),
    ("a couple of days ago", "a couple of days ago", D(2024, 5, 13), D(2024, 5, 14), "week"),
]


@pytest.mark.parametrize(("text", "expression", "start", "end", "precision"), GOLDEN)
def test_golden(text: str, expression: str, start: dt.date, end: dt.date, precision: str) -> None:
    assert ground(text, AT) == (TemporalRef(expression, start, end, precision),)  # type: ignore[arg-type]


def test_golden_table_is_large_enough() -> None:
    assert len(GOLDEN) >= 25


def test_several_expressions_in_text_order() -> None:
    refs = ground("Last week I met Jo; tomorrow we fly, and in 2022 we met first.", AT)
    assert [r.expression for r in refs] == ["Last week", "tomorrow", "in 2022"]


@pytest.mark.parametrize("text", ["yesterday", "last week", "two days ago", "last Saturday", "in May"])
def test_relative_needs_observation_time(text: str) -> None:
    assert ground(text, None) == ()


def test_absolute_without_observation_time() -> None:
    refs = ground("In 2022, and again on 15 May 2024 and in May 2023.", None)
    assert [(r.start, r.end, r.precision) for r in refs] == [
        (D(2022, 1, 1), D(2022, 12, 31), "year"),
        (D(2024, 5, 15), D(2024, 5, 15), "day"),
        (D(2023, 5, 1), D(2023, 5, 31), "month"),
    ]


def test_observation_time_is_converted_to_utc() -> None:
    # 01:00 on 17 May at +05:00 is still 16 May in UTC
    at = dt.datetime(2024, 5, 17, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=5)))
    assert ground("yesterday", at)[0].start == D(2024, 5, 15)
    assert ground("yesterday", dt.datetime(2024, 5, 16, 23, 0))[0].start == D(2024, 5, 15)


@pytest.mark.parametrize(
    "text",
    ["I may 5 times", "it costs 2000 dollars", "Jan 3 friends came", "March on!", "on 31 February",
     "Nothing temporal here at all.", "", "Saturdays are great"],
)  # fmt: skip
def test_no_false_grounding(text: str) -> None:
    assert ground(text, AT) == ()


def test_locomo_observation_is_not_event_time() -> None:
    # a LoCoMo turn of session time 1:56 pm on 8 May 2023 talks about the previous week
    at = dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.UTC)
    (ref,) = ground("I went to a LGBTQ support group last week.", at)
    assert (ref.start, ref.end, ref.precision) == (D(2023, 5, 1), D(2023, 5, 7), "week")
    assert describe(ref) == "week of 1 May 2023"


@pytest.mark.parametrize(
    ("ref", "text"),
    [
        (TemporalRef("x", D(2024, 5, 15), D(2024, 5, 15), "day"), "15 May 2024"),
        (TemporalRef("x", D(2024, 5, 6), D(2024, 5, 12), "week"), "week of 6 May 2024"),
        (TemporalRef("x", D(2024, 5, 11), D(2024, 5, 12), "week"), "weekend of 11 May 2024"),
        (TemporalRef("x", D(2024, 5, 1), D(2024, 5, 31), "month"), "May 2024"),
        (TemporalRef("x", D(2022, 1, 1), D(2022, 12, 31), "year"), "2022"),
        (TemporalRef("x", D(2019, 1, 1), D(2022, 12, 31), "year"), "2019–2022"),
        (TemporalRef("x", D(2023, 6, 1), D(2023, 8, 31), "month"), "June–August 2023"),
        (TemporalRef("x", D(2023, 12, 1), D(2024, 2, 29), "month"), "December 2023 – February 2024"),
        (TemporalRef("x", D(2024, 5, 11), D(2024, 5, 14), "week"), "11–14 May 2024"),
        (TemporalRef("x", D(2024, 4, 29), D(2024, 5, 2), "week"), "29 April 2024 – 2 May 2024"),
    ],
)
def test_describe(ref: TemporalRef, text: str) -> None:
    assert describe(ref) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [("When did Mira buy the bicycle?", True), ("How long has she lived there?", True),
     ("What did she do after the wedding?", True), ("She moved in 2022", True),
     ("what happened on Saturday", True), ("since March", True), ("two weeks ago", True),
     ("What is Mira's favourite colour?", False), ("Who is her best friend?", False)],
)  # fmt: skip
def test_mentions_time(text: str, expected: bool) -> None:
    assert mentions_time(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("What car did she use to drive?", "past"), ("Where did he live before Paris?", "past"),
     ("What was her job previously?", "past"), ("What was his original plan?", "past"),
     ("What did she think at first?", "past"), ("Where did they live in 2022?", "past"),
     ("Where does she live now?", "current"), ("What is he currently reading?", "current"),
     ("Does she still paint?", "current"), ("What does he do these days?", "current"),
     ("What is Mira's favourite colour?", "none"),
     ("She used to live in Rome; where does she live now?", "past")],
)  # fmt: skip
def test_query_time_focus(text: str, expected: str) -> None:
    assert query_time_focus(text) == expected


# -- properties ---------------------------------------------------------------------------

_ats = st.datetimes(
    min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59), timezones=st.just(dt.UTC)
)
_words = st.sampled_from(
    ["last", "next", "this", "past", "in", "on", "ago", "the", "day", "week", "weekend", "month", "year",
     "May", "December", "Saturday", "fri", "two", "a few", "9999", "2022", "15", "31", "summer", "winter",
     "yesterday", "tomorrow", "before", "early", "end of", "5/15/2024", "2024-02-30", "of", ",", "."]
)  # fmt: skip
_temporalish = st.lists(_words, max_size=8).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(st.text(max_size=80), _temporalish), at=st.one_of(st.none(), _ats))
def test_never_raises_and_spans_are_ordered(text: str, at: dt.datetime | None) -> None:
    refs = ground(text, at)
    for ref in refs:
        assert ref.start <= ref.end
        assert ref.precision in {"day", "week", "month", "year"}
        assert ref.expression
        assert ref.expression.lower() in " ".join(text.split()).lower()
        assert describe(ref)


_PAST = [
    "yesterday", "last night", "last week", "last weekend", "last month", "last year", "two days ago",
    "a few days ago", "three weeks ago", "a month ago", "several months ago", "a couple of years ago",
    "last Saturday", "last Monday", "last May", "last summer", "the other day", "the week before last",
    "this past weekend", "an hour ago", "over the weekend",
]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    phrase=st.sampled_from(_PAST),
    at=st.datetimes(
        min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2100, 1, 1), timezones=st.just(dt.UTC)
    ),
)
def test_past_expressions_never_after_observation(phrase: str, at: dt.datetime) -> None:
    refs = ground(f"I did it {phrase}.", at)
    assert len(refs) == 1
    assert refs[0].end <= at.date()
    assert refs[0].start <= refs[0].end


@settings(max_examples=100, deadline=None)
@given(at=_ats.filter(lambda a: a.year > 1 and a.year < 9999))
def test_last_week_is_the_previous_monday_to_sunday(at: dt.datetime) -> None:
    (ref,) = ground("last week", at)
    assert ref.start.weekday() == 0
    assert ref.end - ref.start == dt.timedelta(days=6)
    assert ref.end < at.date() <= ref.end + dt.timedelta(days=7)


def test_a_long_text_grounds_as_its_sentences_do() -> None:
    """Many expressions in one long text (a 1 MB observation has thousands) are grounded each as in
    its own sentence: the overlap check and the future-tense cue look at the right neighbours."""
    sentences = [
        "I went hiking last Saturday.",
        "We will meet on Friday!",
        "On Monday I fixed the bike.",
        "Two days ago it rained, and yesterday too?",
        "I'm going to call her on Sunday.",
        "We moved in 2022 and again on 15 May 2024.",
    ]
    text = "\n".join(sentences * 200)
    expected = [ref for sentence in sentences for ref in ground(sentence, AT)] * 200
    assert len(expected) == 8 * 200
    assert list(ground(text, AT)) == expected

"""parse_time / format_day: every accepted input form, and one-line errors with a hint."""

from __future__ import annotations

import datetime as dt

import pytest

from dualmem.errors import InvalidInput, UserError
from dualmem.text import format_day, parse_time

UTC = dt.UTC


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1:56 pm on 8 May, 2023", dt.datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("10:37 am on 27 June, 2023", dt.datetime(2023, 6, 27, 10, 37, tzinfo=UTC)),
        ("12:05 am on 1 January, 2024", dt.datetime(2024, 1, 1, 0, 5, tzinfo=UTC)),
        ("12:30 pm on 3 Sept, 2023", dt.datetime(2023, 9, 3, 12, 30, tzinfo=UTC)),
        ("8 May 2023", dt.datetime(2023, 5, 8, tzinfo=UTC)),
        ("8th May, 2023", dt.datetime(2023, 5, 8, tzinfo=UTC)),
        ("May 8, 2023", dt.datetime(2023, 5, 8, tzinfo=UTC)),
        ("may 8 2023 at 3 pm", dt.datetime(2023, 5, 8, 15, tzinfo=UTC)),
        ("2023-05-08", dt.datetime(2023, 5, 8, tzinfo=UTC)),
        ("2023-05-08 13:56", dt.datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("2023-05-08T13:56:00Z", dt.datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("2023-05-08T13:56:00+02:00", dt.datetime(2023, 5, 8, 11, 56, tzinfo=UTC)),
        ("  2023-05-08T13:56:00-05:00 ", dt.datetime(2023, 5, 8, 18, 56, tzinfo=UTC)),
        (0, dt.datetime(1970, 1, 1, tzinfo=UTC)),
        (1_683_554_160, dt.datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        (1_683_554_160.5, dt.datetime(2023, 5, 8, 13, 56, 0, 500_000, tzinfo=UTC)),
        (dt.date(2024, 5, 15), dt.datetime(2024, 5, 15, tzinfo=UTC)),
        (dt.datetime(2024, 5, 15, 9, 30), dt.datetime(2024, 5, 15, 9, 30, tzinfo=UTC)),
        (
            dt.datetime(2024, 5, 15, 9, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))),
            dt.datetime(2024, 5, 15, 7, 30, tzinfo=UTC),
        ),
    ],
)
def test_parse_time_accepts(value: object, expected: dt.datetime) -> None:
    got = parse_time(value)  # type: ignore[arg-type]
    assert got == expected
    assert got is not None
    assert got.utcoffset() == dt.timedelta(0)
    assert got.tzinfo is UTC


def test_none_stays_none() -> None:
    assert parse_time(None) is None


@pytest.mark.parametrize(
    "value",
    ["", "   ", "yesterday", "31 February 2023", "13:00 pm on 8 May, 2023", "2023-13-01", "May 2023x",
     float("nan"), float("inf"), 1e30, True, [2023]],
)  # fmt: skip
def test_parse_time_rejects_with_hint(value: object) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_time(value)  # type: ignore[arg-type]
    err = info.value
    assert isinstance(err, UserError)
    assert err.hint is not None
    assert "ISO-8601" in err.hint
    assert "1:56 pm on 8 May, 2023" in err.hint
    assert "\n" not in err.one_line()


def test_error_names_the_value() -> None:
    with pytest.raises(InvalidInput, match="next tuesday-ish"):
        parse_time("next tuesday-ish")


def test_invalid_date_error_is_chained() -> None:
    with pytest.raises(InvalidInput) as info:
        parse_time("31 February 2023")
    assert isinstance(info.value.__cause__, ValueError)


@pytest.mark.parametrize(
    ("day", "text"),
    [(dt.date(2024, 5, 15), "15 May 2024"), (dt.date(2023, 1, 1), "1 January 2023"),
     (dt.datetime(2022, 12, 31, 23, 0, tzinfo=UTC), "31 December 2022")],
)  # fmt: skip
def test_format_day(day: dt.date, text: str) -> None:
    assert format_day(day) == text

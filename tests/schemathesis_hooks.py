"""Schemathesis hooks for ``test_server_schema.py`` (the schemathesis CLI loads this module by name).

The OpenAPI schema names three string grammars it cannot spell as JSON Schema keywords: a time
written as text (``format: dualmem-time``), a list cursor (``format: dualmem-cursor``) and the body
of ``POST /v1/import`` (JSON Lines, as ``GET /v1/export`` writes it). Here each gets a generator of
values of that grammar, so the "schema-valid" requests schemathesis sends are valid for the server
too; everything else (types, bounds, required fields, methods) is checked as the schema says.
"""

from __future__ import annotations

import base64
import datetime as dt
import tempfile
from pathlib import Path

import schemathesis
from hypothesis import strategies as st

from dualmem import Memory, Profile
from dualmem.text.timeparse import format_day
from dualmem.wire.schemas import CURSOR_FORMAT, EXPORT_FORMAT, TIME_FORMAT

#: the tenant of the user key the test gives schemathesis
USER = "fuzz"

_DAYS = st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2200, 12, 31))
_TIMES = st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 12, 31))
_MONTHS = [
    "Jan",
    "February",
    "Mar",
    "April",
    "May",
    "June",
    "Jul",
    "August",
    "Sep",
    "October",
    "Nov",
    "December",
]
times = st.one_of(
    _DAYS.map(dt.date.isoformat),
    _TIMES.map(lambda t: t.isoformat(timespec="seconds") + "Z"),
    _TIMES.map(lambda t: t.replace(tzinfo=dt.timezone(dt.timedelta(hours=2))).isoformat()),
    _DAYS.map(format_day),
    _DAYS.map(lambda d: f"{_MONTHS[d.month - 1]} {d.day}, {d.year}"),
    st.tuples(_DAYS, st.integers(1, 12), st.integers(0, 59), st.sampled_from(["am", "pm"])).map(
        lambda p: f"{p[1]}:{p[2]:02d} {p[3]} on {format_day(p[0])}"
    ),
)
cursors = st.tuples(_TIMES, _TIMES, st.from_regex(r"\A[0-9a-f]{24}\Z")).map(
    lambda p: (
        base64.urlsafe_b64encode(f"{p[0].isoformat()}|{p[1].isoformat()}|{p[2]}".encode())
        .decode()
        .rstrip("=")
    )
)


def _export() -> str:
    """A real export of two memories of ``USER`` (made by the exporter the server runs)."""
    quiet = Profile.builtin().with_(write__consolidation="off")
    with (
        tempfile.TemporaryDirectory() as tmp,
        Memory.open(":memory:", embedder="hashing", profile=quiet) as mem,
    ):
        mem.add("Jonna: I cycled to the lake.", user=USER, speaker="Jonna", at="2024-05-02")
        mem.add("Jonna: the lake was cold.", user=USER, speaker="Jonna", at="2024-05-03")
        path = Path(tmp) / "export.jsonl"
        mem.export_jsonl(path, user=USER)
        return path.read_text(encoding="utf-8")


EXPORT = _export()
schemathesis.openapi.format(TIME_FORMAT, times)
schemathesis.openapi.format(CURSOR_FORMAT, cursors)
schemathesis.openapi.format(EXPORT_FORMAT, st.just(EXPORT))
schemathesis.serializer.alias("application/x-ndjson", "text/plain")

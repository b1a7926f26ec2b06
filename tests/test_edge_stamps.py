"""Issue 13 (disk per memory): the SQLite store writes an edge's ``created_at`` as a compact stamp."""

from __future__ import annotations

import datetime as dt
import sqlite3
import zoneinfo
from pathlib import Path

import numpy as np
import pytest

from dualmem.plane import SQLiteStore, codec
from dualmem.types import Edge, Node, Tenant

USER = Tenant("u")
UTC_TIME = dt.datetime(2026, 12, 1, 17, 53, 22, 482185, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    "value",
    [
        UTC_TIME,
        dt.datetime(1969, 7, 20, 20, 17, 40, 1, tzinfo=dt.UTC),
        dt.datetime(2026, 12, 1, 18, 53, 22, 5, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        dt.datetime(2026, 12, 1, 17, 53, 22, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")),
        dt.datetime(2026, 12, 1, 17, 53, 22, 7),  # naive
    ],
)
def test_a_stamp_reads_back_as_the_same_datetime(value: dt.datetime) -> None:
    back = codec.from_stamp(codec.to_stamp(value))
    assert back == value
    assert back.utcoffset() == value.utcoffset()
    assert back.isoformat() == value.isoformat()


def test_only_utc_times_are_shortened() -> None:
    assert codec.to_stamp(UTC_TIME) == "1796147602482185"
    assert codec.from_stamp("1796147602482185") == UTC_TIME
    other = UTC_TIME.astimezone(dt.timezone(dt.timedelta(hours=-5)))
    assert codec.to_stamp(other) == other.isoformat()
    assert codec.from_stamp(UTC_TIME.isoformat()) == UTC_TIME  # rows written before: ISO text


def _nodes(store: SQLiteStore) -> None:
    vectors = np.eye(4, dtype=np.float32)
    store.put_nodes(
        [
            Node(id=f"n{i}", tenant=USER, content=f"node {i}", at=UTC_TIME, embedding=vectors[i])
            for i in range(3)
        ]
    )


def test_the_store_keeps_edges_exactly_with_the_short_stamp(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    paris = dt.datetime(2026, 12, 1, 18, 0, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"))
    edges = [
        Edge(source="n0", target="n1", view="semantic", label="related", weight=0.5, created_at=UTC_TIME),
        Edge(source="n0", target="n2", view="temporal", label="before", weight=0.25, created_at=paris),
    ]
    with SQLiteStore.open(str(path)) as store:
        _nodes(store)
        store.put_edges(edges)
        assert store.edges_of("n0") == edges
    with sqlite3.connect(path) as conn:
        stored = [r[0] for r in conn.execute("SELECT created_at FROM edges ORDER BY rowid")]
        assert stored == ["1796147602482185", paris.isoformat()]
    with SQLiteStore.open(str(path)) as store:
        got = store.edges_of("n0")
        assert got == edges
        assert [e.created_at.isoformat() for e in got] == [UTC_TIME.isoformat(), paris.isoformat()]
    # an edge row written before the stamp (ISO text) reads as it always did
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE edges SET created_at = ? WHERE dst = (SELECT seq FROM nodes WHERE id = 'n1')",
                     (UTC_TIME.isoformat(),))  # fmt: skip
    with SQLiteStore.open(str(path)) as store:
        assert store.edges_of("n0") == edges

"""``parse_neighbours``: a stored context's neighbour list is read exactly, and a malformed one is refused."""

from __future__ import annotations

import json

import pytest

from dualmem.plane.context import neighbours_json, parse_neighbours


def test_round_trip_keeps_order_and_offsets() -> None:
    pairs = (("b", -2), ("a", -1), ("c", 1), ("d", 2))
    assert parse_neighbours(json.loads(json.dumps(neighbours_json(pairs)))) == pairs
    assert parse_neighbours([]) == ()


def test_offset_read_as_int() -> None:
    assert parse_neighbours([["a", 1.0]]) == (("a", 1),)
    assert type(parse_neighbours([["a", 1.0]])[0][1]) is int


@pytest.mark.parametrize(
    "value",
    [{"a": 1}, "[]", [["a"]], [["a", 1, 2]], [[1, 1]], [("a", 1)], [["a", 1], "b"], [["a", 1], ["b"]]],
)
def test_malformed_refused(value: object) -> None:
    with pytest.raises(ValueError, match="context neighbour"):
        parse_neighbours(value)

"""Node ids: time-sortable, and strictly increasing in the order they are made within a process."""

from __future__ import annotations

import re

from dualmem import types
from threads import run_threads


def test_ids_made_in_one_millisecond_keep_their_order() -> None:
    ids = [types.new_id() for _ in range(20_000)]  # many share a millisecond
    assert all(re.fullmatch(r"[0-9a-f]{24}", i) for i in ids[:50])
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert len({i[:12] for i in ids}) < len(ids)  # the counting-up path ran


def test_ids_stay_unique_and_ordered_across_threads() -> None:
    out: list[list[str]] = [[] for _ in range(4)]

    def make(k: int) -> None:
        out[k] = [types.new_id() for _ in range(5_000)]

    run_threads(make, 4)
    every = [i for ids in out for i in ids]
    assert len(set(every)) == len(every)
    assert all(ids == sorted(ids) for ids in out)


def test_the_random_part_rolls_into_the_next_millisecond() -> None:
    saved = list(types._last_id)
    try:
        far = int(types.utcnow().timestamp() * 1000) + 60_000  # ahead of the clock: ids count up from it
        types._last_id[:] = [far, types._RAND_MAX]
        rolled = types.new_id()
        assert int(rolled[:12], 16) == far + 1
        assert types.new_id() > rolled
    finally:
        types._last_id[:] = saved  # the ids made here are thrown away

"""The candidate pool: searches, session neighbours, name stripping and the feature matrix."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dualmem import Memory
from dualmem.embed import Embedder
from dualmem.read.pool import FEATURES, PoolSettings, build_pool
from dualmem.types import Observation, Tenant
from store_support import AT, PEPPER, STORE_KINDS, filled_memory

TURNS = [*PEPPER, ("Jon", "I went hiking in the Alps with my sister.")]


def _observations() -> list[Observation]:
    out = [
        Observation(t, at=AT, speaker=s, session="s1", turn_id=f"D1:{i + 1}")
        for i, (s, t) in enumerate(TURNS)
    ]
    out.append(Observation("We moved to Porto on 3 June 2023.", at=AT + dt.timedelta(days=40), speaker="Mira",
                           session="s2", turn_id="D2:1"))  # fmt: skip
    return out


@pytest.fixture(params=STORE_KINDS)
def mem(request: pytest.FixtureRequest, hashing: Embedder, tmp_path: Path) -> Iterator[Memory]:
    with filled_memory(request.param, hashing, tmp_path, _observations()) as m:
        yield m


def test_pool_holds_both_searches_and_session_neighbours(mem: Memory) -> None:
    pool = build_pool(mem.store, mem.embedder, "Which dog did Mira adopt?", Tenant("u"), PoolSettings(1, 1))
    turns = {pool.nodes[i].turn_id for i in pool.ids}
    assert "D1:3" in turns
    assert {"D1:2", "D1:4"} <= turns  # neighbours either side, same session only
    assert pool.features.shape == (len(pool.ids), len(FEATURES))
    assert np.isfinite(pool.features).all()
    nb = pool.features[:, FEATURES.index("neighbour")]
    assert nb.sum() >= 1  # something came in only as a neighbour
    assert all(pool.nodes[i].session == "s1" for i in pool.ids if pool.row(i)["neighbour"])


def test_named_speaker_is_a_feature_not_a_query_term(mem: Memory) -> None:
    pool = build_pool(mem.store, mem.embedder, "Which dog did Mira adopt?", Tenant("u"), PoolSettings(10, 1))
    assert pool.analysis.persons == ("Mira",)
    assert "Mira" not in pool.analysis.stripped
    for i in pool.ids:
        row = pool.row(i)
        mira = pool.nodes[i].speaker == "Mira"
        assert row["speaker"] == float(mira)
        assert row["other_speaker"] == float(not mira)


def test_grounded_query_time_matches_node_days_and_references(mem: Memory) -> None:
    pool = build_pool(
        mem.store, mem.embedder, "Where did they move in June 2023?", Tenant("u"), PoolSettings(10, 1)
    )
    by_turn = {pool.nodes[i].turn_id: pool.row(i) for i in pool.ids}
    assert by_turn["D2:1"]["time"] == 1.0  # its reference "3 June 2023" lies in June 2023
    assert all(r["time"] == 0.0 for t, r in by_turn.items() if t != "D2:1")


def test_other_tenants_never_enter_the_pool(mem: Memory) -> None:
    mem.add("Mira adopted a cat called Pepper", user="other", speaker="Mira", session="s1")
    pool = build_pool(mem.store, mem.embedder, "Mira Pepper", Tenant("u"), PoolSettings(50, 2))
    assert all(n.tenant.user == "u" for n in pool.nodes.values())

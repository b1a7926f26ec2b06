"""research.loco's channel removal and research.cv's routed channels, on real pools."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
from research.cv import CVConfig, routed_channels
from research.loco import drop_channel
from research.pools import QueryPool

from dualmem import Memory
from dualmem.embed import HashingEmbedder
from dualmem.read.pool import FEATURES, PoolSettings, build_pool
from dualmem.types import Observation, Tenant

START = dt.datetime(2023, 5, 1, 12, 0, tzinfo=dt.UTC)


def _pool(mem: Memory, query: str, channels: tuple[tuple[str, int], ...], n: int) -> QueryPool:
    pool = build_pool(mem.store, mem.embedder, query, Tenant("u"), PoolSettings(n, 0, channels))
    turns = tuple(pool.rows[i].content for i in pool.ids)
    return QueryPool(
        conversation="c", index=0, category=1, evidence=(), turn_ids=turns, features=pool.features,
        labels=np.zeros(len(turns)), neighbour_only=np.zeros(len(turns), dtype=bool), baselines={},
        pool_ms=0.0, contents=turns, speakers=tuple(None for _ in turns),
    )  # fmt: skip


def test_dropping_a_channel_gives_the_pool_built_without_it(tmp_path: Path) -> None:
    texts = [f"Note {i}: the weather was mild and nothing happened." for i in range(40)]
    for i, text in ((3, "Swam in the lake with Callum."), (5, "Callum fixed the bicycle."),
                    (9, "Callum called from Porto.")):  # fmt: skip
        texts[i] = text
    obs = [Observation(t, at=START + dt.timedelta(days=i), speaker="Jon") for i, t in enumerate(texts)]
    with Memory.open(tmp_path / "m.db", embedder=HashingEmbedder(64), answerer=None) as mem:
        mem.add_many(obs, user="u")
        query = "What did we do with Callum?"
        both = _pool(mem, query, (("temporal", 5), ("entity", 5)), 1)
        plain = _pool(mem, query, (("temporal", 5),), 1)  # the temporal channel finds nothing here
        assert len(both.turn_ids) > len(plain.turn_ids)  # the entity channel added candidates
        dropped = drop_channel(both, "entity", n=1)
        assert dropped.turn_ids == plain.turn_ids
        np.testing.assert_array_equal(dropped.features, plain.features)
        assert (dropped.features[:, FEATURES.index("entity_idf")] == 0).all()
        absent = 10.0 / (10.0 + 4)
        walked = drop_channel(both, "ppr", n=1)  # the entity channel without its PageRank list
        assert (walked.features[:, FEATURES.index("ppr_rank")] == absent).all()
        assert (both.features[:, FEATURES.index("ppr_rank")] > absent).any()
        entity = FEATURES.index("entity_rank")
        kept = [t for t, r in zip(both.turn_ids, both.features[:, entity], strict=True) if r > absent]
        assert set(kept) <= set(walked.turn_ids)  # what the entity channel's own list found stays
        ranked = drop_channel(both, "ppr-added", n=1)  # the PageRank list as a feature alone
        assert ranked.turn_ids == walked.turn_ids
        assert (ranked.features[:, FEATURES.index("ppr_rank")] > absent).any()


def test_routed_channels_follow_the_route() -> None:
    cfg = CVConfig(data=Path("."), channels=(("temporal", 20), ("entity", 20)))
    assert routed_channels(cfg, "When did Caroline go to the support group?") == cfg.channels  # fixed
    routed = dict(routed_channels(CVConfig(data=Path("."), channels=cfg.channels, route="builtin"),
                                  "What is my monthly pay at the new job?"))  # fmt: skip
    assert "temporal" not in routed  # the route sees no time in it
    assert sum(routed.values()) == 40

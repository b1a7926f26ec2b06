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
from pool_support import as_query_pool

START = dt.datetime(2023, 5, 1, 12, 0, tzinfo=dt.UTC)


def _pool(mem: Memory, query: str, channels: tuple[tuple[str, int], ...], n: int) -> QueryPool:
    pool = build_pool(mem.store, mem.embedder, query, Tenant("u"), PoolSettings(n, 0, channels))
    turns = tuple(pool.rows[i].content for i in pool.ids)
    return as_query_pool(pool, turns)


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


def _synthetic(conv: str, rng: np.random.Generator) -> QueryPool:
    features = rng.random((12, len(FEATURES)))
    labels = (features[:, FEATURES.index("vec")] > 0.7).astype(np.float64)
    turns = tuple(f"{conv}-{i}" for i in range(12))
    return QueryPool(
        conversation=conv, index=0, category=1, evidence=turns[:1], turn_ids=turns, features=features,
        labels=labels, neighbour_only=np.zeros(12, dtype=bool), baselines={}, pool_ms=0.0,
        contents=turns, speakers=tuple(None for _ in turns),
    )  # fmt: skip


def test_held_out_fits_never_train_on_the_held_out_corpus() -> None:
    from research.cv_joint import Corpora
    from research.loco import held_out_fits

    from dualmem.learn.boost import TreeSettings

    rng = np.random.default_rng(3)
    data = Corpora()
    for conv, corpus in (("a1", "A"), ("a2", "A"), ("b1", "B"), ("c1", "C")):
        data.pools[conv] = [_synthetic(conv, rng) for _ in range(4)]
        data.corpus_of[conv] = corpus
        data.fold_of[conv] = conv
    seen = {held: convs for held, _, convs in held_out_fits(data, TreeSettings(trees=5, min_rows=2))}
    assert seen == {"A": ["a1", "a2"], "B": ["b1"], "C": ["c1"]}
    # every pool of the held-out corpus is scored by trees fitted without it: nudging the held-out
    # corpus's labels changes nothing in its own fit
    before = [
        r.raw(data.pools["b1"][0].features, FEATURES)
        for _, r, _ in held_out_fits(data, TreeSettings(trees=5, min_rows=2))
    ]
    for p in data.pools["b1"]:
        p.labels[:] = 1.0 - p.labels
    after = [
        r.raw(data.pools["b1"][0].features, FEATURES)
        for _, r, _ in held_out_fits(data, TreeSettings(trees=5, min_rows=2))
    ]
    np.testing.assert_array_equal(before[1], after[1])  # B's fit: trained on A and C only
    assert not np.array_equal(before[0], after[0])  # A's fit saw B

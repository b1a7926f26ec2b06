"""A read pool (``dualmem.read.pool``) as research's ``QueryPool``: what the channel-removal tests compare."""

from __future__ import annotations

import numpy as np
from research.pools import QueryPool

from dualmem.read.pool import Pool


def as_query_pool(pool: Pool, turns: tuple[str, ...], category: int = 1) -> QueryPool:
    """``pool`` as one unlabelled question's ``QueryPool``, its rows named ``turns``."""
    return QueryPool(
        conversation="c", index=0, category=category, evidence=(), turn_ids=turns, features=pool.features,
        labels=np.zeros(len(turns)), neighbour_only=np.zeros(len(turns), dtype=bool), baselines={},
        pool_ms=0.0, contents=turns, speakers=tuple(None for _ in turns),
    )  # fmt: skip

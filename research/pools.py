"""One question's candidate pool as the cross-validation sees it (:mod:`research.cv` builds them,
:mod:`research.cv_reach` and the other experiments read them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["QueryPool"]


@dataclass(frozen=True, slots=True)
class QueryPool:
    """One question's pool (features, candidates' turn ids, labels) and the baselines' rankings."""

    conversation: str
    index: int
    category: int | str
    evidence: tuple[str, ...]
    turn_ids: tuple[str, ...]
    features: npt.NDArray[np.float64]
    labels: npt.NDArray[np.float64]
    neighbour_only: npt.NDArray[np.bool_]
    baselines: Mapping[str, tuple[str, ...]]
    pool_ms: float
    handset_ms: float | None = None
    contents: tuple[str, ...] = ()
    speakers: tuple[str | None, ...] = ()
    question: str = ""

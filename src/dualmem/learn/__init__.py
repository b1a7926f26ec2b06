"""Learned System-One heads, fitted from labelled queries or from a teacher controller's recorded
decisions (``dualmem calibrate``): the candidate scorer (boosted trees, ``TreeRanker``, or a
logistic ``LinearRanker``; ``load_ranker`` reads either), the builtin's stop and routing heads
(``dualmem.learn.heads``, not imported here: it builds on the builtin controller) and an
abstention gate (``dualmem calibrate --heads-out``).

Inference is pure numpy (table lookups or a dot product per candidate batch) and lives in
``dualmem.control`` (``ranker``, ``trees``, ``scorers``), where the builtin controller uses it; this
package fits, and re-exports the scorers for convenience. Fitting the linear
heads is numpy too; fitting trees needs LightGBM (``pip install 'dualmem[learn]'``).
"""

from __future__ import annotations

from dualmem.control.ranker import LinearRanker, Ranker
from dualmem.control.scorers import default_ranker, load_ranker
from dualmem.control.trees import TreeRanker
from dualmem.learn.abstain import AbstentionGate, GatedAnswerer
from dualmem.learn.fit import fit_logistic

__all__ = [
    "AbstentionGate",
    "GatedAnswerer",
    "LinearRanker",
    "Ranker",
    "TreeRanker",
    "default_ranker",
    "fit_logistic",
    "load_ranker",
]

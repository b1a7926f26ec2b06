"""Learned System-One heads: linear scorers over candidate features, fitted from labelled queries
or from a teacher controller's recorded decisions (``dualmem calibrate``); the builtin's stop and
routing heads (``dualmem.learn.heads``, not imported here: it builds on the builtin controller) and
an abstention gate (``dualmem calibrate --heads-out``).

Inference is pure numpy (a dot product per candidate batch); fitting is numpy too.
"""

from __future__ import annotations

from dualmem.learn.abstain import AbstentionGate, GatedAnswerer
from dualmem.learn.fit import fit_logistic
from dualmem.learn.ranker import LinearRanker, default_ranker

__all__ = [
    "AbstentionGate",
    "GatedAnswerer",
    "LinearRanker",
    "default_ranker",
    "fit_logistic",
]

"""Learned System-One heads: linear scorers over candidate features, fitted from labelled queries
or from a teacher controller's recorded decisions (``dualmem calibrate``).

Inference is pure numpy (a dot product per candidate batch); fitting is numpy too.
"""

from __future__ import annotations

from dualmem.learn.fit import fit_logistic
from dualmem.learn.ranker import LinearRanker, default_ranker

__all__ = ["LinearRanker", "default_ranker", "fit_logistic"]

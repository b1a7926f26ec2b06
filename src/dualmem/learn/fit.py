"""Fitting a logistic scorer with numpy: Newton steps on an L2-penalised, class-balanced log loss.

Targets may be hard (0/1 relevance labels) or soft (a teacher's relevance scores in [0, 1]): the
cross-entropy is the same. Features are standardised for the fit and the scaling is folded back
into the returned weights, so inference is ``features @ weights + bias`` on raw features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dualmem.errors import InvalidInput

__all__ = ["Fit", "fit_logistic"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Fit:
    """Weights on the raw features, the bias, and how the fit went."""

    weights: FloatArray
    bias: float
    iterations: int
    loss: float


def fit_logistic(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    *,
    l2: float = 1.0,
    balance: bool = True,
    max_iter: int = 100,
    tol: float = 1e-7,
) -> Fit:
    """Fit ``sigmoid(x @ w + b)`` to targets ``y`` in [0, 1].

    ``balance`` weights positives and negatives equally in total (relevant candidates are rare in a
    pool). ``l2`` penalises the standardised weights. Deterministic: same data, same weights.
    """
    X = np.asarray(x, dtype=np.float64)
    t = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or t.ndim != 1 or X.shape[0] != t.shape[0]:
        raise InvalidInput(f"need an (n, d) feature matrix and n targets, got {X.shape} and {t.shape}")
    if X.shape[0] == 0 or not np.isfinite(X).all() or not np.isfinite(t).all():
        raise InvalidInput("features and targets must be non-empty and finite")
    if t.min() < 0.0 or t.max() > 1.0:
        raise InvalidInput("targets must lie in [0, 1]")
    positive = float(t.sum())
    if positive <= 0.0 or positive >= len(t):
        raise InvalidInput("the targets need both relevant and irrelevant examples")
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    sd[sd < 1e-9] = 1.0
    Z = np.hstack([(X - mu) / sd, np.ones((len(X), 1))])
    if balance:
        share = positive / len(t)
        sample = t / (2 * share) + (1 - t) / (2 * (1 - share))
    else:
        sample = np.ones(len(t))
    penalty = np.full(Z.shape[1], l2)
    penalty[-1] = 0.0  # the bias is not penalised
    w = np.zeros(Z.shape[1])
    n = float(len(t))
    iterations = 0
    for it in range(1, max_iter + 1):
        iterations = it
        p = _sigmoid(Z @ w)
        grad = (Z.T @ (sample * (p - t)) + penalty * w) / n
        hess = (Z * (sample * p * (1 - p))[:, None]).T @ Z / n + np.diag(penalty) / n + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < tol:
            break
    p = np.clip(_sigmoid(Z @ w), 1e-12, 1 - 1e-12)
    loss = float(-(sample * (t * np.log(p) + (1 - t) * np.log(1 - p))).mean())
    weights = w[:-1] / sd
    bias = float(w[-1] - (mu / sd) @ w[:-1])
    return Fit(weights=weights, bias=bias, iterations=iterations, loss=loss)


def _sigmoid(z: FloatArray) -> FloatArray:
    out: FloatArray = 0.5 * (1.0 + np.tanh(0.5 * z))
    return out

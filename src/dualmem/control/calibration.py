"""Per-backend calibration of Noul scores: Platt scaling or isotonic regression, in numpy.

A backend's raw p(true) is often miscalibrated (a small model's scores bunch up); a calibration
maps it, per decision key, onto the frequency with which a labelled sample was true. Fit one with
:func:`fit_calibration` on :class:`Sample` s (``dualmem calibrate-backend`` collects them: the
backend's scores against reference labels) and keep it with the profile (``Profile.calibration``:
a memory opened with that profile applies it to its controller's Noul answers, in the ``Meter``), or
save it as JSON (:meth:`Calibration.save`) and hand the file to the backend
(``LLMConfig(calibration=PATH)``).

- Platt: ``p' = σ(a · logit(p) + b)``, fitted by Newton's method on the log loss with Platt's
  smoothed targets ``(n₊ + 1) / (n₊ + 2)`` and ``1 / (n₋ + 2)``.
- Isotonic: the pool-adjacent-violators fit of the labels on the scores, applied by linear
  interpolation between block means and clipped to ``[EPS, 1 - EPS]``.

Keys with fewer than ``min_samples`` samples, or only one class, use the curve fitted on all keys.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from dualmem import _json as bounded_json
from dualmem.control.base import BaseController
from dualmem.control.questions import Answer, Batch, BatchResult, Controller, NoulAnswer, Question
from dualmem.errors import ConfigError, ControllerError, InvalidInput

__all__ = [
    "EPS",
    "FORMAT",
    "Calibration",
    "Curve",
    "Method",
    "Recorder",
    "Sample",
    "agreement",
    "compare",
    "fit_calibration",
    "fit_isotonic",
    "fit_platt",
    "replay",
]

FORMAT = "dualmem-calibration/1"
EPS = 1e-4
Method = Literal["platt", "isotonic"]


@dataclass(frozen=True, slots=True)
class Sample:
    """One labelled decision: the backend's score for ``key`` and whether it was really true."""

    key: str
    score: float
    label: bool


@dataclass(frozen=True, slots=True)
class Curve:
    """One fitted map [0, 1] -> [0, 1]: Platt (``a``, ``b``) or isotonic (``xs``, ``ys``)."""

    method: Method
    a: float = 1.0
    b: float = 0.0
    xs: tuple[float, ...] = ()
    ys: tuple[float, ...] = ()
    n: int = 0

    def __call__(self, p: float) -> float:
        if self.method == "platt":
            z = self.a * _logit(p) + self.b
            return _clip(1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0)
        return _clip(float(np.interp(p, self.xs, self.ys)))


@dataclass(frozen=True, slots=True)
class Calibration:
    """Curves per decision key plus a default; ``apply(key, p)`` is the calibrated score."""

    backend: str
    model: str
    curves: Mapping[str, Curve] = field(default_factory=dict)
    default: Curve | None = None
    debias: str = "cyclic"
    source: str = ""

    def apply(self, key: str, p: float) -> float:
        curve = self.curves.get(key, self.default)
        return p if curve is None else curve(p)

    def calibrate(self, batch: Batch, result: BatchResult) -> BatchResult:
        """``result`` with every Noul score of ``batch`` mapped by its key's curve (the rest as is)."""
        answers = {
            name: NoulAnswer(score=self.apply(batch.questions[name].key, answer.score))
            if isinstance(answer, NoulAnswer) and name in batch.questions
            else answer
            for name, answer in result.answers.items()
        }
        return dataclasses.replace(result, answers=answers)

    def to_json(self) -> dict[str, object]:
        return _FileModel(
            format=FORMAT,
            backend=self.backend,
            model=self.model,
            debias=self.debias,
            source=self.source,
            curves={k: _CurveModel.of(c) for k, c in sorted(self.curves.items())},
            default=_CurveModel.of(self.default) if self.default is not None else None,
        ).model_dump()

    def save(self, path: str | Path) -> Path:
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")
        return out

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        """Read a calibration file; a missing or malformed one is a ``ConfigError``."""
        try:
            raw = bounded_json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read calibration {path}: {exc.strerror}") from exc
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{path} is not a dualmem calibration file", hint="make one with dualmem calibrate-backend"
            ) from exc
        return cls.from_json(raw, source=str(path))

    @classmethod
    def from_json(cls, raw: object, *, source: str = "calibration") -> Calibration:
        """Validate a parsed calibration (a file's contents, or a profile's ``calibration``)."""
        try:
            model = _FileModel.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(
                f"{source} is not a dualmem calibration", hint="make one with dualmem calibrate-backend"
            ) from exc
        if model.format != FORMAT:
            raise ConfigError(f"{source} has calibration format {model.format!r}, expected {FORMAT!r}")
        return cls(
            backend=model.backend,
            model=model.model,
            curves={k: c.curve() for k, c in model.curves.items()},
            default=model.default.curve() if model.default is not None else None,
            debias=model.debias,
            source=model.source,
        )


class _CurveModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    method: Method
    a: float = 1.0
    b: float = 0.0
    xs: list[float] = []
    ys: list[float] = []
    n: int = 0

    @classmethod
    def of(cls, c: Curve) -> _CurveModel:
        return cls(method=c.method, a=c.a, b=c.b, xs=list(c.xs), ys=list(c.ys), n=c.n)

    def curve(self) -> Curve:
        if self.method == "isotonic" and (len(self.xs) != len(self.ys) or not self.xs):
            raise ConfigError("an isotonic calibration curve needs as many xs as ys (at least one)")
        return Curve(self.method, self.a, self.b, tuple(self.xs), tuple(self.ys), self.n)


class _FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: str
    backend: str
    model: str
    debias: str = "both_orders"
    source: str = ""
    curves: dict[str, _CurveModel] = {}
    default: _CurveModel | None = None


def _clip(p: float) -> float:
    return min(1.0 - EPS, max(EPS, p))


def _logit(p: float) -> float:
    p = _clip(p)
    return math.log(p / (1.0 - p))


def _arrays(scores: Sequence[float], labels: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise InvalidInput("calibration needs as many scores as labels, at least one")
    if not np.all(np.isfinite(x)) or np.any(x < 0) or np.any(x > 1):
        raise InvalidInput("calibration scores must be probabilities in [0, 1]")
    return x, y


def fit_platt(scores: Sequence[float], labels: Sequence[bool], *, iterations: int = 100) -> Curve:
    """Platt scaling on the log-odds of ``scores`` (Newton's method, a tiny ridge for stability)."""
    x, y = _arrays(scores, labels)
    z = np.log(np.clip(x, EPS, 1 - EPS) / (1 - np.clip(x, EPS, 1 - EPS)))
    pos = float(y.sum())
    neg = float(y.size - pos)
    t = np.where(y > 0.5, (pos + 1) / (pos + 2), 1 / (neg + 2))
    a, b = 1.0, 0.0
    ridge = 1e-3
    for _ in range(iterations):
        p = 0.5 * (1.0 + np.tanh(0.5 * np.clip(a * z + b, -60.0, 60.0)))  # a stable sigmoid
        w = p * (1 - p)
        grad = np.array([np.sum((p - t) * z) + ridge * a, np.sum(p - t) + ridge * b])
        hess = np.array([[np.sum(w * z * z) + ridge, np.sum(w * z)], [np.sum(w * z), np.sum(w) + ridge]])
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            break
        a, b = a - float(step[0]), b - float(step[1])
        if float(np.max(np.abs(step))) < 1e-9:
            break
    return Curve("platt", a=a, b=b, n=int(y.size))


def fit_isotonic(scores: Sequence[float], labels: Sequence[bool]) -> Curve:
    """Isotonic (non-decreasing) regression of ``labels`` on ``scores`` by pool-adjacent-violators."""
    x, y = _arrays(scores, labels)
    order = np.lexsort((y, x))
    xs, ys = x[order], y[order]
    blocks: list[list[float]] = []  # [sum_y, count, sum_x]
    for xi, yi in zip(xs.tolist(), ys.tolist(), strict=True):
        blocks.append([yi, 1.0, xi])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c, sx = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
            blocks[-1][2] += sx
    centers = tuple(b[2] / b[1] for b in blocks)
    means = tuple(_clip(b[0] / b[1]) for b in blocks)
    return Curve("isotonic", xs=centers, ys=means, n=int(y.size))


def fit_calibration(
    samples: Iterable[Sample],
    *,
    backend: str,
    model: str,
    method: Method = "platt",
    min_samples: int = 20,
    debias: str = "cyclic",
    source: str = "",
) -> Calibration:
    """Curves per key (where a key has ``min_samples`` and both classes) and a default over all keys."""
    data = list(samples)
    if not data:
        raise InvalidInput("no samples to calibrate on", hint="label some decisions first")
    fit = fit_platt if method == "platt" else fit_isotonic
    by_key: dict[str, list[Sample]] = {}
    for s in data:
        by_key.setdefault(s.key, []).append(s)
    curves = {
        key: fit([s.score for s in group], [s.label for s in group])
        for key, group in sorted(by_key.items())
        if len(group) >= min_samples and 0 < sum(s.label for s in group) < len(group)
    }
    both = 0 < sum(s.label for s in data) < len(data)
    default = fit([s.score for s in data], [s.label for s in data]) if both else None
    return Calibration(backend, model, curves, default, debias=debias, source=source)


def agreement(samples: Iterable[Sample], *, theta: float = 0.5) -> dict[str, dict[str, float]]:
    """Per key (and ``"all"``): n, the share of samples whose ``score >= theta`` matches the label,
    the mean score, and the share labelled true."""
    groups: dict[str, list[Sample]] = {}
    for s in samples:
        groups.setdefault(s.key, []).append(s)
        groups.setdefault("all", []).append(s)
    out: dict[str, dict[str, float]] = {}
    for key, group in sorted(groups.items()):
        n = len(group)
        agree = sum((s.score >= theta) == s.label for s in group)
        out[key] = {
            "n": float(n),
            "agreement": agree / n,
            "mean_score": sum(s.score for s in group) / n,
            "true_rate": sum(s.label for s in group) / n,
        }
    return out


class Recorder(BaseController):
    """A controller that answers with ``inner`` and keeps every (batch, result) pair it answered.

    Run a write or a search with it to collect the batches a backend is asked in real use; then
    :func:`compare` another backend on them.
    """

    def __init__(self, inner: Controller) -> None:
        self.inner = inner
        self.name = inner.name
        self.pairs: list[tuple[Batch, BatchResult]] = []

    def decide(self, batch: Batch) -> BatchResult:
        result = self.inner.decide(batch)
        self.pairs.append((batch, result))
        return result


def replay(
    pairs: Sequence[tuple[Batch, BatchResult]], candidate: Controller
) -> tuple[list[tuple[Question, Answer, Answer]], int]:
    """Recorded batches asked again of ``candidate``, one at a time, in order (so a rate measured
    around this call is the backend's own): every question with its recorded answer and the
    candidate's, and the number of batches the candidate failed (``ControllerError``: left out)."""
    answered: list[tuple[Question, Answer, Answer]] = []
    failed = 0
    for batch, reference in pairs:
        try:
            result = candidate.decide(batch)
        except ControllerError:
            failed += 1
            continue
        answered += [
            (q, reference.answers[name], result.answers[name]) for name, q in batch.questions.items()
        ]
    return answered, failed


def compare(
    pairs: Sequence[tuple[Batch, BatchResult]], candidate: Controller, *, theta: float = 0.5
) -> tuple[list[Sample], int]:
    """``candidate``'s Noul scores on recorded batches, labelled by the recorded answer ``>= theta``.

    Returns the samples and the number of batches the candidate failed (left out). The batches are
    asked one at a time, in order, so a rate measured around this call is the backend's own.
    """
    answered, failed = replay(pairs, candidate)
    samples = [
        Sample(question.key, got.score, ref.score >= theta)
        for question, ref, got in answered
        if isinstance(ref, NoulAnswer) and isinstance(got, NoulAnswer)
    ]
    return samples, failed

"""A boosted-trees candidate scorer as data, evaluated with numpy alone.

The file format (``dualmem.trees/1``)::

    {"format": "dualmem.trees/1",
     "features": ["vec", "lex", ...],              # the columns the splits index (dualmem.read.pool.FEATURES)
     "scale": 1.7, "bias": -3.2,                   # logit = scale * (sum of the trees' leaves) + bias
     "trees": [{"feature": [0, 4], "threshold": [0.31, 2.5], "left": [1, -1], "right": [-2, -3],
                "leaf": [0.12, -0.4, 0.03]}, ...],
     "provenance": {...}}

A tree lists its internal nodes (node 0 is the root): row ``x`` goes left when
``x[feature] <= threshold``. A child ``c >= 0`` is internal node ``c``, a child ``c < 0`` is leaf
``-c - 1``. Trees have at most ``MAX_LEAVES`` leaves: each compiles to a lookup table indexed by the
bits of its own split comparisons, so a pool of a few hundred candidates is scored with a handful
of array operations (no per-tree Python loop at read time). ``dualmem calibrate --scorer trees``
fits one (LightGBM lambdarank, ``dualmem.learn.boost``); reading one needs nothing but numpy.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field, StrictInt

from dualmem.control.ranker import Number, ScorerFile, column_index, format_object, read_json, validated
from dualmem.errors import ConfigError

__all__ = ["FORMAT", "MAX_LEAVES", "Tree", "TreeRanker"]

FORMAT = "dualmem.trees/1"
#: leaves per tree: a tree of L leaves has L - 1 splits, its table 2 ** (L - 1) entries
MAX_LEAVES = 8
_SPLITS = MAX_LEAVES - 1
_CHUNK = 4096


@dataclass(frozen=True, slots=True)
class Tree:
    """One regression tree: internal nodes as parallel tuples, leaves as values."""

    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    leaf: tuple[float, ...]

    def __post_init__(self) -> None:
        n = len(self.feature)
        if not (len(self.threshold) == len(self.left) == len(self.right) == n):
            raise ConfigError("a tree needs feature, threshold, left and right of one length")
        if len(self.leaf) != n + 1:
            raise ConfigError(f"a tree with {n} splits needs {n + 1} leaves, got {len(self.leaf)}")
        if len(self.leaf) > MAX_LEAVES:
            raise ConfigError(f"a tree may have at most {MAX_LEAVES} leaves, got {len(self.leaf)}")
        if not all(math.isfinite(v) for v in (*self.threshold, *self.leaf)):
            raise ConfigError("tree thresholds and leaf values must be finite numbers")
        if n:
            self._check_shape(n)

    def _check_shape(self, n: int) -> None:
        """Every internal node and every leaf reached exactly once from the root: a tree, no cycles."""
        seen_nodes: set[int] = set()
        seen_leaves: set[int] = set()
        stack = [0]
        while stack:
            i = stack.pop()
            if i in seen_nodes:
                raise ConfigError("a tree's children must form a tree (a node is reached twice)")
            seen_nodes.add(i)
            for c in (self.left[i], self.right[i]):
                if c >= n:
                    raise ConfigError(f"a tree's child {c} is not one of its {n} nodes")
                if c >= 0:
                    stack.append(c)
                    continue
                if -c - 1 >= n + 1 or -c - 1 in seen_leaves:
                    raise ConfigError(f"a tree's leaf child {c} is out of range or reached twice")
                seen_leaves.add(-c - 1)
        if len(seen_nodes) != n or len(seen_leaves) != n + 1:
            raise ConfigError("a tree has nodes or leaves its root does not reach")

    def value(self, row: Sequence[float]) -> float:
        """The leaf value for one row (the reference walk; ``TreeRanker`` uses compiled tables)."""
        if not self.feature:
            return self.leaf[0]
        i = 0
        while True:
            c = self.left[i] if row[self.feature[i]] <= self.threshold[i] else self.right[i]
            if c < 0:
                return self.leaf[-c - 1]
            i = c

    def to_json(self) -> dict[str, Any]:
        return {
            "feature": list(self.feature),
            "threshold": list(self.threshold),
            "left": list(self.left),
            "right": list(self.right),
            "leaf": [round(v, 9) for v in self.leaf],
        }

    @classmethod
    def from_json(cls, data: object, *, source: str) -> Tree:
        """One tree of a file (``TreeFile``)."""
        return cls.of(validated(TreeFile, data, source=source))

    @classmethod
    def of(cls, model: TreeFile) -> Tree:
        return cls(
            tuple(model.feature),
            tuple(model.threshold),
            tuple(model.left),
            tuple(model.right),
            tuple(model.leaf),
        )


class TreeFile(ScorerFile):
    """A tree in the file: internal nodes as parallel lists (module docstring), then its leaves."""

    feature: list[StrictInt]
    threshold: list[Number]
    left: list[StrictInt]
    right: list[StrictInt]
    leaf: list[Number]


class TreesFile(ScorerFile):
    """The ``dualmem.trees/1`` file (module docstring)."""

    format: Literal["dualmem.trees/1"]
    features: list[str]
    scale: Number = 1.0
    bias: Number = 0.0
    trees: list[TreeFile]
    provenance: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Compiled:
    """Every tree's splits as ``(trees, _SPLITS)`` arrays and its leaf value per bit pattern."""

    split_col: npt.NDArray[np.intp]  # (T * _SPLITS,) column of the ranker's feature list
    split_thr: npt.NDArray[np.float64]  # (T * _SPLITS,)
    table: npt.NDArray[np.float64]  # (T, 2 ** _SPLITS)
    powers: npt.NDArray[np.int64]  # (_SPLITS,)
    tree: npt.NDArray[np.intp]  # (T,): 0 .. T - 1, each tree's row of ``table``


def _compile(trees: Sequence[Tree]) -> _Compiled:
    t = len(trees)
    col = np.zeros((t, _SPLITS), dtype=np.intp)
    thr = np.full((t, _SPLITS), np.inf)  # unused split slots: always "left" (bit 1), never read
    table = np.zeros((t, 2**_SPLITS))
    codes = np.arange(2**_SPLITS)
    for k, tree in enumerate(trees):
        n = len(tree.feature)
        col[k, :n] = tree.feature
        thr[k, :n] = tree.threshold
        if n == 0:
            table[k, :] = tree.leaf[0]
            continue
        # walk every bit pattern at once: bit i set = node i's comparison held (go left)
        node = np.zeros(len(codes), dtype=np.int64)
        out = np.full(len(codes), -1, dtype=np.int64)
        active = np.ones(len(codes), dtype=bool)
        left, right = np.array(tree.left), np.array(tree.right)
        for _ in range(n):
            i = node[active]
            go_left = (codes[active] >> i) & 1
            child = np.where(go_left == 1, left[i], right[i])
            idx = np.flatnonzero(active)
            leafy = child < 0
            out[idx[leafy]] = -child[leafy] - 1
            node[idx[~leafy]] = child[~leafy]
            active[idx[leafy]] = False
            if not active.any():
                break
        table[k, :] = np.asarray(tree.leaf)[out]
    powers = (1 << np.arange(_SPLITS)).astype(np.int64)
    tree_index = np.arange(t, dtype=np.intp)
    for a in (col, thr, table, powers, tree_index):
        a.flags.writeable = False
    return _Compiled(col.ravel(), thr.ravel(), table, powers, tree_index)


@dataclass(frozen=True)
class TreeRanker:
    """``sigmoid(scale * sum_t tree_t(x) + bias)`` over the named features of a candidate pool."""

    features: tuple[str, ...]
    trees: tuple[Tree, ...]
    scale: float = 1.0
    bias: float = 0.0
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.features or len(set(self.features)) != len(self.features):
            raise ConfigError("a tree ranker needs distinct feature names")
        if not self.trees:
            raise ConfigError("a tree ranker needs at least one tree")
        if not (math.isfinite(self.scale) and math.isfinite(self.bias)):
            raise ConfigError("a tree ranker's scale and bias must be finite numbers")
        d = len(self.features)
        if any(not 0 <= f < d for tree in self.trees for f in tree.feature):
            raise ConfigError(f"a tree splits on a feature index outside the {d} features")

    @cached_property
    def _compiled(self) -> _Compiled:
        return _compile(self.trees)

    def leaf_values(self, matrix: npt.NDArray[np.float64], names: Sequence[str]) -> npt.NDArray[np.float64]:
        """Each row's leaf value in each tree: an ``(rows, trees)`` array."""
        n = matrix.shape[0]
        if n == 0:
            return np.zeros((0, len(self.trees)))
        c = self._compiled
        cols = column_index(self.features, tuple(names))
        t = len(self.trees)
        out: npt.NDArray[np.float64] = np.empty((n, t))
        for lo in range(0, n, _CHUNK):  # bounded temporaries on a large matrix (calibration)
            x = matrix[lo : lo + _CHUNK][:, cols]
            bits = (x[:, c.split_col] <= c.split_thr).reshape(len(x), t, _SPLITS)
            code = bits.astype(np.int64) @ c.powers  # (rows, T): the bit pattern of each tree
            out[lo : lo + _CHUNK] = c.table[c.tree, code]
        return out

    def raw(self, matrix: npt.NDArray[np.float64], names: Sequence[str]) -> npt.NDArray[np.float64]:
        """The sum of the trees' leaves per row (before ``scale`` and ``bias``)."""
        out: npt.NDArray[np.float64] = self.leaf_values(matrix, names).sum(axis=1)  # per row: any n alike
        return out

    def logits(self, matrix: npt.NDArray[np.float64], names: Sequence[str]) -> npt.NDArray[np.float64]:
        """The calibrated scores before the sigmoid, one per row."""
        out: npt.NDArray[np.float64] = self.scale * self.raw(matrix, names) + self.bias
        return out

    def score(self, matrix: npt.NDArray[np.float64], names: Sequence[str]) -> npt.NDArray[np.float64]:
        """Relevance scores in (0, 1), one per row."""
        out: npt.NDArray[np.float64] = 0.5 * (1.0 + np.tanh(0.5 * self.logits(matrix, names)))
        return out

    def score_each(self, matrix: npt.NDArray[np.float64], names: Sequence[str]) -> npt.NDArray[np.float64]:
        """``score`` of each row on its own: every row's value does not depend on the other rows."""
        return self.score(np.ascontiguousarray(matrix), names)

    def with_provenance(self, provenance: Mapping[str, Any]) -> TreeRanker:
        return replace(self, provenance=dict(provenance))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "features": list(self.features),
            "scale": round(self.scale, 9),
            "bias": round(self.bias, 9),
            "trees": [t.to_json() for t in self.trees],
            "provenance": dict(self.provenance),
        }

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), separators=(",", ":")) + "\n", encoding="utf-8")

    @classmethod
    def from_json(cls, data: object, *, source: str = "ranker") -> TreeRanker:
        """Parsed JSON of the file, validated by its model (``TreesFile``); then what only a built
        tree can check (lengths, reachability, feature indexes) raises ``ConfigError`` too."""
        model = validated(TreesFile, format_object(data, FORMAT, source=source), source=source)
        built = []
        for i, tree in enumerate(model.trees):
            try:
                built.append(Tree.of(tree))
            except ConfigError as exc:
                raise ConfigError(f"{source}: tree {i}: {exc}") from exc
        return cls(tuple(model.features), tuple(built), model.scale, model.bias, dict(model.provenance))

    @classmethod
    def from_file(cls, path: Path) -> TreeRanker:
        return cls.from_json(read_json(path), source=str(path))

"""Small numpy models trained at task start-up: a CART classification tree and least squares.

RIoTBench's Weka ``.model`` files are Java-serialised and cannot be loaded from Python, so the
prediction tasks retrain equivalent models from the shipped ARFF training data when they start.
Training is deterministic (ties broken by feature then threshold order) and takes milliseconds
on the benchmark's few thousand rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["DecisionTree", "LinearModel"]


@dataclass
class _Node:
    label: int
    feature: int = -1
    threshold: float = 0.0
    left: _Node | None = None
    right: _Node | None = None
    counts: list[int] = field(default_factory=list)


def _gini(counts: np.ndarray) -> np.ndarray:
    """Gini impurity of class-count rows (last axis = classes)."""
    tot = counts.sum(axis=-1, keepdims=True)
    frac = np.divide(counts, tot, out=np.zeros_like(counts, dtype=float), where=tot > 0)
    return 1.0 - (frac**2).sum(axis=-1)


class DecisionTree:
    """A binary CART classifier (Gini impurity, numeric features, ``x <= threshold`` goes left).

    Parameters
    ----------
    max_depth
        Depth limit, standing in for Weka J48's pruning to avoid memorising the training rows.
    min_leaf
        Minimum number of rows in a leaf.
    """

    def __init__(self, max_depth: int = 8, min_leaf: int = 2) -> None:
        self.max_depth = max_depth
        self.min_leaf = min_leaf
        self.classes: list[str] = []
        self.root: _Node | None = None

    def fit(self, x: np.ndarray, labels: list[str]) -> DecisionTree:
        self.classes = sorted(set(labels))
        y = np.array([self.classes.index(v) for v in labels], dtype=int)
        self.root = self._grow(np.asarray(x, dtype=float), y, 0)
        return self

    def _grow(self, x: np.ndarray, y: np.ndarray, depth: int) -> _Node:
        ncls = len(self.classes)
        counts = np.bincount(y, minlength=ncls)
        node = _Node(label=int(np.argmax(counts)), counts=counts.tolist())
        if depth >= self.max_depth or len(y) < 2 * self.min_leaf or counts.max() == len(y):
            return node
        best: tuple[float, int, float] = (float(_gini(counts.astype(float)) * len(y)), -1, 0.0)
        for f in range(x.shape[1]):
            order = np.argsort(x[:, f], kind="stable")
            xs, ys = x[order, f], y[order]
            onehot = np.eye(ncls, dtype=float)[ys]
            left = np.cumsum(onehot, axis=0)[:-1]
            right = counts - left
            nl = np.arange(1, len(y))
            cost = _gini(left) * nl + _gini(right) * (len(y) - nl)
            ok = (xs[:-1] < xs[1:]) & (nl >= self.min_leaf) & (len(y) - nl >= self.min_leaf)
            if not ok.any():
                continue
            cost = np.where(ok, cost, np.inf)
            i = int(np.argmin(cost))
            if cost[i] < best[0] - 1e-12:
                best = (float(cost[i]), f, float((xs[i] + xs[i + 1]) / 2))
        if best[1] < 0:
            return node
        node.feature, node.threshold = best[1], best[2]
        mask = x[:, node.feature] <= node.threshold
        node.left = self._grow(x[mask], y[mask], depth + 1)
        node.right = self._grow(x[~mask], y[~mask], depth + 1)
        return node

    def predict_one(self, row: list[float]) -> str:
        node = self.root
        if node is None:
            raise RuntimeError("DecisionTree.predict_one before fit")
        while node.left is not None and node.right is not None:
            node = node.left if row[node.feature] <= node.threshold else node.right
        return self.classes[node.label]

    def accuracy(self, x: np.ndarray, labels: list[str]) -> float:
        hits = sum(self.predict_one(list(r)) == lab for r, lab in zip(x, labels, strict=True))
        return hits / len(labels)


class LinearModel:
    """Ordinary least squares with an intercept, the same bits on every machine.

    Why not ``numpy.linalg.lstsq``: LAPACK's result depends on the BLAS kernel the CPU selects
    (OpenBLAS's SkylakeX kernel and its Haswell or Zen kernels differ in the last bits), and a
    prediction that differs in its last bit changes the record's digest: the pinned records
    of the shard test and any comparison of runs across machines would then differ for no
    reason of ours. So the fit solves the normal equations ``(A^T A) c = A^T y`` with every
    sum taken by :func:`math.fsum` (correctly rounded, so independent of summation order) and
    Gaussian elimination with partial pivoting in plain floats, and a prediction is an
    ``fsum`` of products. The normal equations square the condition number; on RIoTBench's
    training data (``cond(A^T A)`` at most 6e7) that leaves eight or more correct digits, far
    below what the predictor's own error is. A singular system (a feature that is a linear
    combination of others) is a one-line error rather than a silent choice among solutions.

    Examples
    --------
    >>> m = LinearModel().fit(np.array([[0.0], [1.0], [2.0]]), np.array([1.0, 3.0, 5.0]))
    >>> [round(c, 12) for c in m.coef], m.predict_one([10.0])
    ([1.0, 2.0], 21.0)
    """

    def __init__(self) -> None:
        self.coef: list[float] | None = None

    def fit(self, x: np.ndarray, y: np.ndarray) -> LinearModel:
        rows = [[1.0, *(float(v) for v in r)] for r in np.asarray(x, dtype=float)]
        ys = [float(v) for v in np.asarray(y, dtype=float)]
        p = len(rows[0]) if rows else 1
        ata = [[math.fsum(r[i] * r[j] for r in rows) for j in range(p)] for i in range(p)]
        aty = [math.fsum(r[i] * v for r, v in zip(rows, ys, strict=True)) for i in range(p)]
        self.coef = _solve(ata, aty)
        return self

    def predict_one(self, row: list[float]) -> float:
        if self.coef is None:
            raise RuntimeError("LinearModel.predict_one before fit")
        return self.coef[0] + math.fsum(c * float(v)
                                        for c, v in zip(self.coef[1:], row, strict=True))


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """``x`` with ``a x = b``: Gaussian elimination with partial pivoting (ties: the lower
    row), back substitution with ``fsum``; deterministic IEEE arithmetic throughout."""
    n = len(b)
    m = [list(row) + [bi] for row, bi in zip(a, b, strict=True)]
    for k in range(n):
        piv = max(range(k, n), key=lambda i: (abs(m[i][k]), -i))
        if m[piv][k] == 0.0:
            raise ValueError(f"least squares: the training features are linearly dependent "
                             f"(column {k} has no pivot)")
        m[k], m[piv] = m[piv], m[k]
        for i in range(k + 1, n):
            f = m[i][k] / m[k][k]
            if f:
                m[i] = [v - f * w for v, w in zip(m[i], m[k], strict=True)]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (m[i][n] - math.fsum(m[i][j] * x[j] for j in range(i + 1, n))) / m[i][i]
    return x

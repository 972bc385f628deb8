"""Kernels of the predictive tasks: DecisionTreeClassify, MultiVarLinearRegression and
ErrorEstimation.

The predictors score a matrix of feature rows at once. Reading a feature is still a dict
lookup per row (a joined message's ``fields`` and ``meta`` are dicts), but one C-level
``map`` per feature rather than a Python loop per event; the model then runs on the matrix.
ErrorEstimation's one state, the latest block average, is a forward fill over the batch.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from reuse.tasks.base import Task
from reuse.tasks.columnar.batch import MISSING, Batch, object_column
from reuse.tasks.columnar.rowops import (
    ACCOUNTING,
    Fallback,
    Vectorized,
    constant,
    equals,
    float_or_none,
    floats,
    get,
    present,
)
from reuse.tasks.columnar.sums import fsum_rows
from reuse.tasks.models import DecisionTree

__all__ = ["DecisionTreeClassifyKernel", "MultiVarLinearRegressionKernel",
           "ErrorEstimationKernel", "observation_dicts", "feature_matrix"]

_EMPTY: dict[str, Any] = {}


def observation_dicts(batch: Batch) -> list[dict[Any, Any]]:
    """``observations(event)`` of every row, for reading only: a joined row's own ``fields``
    dict (``observations`` copies it; nothing here writes to it), else ``{obs: value}``. A
    ``fields`` that is not a dict (``observations`` would read it with ``dict()``, or fail)
    is a :class:`Fallback`."""
    fields = batch.cols.get("fields")
    if fields is not None and fields.dtype == object:
        kinds = set(map(type, fields))
        if kinds == {dict}:
            return fields.tolist()
        if not kinds <= {dict, type(MISSING)}:
            raise Fallback("a fields that is not a dict")
    elif fields is not None:
        raise Fallback("a typed fields column")
    has_obs = present(batch, "obs")
    obs, value = get(batch, "obs").tolist(), get(batch, "value").tolist()
    joined = fields.tolist() if fields is not None else [MISSING] * batch.n
    return [f if f is not MISSING else ({o: v} if h else {})
            for f, o, v, h in zip(joined, obs, value, has_obs.tolist(), strict=True)]


def _metas(batch: Batch) -> list[dict[Any, Any]]:
    """``event.get("meta", {})`` of every row; one that is not a dict is a :class:`Fallback`
    (``{**meta}`` reads any mapping, and fails on anything else)."""
    meta = batch.cols.get("meta")
    if meta is None:
        return [_EMPTY] * batch.n
    kinds = set(map(type, meta)) if meta.dtype == object else set()
    if kinds == {dict}:
        return meta.tolist()
    if not kinds or not kinds <= {dict, type(MISSING)}:
        raise Fallback("a meta that is not a dict")
    return [_EMPTY if m is MISSING else m for m in meta.tolist()]


def feature_matrix(batch: Batch, features: list[str],
                   obs: list[dict[Any, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~reuse.tasks.predict.feature_row` of every row: the matrix (n x features) and
    the rows that have every feature. A feature is read from the observations, else from
    ``meta`` (``{**meta, **observations}``), with one ``map`` of ``dict.get`` per feature
    (the meta value, when some meta has the feature, is the observation lookup's default),
    then ``as_float`` per column."""
    metas = _metas(batch)
    in_meta = set().union(*metas)  # a feature no meta has is read from the observations only
    x = np.empty((batch.n, len(features)))
    ok = np.ones(batch.n, dtype=bool)
    get_ = dict.get
    for j, f in enumerate(features):
        rep = itertools.repeat(f)
        raw = map(get_, obs, rep, map(get_, metas, rep)) if f in in_meta else map(get_, obs, rep)
        x[:, j], has = floats(list(raw))
        ok &= has
    return x, ok


def _out(batch: Batch, rows: np.ndarray, **cols: np.ndarray) -> Batch:
    """``derive(event, **changes)`` of the events at ``rows``: their accounting keys, sensor
    and meta, then the changed columns."""
    return batch.select(ACCOUNTING).take(rows).with_columns(**cols)


class _Tree:
    """A fitted :class:`DecisionTree` as arrays (node -> feature, threshold, children, label),
    so one step moves every row one level down: ``x[feature] <= threshold`` goes left, as
    ``predict_one`` decides it (NaN goes right in both)."""

    def __init__(self, tree: DecisionTree) -> None:
        if tree.root is None:
            raise ValueError("the tree is not fitted")
        feature, threshold, left, right, label = [], [], [], [], []
        todo = [tree.root]
        while todo:
            node = todo.pop(0)
            feature.append(node.feature if node.left is not None and node.right is not None
                           else -1)
            threshold.append(node.threshold)
            label.append(node.label)
            if feature[-1] >= 0:
                left.append(len(feature) + len(todo))
                right.append(len(feature) + len(todo) + 1)
                todo += [node.left, node.right]  # type: ignore[list-item]
            else:
                left.append(-1)
                right.append(-1)
        self.feature = np.asarray(feature, dtype=np.intp)
        self.threshold = np.asarray(threshold, dtype=np.float64)
        self.left = np.asarray(left, dtype=np.intp)
        self.right = np.asarray(right, dtype=np.intp)
        self.classes = object_column(tree.classes)[np.asarray(label, dtype=np.intp)]

    def predict(self, x: np.ndarray) -> np.ndarray:
        node = np.zeros(len(x), dtype=np.intp)
        rows = np.arange(len(x))
        while True:
            f = self.feature[node]
            inner = f >= 0
            if not inner.any():
                return self.classes[node]
            go_left = x[rows, np.maximum(f, 0)] <= self.threshold[node]
            node = np.where(inner, np.where(go_left, self.left[node], self.right[node]), node)


class DecisionTreeClassifyKernel(Vectorized):
    """DecisionTreeClassify over a feature matrix: the tree walked one level per step for
    every row at once (:class:`_Tree`). Comparisons only: exact."""

    type_name = "DecisionTreeClassify"

    def __init__(self, task: Task) -> None:
        super().__init__(task)
        tree: DecisionTree = task.tree  # type: ignore[attr-defined]
        self.tree = _Tree(tree) if tree.root is not None else None

    def compute(self, batch: Batch) -> Batch:
        if self.tree is None:  # predict_one's own error
            raise Fallback("an unfitted tree")
        x, ok = feature_matrix(batch, self.task.features,  # type: ignore[attr-defined]
                               observation_dicts(batch))
        rows = np.flatnonzero(ok)
        k = len(rows)
        return _out(batch, rows, obs=constant("DTC", k), value=self.tree.predict(x[rows]),
                    analytic=constant("DTC", k))


class MultiVarLinearRegressionKernel(Vectorized):
    """MultiVarLinearRegression over a feature matrix: ``coef[0] + fsum(coef[1:] * row)``,
    the products column by column and ``fsum`` replayed row-wise (:func:`fsum_rows`), so
    every prediction is the per-event one, bit for bit. A row whose products or sum are not
    finite (``fsum`` raises on an overflow, special-cases infinities) is a :class:`Fallback`.
    """

    type_name = "MultiVarLinearRegression"

    def __init__(self, task: Task) -> None:
        super().__init__(task)
        coef = task.model.coef or [0.0]  # type: ignore[attr-defined]
        self.intercept = float(coef[0])
        self.coef = np.asarray(coef[1:], dtype=np.float64)

    def compute(self, batch: Batch) -> Batch:
        if self.task.model.coef is None:  # type: ignore[attr-defined] # predict_one's error
            raise Fallback("an unfitted model")
        obs = observation_dicts(batch)
        x, ok = feature_matrix(batch, self.task.features, obs)  # type: ignore[attr-defined]
        rows = np.flatnonzero(ok)
        with np.errstate(over="ignore", invalid="ignore"):
            terms = x[rows] * self.coef
            pred = self.intercept + fsum_rows(terms)
        if not (np.isfinite(terms).all() and np.isfinite(pred).all()):
            raise Fallback("a sum that is not finite")
        target = self.task.target  # type: ignore[attr-defined]
        actual, has = floats([o.get(target) for o in (obs[i] for i in rows.tolist())])
        k = len(rows)
        return _out(batch, rows, obs=constant("MLR", k), value=pred, target=constant(target, k),
                    actual=float_or_none(actual, has), analytic=constant("MLR", k))


class ErrorEstimationKernel(Vectorized):
    """ErrorEstimation over a batch: the latest block average each regression output sees is
    a forward fill of the averages set earlier in the batch (or the task's own, before the
    first); the error and relative error are then elementwise, the same operations as per
    event: exact. The task's average ends as the batch's last one set.
    """

    type_name = "ErrorEstimation"

    def compute(self, batch: Batch) -> Batch:
        task: Any = self.task
        bwa = equals(batch, "analytic", "BWA")
        sets = np.flatnonzero(bwa & equals(batch, "obs", task.target))
        mlr = np.flatnonzero(~bwa & equals(batch, "obs", "MLR"))
        start = task.average
        avg_num, avg_ok = floats(get(batch, "value")[sets]) if len(sets) else \
            (np.zeros(0), np.zeros(0, dtype=bool))
        # the average row i sees: the last set at or before it (index into sets), else start
        last = np.searchsorted(sets, mlr, side="right") - 1
        before = last < 0
        seen = np.where(before, 0, last)
        avg = np.where(before, np.nan if start is None else start,
                       avg_num[seen] if len(sets) else np.nan)
        has_avg = np.where(before, start is not None, avg_ok[seen] if len(sets) else False)
        sub = batch.take(mlr)
        pred, has_pred = floats(get(sub, "value"))
        actual, has_actual = floats(get(sub, "actual"))
        has_err = has_pred & has_actual
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            err = actual - pred
            use = has_err & has_avg & (avg != 0.0)
            rel = np.where(use, err / np.where(use, avg, 1.0), np.nan)
        if len(sets):
            task.average = avg_num[-1].item() if avg_ok[-1] else None
        k = len(mlr)
        return _out(batch, mlr, obs=constant("ERR", k), value=float_or_none(err, has_err),
                    predicted=float_or_none(pred, has_pred),
                    actual=float_or_none(actual, has_actual),
                    average=float_or_none(avg, has_avg), relative=float_or_none(rel, use),
                    analytic=constant("ERR", k))

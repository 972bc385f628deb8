"""Kernels of the STATS tasks' series recursions (issue 35): Kalman filter and sliding
linear regression, a batch at a time, bit-identical to :mod:`reuse.tasks.stats`.

Both keep one small state per series and advance it one observation at a time. The batch's
observations are exploded and keyed once (:func:`~reuse.tasks.columnar.observe.explode`), then
the recursion runs on arrays: the same IEEE operations, in the same order, per series, so the
results are the per-event task's bit for bit. The other STATS kernels are in
:mod:`reuse.tasks.columnar.sketches` (DistinctApproxCount, SecondOrderMoment) and
:mod:`reuse.tasks.columnar.blocks` (BlockWindowAverage).
"""

from __future__ import annotations

from itertools import chain
from typing import cast

import numpy as np

from reuse.tasks.columnar.batch import Batch, object_column
from reuse.tasks.columnar.kernel import Kernel
from reuse.tasks.columnar.lanes import Lanes
from reuse.tasks.columnar.observe import constant, derived, explode
from reuse.tasks.stats import KalmanFilter, SlidingLinearRegression

__all__ = ["KalmanFilterKernel", "SlidingLinearRegressionKernel", "SEQUENTIAL_SUM"]


class KalmanFilterKernel(Kernel):
    """:class:`~reuse.tasks.stats.KalmanFilter` a batch at a time, bit-identical.

    Per series the filter is a recursion (``p += q``, ``K = p / (p + r)``, ``x += K (z - x)``,
    ``p *= 1 - K``) whose every step needs the previous ``x``: it cannot be reordered without
    changing the rounding, so it stays sequential *per series*. Across series it is parallel:
    with many series (sensor keying) step ``j`` of every series runs as one numpy operation per
    scalar operation (:meth:`Lanes.grid`); with few long series (the workload's field keying)
    a numpy call per step costs more than the floats it replaces, and the recursion runs as a
    tight Python loop over each series' values, nothing else per value (the keying, reading
    values and building outputs stay columnar). Both do the per-event task's operations in its
    order, so the outputs and ``[x, p]`` states are the same bits.
    """

    type_name = "KalmanFilter"

    def run(self, batch: Batch) -> Batch:
        task = cast(KalmanFilter, self.task)
        ob = explode(batch, task.fields, task.group_by)
        if not ob.m:
            return Batch.empty()
        start = [task.series.get(key, [0.0, task.p0]) for key in ob.keys]
        x0 = np.array([s[0] for s in start], dtype=np.float64)
        p0 = np.array([s[1] for s in start], dtype=np.float64)
        lanes = Lanes(ob.kid, len(ob.keys))
        if lanes.prefers_grid():
            est, x, p = _kalman_grid(lanes, ob.values, x0, p0, task.q, task.r)
        else:
            est, x, p = _kalman_loop(lanes, ob.values, x0, p0, task.q, task.r)
        for key, xi, pi in zip(ob.keys, x.tolist(), p.tolist(), strict=True):
            task.series[key] = [xi, pi]
        return derived(batch, ob.rows, obs=ob.names, value=est,
                       analytic=constant("KALMAN", ob.m))


@np.errstate(all="ignore")  # an overflow is inf or NaN, silently, as in Python floats
def _kalman_grid(lanes: Lanes, z: np.ndarray, x0: np.ndarray, p0: np.ndarray, q: float,
                 r: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step ``j`` of every series at once: estimates per observation, final ``x`` and ``p``
    per series."""
    cols, active = lanes.grid()
    rank = lanes.rank
    zg = np.zeros((lanes.depth, lanes.k))
    zg[lanes.step, cols] = z
    xg = np.empty_like(zg)
    x, p = np.empty(lanes.k), np.empty(lanes.k)
    x[rank], p[rank] = x0, p0
    for j, a in enumerate(active.tolist()):
        pa = p[:a] + q
        denominator = pa + r
        if not denominator.all():
            raise ZeroDivisionError("float division by zero")  # as the per-event task
        gain = pa / denominator
        xa = x[:a]
        xa = xa + gain * (zg[j, :a] - xa)
        p[:a] = (1.0 - gain) * pa
        x[:a] = xa
        xg[j, :a] = xa
    return xg[lanes.step, cols], x[rank], p[rank]


def _kalman_loop(lanes: Lanes, z: np.ndarray, x0: np.ndarray, p0: np.ndarray, q: float,
                 r: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Series after series, a Python loop over one series' values (few long series)."""
    zs = z[lanes.order].tolist()
    bounds = lanes.bounds.tolist()
    out: list[float] = []
    xs, ps = x0.tolist(), p0.tolist()
    for k in range(lanes.k):
        x, p = xs[k], ps[k]
        for zz in zs[bounds[k]:bounds[k + 1]]:
            p = p + q
            gain = p / (p + r)
            x = x + gain * (zz - x)
            p = (1.0 - gain) * p
            out.append(x)
        xs[k], ps[k] = x, p
    est = np.empty(len(zs))
    est[lanes.order] = out
    return est, np.array(xs), np.array(ps)


#: Whether :func:`sum` of floats adds left to right in plain double arithmetic (CPython up to
#: 3.11; 3.12 compensates the rounding errors, Neumaier's way), so that a column-wise running
#: sum reproduces it. Where it does not, the regression falls back to ``sum`` itself per row.
SEQUENTIAL_SUM = sum([1e16, 1.0, -1e16]) == 0.0

#: below these the x positions' sum is an exact int64 and float (< 2**51), their mean exact
#: and each ``x - mean`` a half-integer with an exact square; beyond, the per-event code runs
_MAX_POSITION = 2**31
_MAX_TRAIN = 2**20


class SlidingLinearRegressionKernel(Kernel):
    """:class:`~reuse.tasks.stats.SlidingLinearRegression` a batch at a time, bit-identical.

    Each series is its carried window followed by the batch's values; an output's window is a
    slice of that sequence, so the batch's windows form one ``(outputs, train)`` matrix and
    the least-squares fit runs over it column by column: ``sum(ys)``, ``sxx`` and ``sxy`` are
    running sums over the window's positions, one vector addition per position, which is the
    per-event generator's left-to-right order (Python's ``sum`` starts from the int 0, and
    ``0 + y`` is ``0.0 + y``, so the running sums start from 0.0). The x positions are ints:
    ``mean(xs)`` is ``sum(xs) / train`` of an exact int sum and each ``x - mean`` an exact
    half-integer (positions below :data:`_MAX_POSITION`), so its square is exact whether taken as
    ``** 2`` (per event) or ``* `` (here). Rows beyond those bounds, or every row where
    :data:`SEQUENTIAL_SUM` is false, are fitted by the per-event code itself (:func:`fit_one`).
    """

    type_name = "SlidingLinearRegression"

    def run(self, batch: Batch) -> Batch:
        task = cast(SlidingLinearRegression, self.task)
        ob = explode(batch, task.fields, task.group_by)
        if not ob.m:
            return Batch.empty()
        train, k = task.train, len(ob.keys)
        carried = [task.series.get(key, {"n": 0, "ys": []}) for key in ob.keys]
        n0 = np.array([s["n"] for s in carried], dtype=np.int64)
        held = np.array([len(s["ys"]) for s in carried], dtype=np.int64)
        lanes = Lanes(ob.kid, k)
        # each series' sequence: its carried values, then the batch's, one after another
        total = held + lanes.counts
        start = np.cumsum(total) - total
        n_held = int(held.sum())
        src = np.empty(int(total.sum()), dtype=np.int64)
        src[np.repeat(start - (np.cumsum(held) - held), held) + np.arange(n_held)] = \
            np.arange(n_held)
        at = start[ob.kid] + held[ob.kid] + lanes.step  # each observation's place in it
        src[at] = n_held + np.arange(ob.m)
        flat = np.fromiter(chain.from_iterable(s["ys"] for s in carried), dtype=np.float64,
                           count=n_held)
        seq = np.concatenate([flat, ob.values])[src]
        emit = np.flatnonzero(held[ob.kid] + lanes.step + 1 >= train)
        windows = seq[at[emit, None] + np.arange(1 - train, 1)]
        count = n0[ob.kid[emit]] + lanes.step[emit] + 1
        preds = fit(windows, count, task.predict)
        ends, kept = (start + total).tolist(), np.minimum(train, total).tolist()
        counts, values = (n0 + lanes.counts).tolist(), seq.tolist()
        for i, key in enumerate(ob.keys):
            task.series[key] = {"n": counts[i], "ys": values[ends[i] - kept[i]:ends[i]]}
        return derived(batch, ob.rows[emit], obs=ob.names[emit], value=preds[:, 0].copy(),
                       predictions=object_column(preds.tolist()),
                       analytic=constant("SLR", len(emit)))


@np.errstate(all="ignore")  # an overflow is inf or NaN, silently, as in Python floats
def fit(windows: np.ndarray, count: np.ndarray, predict: int) -> np.ndarray:
    """Predictions at ``count + 1 .. count + predict`` of the least-squares lines through
    each row of ``windows`` (the last ``train`` values of a series whose last value is its
    ``count``-th), as the per-event task computes them."""
    rows, train = windows.shape
    preds = np.empty((rows, predict))
    if not rows:
        return preds
    first = count - train + 1
    fast = ((np.abs(first) < _MAX_POSITION) & (np.abs(count) < _MAX_POSITION)
            if SEQUENTIAL_SUM and train <= _MAX_TRAIN else np.zeros(rows, dtype=bool))
    slow = np.flatnonzero(~fast)
    for i in slow.tolist():
        preds[i] = fit_one(windows[i].tolist(), int(count[i]), predict)
    if len(slow) == rows:
        return preds
    w, first, count = windows[fast], first[fast], count[fast]
    xsum = train * first + train * (train - 1) // 2  # sum(xs), exact (below 2**51)
    mx = xsum.astype(np.float64) / train
    acc = np.zeros(len(w))
    for t in range(train):
        acc = acc + w[:, t]
    my = acc / train
    dx = (first[:, None] + np.arange(train)).astype(np.float64) - mx[:, None]
    sxx = np.zeros(len(w))
    sxy = np.zeros(len(w))
    for t in range(train):
        sxx = sxx + dx[:, t] * dx[:, t]
    for t in range(train):
        sxy = sxy + dx[:, t] * (w[:, t] - my)
    slope = sxy / sxx
    icpt = my - slope * mx
    ahead = (count[:, None] + np.arange(1, predict + 1)).astype(np.float64)
    preds[fast] = icpt[:, None] + slope[:, None] * ahead
    return preds


def fit_one(ys: list[float], n: int, predict: int) -> list[float]:
    """One fit exactly as :meth:`SlidingLinearRegression.process` writes it (the fallback)."""
    xs = list(range(n - len(ys) + 1, n + 1))
    mx = sum(xs) / len(xs)
    my = sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (yy - my) for x, yy in zip(xs, ys, strict=True))
    slope = sxy / sxx
    icpt = my - slope * mx
    return [icpt + slope * (n + i) for i in range(1, predict + 1)]

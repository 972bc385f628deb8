"""Kernels of the STATS sketches (issue 35): DistinctApproxCount's LogLog registers and
SecondOrderMoment's item map, a batch at a time, bit-identical to :mod:`reuse.tasks.stats`.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from reuse.tasks.base import Task
from reuse.tasks.columnar.batch import MISSING, Batch
from reuse.tasks.columnar.kernel import Kernel
from reuse.tasks.columnar.lanes import Lanes
from reuse.tasks.columnar.observe import DERIVED_KEYS, constant, derived, explode
from reuse.tasks.stats import DistinctApproxCount, SecondOrderMoment, stable_hash64

__all__ = ["DistinctApproxCountKernel", "SecondOrderMomentKernel"]

#: ints below this convert to float64 exactly, so an int quotient of them rounds once, as
#: Python's int / int does
_EXACT_INT = 2**53


class DistinctApproxCountKernel(Kernel):
    """:class:`~reuse.tasks.stats.DistinctApproxCount` a batch at a time, bit-identical.

    The item of a row is ``str(sensor)``; each distinct item is hashed once (SHA-1, and the
    register and rank it gives are remembered across batches: they depend on the item and
    ``buckets`` only, not on the state). The registers after each row are running maxima per
    register: the rows are sorted by register (stably, so in row order within one) and a
    segmented ``np.maximum.accumulate`` (each register's values shifted above the previous
    register's) gives every row's register value before and after it; the register sum after
    each row is the state's sum plus the running sum of the increases, all exact ints. The
    estimate ``int(0.79402 m 2 ** (sum / m))`` is computed by the task's own expression once
    per distinct sum (a few per batch): numpy's ``power`` may be a SIMD routine that rounds
    differently from the C library's ``pow`` that Python uses.
    """

    type_name = "DistinctApproxCount"

    #: distinct items whose hash is remembered (then forgotten all at once)
    MEMO = 1 << 16

    def __init__(self, task: Task) -> None:
        super().__init__(task)
        self._memo: dict[str, tuple[int, int]] = {}

    def _slot(self, item: str) -> tuple[int, int]:
        task = cast(DistinctApproxCount, self.task)
        x = task.hash32(item)
        return x & (task.m - 1), task.rho(x >> task.k)

    def run(self, batch: Batch) -> Batch:
        task = cast(DistinctApproxCount, self.task)
        n = batch.n
        if not n:
            return Batch.empty()
        col = batch.cols.get("sensor")
        items = (["None"] * n if col is None
                 else [str(None if v is MISSING else v) for v in col.tolist()])
        table: dict[str, int] = {}
        code = np.fromiter((table.setdefault(s, len(table)) for s in items), dtype=np.int64,
                           count=n)
        if len(self._memo) + len(table) > self.MEMO:
            self._memo.clear()
        memo = self._memo
        slots = [memo[s] if s in memo else memo.setdefault(s, self._slot(s)) for s in table]
        reg, rank = (np.array(c, dtype=np.int64) for c in zip(*slots, strict=True))
        j, r = reg[code], rank[code]
        start = np.array(task.registers, dtype=np.int64)
        after, before, last = _running_max(j, r, start)
        sums = int(start.sum()) + np.cumsum(after - before)
        values, where = np.unique(sums, return_inverse=True)
        alpha_m = task.ALPHA * task.m
        estimates = np.array([float(int(alpha_m * 2 ** (s / task.m))) for s in values.tolist()])
        for reg_j, value in last.items():
            task.registers[reg_j] = value
        cols = {k: batch.cols[k] for k in DERIVED_KEYS if k in batch.cols}
        cols.update(obs=constant("DAC", n), value=estimates[where.reshape(-1)],
                    analytic=constant("DAC", n))
        return Batch(n, cols)


def _running_max(j: np.ndarray, r: np.ndarray, start: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
    """Register ``j[i]`` before and after ``max(register, r[i])``, rows in order, and each
    touched register's final value."""
    order = np.argsort(j, kind="stable")
    js, rs = j[order], r[order]
    head = np.flatnonzero(np.r_[True, js[1:] != js[:-1]])
    rs = rs.copy()
    rs[head] = np.maximum(rs[head], start[js[head]])
    low = int(min(rs.min(), 0))
    span = int(rs.max()) - low + 1
    shifted = (rs - low) + js * span  # registers in order, each above the one before
    acc = np.maximum.accumulate(shifted) - js * span + low
    prev = np.empty_like(acc)
    prev[1:] = acc[:-1]
    prev[head] = start[js[head]]
    after, before = np.empty_like(acc), np.empty_like(acc)
    after[order], before[order] = acc, prev
    tail = np.r_[head[1:], len(js)] - 1
    return after, before, dict(zip(js[tail].tolist(), acc[tail].tolist(), strict=True))


class SecondOrderMomentKernel(Kernel):
    """:class:`~reuse.tasks.stats.SecondOrderMoment` a batch at a time, bit-identical; its
    map updates are a loop over the observations, not vectorized.

    Whether an item is counted, appended or evicts a slot depends on what the map holds after
    the previous item of its series, and the evicted slot on a hash of the series' count: a
    data-dependent sequential process per series with no array form. What is columnar: the
    keying and values (:func:`explode`), the items (``repr`` once per distinct value), the
    estimate's arithmetic and the outputs. The loop itself (``"riotbench"``) keeps the map as
    the task's own lists plus a position per item and the running ``sum(2 f - 1)``, so each
    observation costs a dict look-up and a few int operations where the task scans its lists;
    the estimate ``n * sum / len`` is then one vector division of exact ints (below 2**53;
    Python's own int division past that). ``"ams"`` (not in the workload) calls the task's
    own update per observation.
    """

    type_name = "SecondOrderMoment"

    def run(self, batch: Batch) -> Batch:
        task = cast(SecondOrderMoment, self.task)
        ob = explode(batch, task.fields, task.group_by)
        if not ob.m:
            return Batch.empty()
        distinct, where = np.unique(ob.values.view(np.int64), return_inverse=True)
        reprs = [repr(v) for v in distinct.view(np.float64).tolist()]
        lanes = Lanes(ob.kid, len(ob.keys))
        items = [reprs[i] for i in where.reshape(-1)[lanes.order].tolist()]
        bounds = lanes.bounds.tolist()
        counts: list[int] = []  # per observation (series order): n, sum(2 f - 1), len
        totals: list[int] = []
        lens: list[int] = []
        own: dict[int, float] = {}  # estimates the task's own update gave
        for k, key in enumerate(ob.keys):
            s = task.series.setdefault(key, {"n": 0, "items": [], "freq": []})
            mine = items[bounds[k]:bounds[k + 1]]
            held = s["items"]
            if (task.estimator == "riotbench" and len(set(held)) == len(held)
                    and len(held) == len(s["freq"])):
                _riotbench(task.size, key, s, mine, counts, totals, lens)
                continue
            add = task._riotbench if task.estimator == "riotbench" else task._ams
            for item in mine:
                s["n"] += 1
                own[len(counts)] = add(key, s, item)
                counts.append(1)
                totals.append(0)
                lens.append(1)
        est = _estimates(counts, totals, lens)
        for i, value in own.items():
            est[i] = value
        values = np.empty(ob.m)
        values[lanes.order] = est
        return derived(batch, ob.rows, obs=ob.names, value=values,
                       analytic=constant("SOM", ob.m))


def _riotbench(size: int, key: str, s: dict[str, Any], items: list[str], counts: list[int],
               totals: list[int], lens: list[int]) -> None:
    """RIoTBench's map update over one series' ``items`` (the task's ``_riotbench``, with a
    position per item and the running ``sum(2 f - 1)`` instead of scans), mutating ``s``;
    appends ``n``, the sum and the map's size after each item. Needs a map without repeated
    items and a count per item (the task never makes another)."""
    held, freq = s["items"], s["freq"]
    n = s["n"]
    pos = dict(zip(held, range(len(held)), strict=True))  # no repeats: one position each
    total = 2 * sum(freq) - len(freq)  # sum(2 f - 1)
    for item in items:
        n += 1
        i = pos.get(item)
        if i is not None:
            freq[i] += 1
            total += 2
        elif len(held) < size:
            pos[item] = len(held)
            held.append(item)
            freq.append(1)
            total += 1
        else:
            slot = stable_hash64(f"{key}|{n}", 5) % size
            del pos[held[slot]]
            total -= 2 * freq[slot] - 2
            pos[item] = slot
            held[slot], freq[slot] = item, 1
        counts.append(n)
        totals.append(total)
        lens.append(len(held))
    s["n"] = n


def _estimates(counts: list[int], totals: list[int], lens: list[int]) -> np.ndarray:
    """``float(n * total / len)`` per observation: one vector division of exact ints (both
    below 2**53, so each quotient is rounded once, as Python's int / int), else Python's."""
    if max(counts) * max(map(abs, totals)) < _EXACT_INT:
        num = np.array(counts, dtype=np.int64) * np.array(totals, dtype=np.int64)
        return num.astype(np.float64) / np.array(lens, dtype=np.float64)
    return np.array([float(a * b / c) for a, b, c in zip(counts, totals, lens, strict=True)])

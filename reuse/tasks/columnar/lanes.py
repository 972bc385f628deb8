"""Observations laid out by series (issue 35): the shape of a per-key sequential recursion.

A keyed task's state advances one observation at a time *within* a series; different series
never interact. :class:`Lanes` gives, for observations with series codes ``kid``, each one's
``step`` (its position within its series in this batch) and two layouts to run the recursion:

* by series: ``order`` lists the observations series after series (each in its own order),
  ``bounds`` delimits the series, for a tight loop over one series' values at a time;
* by step: :meth:`grid` puts step ``j`` of every series in row ``j`` of a matrix whose columns
  are the series, longest first, so the series still running at step ``j`` are a prefix of the
  row and one numpy operation per scalar operation advances all of them at once.

Which one is cheaper depends on the shape: many short series suit the grid (few steps, wide
rows), few long ones (the workload's per-field keying: 5 series of 200 values per 1000 events)
suit the loop, where a numpy call per step would cost more than the Python float operations it
replaces. :meth:`prefers_grid` is that choice; both give the same floating-point operations in
the same order, so the choice never changes a result.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

__all__ = ["Lanes"]

#: rough CPU costs, in one unit (~0.2 us, measured on the Kalman filter over SYS and TAXI
#: batches): a step of a grid recursion (a handful of numpy calls, ~5 us), an observation in a
#: Python loop (~0.2 us), and a series' setup in that loop (~0.5 us)
GRID_STEP_COST = 25.0
LOOP_ITEM_COST = 1.0
LOOP_SERIES_COST = 2.5


class Lanes:
    """Series layout of observations with series codes ``kid`` (``0 .. k - 1``).

    >>> lanes = Lanes(np.array([0, 1, 0, 2, 0]), 3)
    >>> lanes.step.tolist(), lanes.counts.tolist(), lanes.order.tolist(), lanes.depth
    ([0, 0, 1, 0, 2], [3, 1, 1], [0, 2, 4, 1, 3], 3)
    >>> cols, active = lanes.grid()
    >>> cols.tolist(), active.tolist()
    ([0, 1, 0, 2, 0], [3, 1, 1])
    """

    def __init__(self, kid: np.ndarray, k: int) -> None:
        self.kid = kid
        self.k = k
        self.counts = np.bincount(kid, minlength=k)
        self.order = np.argsort(kid, kind="stable")
        self.bounds = np.concatenate([[0], np.cumsum(self.counts)])
        step = np.empty(len(kid), dtype=np.int64)
        step[self.order] = np.arange(len(kid)) - np.repeat(self.bounds[:-1], self.counts)
        self.step = step
        self.depth = int(self.counts.max()) if k else 0

    def prefers_grid(self) -> bool:
        """Whether stepping every series at once costs less than a loop over the values."""
        return (self.depth * GRID_STEP_COST
                < len(self.kid) * LOOP_ITEM_COST + self.k * LOOP_SERIES_COST)

    @cached_property
    def rank(self) -> np.ndarray:
        """Each series' column in the grid: longest first (ties in code order)."""
        rank = np.empty(self.k, dtype=np.int64)
        rank[np.argsort(-self.counts, kind="stable")] = np.arange(self.k)
        return rank

    def grid(self) -> tuple[np.ndarray, np.ndarray]:
        """Each observation's column in the grid (its row is its ``step``), and how many
        series are still running at each step (a prefix of the columns)."""
        ordered = np.sort(self.counts)[::-1]
        steps = np.arange(self.depth)
        active = np.searchsorted(-ordered, -steps, side="left")
        return self.rank[self.kid], active

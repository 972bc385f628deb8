"""Python's float sums, row-wise in numpy, bit for bit.

The per-event tasks sum with ``math.fsum`` (the regression's dot product) and ``sum`` (the
interpolation's mean). Neither is numpy's pairwise sum: ``fsum`` is correctly rounded, built
from exact partial sums, and ``sum`` adds left to right (with Neumaier's compensation from
Python 3.12 on). A kernel that summed any other way would differ in the last bit now and then,
and a record's digest with it. So these functions replay the interpreter's own algorithms,
step for step, on whole columns: the same IEEE operations in the same order, hence the same
bits (the tests compare them with ``math.fsum`` and ``sum`` on adversarial inputs).
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["fsum_rows", "sum_rows"]


def fsum_rows(terms: np.ndarray) -> np.ndarray:
    """``math.fsum`` of each row of ``terms`` (n x k, finite), as CPython computes it.

    CPython keeps a list of non-overlapping partials: each term is added to each partial in
    turn (larger magnitude first, ``hi = x + y``, ``lo = y - (hi - x)``), non-zero ``lo``s
    kept, the running ``hi`` appended. Here row ``i``'s partials live in ``k`` fixed slots and
    a zero ``lo`` stays as a zero instead of being dropped: adding a zero partial leaves ``x``
    as it is, so the non-zero partials, in order, are CPython's. The tail sums them from the
    top until a step is inexact and applies CPython's half-even correction, with "the next
    partial below" read as the next non-zero slot. CPython never returns ``-0.0``; neither does
    this. A row whose sum overflows gives a non-finite value here (CPython raises), so the
    caller checks :func:`numpy.isfinite`.
    """
    n, k = terms.shape
    if k == 0:
        return np.zeros(n)
    part = np.zeros((n, k))
    with np.errstate(invalid="ignore", over="ignore"):
        for j in range(k):
            x = terms[:, j].copy()
            for i in range(j):
                y = part[:, i]
                swap = np.abs(x) < np.abs(y)
                x, y = np.where(swap, y, x), np.where(swap, x, y)
                hi = x + y
                part[:, i] = y - (hi - x)
                x = hi
            part[:, j] = x
        hi = part[:, k - 1].copy()
        lo = np.zeros(n)
        stop = np.full(n, -1)
        exact = np.ones(n, dtype=bool)
        for i in range(k - 2, -1, -1):
            x, y = hi, part[:, i]
            s = x + y
            d = y - (s - x)
            hi = np.where(exact, s, hi)
            broke = exact & (d != 0.0)
            lo = np.where(broke, d, lo)
            stop = np.where(broke, i, stop)
            exact &= ~broke
        below = np.zeros(n)
        found = np.zeros(n, dtype=bool)
        for i in range(k - 2, -1, -1):
            take = ~found & (i < stop) & (part[:, i] != 0.0)
            below = np.where(take, part[:, i], below)
            found |= take
        fix = found & (((lo < 0.0) & (below < 0.0)) | ((lo > 0.0) & (below > 0.0)))
        y = lo * 2.0
        x = hi + y
        hi = np.where(fix & (x - hi == y), x, hi)
    return hi + 0.0


_NEUMAIER = sys.version_info >= (3, 12)


def sum_rows(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``sum(values[i, :lengths[i]])`` of each row, as this interpreter's built-in ``sum``
    adds a list of floats (start ``0``): ``0 + v0`` first, then left to right, plainly before
    Python 3.12, with Neumaier's compensation (added at the end when finite and non-zero)
    from 3.12 on. ``lengths`` may be 0 (the sum is then ``0``, an int in Python: the caller
    never divides by it)."""
    n, k = values.shape
    total = np.zeros(n)
    comp = np.zeros(n)
    with np.errstate(invalid="ignore", over="ignore"):
        for j in range(k):
            on = j < lengths
            x = values[:, j]
            t = total + x
            if _NEUMAIER and j > 0:
                c = np.where(np.abs(total) >= np.abs(x), (total - t) + x, (x - t) + total)
                comp = np.where(on, comp + c, comp)
            total = np.where(on, t, total)
        if _NEUMAIER:
            add = (comp != 0.0) & np.isfinite(comp)
            total = np.where(add, total + comp, total)
    return total

"""A task's input as one batch (issue 35): its parents' output batches merged, and the rows of
a ``seq`` window, as :func:`~reuse.runtime.common.window.run_window`'s columnar path and its
groups take them, and a window's record lines (moved out of :mod:`reuse.runtime.common.window` unchanged; it re-exports
:func:`batch_merged` and :func:`batch_slice`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from reuse.tasks.columnar import Batch

__all__ = ["EMPTY", "batch_merged", "batch_slice", "bounds", "record_lines", "rows"]

#: the batch of no events (shared: batches are never written into)
EMPTY = Batch.empty()


def batch_merged(t: Mapping[str, Any], batches: Mapping[str, Batch]) -> Batch:
    """:func:`~reuse.runtime.common.window.parents_merged` of batches: a task's parents' output batches concatenated in
    parent order, stably sorted by ``seq`` (not copied when there is one and it is sorted).

    >>> b = {"p": Batch.from_events([{"seq": 1, "x": 0}, {"seq": 3, "x": 0}]),
    ...      "q": Batch.from_events([{"seq": 1, "x": 1}, {"seq": 2, "x": 1}])}
    >>> [(e["seq"], e["x"]) for e in batch_merged({"parents": ["p", "q"]}, b).to_events()]
    [(1, 0), (1, 1), (2, 1), (3, 0)]
    """
    parts = [b for p in t["parents"] if (b := batches.get(p)) is not None and b.n]
    if not parts:
        return EMPTY
    both = parts[0] if len(parts) == 1 else Batch.concat(parts)
    seq = both.cols["seq"]
    if both.n > 1 and not bool(np.all(seq[1:] >= seq[:-1])):
        both = both.take(np.argsort(seq, kind="stable"))
    return both


def bounds(batch: Batch, a: int, b: int) -> tuple[int, int]:
    """The rows ``[i, j)`` of a batch sorted by ``seq`` with ``a <= seq < b``."""
    if not batch.n:
        return 0, 0
    seq = batch.cols["seq"]
    i = 0 if seq[0] >= a else int(np.searchsorted(seq, a, side="left"))
    j = batch.n if seq[-1] < b else int(np.searchsorted(seq, b, side="left"))
    return i, max(i, j)


def rows(batch: Batch, i: int, j: int) -> Batch:
    """Rows ``[i, j)`` of a batch: views of its columns (the batch itself when all)."""
    if i == 0 and j == batch.n:
        return batch
    return Batch(j - i, {k: c[i:j] for k, c in batch.cols.items()})


def batch_slice(batch: Batch, a: int, b: int) -> Batch:
    """:func:`~reuse.runtime.common.window.seq_slice` of a batch sorted by ``seq``: its rows with ``a <= seq < b``, as views
    of its columns (the batch itself when all are in).

    >>> b = Batch.from_events([{"seq": s} for s in (1, 2, 2, 5)])
    >>> batch_slice(b, 2, 5).cols["seq"].tolist(), batch_slice(b, 0, 9) is b
    ([2, 2], True)
    """
    return rows(batch, *bounds(batch, a, b))


def record_lines(events: list[dict[str, Any]], line: Callable[[Any, float], str],
                 clock: Callable[[], float]) -> list[str]:
    """A window's record lines, all stamped with one clock reading (none when no event)."""
    if not events:
        return []
    now = clock()
    return [line(e, now) for e in events]

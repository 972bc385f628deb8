"""BlockWindowAverage a batch at a time (issue 35), bit-identical to
:class:`~reuse.tasks.stats.BlockWindowAverage`.

The task's mean is ``fsum / count``, its pane the exact sum as :func:`exact_partials`, both
functions of the block's *exact* sum: whatever order the values are added in, the results are
the same bits. So the kernel is free to sum a batch's blocks as columns. It proves each sum
exact with error-free transformations: a block's values are added into a double-double
``hi + lo`` with Knuth's TwoSum (``s = a + b`` and its rounding error ``e``, exactly
``a + b = s + e``), the error into ``lo`` the same way, and a block whose every addition into
``lo`` was exact (no second-order error: almost always, for sensor readings) has exact sum
``hi + lo``; one more TwoSum gives ``round(S)`` (what ``fsum`` returns, correctly rounded) and
the rest, which is exactly what :func:`exact_partials` produces. Blocks for which that fails
(a second-order error, or values beyond 2**1000, where ``fsum`` might overflow) go through
the task's own code on the task's own list.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Protocol, cast

import numpy as np

from reuse.tasks.columnar.batch import MISSING, Batch, object_column
from reuse.tasks.columnar.kernel import Kernel
from reuse.tasks.columnar.lanes import Lanes
from reuse.tasks.columnar.observe import Observations, constant, derived, explode
from reuse.tasks.stats import BlockWindowAverage, exact_partials, read_pane

__all__ = ["BlockWindowAverageKernel", "exact_sums"]

#: values at most this large (and finite) cannot overflow a sum of fewer than 2**23 of them
_SAFE = 2.0**1000

#: above this many values per block (or below this many blocks per value position) a block is
#: summed by :func:`exact_partials` itself: a C loop per block beats a numpy call per position
_COLUMNS_PER_BLOCK = 1 / 8


class SeriesRuns(Protocol):
    """What :meth:`BlockWindowAverageKernel._open` reads of a layout (a :class:`Lanes`, or a
    window group member's share of one, :mod:`reuse.tasks.columnar.slices`): observation
    indices series after series (``order``) and where each series' run begins (``bounds``,
    one more than the series)."""

    @property
    def order(self) -> np.ndarray: ...

    @property
    def bounds(self) -> np.ndarray: ...


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``s = a + b`` rounded and its error ``e``: ``a + b == s + e`` exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@np.errstate(all="ignore")  # an overflowing row is unproven (inf - inf is NaN, not 0)
def exact_sums(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``values`` (zero-padded): ``s = round(S)`` and ``e = S - s`` of its exact
    sum ``S``, and whether they are proven (every error added exactly, every value below
    2**1000); ``[s, e]`` without its zeros is then :func:`exact_partials` of the row.

    >>> s, e, ok = exact_sums(np.array([[1e16, 1.0, -1e16], [0.1, 0.2, 0.3]]))
    >>> s.tolist(), e.tolist(), ok.tolist()
    ([1.0, 0.6], [0.0, 2.7755575615628914e-17], [True, True])
    """
    rows, width = values.shape
    hi, lo = np.zeros(rows), np.zeros(rows)
    ok = (np.abs(values) <= _SAFE).all(axis=1)
    for t in range(width):
        hi, err = _two_sum(hi, values[:, t])
        lo, err2 = _two_sum(lo, err)
        ok &= err2 == 0
    s, e = _two_sum(hi, lo)
    return s, e, ok


class BlockWindowAverageKernel(Kernel):
    """:class:`~reuse.tasks.stats.BlockWindowAverage` a batch at a time, bit-identical.

    Blocks are laid out per series: with raw values the ``i``-th value of a series completes
    a block when it brings the count to ``window`` (so every ``window``-th after the first
    completion); an input carrying a pane counts as its ``n`` values and may overshoot, so
    with panes a short int scan over each series' counts finds the boundaries. The completed
    blocks' exact sums are then proven together (:func:`exact_sums`, one numpy step per value
    position, for short blocks) or by :func:`exact_partials` per block (long ones), and the
    outputs built as columns. Per series, the open block left at the end is written back in
    the task's own form (its values appended, folded into partials every :attr:`FOLD` as the
    task folds them) and the blocks dict keeps the task's key order (a block completed and
    begun again moves to the end). Rows that carry a pane are read by :func:`read_pane`
    itself, one per row.
    """

    type_name = "BlockWindowAverage"

    def run(self, batch: Batch) -> Batch:
        task = cast(BlockWindowAverage, self.task)
        ob = explode(batch, task.fields, task.group_by)
        if not ob.m:
            return Batch.empty()
        window = task.window
        lanes = Lanes(ob.kid, len(ob.keys))
        carried = [task.blocks.get(key) for key in ob.keys]
        count0 = np.array([b[0] if b else 0 for b in carried], dtype=np.int64)
        weight, segments = _panes(batch, ob)
        # per observation in series order: block number within its series, completes?
        order, kid = lanes.order, ob.kid[lanes.order]
        if segments is None:
            first = np.maximum(0, window - count0 - 1)[kid]  # step completing block 0
            step = lanes.step[order]
            blkno = np.where(step <= first, 0, 1 + (step - first - 1) // window)
            done = (step >= first) & ((step - first) % window == 0)
        else:
            blkno, done = _scan(weight[order], kid, count0, window)
        # global block ids: series after series, blocks in order (non-decreasing in `order`)
        ends = lanes.bounds[1:] - 1
        nblk = blkno[ends] + 1
        base = np.cumsum(nblk) - nblk
        gb = base[kid] + blkno
        starts = np.flatnonzero(np.r_[True, gb[1:] != gb[:-1]])
        last = np.r_[starts[1:], len(gb)] - 1  # each block's last observation (in `order`)
        count = np.add.reduceat(weight[order], starts)
        head = blkno[starts] == 0
        count[head] += count0[kid[starts[head]]]
        closed = np.flatnonzero(done[last])
        outputs = self._closed(task, ob, lanes, carried, weight, segments, gb, starts, last,
                               closed, count, blkno)
        self._open(task, ob, lanes, carried, weight, segments, gb, starts, done, blkno)
        emit = order[last[closed]]
        sort = np.argsort(emit, kind="stable")
        mean, panes = outputs
        rows = emit[sort]
        return derived(batch, ob.rows[rows], obs=ob.names[rows],
                       value=np.array(mean, dtype=np.float64)[sort],
                       analytic=constant("BWA", len(rows)),
                       pane=object_column(panes)[sort])

    def _closed(self, task: BlockWindowAverage, ob: Observations, lanes: Lanes,
                carried: list[list[Any] | None], weight: np.ndarray,
                segments: list[list[float]] | None, gb: np.ndarray, starts: np.ndarray,
                last: np.ndarray, closed: np.ndarray, count: np.ndarray, blkno: np.ndarray
                ) -> tuple[list[float], list[Any]]:
        """Mean and pane (or :data:`MISSING`) of each completed block, in block order."""
        order, kid = lanes.order, ob.kid[lanes.order]
        if not len(closed):
            return [], []
        # the values of each completed block: its series' carried floats (block 0), then its
        # observations' (a pane's partials for a pane); a block's id is its index in `starts`
        wanted = np.zeros(len(starts), dtype=bool)
        wanted[closed] = True
        obs_in = np.flatnonzero(wanted[gb])
        heads = [b for b in closed[blkno[starts[closed]] == 0].tolist()
                 if carried[int(kid[starts[b]])] is not None]
        held = [cast(list, carried[int(kid[starts[b]])])[1:] for b in heads]
        held_gb = np.repeat(np.array(heads, dtype=np.int64), [len(h) for h in held])
        if segments is None:
            vals = ob.values[order[obs_in]]
            val_gb = gb[obs_in]
        else:
            segs = [segments[i] for i in order[obs_in].tolist()]
            vals = np.fromiter(chain.from_iterable(segs), dtype=np.float64,
                               count=sum(map(len, segs)))
            val_gb = np.repeat(gb[obs_in], [len(s) for s in segs])
        flat = np.concatenate([np.fromiter(chain.from_iterable(held), dtype=np.float64,
                                           count=len(held_gb)), vals])
        flat_gb = np.concatenate([held_gb, val_gb])
        by = np.argsort(flat_gb * 2 + (np.arange(len(flat_gb)) >= len(held_gb)), kind="stable")
        flat, flat_gb = flat[by], flat_gb[by]
        # row of each completed block, and each value's position in it
        row = np.full(len(starts), -1, dtype=np.int64)
        row[closed] = np.arange(len(closed))
        brow = row[flat_gb]
        first = np.searchsorted(flat_gb, flat_gb, side="left")
        pos = np.arange(len(flat)) - first
        width = int(pos.max()) + 1 if len(pos) else 0
        n_closed = len(closed)
        total = count[closed].tolist()
        sums: list[list[float] | None] = [None] * n_closed
        if width <= n_closed * _COLUMNS_PER_BLOCK or not width:
            grid = np.zeros((n_closed, max(width, 1)))
            grid[brow, pos] = flat
            s, e, ok = exact_sums(grid)
            for i, si, ei, oki in zip(range(n_closed), s.tolist(), e.tolist(), ok.tolist(),
                                      strict=True):
                if oki:
                    sums[i] = [] if si == 0 else [si] if ei == 0 else [si, ei]
        else:
            cuts = np.searchsorted(brow, np.arange(1, n_closed))
            small = np.bincount(brow, weights=np.abs(flat) > _SAFE, minlength=n_closed) == 0
            for i, (part, safe) in enumerate(zip(np.split(flat, cuts), small.tolist(),
                                                 strict=True)):
                if safe:
                    sums[i] = exact_partials(part.tolist())
        means: list[float] = []
        panes: list[Any] = []
        for i, parts in enumerate(sums):
            if parts is None:  # unproven: the task's own block, grown and closed its way
                b = int(closed[i])
                lo, hi = int(starts[b]), int(last[b]) + 1
                k = int(kid[lo])
                start = carried[k] if blkno[lo] == 0 else None
                block = [0] if start is None else list(start)
                obs = order[lo:hi].tolist()
                _grow(block, [(int(weight[o]), [float(ob.values[o])] if segments is None
                               else segments[o]) for o in obs], task.FOLD, closes=True)
                mean, pane = _close(block)
            else:
                mean = (parts[0] if parts else 0.0) / total[i]
                pane = {"n": total[i], "sum": parts}
            means.append(mean)
            panes.append(pane)
        return means, panes

    def _open(self, task: BlockWindowAverage, ob: Observations, lanes: SeriesRuns,
              carried: list[list[Any] | None], weight: np.ndarray,
              segments: list[list[float]] | None, gb: np.ndarray, starts: np.ndarray,
              done: np.ndarray, blkno: np.ndarray) -> None:
        """Write each series' block left open back, in the task's dict order."""
        ends = lanes.bounds[1:] - 1  # each series' last observation (in `order`)
        lo = starts[gb[ends]]  # and the first of its last block
        closed = done[ends].tolist()
        fresh = (blkno[lo] != 0).tolist()
        los, his = lo.tolist(), (ends + 1).tolist()
        order = lanes.order.tolist()
        values = ob.values[lanes.order].tolist()
        blocks = task.blocks
        begun: list[int] = []  # blocks begun in the batch: where, which series, the block
        keys: list[str] = []
        made: list[list[Any]] = []
        for k, key in enumerate(ob.keys):
            if closed[k]:
                blocks.pop(key, None)
                continue
            start = None if fresh[k] else carried[k]
            a, b = los[k], his[k]
            if start is None:
                blocks.pop(key, None)
                block: list[Any] = [0]
                begun.append(order[a])
                keys.append(key)
                made.append(block)
            else:
                block = start  # the task's own list, grown in place as process grows it
            if segments is not None:
                _grow(block, [(int(weight[o]), segments[o]) for o in order[a:b]], task.FOLD,
                      closes=False)
            elif len(block) + b - a <= task.FOLD:  # no fold on the way
                block[0] += b - a
                block.extend(values[a:b])
            else:
                _grow(block, [(1, [v]) for v in values[a:b]], task.FOLD, closes=False)
        for i in np.argsort(begun, kind="stable").tolist():
            blocks[keys[i]] = made[i]


def _panes(batch: Batch, ob: Observations) -> tuple[np.ndarray, list[list[float]] | None]:
    """Each observation's count (1, or its row's pane's ``n``) and, when some row carries a
    pane, each one's floats (its value, or the pane's partials); ``None`` without panes."""
    weight = np.ones(ob.m, dtype=np.int64)
    col = batch.cols.get("pane")
    if col is None:
        return weight, None
    rows = np.flatnonzero(batch.has("pane"))
    if not len(rows):
        return weight, None
    read: dict[int, tuple[int, list[float]] | None] = {
        r: read_pane(p) for r, p in zip(rows.tolist(), col[rows].tolist(), strict=True)}
    segments: list[list[float]] = []
    for i, (r, v) in enumerate(zip(ob.rows.tolist(), ob.values.tolist(), strict=True)):
        pane = read.get(r)
        if pane is None:
            segments.append([v])
        else:
            weight[i] = pane[0]
            segments.append(pane[1])
    return weight, segments


def _scan(weight: np.ndarray, kid: np.ndarray, count0: np.ndarray, window: int
          ) -> tuple[np.ndarray, np.ndarray]:
    """Block number and completion of observations (in series order) whose counts vary."""
    blkno = np.empty(len(kid), dtype=np.int64)
    done = np.empty(len(kid), dtype=bool)
    prev, running, blk = -1, 0, 0
    c0 = count0.tolist()
    for i, (k, w) in enumerate(zip(kid.tolist(), weight.tolist(), strict=True)):
        if k != prev:
            prev, running, blk = k, c0[k], 0
        running += w
        blkno[i] = blk
        done[i] = running >= window
        if done[i]:
            running, blk = 0, blk + 1
    return blkno, done


def _grow(block: list[Any], adds: list[tuple[int, list[float]]], fold: int, *,
          closes: bool) -> None:
    """The task's own block update for each ``(count, floats)`` in turn (the last completing
    the block when ``closes``: no fold after it)."""
    for i, (c, floats) in enumerate(adds):
        block.extend(floats)
        block[0] += c
        if closes and i == len(adds) - 1:
            break
        if len(block) > fold:
            try:
                block[1:] = exact_partials(block[1:])
            except OverflowError:
                pass


def _close(block: list[Any]) -> tuple[float, Any]:
    """The task's own output of a completed block: mean and pane (:data:`MISSING` when the
    exact sum is beyond the float range)."""
    count, parts = block[0], block[1:]
    try:
        parts = exact_partials(parts)
        return (parts[0] if parts else 0.0) / count, {"n": count, "sum": parts}
    except OverflowError:
        return sum(parts) / count, MISSING

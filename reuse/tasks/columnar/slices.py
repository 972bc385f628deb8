"""Block averages of different windows over one stream, in one pass (issue 35, item 3).

Many tenants average one stream over their own window (``BlockWindowAverage`` of 5, 10, 20
values, the same ``fields`` and ``group_by``). Run apart, each explodes the batch into its
observations, groups them by series and sums its blocks. Scotty's stream slicing shares that
work: per series, the union of every member's block boundaries cuts the values into *slices*;
each slice is summed once, and a member's block sum is the sum of its slices. An extra window
then costs a combination of a few slice sums per block, not another pass over the values.

Why it is exact, and bit-identical to each member run alone (through
:class:`~reuse.tasks.columnar.blocks.BlockWindowAverageKernel`, and so to the per-event task):
a block's outputs, ``fsum / count`` and the pane ``exact_partials``, depend on the block's
*exact* sum ``S`` only. A slice's exact sum ``S_q`` is proven as ``s_q + e_q`` with
:func:`~reuse.tasks.columnar.blocks.exact_sums` (TwoSum into a double-double, every error
added exactly), or, for long slices, as :func:`~reuse.tasks.stats.exact_partials` (two
floats at most). A block is a run of whole slices (its own boundaries are among the cuts),
plus, for a series' first block, the floats its member carried from the last batch (state
``[count, floats...]``, whose exact sum is the open block's sum). So ``S`` is the exact sum of
the terms ``carried + [s_q, e_q for each slice q]``; summing them with ``exact_sums`` again,
when that is proven, gives ``s = round(S)`` and ``e = S - s``, which is exactly
``exact_partials`` of the block's values (see :mod:`~reuse.tasks.columnar.blocks`); for a
few blocks of many slices, ``exact_partials`` of the terms is taken directly (it depends on
``S`` only). Nothing is rounded on the way that is not proven exact; the order of the terms
does not matter.

What falls back (the member's own kernel on its own rows, its state untouched until then):
a member any of whose completed blocks is unproven (a slice or a combination with a
second-order error in its double-double, a value, slice sum or carried float beyond
``2**1000``, a long slice whose sum needs more than two partials); every member when the rows carry a ``pane`` (a pane counts as ``n``
values and may overshoot a block: boundaries then need the kernel's count scan, and the
residual path of the containment rule is where panes flow, not sibling windows); members of
different ``fields`` or ``group_by`` (they read different series), and a group of one.

A member's open block (the values after its last completed block) is written back in the
task's own form by the kernel's own code (``_open``): the values themselves, folded as the
task folds them, not slice sums, so its state is the per-event task's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reuse.tasks.columnar import blocks
from reuse.tasks.columnar.batch import Batch, object_column
from reuse.tasks.columnar.blocks import BlockWindowAverageKernel, exact_sums
from reuse.tasks.columnar.lanes import Lanes
from reuse.tasks.columnar.observe import Observations, constant, derived, explode
from reuse.tasks.stats import BlockWindowAverage, exact_partials

__all__ = ["run_sliced", "slice_cuts"]


@dataclass(frozen=True)
class _Member:
    """One member's observations in the union's series layout, and its blocks.

    ``pos``: its observations' positions in the union's ``lanes.order`` (series after series,
    each a contiguous run); ``order`` = ``lanes.order[pos]`` and ``bounds``: its runs (what
    ``_open`` reads); ``keys`` and ``carried``: each run's series key and carried block (the
    task's own list, or ``None``); ``starts``/``last``: each block's first and last index
    into ``pos``; ``gb``: each observation's block; ``blkno``/``done`` as in the kernel."""

    pos: np.ndarray
    order: np.ndarray
    bounds: np.ndarray
    keys: list[str]
    carried: list[list[Any] | None]
    count0: np.ndarray
    run: np.ndarray
    starts: np.ndarray
    last: np.ndarray
    gb: np.ndarray
    blkno: np.ndarray
    done: np.ndarray


def _member(task: BlockWindowAverage, ob: Observations, lanes: Lanes, i: int, j: int
            ) -> _Member | None:
    """The layout and blocks of the member taking rows ``[i, j)``; ``None`` when it has no
    observation there. Its block numbers are the kernel's, counted from its own first
    observation per series (the carried count included)."""
    oi, oj = np.searchsorted(ob.rows, [i, j], side="left").tolist()
    if oi >= oj:
        return None
    order = lanes.order
    pos = np.flatnonzero((order >= oi) & (order < oj))
    kid = ob.kid[order[pos]]
    new = np.r_[True, kid[1:] != kid[:-1]]
    heads = np.flatnonzero(new)
    bounds = np.r_[heads, len(pos)]
    run = np.repeat(np.arange(len(heads)), np.diff(bounds))
    keys = [ob.keys[k] for k in kid[heads].tolist()]
    carried = [task.blocks.get(key) for key in keys]
    count0 = np.array([b[0] if b else 0 for b in carried], dtype=np.int64)
    step = np.arange(len(pos)) - heads[run]
    first = np.maximum(0, task.window - count0 - 1)[run]  # step completing block 0
    blkno = np.where(step <= first, 0, 1 + (step - first - 1) // task.window)
    done = (step >= first) & ((step - first) % task.window == 0)
    begins = new.copy()
    begins[1:] |= done[:-1]
    starts = np.flatnonzero(begins)
    last = np.r_[starts[1:], len(pos)] - 1
    return _Member(pos, order[pos], bounds, keys, carried, count0, run, starts, last,
                   np.cumsum(begins) - 1, blkno, done)


def slice_cuts(series: np.ndarray, blocks_of: Sequence[tuple[np.ndarray, np.ndarray]]
               ) -> np.ndarray:
    """The slices' bounds: every series bound (``series``, in positions of the union's
    series layout, ending with its length) and every member's block starts and ends (each
    ``(first, last)`` position of its blocks), sorted without repeats; slice ``q`` is
    ``[cuts[q], cuts[q + 1])``, so every block is a run of whole slices.

    >>> slice_cuts(np.array([0, 12]), [(np.array([0, 5, 10]), np.array([4, 9, 11])),
    ...                                 (np.array([0, 3, 6, 9]), np.array([2, 5, 8, 11]))])
    array([ 0,  3,  5,  6,  9, 10, 12])
    """
    parts = [series]
    for first, last in blocks_of:
        parts += [first, last + 1]
    return np.unique(np.concatenate(parts))


def _slice_sums(values: np.ndarray, cuts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each slice's exact sum as ``s + e`` and whether it is proven, as the kernel sums its
    blocks: :func:`exact_sums` over a grid for short slices, :func:`exact_partials` per slice
    for long ones (a sum needing more than two partials is left unproven)."""
    lengths = np.diff(cuts)
    n = len(lengths)
    width = int(lengths.max()) if n else 0
    if width <= n * blocks._COLUMNS_PER_BLOCK:
        q = np.repeat(np.arange(n), lengths)
        grid = np.zeros((n, max(width, 1)))
        grid[q, np.arange(len(values)) - cuts[q]] = values
        return exact_sums(grid)
    s, e, ok = np.zeros(n), np.zeros(n), np.zeros(n, dtype=bool)
    for at, (a, b) in enumerate(zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True)):
        part = values[a:b]
        if bool((np.abs(part) <= blocks._SAFE).all()):
            parts = exact_partials(part.tolist())
            if len(parts) <= 2:
                s[at], e[at] = (parts + [0.0, 0.0])[:2]
                ok[at] = True
    return s, e, ok


def _combined(m: _Member, closed: np.ndarray, cuts: np.ndarray,
              sums: tuple[np.ndarray, np.ndarray, np.ndarray]) -> list[list[float]] | None:
    """The exact partials of each completed block (``closed``: block indices), from its
    slices' sums and its carried floats; ``None`` unless every one is proven. The terms are
    summed as the kernel sums a block's values: :func:`exact_sums` over a grid, or, for few
    blocks of many slices, :func:`exact_partials` of each (``exact_partials`` of the block's
    values by definition, as its result depends on the exact sum only; no term is beyond
    ``2**1000``, so no step overflows)."""
    s, e, ok = sums
    lo = np.searchsorted(cuts, m.pos[m.starts[closed]], side="right") - 1
    hi = np.searchsorted(cuts, m.pos[m.last[closed]], side="right") - 1
    unproven = np.r_[0, np.cumsum(~ok)]
    if bool((unproven[hi + 1] - unproven[lo]).any()):
        return None
    n = len(closed)
    run = m.run[m.starts[closed]]
    head = m.blkno[m.starts[closed]] == 0
    held = [(c[1:] if h and (c := m.carried[r]) is not None else [])
            for r, h in zip(run.tolist(), head.tolist(), strict=True)]
    nh = np.array([len(x) for x in held], dtype=np.int64)
    nq = hi - lo + 1
    grid = np.zeros((n, int((nh + 2 * nq).max()) if n else 1))
    row = np.repeat(np.arange(n), nq)
    k = np.arange(len(row)) - np.repeat(np.cumsum(nq) - nq, nq)
    col = nh[row] + 2 * k
    grid[row, col] = s[lo[row] + k]
    grid[row, col + 1] = e[lo[row] + k]
    for r in np.flatnonzero(nh).tolist():
        grid[r, :nh[r]] = held[r]
    if grid.shape[1] > n * blocks._COLUMNS_PER_BLOCK:  # few blocks of many slices: fsum each
        if not bool((np.abs(grid) <= blocks._SAFE).all()):
            return None
        return [exact_partials(row) for row in grid.tolist()]
    total, rest, proven = exact_sums(grid)
    if not bool(proven.all()):
        return None
    return [[] if si == 0 else [si] if ei == 0 else [si, ei]
            for si, ei in zip(total.tolist(), rest.tolist(), strict=True)]


def _alone(task: BlockWindowAverage, batch: Batch, i: int, j: int) -> Batch:
    """The member's own kernel on its own rows (views of the batch's columns)."""
    rows = batch if i == 0 and j == batch.n else \
        Batch(j - i, {k: c[i:j] for k, c in batch.cols.items()})
    return BlockWindowAverageKernel(task).run(rows) if rows.n else Batch.empty()


def _outputs(task: BlockWindowAverage, batch: Batch, ob: Observations, m: _Member,
             cuts: np.ndarray, sums: tuple[np.ndarray, np.ndarray, np.ndarray]) -> Batch | None:
    """The member's outputs, its open blocks written back into its task; ``None`` (the task
    untouched) when some completed block is unproven."""
    closed = np.flatnonzero(m.done[m.last])
    parts = _combined(m, closed, cuts, sums) if len(closed) else []
    if parts is None:
        return None
    count = m.last[closed] - m.starts[closed] + 1
    head = m.blkno[m.starts[closed]] == 0
    count[head] += m.count0[m.run[m.starts[closed]][head]]
    means: list[float] = []
    panes: list[Any] = []
    for p, n in zip(parts, count.tolist(), strict=True):
        means.append((p[0] if p else 0.0) / n)
        panes.append({"n": n, "sum": p})
    view = Observations(ob.rows, ob.names, ob.values, ob.kid, m.keys)
    BlockWindowAverageKernel(task)._open(task, view, m, m.carried, np.ones(0, dtype=np.int64),
                                         None, m.gb, m.starts, m.done, m.blkno)
    emit = m.order[m.last[closed]]
    sort = np.argsort(emit, kind="stable")
    rows = emit[sort]
    return derived(batch, ob.rows[rows], obs=ob.names[rows],
                   value=np.array(means, dtype=np.float64)[sort],
                   analytic=constant("BWA", len(rows)), pane=object_column(panes)[sort])


def run_sliced(tasks: Sequence[BlockWindowAverage], batch: Batch,
               spans: Sequence[tuple[int, int]]) -> list[Batch]:
    """Each member's outputs over its rows ``spans[m] = (i, j)`` of ``batch``, exactly what
    ``BlockWindowAverageKernel(tasks[m]).run`` of those rows gives, each task's state
    advanced as that run advances it (the module docstring says why and what falls back).

    The batch is exploded and laid out by series once; each member's blocks are numbered in
    that layout, the union of their bounds cuts the values into slices, summed once.

    Examples
    --------
    >>> make = lambda w: BlockWindowAverage({"window": w, "fields": ["t"], "group_by": ["obs"]})
    >>> b = Batch.from_events([{"seq": i, "obs": "t", "value": 0.1 * i} for i in range(7)])
    >>> three, five = make(3), make(5)
    >>> out = run_sliced([three, five], b, [(0, 7), (1, 7)])
    >>> [o["value"] for o in out[0].to_events()], [o["pane"] for o in out[1].to_events()]
    ([0.10000000000000002, 0.4000000000000001], [{'n': 5, 'sum': [1.5, 8.326672684688674e-17]}])
    >>> three.blocks, five.blocks
    ({'t': [1, 0.6000000000000001]}, {'t': [1, 0.6000000000000001]})
    """
    if len(tasks) != len(spans) or len({id(t) for t in tasks}) != len(tasks):
        raise ValueError("run_sliced needs one span per member, and distinct member tasks")
    head = tasks[0] if tasks else None
    if (head is None or len(tasks) == 1
            or any(t.fields != head.fields or t.group_by != head.group_by for t in tasks)
            or _panes_in(batch, spans)):
        return [_alone(t, batch, i, j) for t, (i, j) in zip(tasks, spans, strict=True)]
    ob = explode(batch, head.fields, head.group_by)
    if not ob.m:
        return [Batch.empty() for _ in tasks]
    lanes = Lanes(ob.kid, len(ob.keys))
    members = [_member(t, ob, lanes, i, j) for t, (i, j) in zip(tasks, spans, strict=True)]
    cuts = slice_cuts(lanes.bounds, [(m.pos[m.starts], m.pos[m.last])
                                     for m in members if m is not None])
    sums = _slice_sums(ob.values[lanes.order], cuts)
    out = []
    for t, (i, j), m in zip(tasks, spans, members, strict=True):
        got = Batch.empty() if m is None else _outputs(t, batch, ob, m, cuts, sums)
        out.append(_alone(t, batch, i, j) if got is None else got)
    return out


def _panes_in(batch: Batch, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether a row some member takes carries a ``pane`` key (then every member runs alone)."""
    if "pane" not in batch.cols:
        return False
    has = batch.has("pane")
    return any(bool(has[i:j].any()) for i, j in spans)

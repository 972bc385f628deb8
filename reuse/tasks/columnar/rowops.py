"""What the filter, predict and ETL kernels share: the per-event helpers' semantics over whole
columns, and an exact way out.

Every kernel here must give what ``process`` gives, row for row, and the per-event code reads
its inputs loosely (``event.get``, :func:`~reuse.tasks.base.as_float`: ``None``, a bool or a
non-numeric string is "no number", a numeric string is one). So these helpers read a column the
way that code reads one value: :func:`floats` is ``as_float`` over a column (typed columns in
one numpy conversion, only the odd rows of an ``object`` column one at a time), :func:`get` is
``event.get`` (a :data:`~reuse.tasks.columnar.batch.MISSING` row reads as the default).

A kernel meeting what its vectorized path does not model (a ``fields`` that is not a dict, a
key that cannot be hashed, a sum that overflows) raises :class:`Fallback` *before* it changes
the task's state; :class:`Vectorized` then runs that batch through ``process``, which gives the
reference's outputs, state and exception by definition. ``fallbacks`` counts those batches, so
a test on real data can assert the vectorized path ran.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from reuse.tasks.base import Event, Task, as_float
from reuse.tasks.columnar.batch import MISSING, Batch, object_column
from reuse.tasks.columnar.kernel import Kernel, PerEvent

__all__ = ["ACCOUNTING", "Fallback", "Vectorized", "get", "missing", "present", "floats",
           "float_or_none", "constant", "codes", "equals", "changes", "merge_rows", "events_at"]

#: The keys :func:`~reuse.tasks.base.derive` carries from an input event to its output.
ACCOUNTING = ("src", "seq", "ts", "sensor", "meta")


class Fallback(Exception):  # noqa: N818 - a signal, not an error
    """The batch holds a row the vectorized path does not model: run it per event."""


class Vectorized(Kernel):
    """A kernel whose :meth:`compute` may raise :class:`Fallback` (before touching the task's
    state); the batch then runs through the task's ``process``, one event at a time."""

    def __init__(self, task: Task) -> None:
        super().__init__(task)
        self.fallbacks = 0

    def run(self, batch: Batch) -> Batch:
        if batch.n == 0:
            return Batch.empty()
        try:
            return self.compute(batch)
        except Fallback:
            self.fallbacks += 1
            return PerEvent(self.task).run(batch)

    def compute(self, batch: Batch) -> Batch:
        raise NotImplementedError


def get(batch: Batch, name: str, default: Any = None) -> np.ndarray:
    """Column ``name`` as ``event.get(name, default)`` reads it: ``default`` where a row lacks
    the key (typed columns are returned as they are, with no copy)."""
    col = batch.cols.get(name)
    if col is None:
        return object_column([default] * batch.n)
    if col.dtype != object:
        return col
    absent = missing(col)
    if not absent.any():
        return col
    col = col.copy()
    col[absent] = default
    return col


def missing(col: np.ndarray) -> np.ndarray:
    """Where ``col`` is :data:`MISSING` (what ``~batch.has`` gives, in one numpy comparison:
    only ``MISSING`` equals ``MISSING``)."""
    if col.dtype != object:
        return np.zeros(len(col), dtype=bool)
    return np.asarray(col == MISSING, dtype=bool)


def present(batch: Batch, name: str) -> np.ndarray:
    """Which rows hold key ``name``: :meth:`Batch.has`, with :func:`missing`."""
    col = batch.cols.get(name)
    if col is None:
        return np.zeros(batch.n, dtype=bool)
    return ~missing(col)


_PLAIN = frozenset({float, int})  # not bool: as_float reads no number in a bool
_NOTHING = frozenset({type(None), type(MISSING), bool})  # as_float: None, whatever the value


def floats(col: np.ndarray | list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """``as_float`` of every value of ``col`` (a column, or a list of values; ``MISSING``
    read as ``None``): the numbers as ``float64`` (NaN where there is none) and where there
    is one.

    ``float(int)`` and numpy's int64-to-float64 cast both round to nearest, so typed columns
    convert in one call; an ``object`` column converts its ``float`` and ``int`` rows in one
    call too (a Python int too large for a float raises ``OverflowError`` either way, as
    ``as_float`` does), has no number where it holds ``None`` or a bool, and calls
    ``as_float`` only on the other rows (strings and the like).
    """
    n = len(col)
    if isinstance(col, list):
        kinds = list(map(type, col))
        if set(kinds) == {float}:
            return np.array(col, dtype=np.float64), np.ones(n, dtype=bool)
        col = object_column(col)
    elif col.dtype == np.float64:
        return col, np.ones(n, dtype=bool)
    elif col.dtype.kind in "iu":
        return col.astype(np.float64), np.ones(n, dtype=bool)
    elif col.dtype != object:
        raise Fallback(f"a {col.dtype} column")
    else:
        kinds = list(map(type, col))
    if set(kinds) <= _PLAIN:
        return col.astype(np.float64), np.ones(n, dtype=bool)
    plain = np.fromiter(map(_PLAIN.__contains__, kinds), dtype=bool, count=n)
    num = np.full(n, np.nan)
    ok = plain.copy()
    if plain.any():
        num[plain] = col[plain].astype(np.float64)
    odd = ~plain & ~np.fromiter(map(_NOTHING.__contains__, kinds), dtype=bool, count=n)
    for i in np.flatnonzero(odd).tolist():  # strings and the like: as_float itself
        x = as_float(col[i])
        if x is not None:
            num[i], ok[i] = x, True
    return num, ok


def float_or_none(num: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """A column of ``num`` where ``ok``, ``None`` elsewhere (typed when every row has one)."""
    if ok.all():
        return num
    col = num.astype(object)
    col[~ok] = None
    return col


def constant(value: Any, n: int) -> np.ndarray:
    """``n`` rows of one value (an ``object`` column: what :meth:`Batch.from_events` makes of
    a str, and the value is not copied)."""
    col = np.empty(n, dtype=object)
    col.fill(value)
    return col


def codes(items: Iterable[Hashable]) -> tuple[np.ndarray, list[Any]]:
    """Dense codes of ``items`` in first-seen order and the distinct items by code. Keys
    compare as a dict compares them, which is how the per-event code looks them up; an
    unhashable item is a :class:`Fallback`."""
    seen: dict[Any, int] = {}
    setdefault = seen.setdefault
    try:
        out = [setdefault(k, len(seen)) for k in items]
    except TypeError as e:
        raise Fallback("an unhashable key") from e
    return np.asarray(out, dtype=np.intp), list(seen)


def equals(batch: Batch, name: str, value: Any) -> np.ndarray:
    """Rows where ``event.get(name) == value``, with Python's ``==`` (``1 == 1.0``)."""
    col = batch.cols.get(name)
    if col is None:
        return np.full(batch.n, None == value)  # noqa: E711 - event.get's None, compared
    if col.dtype == object and (value is None or isinstance(value, (str, int, float))):
        eq = np.asarray(col == value, dtype=bool)  # numpy compares a scalar with each object
        if value is None:
            eq |= missing(col)
        return eq
    # a list or dict value would broadcast: Python's own comparison, row by row
    vals = get(batch, name).tolist()
    return np.fromiter(map(operator.eq, vals, itertools.repeat(value)), dtype=bool,
                       count=batch.n)


def changes(a: np.ndarray) -> np.ndarray:
    """Where a run of equal values starts in ``a`` (row 0 always; ``np.r_`` is slower)."""
    out = np.empty(len(a), dtype=bool)
    out[:1] = True
    np.not_equal(a[1:], a[:-1], out=out[1:])
    return out


def events_at(batch: Batch, rows: np.ndarray) -> list[Event]:
    """The events of ``rows``, as dicts (for the rare rows a kernel hands to ``process``)."""
    return batch.take(np.asarray(rows, dtype=np.intp)).to_events()


def merge_rows(parts: Sequence[tuple[np.ndarray, Batch]]) -> Batch:
    """Outputs made apart put back in input order: each part is ``(rows, out)``, ``out``
    holding one output per entry of ``rows`` (the input row it comes from, non-decreasing
    within a part). A stable sort on the rows keeps each input row's outputs in their order."""
    parts = [(r, b) for r, b in parts if b.n]
    if not parts:
        return Batch.empty()
    if len(parts) == 1:
        return parts[0][1]
    rows = np.concatenate([r for r, _ in parts])
    return Batch.concat([b for _, b in parts]).take(np.argsort(rows, kind="stable"))

"""A batch of events as columns (issue 35): what a vectorized kernel reads and writes.

The per-event tasks pass plain dicts, one at a time; a micro-batch holds hundreds of events per
source, and most RIoTBench tasks compute a column operation. A :class:`Batch` holds ``n``
events as one 1-D numpy array per key: ``cols["value"][i]`` is event ``i``'s ``value``.

Why numpy arrays and not Arrow record batches: the events are not of one schema. A ``value`` is
a float, a string, ``None`` or a bool; ``meta`` and ``fields`` are dicts; an event may lack a
key another one has (``derive`` copies only the keys present). Arrow would need a union type
per column and a conversion at every kernel that reads Python objects. Numpy keeps both: a
typed column (``int64``, ``float64``, ``bool``) where every row holds that type, an ``object``
column otherwise, in which :data:`MISSING` marks a key the event lacks. Moving rows (a filter,
a fan-out, a reorder) is one ``take`` per column in C, whatever the column holds; arithmetic
runs on the typed columns. A ``meta`` dict shared by the observations of one message stays one
object, referenced from each row, as the per-event tasks share it.

The equivalence every kernel keeps: ``kernel.run(Batch.from_events(events)).to_events()`` is
``[out for e in events for out in task.process(e)]``, in that order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

__all__ = ["MISSING", "Batch", "object_column"]


class _Missing:
    """The one value marking, in an ``object`` column, a key its event does not have."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:  # pickled (to a Spark worker) it stays the one instance
        return "MISSING"


MISSING: Final = _Missing()


def object_column(values: Iterable[Any]) -> np.ndarray:
    """An ``object`` array of ``values`` as they are (a list or tuple is one element, not a
    row of its own, as ``np.array`` would make it)."""
    items = values if isinstance(values, list) else list(values)
    return np.fromiter(items, dtype=object, count=len(items))


def _column(values: list[Any]) -> np.ndarray:
    """The narrowest column for a key's values: ``int64`` when every one is an int (not a
    bool) that fits, ``float64`` when every one is a float, else ``object``."""
    kinds = {type(v) for v in values}
    if kinds == {int}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            return object_column(values)
    if kinds == {float}:
        return np.array(values, dtype=np.float64)
    return object_column(values)


@dataclass(frozen=True, eq=False)
class Batch:
    """``n`` events as columns, in order; a key absent from an event is :data:`MISSING` in an
    ``object`` column (typed columns have every row).

    Examples
    --------
    >>> b = Batch.from_events([{"seq": 1, "obs": "t", "value": 2.5}, {"seq": 2, "obs": "h"}])
    >>> b.n, b.cols["seq"].dtype, b.cols["value"][1]
    (2, dtype('int64'), MISSING)
    >>> b.to_events()
    [{'seq': 1, 'obs': 't', 'value': 2.5}, {'seq': 2, 'obs': 'h'}]
    >>> b.take(np.array([1, 1])).to_events()
    [{'seq': 2, 'obs': 'h'}, {'seq': 2, 'obs': 'h'}]
    """

    n: int
    cols: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, col in self.cols.items():
            if col.ndim != 1 or len(col) != self.n:
                raise ValueError(f"column {name!r} has shape {col.shape}, not ({self.n},)")

    # --- between events and columns -------------------------------------------------------

    @classmethod
    def from_events(cls, events: Sequence[Mapping[str, Any]]) -> Batch:
        """Columns of ``events`` (keys in first-seen order)."""
        keys: dict[str, None] = {}
        for e in events:
            keys.update(dict.fromkeys(e))
        cols = {k: _column([e.get(k, MISSING) for e in events])
                for k in keys}
        return cls(len(events), cols)

    def to_events(self) -> list[dict[str, Any]]:
        """The events again, as plain dicts of Python values (``int``/``float``, not numpy
        scalars), without the keys an event lacks."""
        names = list(self.cols)
        rows = zip(*(self.cols[k].tolist() for k in names), strict=True) if names else \
            ([] for _ in range(self.n))
        return [{k: v for k, v in zip(names, row, strict=True) if v is not MISSING}
                for row in rows]

    @classmethod
    def empty(cls) -> Batch:
        return cls(0, {})

    # --- rows -------------------------------------------------------------------------------

    def take(self, rows: np.ndarray) -> Batch:
        """The rows at ``rows`` (indices, repeats allowed, in that order; or a bool mask)."""
        idx = np.flatnonzero(rows) if rows.dtype == bool else rows
        return Batch(len(idx), {k: c[idx] for k, c in self.cols.items()})

    @staticmethod
    def concat(batches: Sequence[Batch]) -> Batch:
        """The rows of every batch, one after another; a column some batches lack is
        :data:`MISSING` in their rows."""
        parts = [b for b in batches if b.n]
        if not parts:
            return Batch.empty()
        if len(parts) == 1:
            return parts[0]
        names: dict[str, None] = {}
        for b in parts:
            names.update(dict.fromkeys(b.cols))
        cols = {}
        for k in names:
            pieces = [b.cols[k] if k in b.cols else object_column([MISSING] * b.n) for b in parts]
            kinds = {p.dtype for p in pieces}
            cols[k] = np.concatenate(pieces if len(kinds) == 1
                                     else [p.astype(object) for p in pieces])
        return Batch(sum(b.n for b in parts), cols)

    # --- columns ----------------------------------------------------------------------------

    def has(self, name: str) -> np.ndarray:
        """Which rows hold key ``name`` (a bool mask)."""
        col = self.cols.get(name)
        if col is None:
            return np.zeros(self.n, dtype=bool)
        if col.dtype != object:
            return np.ones(self.n, dtype=bool)
        return np.fromiter((v is not MISSING for v in col), dtype=bool, count=self.n)

    def with_columns(self, **cols: np.ndarray) -> Batch:
        """This batch with columns set (replaced or added, added ones last)."""
        return Batch(self.n, {**self.cols, **cols})

    def select(self, names: Iterable[str]) -> Batch:
        """Only the columns ``names`` this batch has, in that order."""
        return Batch(self.n, {k: self.cols[k] for k in names if k in self.cols})

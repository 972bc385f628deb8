"""Kernels of the filter tasks: RangeFilter and BloomFilterCheck, and their fused siblings.

Both filters decide each row on its own and pass a row they accept unchanged, so a batch's
output is ``batch.take(passed)`` (plus, for a ``null`` RangeFilter, the rejected rows nulled):
the work is the ``passed`` mask. Both also have a :meth:`fuse` classmethod, the columnar form of
:meth:`~reuse.tasks.base.Task.fuse` (issue 25, item 4): many sibling filters of one type, each
row's value read once, one selector (bool mask) per member; a member's own kernel turns its
selector into its outputs (:meth:`RangeFilterKernel.outputs`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from reuse.tasks.base import Task, TaskError, stable_hash64
from reuse.tasks.columnar.batch import MISSING, Batch
from reuse.tasks.columnar.rowops import (
    Vectorized,
    changes,
    codes,
    events_at,
    floats,
    get,
    merge_rows,
    present,
)
from reuse.tasks.filters import BloomFilter, BloomFilterCheck, RangeFilter

__all__ = ["Selectors", "RangeFilterKernel", "BloomFilterCheckKernel"]

T = TypeVar("T", bound=Task)

#: derive's keys and the observation: what a nulled observation keeps of its event
_NULLED_KEEPS = ("src", "seq", "ts", "sensor", "meta", "obs")


@dataclass(frozen=True)
class Selectors:
    """Many filters' decisions over one batch: ``select(batch)`` gives one bool mask per member
    (true where the member's ``process`` returns the very event), ``drops[i]`` whether member
    ``i`` gives nothing for a row it does not pass (:class:`~reuse.tasks.base.Predicates`,
    as columns)."""

    select: Callable[[Batch], list[np.ndarray]]
    drops: tuple[bool, ...]


def _members(cls: type[T], members: Sequence[Task]) -> list[T]:
    """``members``, checked to be built tasks of ``cls`` (what a fuse takes)."""
    out = []
    for t in members:
        if not isinstance(t, cls):
            raise TaskError(f"{cls.type_name} kernel: member {t!r} is not a {cls.type_name}")
        out.append(t)
    return out


# --- RangeFilter ---------------------------------------------------------------------------

class _Ranges:
    """The bounds of some RangeFilters as matrices (member x field), so one comparison
    decides every member on every observation: ``valid`` per (member, observation) is
    ``free | other | (low <= num <= high)``, ``free`` for a field the member does not range,
    ``other`` for a value that is neither a number nor ``None`` nor a bool (it passes,
    as in :meth:`RangeFilter.valid`); NaN compares false, as in Python."""

    def __init__(self, tasks: Sequence[RangeFilter]) -> None:
        fields = list(dict.fromkeys(f for t in tasks for f in t.ranges))
        self.col = {f: j for j, f in enumerate(fields)}
        self.none = len(fields)  # the column of a field no member ranges
        shape = (len(tasks), self.none + 1)
        self.low, self.high = np.zeros(shape), np.zeros(shape)
        self.free = np.ones(shape, dtype=bool)
        for i, t in enumerate(tasks):
            for f, (a, b) in t.ranges.items():
                j = self.col[f]
                self.low[i, j], self.high[i, j], self.free[i, j] = a, b, False

    def valid(self, keys: np.ndarray, values: np.ndarray) -> np.ndarray:
        """``valid(key, value)`` of every member (rows) for every observation (columns);
        ``keys`` are ``event.get("obs", "")`` (or a field name), ``values`` as read."""
        lookup = self.col.get
        c = np.fromiter(map(lookup, keys, itertools.repeat(self.none)), dtype=np.intp,
                        count=len(keys))
        ranged = np.flatnonzero(c != self.none)
        num = np.full(len(keys), np.nan)
        other = np.zeros(len(keys), dtype=bool)
        if len(ranged):
            vals = values[ranged]
            x, ok = floats(vals)
            num[ranged] = x
            for i in np.flatnonzero(~ok).tolist():  # as RangeFilter.valid reads a non-number
                v = vals[i]
                other[ranged[i]] = v is not MISSING and v is not None and \
                    not isinstance(v, (int, float))
        with np.errstate(invalid="ignore"):
            inside = (self.low[:, c] <= num) & (num <= self.high[:, c])
        return self.free[:, c] | other | inside

    def passed(self, batch: Batch) -> np.ndarray:
        """Per member (rows) and event (columns): ``process`` returns the very event."""
        out = np.ones((len(self.low), batch.n), dtype=bool)
        fields = batch.cols.get("fields")
        joined = present(batch, "fields")
        single = np.flatnonzero(~joined)
        if len(single):
            sub = batch.take(single) if len(single) < batch.n else batch
            out[:, single] = self.valid(get(sub, "obs", ""), get(sub, "value"))
        if fields is not None and joined.any():
            rows = np.flatnonzero(joined)
            items = [list(fields[r].items()) for r in rows.tolist()]
            sizes = np.fromiter(map(len, items), dtype=np.intp, count=len(items))
            flat = [kv for it in items for kv in it]
            if flat:
                keys = np.fromiter((k for k, _ in flat), dtype=object, count=len(flat))
                vals = np.fromiter((v for _, v in flat), dtype=object, count=len(flat))
                ok = self.valid(keys, vals)
                some = sizes > 0
                starts = np.cumsum(sizes) - sizes
                out[:, rows[some]] = np.logical_and.reduceat(ok, starts[some], axis=1)
        return out


class RangeFilterKernel(Vectorized):
    """RangeFilter a batch at a time: its bounds compared with the value column in numpy.

    The value column is read once as ``as_float`` reads it (only the rows of a ranged field:
    a field without a range passes whatever its value). A joined event's ``fields`` are read
    into one flat observation list, decided by the same comparison, and reduced per event.
    A rejected event is dropped (``drop``) or nulled: a single observation column-wise (every
    column but derive's keys and ``obs`` emptied, ``value`` ``None``, ``filtered`` true), a
    joined one through ``process`` (it rebuilds its ``fields`` dict anyway). Comparisons only:
    exact.
    """

    type_name = "RangeFilter"

    def __init__(self, task: Task) -> None:
        super().__init__(task)
        self.filter = _members(RangeFilter, [task])[0]
        self.ranges = _Ranges([self.filter])

    @classmethod
    def fuse(cls, members: Sequence[Task]) -> Selectors:
        """Every member's decision per row in one comparison over the batch."""
        tasks = _members(RangeFilter, members)
        ranges = _Ranges(tasks)

        def select(batch: Batch) -> list[np.ndarray]:
            return list(ranges.passed(batch)) if batch.n else [np.zeros(0, bool)] * len(tasks)

        return Selectors(select, tuple(t.mode == "drop" for t in tasks))

    def compute(self, batch: Batch) -> Batch:
        return self.outputs(batch, self.ranges.passed(batch)[0])

    def outputs(self, batch: Batch, passed: np.ndarray) -> Batch:
        """This filter's outputs given its ``passed`` mask (its own, or its selector from
        :meth:`fuse`)."""
        if passed.all():
            return batch
        if self.filter.mode == "drop":
            return batch.take(passed)
        joined = present(batch, "fields")
        nulled = ~passed & ~joined
        if (nulled & ~present(batch, "obs")).any():  # process reads event["obs"]: its KeyError
            return self._per_event(batch, np.arange(batch.n))[1]
        cols = {}
        for name, col in batch.cols.items():
            if name in _NULLED_KEEPS or not nulled.any():
                cols[name] = col
            else:
                cols[name] = col.astype(object)
                cols[name][nulled] = None if name == "value" else \
                    True if name == "filtered" else MISSING
        for name, fill in (("value", None), ("filtered", True)):
            if name not in cols and nulled.any():
                cols[name] = np.full(batch.n, MISSING, dtype=object)
                cols[name][nulled] = fill
        kept = np.flatnonzero(passed | nulled)
        out = Batch(batch.n, cols).take(kept)
        rebuilt = np.flatnonzero(~passed & joined)
        if not len(rebuilt):
            return out
        return merge_rows([(kept, out), self._per_event(batch, rebuilt)])

    def _per_event(self, batch: Batch, rows: np.ndarray) -> tuple[np.ndarray, Batch]:
        process = self.task.process
        made = [(r, o) for r, e in zip(rows.tolist(), events_at(batch, rows), strict=True)
                for o in process(e)]
        return (np.asarray([r for r, _ in made], dtype=np.intp),
                Batch.from_events([o for _, o in made]))


# --- BloomFilterCheck ------------------------------------------------------------------------

def _ids(col: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Codes of ``str(value)`` per row and the distinct strings. A column of str (the
    streams': one sensor id per message, repeated over its observations) is coded per run of
    equal values (equal strs are one string); any other by each row's ``str``, since values
    a dict holds equal (``1``, ``1.0``, ``True``) print differently."""
    if col.dtype == object and set(map(type, col)) == {str}:
        starts = np.flatnonzero(changes(col))
        code, ids = codes(col[starts].tolist())
        return np.repeat(code, np.diff(np.append(starts, len(col)))), ids
    return codes(map(str, col.tolist()))


class _Probe:
    """Some bloom filters (equal ones once) asked about a batch's distinct ids.

    The per-event check hashes ``str(event.get("sensor"))`` (two blake2b digests) and probes
    ``k`` bits. The digests stay per id, in Python (numpy has no blake2b), but each distinct
    id of a batch is hashed once; its ``k`` positions ``(h1 + i*h2) % m`` are computed in numpy
    as ``(h1 % m + i * (h2 % m)) % m`` (equal integers, and below ``k*m`` so int64 holds
    them) and all bits probed in one gather.
    """

    #: positions at or past it would overflow int64: above it, the filter's own arithmetic
    int64_limit = 2**62

    def __init__(self, filters: Sequence[BloomFilter]) -> None:
        self.filters: list[BloomFilter] = []
        self.which: list[int] = []
        for f in filters:
            same = [j for j, g in enumerate(self.filters)
                    if g is f or ((g.m, g.k) == (f.m, f.k) and g.bits == f.bits)]
            if not same:
                self.filters.append(f)
            self.which.append(same[0] if same else len(self.filters) - 1)

    def passed(self, batch: Batch) -> np.ndarray:
        """Per member (rows) and event (columns): the id is (probably) in its filter."""
        code, ids = _ids(get(batch, "sensor"))
        h1 = [stable_hash64(s, 1) for s in ids]
        h2 = [stable_hash64(s, 2) | 1 for s in ids]
        table = np.empty((len(self.filters), len(ids)), dtype=bool)
        for j, g in enumerate(self.filters):
            table[j] = self._holds(g, h1, h2)
        return table[np.asarray(self.which, dtype=np.intp)][:, code]

    def _holds(self, g: BloomFilter, h1: list[int], h2: list[int]) -> np.ndarray:
        if g.k * g.m >= self.int64_limit:
            return np.fromiter((g.holds([(a + i * b) % g.m for i in range(g.k)])
                                for a, b in zip(h1, h2, strict=True)), dtype=bool, count=len(h1))
        a = np.asarray([x % g.m for x in h1], dtype=np.int64)
        b = np.asarray([x % g.m for x in h2], dtype=np.int64)
        pos = (a[:, None] + np.arange(g.k, dtype=np.int64) * b[:, None]) % g.m
        bits = np.frombuffer(g.bits, dtype=np.uint8)
        return ((bits[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1).all(axis=1)


class BloomFilterCheckKernel(Vectorized):
    """BloomFilterCheck a batch at a time: each distinct id of the batch hashed once
    (:class:`_Probe`), the verdicts spread back to the rows with one take. The blake2b
    digests stay per distinct id (per row would be the per-event cost); the rest is integer
    arithmetic and bit probes: exact.
    """

    type_name = "BloomFilterCheck"

    def __init__(self, task: Task) -> None:
        super().__init__(task)
        self.probe = _Probe([_members(BloomFilterCheck, [task])[0].filter])

    @classmethod
    def fuse(cls, members: Sequence[Task]) -> Selectors:
        """Every member's check per row, each distinct id hashed once for all of them and each
        distinct filter (equal shape and bits, compared once here) probed once."""
        tasks = _members(BloomFilterCheck, members)
        probe = _Probe([t.filter for t in tasks])

        def select(batch: Batch) -> list[np.ndarray]:
            return list(probe.passed(batch)) if batch.n else [np.zeros(0, bool)] * len(tasks)

        return Selectors(select, (True,) * len(tasks))

    def compute(self, batch: Batch) -> Batch:
        return self.outputs(batch, self.probe.passed(batch)[0])

    def outputs(self, batch: Batch, passed: np.ndarray) -> Batch:
        """This filter's outputs given its ``passed`` mask."""
        return batch if passed.all() else batch.take(passed)

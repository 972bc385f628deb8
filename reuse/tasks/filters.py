"""Filter-category tasks: RangeFilter and BloomFilterCheck (stateless, selectivity 1:0/1).

RIoTBench's bloom filter models were never committed upstream, so BloomFilterCheck builds a real
bloom filter at start-up from the id field of the source's data file: this keeps the task's cost
(k hashes, bit probes over an m-bit array sized from the benchmark's expected-insertions and
false-positive parameters) and its semantics (let known ids through, drop unknown ones). The
filter is trained on a sample of the file's lines (``train_stride``/``train_offset``; the workload
trains on the even lines), so ids seen only on the held-out lines are unknown to it: trained on
the very file it replays, it would pass every event.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from reuse.core.paths import riotbench_dir
from reuse.tasks.base import (
    Event,
    Predicates,
    Task,
    TaskError,
    as_float,
    config_dict,
    data_path,
    derive,
    require,
    stable_hash64,
    to_float,
    to_int,
)
from reuse.tasks.parse import parse_senml_line

__all__ = ["RangeFilter", "BloomFilter", "BloomFilterCheck"]


class RangeFilter(Task):
    """Check numeric observations against per-field valid ranges (``FILTER.RANGE_FILTER.VALID_RANGE``).

    Config keys: ``valid_range`` (``{field: [low, high]}``, inclusive), ``mode``: ``"drop"``
    removes an out-of-range observation (or a whole joined message with one), ``"null"`` passes it
    on with ``value`` ``None`` and ``filtered: True`` so a downstream Interpolation can fill it and
    Join still sees every field of the message (the ETL pipeline). Fields without a range and
    non-numeric values pass unchanged.
    """

    type_name = "RangeFilter"

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """Bounds as floats (``1``, ``1.0``, ``"1"``; a third item is never read), ``mode``
        written out (``"drop"``)."""
        c = config_dict(config)
        ranges = c["valid_range"]
        if not isinstance(ranges, dict) or not all(isinstance(v, list) for v in ranges.values()):
            raise TypeError("valid_range")
        c["valid_range"] = {k: [to_float(v[0]), to_float(v[1])] for k, v in ranges.items()}
        c.setdefault("mode", "drop")
        return c

    @classmethod
    def _contains(cls, wide: Any, narrow: Any) -> bool:
        """``narrow`` may read ``wide``'s output when every observation ``narrow`` finds
        valid, ``wide`` finds valid too, and the modes agree.

        Per observation ``(k, v)``, :meth:`valid` depends on ``k``'s range only, and the same
        way for a value that is not a finite number in range: a missing field passes, ``None``,
        a bool and NaN fail, another non-number passes. So ``valid_narrow => valid_wide`` for
        every ``(k, v)`` iff every field ``wide`` ranges, ``narrow`` ranges too, inside (``A <=
        a`` and ``b <= B``) or empty (``a > b``: it rejects every number). Then, per event:

        - ``drop`` behind ``drop``: ``wide`` passes the event unchanged or drops it, and it
          drops only events ``narrow`` drops.
        - ``null`` behind ``null``: ``wide`` sets its bad values to ``None``; those fields are
          ranged by ``narrow``, which finds ``None`` bad, and were bad for ``narrow`` anyway, so
          ``narrow`` nulls the same fields and builds the same event (:func:`derive` keeps
          the same keys of either input).
        - ``drop`` behind ``null``: an event ``wide`` nulls has a ``None`` in a field ``narrow``
          ranges, so ``narrow`` drops it, as it drops the original.

        ``null`` behind ``drop`` is not exact (``wide`` drops what ``narrow`` passes nulled), nor
        is a mode other than these two (the constructor treats it as ``null``, but it spells a
        config we do not reason about), a bound that is not a finite number, a range that is not
        a list of two, or a field named ``""`` (what a single observation without ``obs`` is
        checked as).
        """
        w_ranges, w_mode = cls._read(wide)
        n_ranges, n_mode = cls._read(narrow)
        if (w_mode, n_mode) not in (("drop", "drop"), ("null", "null"), ("null", "drop")):
            return False
        for field, (low, high) in w_ranges.items():
            if field not in n_ranges:
                return False
            a, b = n_ranges[field]
            if not (a > b or (low <= a and b <= high)):
                return False
        return True

    @staticmethod
    def _read(config: Any) -> tuple[dict[str, tuple[float, float]], str]:
        """The ranges and mode as the constructor reads them; raises on anything unusual."""
        c = config_dict(config)
        ranges = c["valid_range"]
        if not isinstance(ranges, dict):
            raise TypeError("valid_range")
        out = {}
        for k, v in ranges.items():
            if not isinstance(v, list) or len(v) < 2 or k == "":
                raise ValueError(k)
            out[k] = (to_float(v[0]), to_float(v[1]))
        mode = c.get("mode", "drop")
        if mode not in ("drop", "null"):
            raise ValueError("mode")
        return out, mode

    fusable = True

    @classmethod
    def fuse(cls, members: Sequence[Task]) -> Predicates:
        """Every member's :meth:`valid` over a batch in one vectorised pass (issue 25, item 4).

        One Python pass reads each observation once: its field's column and its value as
        :meth:`valid` reads it (``as_float``; a non-number other than ``None`` or a bool passes
        every member). Then numpy compares every observation with every member's bounds at
        once: ``free | other | (low <= num <= high)`` per (member, observation), where ``free``
        marks a field the member does not range (its observation passes whatever the value)
        and a NaN value or bound compares false, as in :meth:`valid`. A joined event passes
        a member when all its observations do. An event a member passes is returned unchanged
        by :meth:`process` in either mode; a ``drop`` member gives nothing for the others.
        """
        tasks = [_as(cls, t) for t in members]
        fields = sorted({f for t in tasks for f in t.ranges})
        col = {f: j for j, f in enumerate(fields)}
        none = len(fields)  # the column of a field no member ranges: every member passes it
        low = np.zeros((len(tasks), none + 1))
        high = np.zeros((len(tasks), none + 1))
        free = np.ones((len(tasks), none + 1), dtype=bool)
        for i, t in enumerate(tasks):
            for f, (a, b) in t.ranges.items():
                low[i, col[f]], high[i, col[f]], free[i, col[f]] = a, b, False
        nan = math.nan

        def select(events: Sequence[Event]) -> list[bytes]:
            cols: list[int] = []
            nums: list[float] = []
            other: list[bool] = []
            starts: list[int] = []
            joined = False
            for ev in events:
                if "fields" in ev:
                    joined = True
                    starts.append(len(cols))
                    obs = list(ev["fields"].items())
                    if not obs:  # nothing to check: passes, as process() passes it
                        cols.append(none)
                        nums.append(nan)
                        other.append(False)
                        continue
                else:
                    starts.append(len(cols))
                    obs = [(ev.get("obs", ""), ev.get("value"))]
                for k, v in obs:
                    j = col.get(k, none)
                    cols.append(j)
                    if j == none:
                        nums.append(nan)
                        other.append(False)
                        continue
                    num = as_float(v)
                    if num is None:
                        nums.append(nan)
                        other.append(v is not None and not isinstance(v, (int, float)))
                    else:
                        nums.append(num)
                        other.append(False)
            if not events:
                return [b""] * len(tasks)
            c = np.asarray(cols, dtype=np.intp)
            x = np.asarray(nums, dtype=float)
            ok = free[:, c] | np.asarray(other, dtype=bool) | ((low[:, c] <= x) & (x <= high[:, c]))
            if joined:
                ok = np.logical_and.reduceat(ok, np.asarray(starts, dtype=np.intp), axis=1)
            return [row.tobytes() for row in np.ascontiguousarray(ok)]

        return Predicates(select, tuple(t.mode == "drop" for t in tasks))

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        ranges = self._cfg("valid_range", required=True)
        self.ranges = {k: (float(v[0]), float(v[1])) for k, v in ranges.items()}
        self.mode: str = self._cfg("mode", "drop")

    def valid(self, obs: str, value: Any) -> bool:
        """Whether one observation is inside its range (true if it has none or is not numeric)."""
        if obs not in self.ranges:
            return True
        num = as_float(value)
        if num is None:
            return value is not None and not isinstance(value, (int, float))
        low, high = self.ranges[obs]
        return low <= num <= high

    def process(self, event: Event) -> list[Event]:
        if "fields" in event:
            bad = [k for k, v in event["fields"].items() if not self.valid(k, v)]
            if not bad:
                return [event]
            if self.mode == "drop":
                return []
            fields = {k: (None if k in bad else v) for k, v in event["fields"].items()}
            return [derive(event, fields=fields, filtered=sorted(bad))]
        if self.valid(event.get("obs", ""), event.get("value")):
            return [event]
        if self.mode == "drop":
            return []
        # an event with no obs is checked as field "" (valid above): its output names it so
        return [derive(event, obs=event.get("obs", ""), value=None, filtered=True)]


class BloomFilter:
    """A classic bloom filter: ``m`` bits, ``k`` hash functions by double hashing.

    ``m = ceil(-n ln p / ln(2)^2)`` and ``k = round(m/n ln 2)`` for ``n`` expected insertions and
    false-positive rate ``p``, as in Guava's BloomFilter that RIoTBench used.
    """

    def __init__(self, expected_insertions: int, fp_ratio: float) -> None:
        self.m, self.k = self.shape(expected_insertions, fp_ratio)
        self.bits = bytearray((self.m + 7) // 8)

    @staticmethod
    def shape(expected_insertions: int, fp_ratio: float) -> tuple[int, int]:
        """``(m, k)`` for ``n`` expected insertions and false-positive rate ``p``: all that the
        bit positions of an item depend on.

        >>> BloomFilter.shape(1000, 0.01)
        (9586, 7)
        """
        n = max(1, int(expected_insertions))
        m = max(8, math.ceil(-n * math.log(fp_ratio) / (math.log(2) ** 2)))
        return m, max(1, round(m / n * math.log(2)))

    def _positions(self, item: str) -> list[int]:
        h1 = stable_hash64(item, 1)
        h2 = stable_hash64(item, 2) | 1
        return [(h1 + i * h2) % self.m for i in range(self.k)]

    def add(self, item: str) -> None:
        for pos in self._positions(item):
            self.bits[pos >> 3] |= 1 << (pos & 7)

    def __contains__(self, item: str) -> bool:
        return self.holds(self._positions(item))

    def holds(self, positions: list[int]) -> bool:
        """Whether every bit of ``positions`` (an item's, from a filter of this shape) is set."""
        return all(self.bits[pos >> 3] & (1 << (pos & 7)) for pos in positions)


class BloomFilterCheck(Task):
    """Pass events whose sensor id is (probably) in a bloom filter of known ids; drop the rest.

    Config keys: ``field`` (the SenML id field, e.g. ``source``), ``train_file`` (SenML data file
    whose ``field`` values are inserted at start-up), ``train_stride`` and ``train_offset`` (only
    the file's lines ``i`` with ``i % train_stride == train_offset``, 0-based, are inserted;
    default 1 and 0: every line), ``expected_insertions`` and ``fp_ratio``
    (``FILTER.BLOOM_FILTER_TRAIN.*``). With the benchmark's 20,000,000 / 0.01 the bit array is
    ~24 MB and k = 7. The checked value is the event's ``sensor`` (the parsed id field).

    The original as shipped does not check the data: the ETL bolt passes every tuple unchanged
    (``FILTER.BLOOM_FILTER_CHECK.USE_MSG_FIELD`` is 0 or -1), and the STATS bolt checks a random
    int against a filter of random ints, passing about half the tuples whatever they hold.
    """

    type_name = "BloomFilterCheck"

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """``expected_insertions``, ``train_stride`` and ``train_offset`` as ints (defaults 1 and
        0 written out), ``fp_ratio`` as a float, ``train_file`` as a normalised relative path."""
        c = config_dict(config)
        require(c, "field")
        c["expected_insertions"] = to_int(c["expected_insertions"])
        c["fp_ratio"] = to_float(c["fp_ratio"])
        c["train_stride"] = to_int(c.get("train_stride", 1))
        c["train_offset"] = to_int(c.get("train_offset", 0))
        c["train_file"] = data_path(c["train_file"])
        return c

    @classmethod
    def _contains(cls, wide: Any, narrow: Any) -> bool:
        """``narrow`` may read ``wide``'s output when its filter's bits are a subset of
        ``wide``'s: the same ``field`` and ``train_file``, the same shape ``(m, k)`` (so an id
        sets the same bit positions in both), and ``narrow``'s training lines among ``wide``'s
        (``i % s_n == o_n`` implies ``i % s_w == o_w`` when ``s_w`` divides ``s_n`` and ``o_n %
        s_w == o_w``). Then an id ``narrow`` lets through, ``wide`` lets through, and both pass
        the event unchanged, so ``narrow`` behind ``wide`` is ``narrow``. Both read the file
        from the same data folder in one run.
        """
        w, n = cls._read(wide), cls._read(narrow)
        if w[:3] != n[:3]:
            return False
        (s_w, o_w), (s_n, o_n) = w[3], n[3]
        return s_n % s_w == 0 and o_n % s_w == o_w

    @classmethod
    def _read(cls, config: Any) -> tuple[Any, str, tuple[int, int], tuple[int, int]]:
        """``field``, ``train_file``, ``(m, k)`` and ``(stride, offset)``, as the constructor
        reads them; raises on anything it would refuse or we do not reason about."""
        c = cls._canonical(config_dict(config))
        p = c["fp_ratio"]
        if not 0 < p < 1:
            raise ValueError("fp_ratio")
        stride, offset = c["train_stride"], c["train_offset"]
        if stride < 1 or not 0 <= offset < stride:
            raise ValueError("train_stride")
        return (c["field"], c["train_file"], BloomFilter.shape(c["expected_insertions"], p),
                (stride, offset))

    fusable = True

    @classmethod
    def fuse(cls, members: Sequence[Task]) -> Predicates:
        """Every member's check over a batch, each distinct question asked once (issue 25,
        item 4).

        A member's answer depends only on ``str(event["sensor"])`` and its filter's bits, so
        the batch's distinct ids are checked once each, against each distinct filter once
        (members whose filters have equal shape and bits, e.g. one training sample spelled two
        ways, share one), with an id's bit positions hashed once per shape. Every member
        drops what it does not pass.
        """
        tasks = [_as(cls, t) for t in members]
        filters: list[BloomFilter] = []
        which: list[int] = []
        for t in tasks:
            f = t.filter
            same = [j for j, g in enumerate(filters) if (g.m, g.k) == (f.m, f.k) and g.bits == f.bits]
            if not same:
                filters.append(f)
            which.append(same[0] if same else len(filters) - 1)
        pick = np.asarray(which, dtype=np.intp)
        shapes: dict[tuple[int, int], BloomFilter] = {}
        for g in filters:
            shapes.setdefault((g.m, g.k), g)

        def select(events: Sequence[Event]) -> list[bytes]:
            if not events:
                return [b""] * len(tasks)
            ids: dict[str, int] = {}
            code = [ids.setdefault(str(ev.get("sensor")), len(ids)) for ev in events]
            table = np.empty((len(ids), len(filters)), dtype=bool)
            for r, item in enumerate(ids):
                pos = {shape: g._positions(item) for shape, g in shapes.items()}
                for j, g in enumerate(filters):
                    table[r, j] = g.holds(pos[(g.m, g.k)])
            ok = table[np.asarray(code, dtype=np.intp)][:, pick].T
            return [row.tobytes() for row in np.ascontiguousarray(ok)]

        return Predicates(select, (True,) * len(tasks))

    def __init__(self, config: Any, data_dir: Any = None) -> None:
        super().__init__(config)
        self.field: str = self._cfg("field", required=True)
        self.filter = BloomFilter(
            int(self._cfg("expected_insertions", required=True)),
            float(self._cfg("fp_ratio", required=True)),
        )
        self.stride = int(self._cfg("train_stride", 1))
        self.offset = int(self._cfg("train_offset", 0))
        if self.stride < 1 or not 0 <= self.offset < self.stride:
            raise TaskError(f"BloomFilterCheck: need train_stride >= 1 and 0 <= train_offset < "
                            f"train_stride, got {self.stride} and {self.offset}")
        path = riotbench_dir(data_dir) / self._cfg("train_file", required=True)
        self.trained = 0
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        for line in lines[self.offset::self.stride]:
            _, msg = parse_senml_line(line)
            for e in msg.get("e", []):
                if e.get("n") == self.field:
                    self.filter.add(str(e.get("sv", e.get("v"))))
                    self.trained += 1

    def process(self, event: Event) -> list[Event]:
        return [event] if str(event.get("sensor")) in self.filter else []


def _as(cls: type[Any], task: Task) -> Any:
    """``task`` checked to be a built ``cls`` (what :meth:`Task.fuse` takes)."""
    if not isinstance(task, cls):
        raise TaskError(f"{cls.type_name}.fuse: member {task!r} is not a {cls.type_name}")
    return task

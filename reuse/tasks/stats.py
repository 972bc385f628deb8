"""Statistical tasks of the STATS application, all stateful with checkpointable state.

KalmanFilter smooths each series, SlidingLinearRegression fits a line over the last window and
predicts ahead, BlockWindowAverage averages tumbling windows, DistinctApproxCount estimates the
number of distinct sensors with RIoTBench's Durand-Flajolet LogLog sketch, and SecondOrderMoment
estimates the surprise number (sum of squared frequencies) with RIoTBench's estimator (or AMS).

Series are keyed by ``group_by``: ``["sensor", "obs"]`` is the original's state per sensor and
field (its bolts keep one task object per ``sensorID + obsType``), ``["obs"]`` one series per
field. The RIoTBench workload sets it from its ``keying`` choice (see
:func:`reuse.workloads.riotbench.build_dataflows`), so the choice is part of each task's config
and flows through equivalence, the planner and the runtime like any other parameter.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from typing import Any

from reuse.tasks.base import (
    ACCOUNTING_KEYS,
    Event,
    StatefulTask,
    TaskError,
    as_float,
    config_dict,
    derive,
    group_key,
    observations,
    require,
    snapshot,
    stable_hash64,
    str_list,
    str_set,
    to_float,
    to_int,
)

__all__ = [
    "KalmanFilter",
    "BlockWindowAverage",
    "SlidingLinearRegression",
    "DistinctApproxCount",
    "SecondOrderMoment",
    "exact_partials",
    "read_pane",
]


def _optional_set(c: dict[str, Any]) -> None:
    """``fields`` of a task where ``None`` (the default, written out) means every field."""
    c["fields"] = None if c.get("fields") is None else str_set(c["fields"])


def _numeric(event: Event, fields: set[str] | None) -> Iterator[tuple[str, float]]:
    """The numeric observations of an event, restricted to ``fields`` when given."""
    for obs, val in observations(event).items():
        if fields is not None and obs not in fields:
            continue
        num = as_float(val)
        if num is not None and math.isfinite(num):
            yield obs, num


class KalmanFilter(StatefulTask):
    """One-dimensional Kalman filter per series (random-walk model), as RIoTBench's KalmanFilter.

    Per observation ``z``: ``p += q``; ``K = p / (p + r)``; ``x += K (z - x)``; ``p *= (1 - K)``,
    starting from ``x = 0`` and ``p = estimated_error``.
    Config keys: ``process_noise`` (q), ``sensor_noise`` (r), ``estimated_error`` (initial p),
    ``fields`` (series to filter; others are dropped), ``group_by``.
    Output: the observation with ``value`` replaced by the estimate. State: ``[x, p]`` per series.
    """

    type_name = "KalmanFilter"
    partitioning = "keyed"  # one [x, p] per series key, nothing shared between series
    state_map = "series"

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """The three noises as floats, ``fields`` as a set, ``group_by`` written out."""
        c = config_dict(config)
        for key in ("process_noise", "sensor_noise", "estimated_error"):
            c[key] = to_float(c[key])
        c["fields"] = str_set(c["fields"])
        c["group_by"] = str_list(c.get("group_by", ["sensor", "obs"]))
        return c

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.q = float(self._cfg("process_noise", required=True))
        self.r = float(self._cfg("sensor_noise", required=True))
        self.p0 = float(self._cfg("estimated_error", required=True))
        self.fields = set(self._cfg("fields", required=True))
        self.group_by: list[str] = list(self._cfg("group_by", ["sensor", "obs"]))
        self.series: dict[str, list[float]] = {}

    def process(self, event: Event) -> list[Event]:
        out = []
        for obs, z in _numeric(event, self.fields):
            key = group_key(event, obs, self.group_by)
            x, p = self.series.get(key, [0.0, self.p0])
            p = p + self.q
            gain = p / (p + self.r)
            x = x + gain * (z - x)
            p = (1.0 - gain) * p
            self.series[key] = [x, p]
            out.append(derive(event, obs=obs, value=x, analytic="KALMAN"))
        return out

    def get_state(self) -> Any:
        return snapshot({"series": self.series})

    def set_state(self, state: Any) -> None:
        self.series = snapshot(state["series"])


class BlockWindowAverage(StatefulTask):
    """Average of each tumbling block of ``window`` values per series (N:1), from an exact sum.

    Config keys: ``window`` (``AGGREGATE.BLOCK_COUNT.WINDOW_SIZE``), ``fields``
    (``AGGREGATE.BLOCK_AVERAGE.USE_MSG_FIELD``), ``group_by``. Output when a block completes:
    ``value`` = mean, ``analytic`` "BWA", and ``pane`` = ``{"n": count, "sum": [floats]}``,
    the block's count and exact sum. State: per series ``[count, floats...]``, floats whose
    exact sum is the block's sum so far.

    Why exact (issue 25, item 3, the ``panes`` containment rule): a task of window ``k * w``
    may read a running task of window ``w`` and combine ``k`` of its blocks (its *panes*). The
    combined outputs must be identical to the task's own, bit for bit, and a mean of means or a
    float sum in another order is not. So the mean is ``fsum / count``: :func:`math.fsum` is
    the correctly rounded sum of its floats' *exact* sum, so it depends on the block's values
    only, not on how they were grouped. Each output carries its block's exact sum as a few
    floats (:func:`exact_partials`: ``round(S)``, ``round(S - s1)``, ... until nothing is left,
    one spelling per exact sum), and an input that carries one (a pane) counts as its ``n``
    values of that sum: so a block of panes is the block of their values. A block completes
    once it holds at least ``window`` values; it holds exactly ``window`` when every input is a
    raw value or a pane whose ``n`` divides the window, as on the residual path of the rule
    (other pane sizes overshoot, and the block then averages every value of its panes). The
    floats waiting in a block are folded into their partials every :attr:`FOLD` of them, so
    state stays small for any window. A block whose exact sum is beyond the float range
    (``fsum`` raises) emits the float sum's mean (an infinity) and no pane. The price: one
    ``fsum`` per partial and block (``benchmarks/bwa_cost.py``).

    Examples
    --------
    >>> bwa = BlockWindowAverage({"window": 3, "fields": ["t"], "group_by": ["obs"]})
    >>> out = [o for v in [1e16, 1.0, -1e16] for o in bwa.process({"obs": "t", "value": v})]
    >>> out[0]["value"], (1e16 + 1.0 - 1e16) / 3  # the float sum loses the 1.0
    (0.3333333333333333, 0.0)
    >>> out[0]["pane"]
    {'n': 3, 'sum': [1.0]}
    """

    type_name = "BlockWindowAverage"
    partitioning = "keyed"  # one block per series key
    state_map = "blocks"

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """``window`` as the constructor reads it (``max(1, int)``), ``fields`` as a set,
        ``group_by`` written out."""
        c = config_dict(config)
        c["window"] = max(1, to_int(c["window"]))
        c["fields"] = str_set(c["fields"])
        c["group_by"] = str_list(c.get("group_by", ["sensor", "obs"]))
        return c

    #: what :func:`~reuse.tasks.base.derive` copies to an output besides the observation: a
    #: series key made of other keys would not survive a pane
    PANE_KEYS = frozenset({*ACCOUNTING_KEYS, "sensor", "meta", "obs"})

    @classmethod
    def _contains(cls, wide: Any, narrow: Any) -> bool:
        """``narrow`` may read ``wide``'s panes when ``wide``'s window divides ``narrow``'s,
        ``narrow``'s fields are among ``wide``'s (the same, unless a series is one field), and
        every other key is the same (``group_by``
        above all, in the same order: the same series, keyed by the same strings).

        Fed raw values (or panes whose ``n`` divides ``wide``'s window), ``wide`` emits, per
        series and in order, panes of exactly ``w`` consecutive values with their exact sum;
        ``k = W / w`` consecutive panes of a series are then ``W`` consecutive values, and
        ``narrow`` fed them completes its block after the ``k``-th pane with the same count and
        exact sum, so the same mean, from the event that completed the same block (a pane is
        derived from it, and :func:`~reuse.tasks.base.derive` keeps its accounting keys,
        ``sensor`` and ``meta``). A field ``narrow`` skips, it skips in both, if each series is
        one field (``obs`` in ``group_by``); else the fields must be the same. A pane keeps
        ``sensor``, ``obs`` and the accounting keys only, so ``group_by`` must name only those
        (:attr:`PANE_KEYS`). Blocks align with ``wide``'s: fresh tasks align from the first
        value on; a residual that joins a running ``wide`` later starts its blocks at ``wide``'s
        pane boundaries (see :mod:`reuse.tasks.containment`).

        One exception: a block whose exact sum is beyond the float range (``|S| > 1.8e308``)
        has no pane, so a residual skips it where the narrow task alone averages its values.

        The proof needs pane-free inputs (other pane sizes overshoot differently in the two
        chains): the rule is declared with ``fresh_inputs``, which the core checks
        (:mod:`reuse.core.containment`).
        """
        w, n = cls._canonical(config_dict(wide)), cls._canonical(config_dict(narrow))
        if not isinstance(w["window"], int) or n["window"] % w["window"]:
            return False
        fields_w, fields_n = set(w["fields"]), set(n["fields"])
        if not set(n["group_by"]) <= cls.PANE_KEYS or not fields_n <= fields_w:
            return False
        if "obs" not in n["group_by"] and fields_n != fields_w:
            return False  # a series spans fields: the wide one's blocks hold the others too
        return ({k: v for k, v in w.items() if k not in ("window", "fields")}
                == {k: v for k, v in n.items() if k not in ("window", "fields")})

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.window = max(1, int(self._cfg("window", required=True)))
        self.fields = set(self._cfg("fields", required=True))
        self.group_by: list[str] = list(self._cfg("group_by", ["sensor", "obs"]))
        self.blocks: dict[str, list[Any]] = {}

    #: fold a block's waiting floats into their exact partials once it holds this many
    FOLD = 64

    def process(self, event: Event) -> list[Event]:
        out = []
        pane = read_pane(event.get("pane")) if "pane" in event else None
        for obs, val in _numeric(event, self.fields):
            key = group_key(event, obs, self.group_by)
            block = self.blocks.get(key)
            if block is None:
                block = self.blocks[key] = [0]
            if pane is None:
                block.append(val)
                block[0] += 1
            else:
                block.extend(pane[1])
                block[0] += pane[0]
            if block[0] >= self.window:
                del self.blocks[key]
                count, parts = block[0], block[1:]
                try:
                    parts = exact_partials(parts)
                    mean = (parts[0] if parts else 0.0) / count
                    done = {"pane": {"n": count, "sum": parts}}
                except OverflowError:  # an exact sum beyond the float range: no pane
                    mean, done = sum(parts) / count, {}
                out.append(derive(event, obs=obs, value=mean, analytic="BWA", **done))
            elif len(block) > self.FOLD:
                try:
                    block[1:] = exact_partials(block[1:])
                except OverflowError:
                    pass
        return out

    def get_state(self) -> Any:
        return snapshot({"blocks": self.blocks})

    def set_state(self, state: Any) -> None:
        self.blocks = snapshot(state["blocks"])

    @classmethod
    def absorb(cls, own: Any, wide: Any) -> Any:
        """The blocks of a window task reading values, from its residual's (``own``: whole
        panes of the wide task) and the wide task's at the same ``seq`` (its open partial
        blocks): per series, the counts add and the floats are put together (issue 36, a
        re-plan promoting the residual to read its inputs, :mod:`reuse.core.replan`).

        Why it is exact: the residual's blocks start at the wide task's pane boundaries (its
        promise, :mod:`reuse.tasks.containment`), so the values since its block began are the
        panes it holds plus the values of the wide task's open pane; a block is its count and
        the floats whose exact sum is its sum, and exact sums add whatever the grouping
        (:func:`exact_partials`). A series only one side has is taken as it is, and a wide
        task's series of a field the narrow one skips is never touched again (as in a warm
        residual's first blocks). Apply it once per wide task of a chain, in any order.

        >>> BlockWindowAverage.absorb({"blocks": {"t": [4, 2.5], "h": [2, 1.0]}},
        ...                           {"blocks": {"t": [1, 0.25], "p": [1, 9.0]}})
        {'blocks': {'t': [5, 2.5, 0.25], 'h': [2, 1.0], 'p': [1, 9.0]}}
        """
        blocks = snapshot(own["blocks"])
        for key, block in wide["blocks"].items():
            mine = blocks.setdefault(key, [0])
            mine[0] += block[0]
            mine.extend(block[1:])
        return {"blocks": blocks}


def exact_partials(values: list[float]) -> list[float]:
    """The exact sum ``S`` of finite floats as the floats ``round(S)``, ``round(S - s1)``, ...
    until the rest is zero: their exact sum is ``S``, and they depend on ``S`` only (so equal
    sums, however grouped, give equal lists). ``[]`` for zero. Raises ``OverflowError`` when
    ``S`` (or a step) is beyond the float range.

    Each step is one :func:`math.fsum` (correctly rounded, C speed); the rest shrinks by 53
    bits or more per step, so a sum of sensor readings takes one or two.

    >>> exact_partials([0.1, 0.2, 0.3]), exact_partials([1e16, 1.0, -1e16]), exact_partials([])
    ([0.6, 2.7755575615628914e-17], [1.0], [])
    """
    out: list[float] = []
    rest = list(values)
    s = math.fsum(rest)
    while s:
        out.append(s)
        rest.append(-s)
        s = math.fsum(rest)
    return out


def read_pane(pane: Any) -> tuple[int, list[float]] | None:
    """A pane's count and partials, or ``None`` for anything that is not one (then the event's
    value counts as one value).

    >>> read_pane({"n": 4, "sum": [2.5, 1e-17]}), read_pane({"n": 0, "sum": []}), read_pane("x")
    ((4, [2.5, 1e-17]), None, None)
    """
    try:
        n, parts = pane["n"], pane["sum"]
    except (TypeError, KeyError, IndexError):
        return None
    if (not isinstance(n, int) or isinstance(n, bool) or n < 1 or not isinstance(parts, list)
            or not all(isinstance(p, float) and math.isfinite(p) for p in parts)):
        return None
    return n, parts


class SlidingLinearRegression(StatefulTask):
    """Least-squares line over the last ``train_window`` values of a series, predicting ahead.

    x is the item's position in its series, y its value. Once the window is full, every input
    yields one output whose ``predictions`` are the fitted values at the next ``predict_window``
    positions (``value`` is the first of them), as RIoTBench's SimpleLinearRegressionPredictor.
    Config keys: ``train_window``, ``predict_window`` (``PREDICT.SIMPLE_LINEAR_REGRESSION.*``),
    ``group_by``, optional ``fields``. State: count and window per series.
    """

    type_name = "SlidingLinearRegression"
    partitioning = "keyed"  # one window per series key
    state_map = "series"

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """Windows as the constructor reads them (``max(2, int)``, ``max(1, int)``), ``fields``
        a set or ``None`` (every field), ``group_by`` written out."""
        c = config_dict(config)
        c["train_window"] = max(2, to_int(c["train_window"]))
        c["predict_window"] = max(1, to_int(c["predict_window"]))
        _optional_set(c)
        c["group_by"] = str_list(c.get("group_by", ["sensor", "obs"]))
        return c

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.train = max(2, int(self._cfg("train_window", required=True)))
        self.predict = max(1, int(self._cfg("predict_window", required=True)))
        fields = self._cfg("fields")
        self.fields = set(fields) if fields is not None else None
        self.group_by: list[str] = list(self._cfg("group_by", ["sensor", "obs"]))
        self.series: dict[str, dict[str, Any]] = {}

    def process(self, event: Event) -> list[Event]:
        out = []
        for obs, y in _numeric(event, self.fields):
            key = group_key(event, obs, self.group_by)
            s = self.series.setdefault(key, {"n": 0, "ys": []})
            s["n"] += 1
            s["ys"].append(y)
            del s["ys"][: -self.train]
            if len(s["ys"]) < self.train:
                continue
            xs = list(range(s["n"] - len(s["ys"]) + 1, s["n"] + 1))
            mx = sum(xs) / len(xs)
            my = sum(s["ys"]) / len(s["ys"])
            sxx = sum((x - mx) ** 2 for x in xs)
            sxy = sum((x - mx) * (yy - my) for x, yy in zip(xs, s["ys"], strict=True))
            slope = sxy / sxx
            icpt = my - slope * mx
            preds = [icpt + slope * (s["n"] + i) for i in range(1, self.predict + 1)]
            out.append(
                derive(event, obs=obs, value=preds[0], predictions=preds, analytic="SLR")
            )
        return out

    def get_state(self) -> Any:
        return snapshot({"series": self.series})

    def set_state(self, state: Any) -> None:
        self.series = snapshot(state["series"])


class DistinctApproxCount(StatefulTask):
    """Durand-Flajolet LogLog estimate of the number of distinct sensor ids seen (1:1).

    The sketch is RIoTBench's, constant for constant, so its estimates equal the original's on
    the same items: an item's hash ``x`` is the first 4 bytes of its SHA-1 as a little-endian
    signed 32-bit int (Guava's ``Hashing.sha1().hashString(..).asInt()``); register
    ``j = x & (m - 1)`` of ``m = 2**buckets`` records the maximum number of trailing zeros of
    ``x >> buckets`` (arithmetic shift; 31 when that is 0); the estimate is
    ``int(0.79402 * m * 2**mean(registers))``. The 0.79402 is twice Durand and Flajolet's
    ``alpha_inf = 0.39701``: their rank counts the first 1-bit from 1, the original counts
    trailing zeros from 0, one less, which halves ``2**mean``. Registers start at 0, so an empty
    register weighs like a hit with no trailing zero; with far fewer items than ``m`` (the
    samples' ~780 ids against m = 1024) this inflates the estimate (measured in
    ``benchmarks/task_semantics.py``).

    One sketch per task, over every observation's sensor, as the original's bolt keeps one
    sketch per bolt instance (no per-sensor keying: counting sensors per sensor is meaningless).
    Config keys: ``buckets`` (``AGGREGATE.DISTINCT_APPROX_COUNT.BUCKETS``), ``field`` (the id
    field, for the record; the counted value is the event's ``sensor``). State: the registers.

    Examples
    --------
    An empty sketch already estimates ``int(0.79402 * m)``: one item reads as 813 distinct.

    >>> dac = DistinctApproxCount({"buckets": 10, "field": "id"})
    >>> [dac.process({"sensor": s})[0]["value"] for s in ["a", "a", "b"]]
    [813.0, 813.0, 813.0]
    """

    type_name = "DistinctApproxCount"
    #: one sketch over every event, and each output is the estimate after its event: no
    #: partition of the events gives the same estimates, so the task is gathered
    partitioning = "global"

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """``buckets`` as an int (``field`` is kept: it is only recorded, but it is the
        benchmark's parameter, not a spelling)."""
        c = config_dict(config)
        c["buckets"] = to_int(c["buckets"])
        require(c, "field")
        return c

    #: Durand-Flajolet's magic number as the original uses it (see the class docstring).
    ALPHA = 0.79402

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.k = int(self._cfg("buckets", required=True))
        if not 1 <= self.k <= 31:
            raise TaskError(f"DistinctApproxCount: buckets must be in 1..31, got {self.k}")
        self.field: str = self._cfg("field", required=True)
        self.m = 1 << self.k
        self.registers = [0] * self.m

    @staticmethod
    def hash32(item: str) -> int:
        """The original's item hash: first 4 SHA-1 bytes, little-endian, signed.

        Examples
        --------
        >>> DistinctApproxCount.hash32("a") == 0x37E4F786  # SHA-1("a") starts 86 f7 e4 37
        True
        """
        return int.from_bytes(hashlib.sha1(item.encode("utf-8")).digest()[:4], "little",
                              signed=True)

    @staticmethod
    def rho(y: int) -> int:
        """Trailing zeros of a 32-bit int, 31 for 0 (the original's ``p_countTrailZeros``).

        Examples
        --------
        >>> DistinctApproxCount.rho(8), DistinctApproxCount.rho(-4), DistinctApproxCount.rho(0)
        (3, 2, 31)
        """
        return 31 if y == 0 else (y & -y).bit_length() - 1

    def add(self, item: str) -> None:
        x = self.hash32(item)
        j = x & (self.m - 1)
        self.registers[j] = max(self.registers[j], self.rho(x >> self.k))

    def estimate(self) -> float:
        return float(int(self.ALPHA * self.m * 2 ** (sum(self.registers) / self.m)))

    def process(self, event: Event) -> list[Event]:
        self.add(str(event.get("sensor")))
        return [derive(event, obs="DAC", value=self.estimate(), analytic="DAC")]

    def get_state(self) -> Any:
        return {"registers": list(self.registers)}

    def set_state(self, state: Any) -> None:
        self.registers = [int(r) for r in state["registers"]]


class SecondOrderMoment(StatefulTask):
    """Running estimate of the second frequency moment (surprise number) of each series (1:1).

    ``estimator`` "riotbench" (the workload's) is RIoTBench's: a map of at most
    ``max_map_size`` distinct items with their counts since they entered it; a new item when
    the map is full evicts a slot chosen uniformly at random (here by a hash of series key and
    count, so it is deterministic); the estimate is ``n * mean over slots of (2 f - 1)`` with
    ``n`` the items seen. Two defects of the Java code are not reproduced: it sums over all
    ``max_map_size`` slots, empty ones too (each adds ``-n``, so the estimate is negative until
    half the map is used), and it advances its next free slot on repeated items too, which
    throws ``ArrayIndexOutOfBoundsException`` once a series repeats a value before its map is
    full. ``estimator`` "ams" is the textbook Alon-Matias-Szegedy estimator instead (reservoir
    of sampled positions, each counting its item from that position on, ``n * mean(2 c - 1)``),
    unbiased where the original's overestimates repeated items.

    An item is an observation's numeric value (the original parses floats). Series are keyed
    by ``group_by`` (the original: sensor and field). Config keys: ``max_map_size``
    (``STATISTICS.MOMENT.MAX_HASHMAPSIZE``), ``estimator``, optional ``fields``, ``group_by``.
    Output: the observation with ``value`` = the estimate, ``analytic`` "SOM". State: per series
    ``n`` and the slots (items and counts).

    Examples
    --------
    >>> som = SecondOrderMoment({"max_map_size": 10, "group_by": ["obs"]})
    >>> [som.process({"obs": "t", "value": v})[0]["value"] for v in [1.0, 1.0, 2.0]]
    [1.0, 6.0, 6.0]
    """

    type_name = "SecondOrderMoment"
    #: one map per series key; the eviction slot hashes the key and its own count, so a
    #: series' estimates depend on its own items only
    partitioning = "keyed"
    state_map = "series"
    ESTIMATORS = ("riotbench", "ams")

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """``max_map_size`` as an int, ``estimator`` written out (``"riotbench"``), ``fields`` a
        set or ``None``, ``group_by`` written out."""
        c = config_dict(config)
        c["max_map_size"] = to_int(c["max_map_size"])
        c.setdefault("estimator", "riotbench")
        _optional_set(c)
        c["group_by"] = str_list(c.get("group_by", ["sensor", "obs"]))
        return c

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.size = int(self._cfg("max_map_size", required=True))
        if self.size < 1:
            raise TaskError(f"SecondOrderMoment: max_map_size must be >= 1, got {self.size}")
        self.estimator: str = self._cfg("estimator", "riotbench")
        if self.estimator not in self.ESTIMATORS:
            raise TaskError(f"SecondOrderMoment: unknown estimator {self.estimator!r} "
                            f"(choose from {', '.join(self.ESTIMATORS)})")
        fields = self._cfg("fields")
        self.fields = set(fields) if fields is not None else None
        self.group_by: list[str] = list(self._cfg("group_by", ["sensor", "obs"]))
        self.series: dict[str, dict[str, Any]] = {}

    def _riotbench(self, key: str, s: dict[str, Any], item: str) -> float:
        items, freq = s["items"], s["freq"]
        if item in items:
            freq[items.index(item)] += 1
        elif len(items) < self.size:
            items.append(item)
            freq.append(1)
        else:
            slot = stable_hash64(f"{key}|{s['n']}", 5) % self.size
            items[slot], freq[slot] = item, 1
        return float(s["n"] * sum(2 * f - 1 for f in freq) / len(freq))

    def _ams(self, key: str, s: dict[str, Any], item: str) -> float:
        items, freq, n = s["items"], s["freq"], s["n"]
        for i, it in enumerate(items):
            if it == item:
                freq[i] += 1
        if len(items) < self.size:
            items.append(item)
            freq.append(1)
        elif stable_hash64(f"ams|{key}|{n}", 3) % n < self.size:
            slot = stable_hash64(f"slot|{key}|{n}", 4) % self.size
            items[slot], freq[slot] = item, 1
        return float(n * sum(2 * c - 1 for c in freq) / len(freq))

    def process(self, event: Event) -> list[Event]:
        out = []
        for obs, val in _numeric(event, self.fields):
            key = group_key(event, obs, self.group_by)
            s = self.series.setdefault(key, {"n": 0, "items": [], "freq": []})
            s["n"] += 1
            add = self._riotbench if self.estimator == "riotbench" else self._ams
            out.append(derive(event, obs=obs, value=add(key, s, repr(val)), analytic="SOM"))
        return out

    def get_state(self) -> Any:
        return snapshot({"series": self.series})

    def set_state(self, state: Any) -> None:
        self.series = snapshot(state["series"])

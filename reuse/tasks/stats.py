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
    """Average of each tumbling block of ``window`` values per series (N:1).

    Config keys: ``window`` (``AGGREGATE.BLOCK_COUNT.WINDOW_SIZE``), ``fields``
    (``AGGREGATE.BLOCK_AVERAGE.USE_MSG_FIELD``), ``group_by``. Output when a block completes:
    ``value`` = mean, ``analytic`` "BWA". State: ``[sum, count]`` per series.
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

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.window = max(1, int(self._cfg("window", required=True)))
        self.fields = set(self._cfg("fields", required=True))
        self.group_by: list[str] = list(self._cfg("group_by", ["sensor", "obs"]))
        self.blocks: dict[str, list[float]] = {}

    def process(self, event: Event) -> list[Event]:
        out = []
        for obs, val in _numeric(event, self.fields):
            key = group_key(event, obs, self.group_by)
            block = self.blocks.setdefault(key, [0.0, 0])
            block[0] += val
            block[1] += 1
            if block[1] >= self.window:
                out.append(derive(event, obs=obs, value=block[0] / block[1], analytic="BWA"))
                self.blocks[key] = [0.0, 0]
        return out

    def get_state(self) -> Any:
        return snapshot({"blocks": self.blocks})

    def set_state(self, state: Any) -> None:
        self.blocks = snapshot(state["blocks"])


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

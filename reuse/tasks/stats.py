"""Statistical tasks of the STATS application, all stateful with checkpointable state.

KalmanFilter smooths each series, SlidingLinearRegression fits a line over the last window and
predicts ahead, BlockWindowAverage averages tumbling windows, DistinctApproxCount estimates the
number of distinct sensors with a Durand-Flajolet LogLog sketch, and SecondOrderMoment estimates
the surprise number (sum of squared frequencies) with an AMS sketch. Series are keyed by
``group_by`` (Storm's fields grouping in RIoTBench).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from reuse.tasks.base import (
    Event,
    StatefulTask,
    as_float,
    derive,
    group_key,
    observations,
    snapshot,
    stable_hash64,
)

__all__ = [
    "KalmanFilter",
    "BlockWindowAverage",
    "SlidingLinearRegression",
    "DistinctApproxCount",
    "SecondOrderMoment",
]


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

    ``m = 2**buckets`` registers; an item's 64-bit hash picks a register with its low ``buckets``
    bits and records the rank of the first 1-bit of the rest; the estimate is
    ``alpha_m * m * 2**mean(registers)``, ``alpha_m = 0.39701 - (2 pi^2 + ln^2 2) / (48 m)``.
    Like any LogLog it is biased when far fewer than ``m`` items were seen.
    Config keys: ``buckets`` (``AGGREGATE.DISTINCT_APPROX_COUNT.BUCKETS``), ``field`` (the id
    field; the counted value is the event's ``sensor``). State: the registers.
    """

    type_name = "DistinctApproxCount"

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.k = int(self._cfg("buckets", required=True))
        self.field: str = self._cfg("field", required=True)
        self.m = 1 << self.k
        self.alpha = 0.39701 - (2 * math.pi**2 + math.log(2) ** 2) / (48 * self.m)
        self.registers = [0] * self.m

    def add(self, item: str) -> None:
        h = stable_hash64(item, 7)
        j = h & (self.m - 1)
        w = h >> self.k
        width = 64 - self.k
        rank = (w & -w).bit_length() if w else width + 1
        if rank > self.registers[j]:
            self.registers[j] = rank

    def estimate(self) -> float:
        return self.alpha * self.m * 2 ** (sum(self.registers) / self.m)

    def process(self, event: Event) -> list[Event]:
        self.add(str(event.get("sensor")))
        return [derive(event, obs="DAC", value=self.estimate(), analytic="DAC")]

    def get_state(self) -> Any:
        return {"registers": list(self.registers)}

    def set_state(self, state: Any) -> None:
        self.registers = [int(r) for r in state["registers"]]


class SecondOrderMoment(StatefulTask):
    """AMS estimate of the second frequency moment (surprise number) of observed values (1:1).

    Keeps at most ``max_map_size`` sampled positions (reservoir sampling with a deterministic
    hash-based coin); each sample counts the occurrences of its item since it was sampled, and
    the estimate is ``n * mean(2 c - 1)`` (Alon, Matias, Szegedy). An item is ``obs=value``.
    Config keys: ``max_map_size`` (``STATISTICS.MOMENT.MAX_HASHMAPSIZE``), optional ``fields``.
    State: ``n`` and the samples.
    """

    type_name = "SecondOrderMoment"

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.size = max(1, int(self._cfg("max_map_size", required=True)))
        fields = self._cfg("fields")
        self.fields = set(fields) if fields is not None else None
        self.n = 0
        self.samples: list[list[Any]] = []

    def add(self, item: str) -> None:
        self.n += 1
        for s in self.samples:
            if s[0] == item:
                s[1] += 1
        if len(self.samples) < self.size:
            self.samples.append([item, 1])
            return
        u = stable_hash64(f"ams|{self.n}", 3)
        if u % self.n < self.size:
            self.samples[stable_hash64(f"slot|{self.n}", 4) % self.size] = [item, 1]

    def estimate(self) -> float:
        return self.n * sum(2 * c - 1 for _, c in self.samples) / len(self.samples)

    def process(self, event: Event) -> list[Event]:
        out = []
        for obs, val in observations(event).items():
            if val is None or (self.fields is not None and obs not in self.fields):
                continue
            self.add(f"{obs}={val}")
            out.append(derive(event, obs="SOM", value=self.estimate(), analytic="SOM"))
        return out

    def get_state(self) -> Any:
        return snapshot({"n": self.n, "samples": self.samples})

    def set_state(self, state: Any) -> None:
        self.n = int(state["n"])
        self.samples = snapshot(state["samples"])

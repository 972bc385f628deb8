"""How well a publisher kept its rate: the achieved rate per window and the late sends (issue 23).

Issue 23's target for ``reuse publish`` is "within 2% for 10 minutes at 1,000 messages/s per
source". :class:`SendLog` is the :class:`~reuse.runtime.dataplane.publish.Publisher`'s
``on_send`` callback: it is called once per ``seq`` with the ``seq``'s due time and the moment
its sending began (the publisher sends a ``seq`` on every stream at once, so one log holds every
source's timing), and keeps, in constant memory per second of run, the number of sends per
window and each send's lateness. :meth:`SendLog.stats` turns that into :class:`PaceStats`:

- the achieved rate over the whole run: the intervals between the first and the last send over
  the time they took (:attr:`PublishReport.achieved
  <reuse.runtime.dataplane.publish.PublishReport.achieved>`'s definition), and its deviation
  from the target in percent;
- the achieved rate of every full window of ``window_s`` seconds of the planned run, counted by
  when the sends happened (the windows start at the first ``seq``'s due time; a window that ends
  after the planned duration is left out), and the lowest and highest deviation among them;
- the late sends: percentiles of ``started - due`` and how many started more than 1, 10 and 100
  ms late (a late ``seq`` is followed by a catch-up burst, so lateness moves sends between
  windows but does not drift the rate).

Pure: no broker, no clock of its own.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reuse.runtime.dataplane.mqtt import MqttError

__all__ = ["LATE_MS", "deviation_pct", "window_counts", "percentile", "PaceStats", "SendLog"]

#: Lateness thresholds (ms) whose exceedances :class:`PaceStats` counts.
LATE_MS = (1.0, 10.0, 100.0)


def deviation_pct(achieved: float, target: float) -> float:
    """``achieved`` against ``target`` in percent (negative: slower).

    Examples
    --------
    >>> deviation_pct(750.0, 1000.0), deviation_pct(1000.0, 1000.0)
    (-25.0, 0.0)
    """
    if not target > 0:
        raise MqttError(f"the target rate must be positive, got {target:g}")
    return (achieved / target - 1.0) * 100.0


def window_counts(offsets: Sequence[float], window_s: float, windows: int) -> list[int]:
    """Sends per window: ``offsets`` are send times in seconds after the windows' start; window
    ``k`` holds ``k * window_s <= t < (k + 1) * window_s``. Sends before 0 count in the first
    window, sends after the last window are left out.

    Examples
    --------
    >>> window_counts([0.0, 0.5, 0.99, 1.0, 2.5, 9.0], 1.0, 3)
    [3, 1, 1]
    """
    if not window_s > 0:
        raise MqttError(f"the window must be positive, got {window_s:g} s")
    counts = [0] * max(0, windows)
    for t in offsets:
        k = max(0, math.floor(t / window_s))
        if k < len(counts):
            counts[k] += 1
    return counts


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values`` by the nearest rank (``nan`` for none).

    Examples
    --------
    >>> percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50), percentile([5.0, 1.0, 3.0], 100)
    (3.0, 5.0)
    """
    if not values:
        return math.nan
    s = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(s)))
    return s[min(rank, len(s)) - 1]


@dataclass(frozen=True)
class PaceStats:
    """A publisher's pacing over one run (see the module's description).

    Attributes
    ----------
    target
        Messages/s per source asked for.
    seconds
        The planned duration.
    window_s
        The window length.
    seqs
        ``seq`` sent (each on every stream).
    achieved
        Messages/s per source over the whole run.
    windows
        The achieved rate of each full window.
    late_ms
        ``p50``, ``p99``, ``p99.9`` and ``max`` of the lateness, in ms.
    late_over
        Per threshold of :data:`LATE_MS` (``">1ms"``...), how many ``seq`` started later.
    """

    target: float
    seconds: float
    window_s: float
    seqs: int
    achieved: float
    windows: tuple[float, ...]
    late_ms: dict[str, float]
    late_over: dict[str, int]

    @property
    def deviation_pct(self) -> float:
        """The whole run's deviation from the target, in percent."""
        return deviation_pct(self.achieved, self.target)

    @property
    def window_min_pct(self) -> float:
        """The lowest window's deviation (``nan`` with no full window)."""
        return min((deviation_pct(w, self.target) for w in self.windows), default=math.nan)

    @property
    def window_max_pct(self) -> float:
        """The highest window's deviation (``nan`` with no full window)."""
        return max((deviation_pct(w, self.target) for w in self.windows), default=math.nan)

    def within(self, pct: float) -> bool:
        """Whether the whole run and every full window kept within ``pct`` percent of the
        target, the bound included (to 1e-9, so float rounding does not decide); ``False`` with
        no full window: nothing showed it."""
        return bool(self.windows) and all(
            abs(d) <= pct + 1e-9 for d in (self.deviation_pct, self.window_min_pct,
                                    self.window_max_pct))

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "seconds": self.seconds, "window_s": self.window_s,
                "seqs": self.seqs, "achieved": self.achieved,
                "deviation_pct": self.deviation_pct, "windows": list(self.windows),
                "window_min_pct": self.window_min_pct, "window_max_pct": self.window_max_pct,
                "late_ms": dict(self.late_ms), "late_over": dict(self.late_over),
                "within_2pct": self.within(2.0)}

    def summary(self) -> str:
        """One line.

        Examples
        --------
        >>> log = SendLog(10.0, window_s=1.0)
        >>> for s in range(30):
        ...     log(s, s / 10, s / 10 + (0.002 if s == 7 else 0.0))
        >>> print(log.stats(3.0).summary())
        10.00 msg/s per source (target 10, +0.00%); 3 windows of 1 s: +0.00% to +0.00%; late p50 0.000 p99 2.000 max 2.000 ms, >1ms 1, >10ms 0, >100ms 0 of 30
        """
        lm, lo = self.late_ms, self.late_over
        return (f"{self.achieved:.2f} msg/s per source (target {self.target:g}, "
                f"{self.deviation_pct:+.2f}%); {len(self.windows)} windows of "
                f"{self.window_s:g} s: {self.window_min_pct:+.2f}% to "
                f"{self.window_max_pct:+.2f}%; late p50 {lm['p50']:.3f} p99 {lm['p99']:.3f} "
                f"max {lm['max']:.3f} ms, "
                + ", ".join(f"{k} {v}" for k, v in lo.items()) + f" of {self.seqs}")


class SendLog:
    """The publisher's ``on_send``: keeps each ``seq``'s send time and lateness.

    Parameters
    ----------
    rate
        The target messages/s per source.
    window_s
        The window of :meth:`stats`.

    Examples
    --------
    A publisher at 8/s that stalled from ``seq`` 4's due time to 101.25 s, then caught up
    (``seq`` 4-7 went at once), and sent ``seq`` 10 5 ms late:

    >>> log = SendLog(8.0, window_s=1.0)
    >>> for s in range(16):
    ...     due = 100.0 + s / 8
    ...     log(s, due, 101.25 if 4 <= s <= 7 else due + (0.005 if s == 10 else 0.0))
    >>> st = log.stats(2.0)
    >>> st.windows, st.late_ms["max"], st.late_over
    ((4.0, 12.0), 750.0, {'>1ms': 5, '>10ms': 4, '>100ms': 4})
    >>> round(st.window_min_pct), round(st.window_max_pct), st.within(2.0)
    (-50, 50, False)
    """

    def __init__(self, rate: float, *, window_s: float = 10.0) -> None:
        if not rate > 0:
            raise MqttError(f"the rate must be positive, got {rate:g} messages/s")
        if not window_s > 0:
            raise MqttError(f"the window must be positive, got {window_s:g} s")
        self.rate = float(rate)
        self.window_s = float(window_s)
        self.m0: float | None = None  # the first seq's due time: the windows' start
        self.sent = array("d")  # send times, seconds after m0
        self.late = array("d")  # started - due, seconds

    def __call__(self, seq: int, due: float, started: float) -> None:
        if self.m0 is None:
            self.m0 = due
        self.sent.append(started - self.m0)
        self.late.append(started - due)

    def stats(self, seconds: float) -> PaceStats:
        """The pacing of a run planned for ``seconds``."""
        n = len(self.sent)
        elapsed = self.sent[-1] - self.sent[0] if n > 1 else 0.0
        achieved = (n - 1) / elapsed if elapsed > 0 else 0.0
        full = math.floor(seconds / self.window_s + 1e-9)
        windows = tuple(c / self.window_s
                        for c in window_counts(self.sent, self.window_s, full))
        late = [x * 1000.0 for x in self.late]
        late_ms = {"p50": percentile(late, 50), "p99": percentile(late, 99),
                   "p99.9": percentile(late, 99.9), "max": max(late, default=math.nan)}
        late_over = {f">{t:g}ms": sum(1 for x in late if x > t) for t in LATE_MS}
        return PaceStats(self.rate, float(seconds), self.window_s, n, achieved, windows,
                         late_ms, late_over)

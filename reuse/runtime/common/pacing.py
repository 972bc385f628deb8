"""A trigger that follows the rate (issue 35, item 5): when a replayed source hands a batch over.

Spark's trigger is fixed for a query's life, and each batch has a fixed price (measured here:
0.09-0.28 cores per 2 s batch for the skeleton alone, ``SPARK-ON-THIS-MACHINE.md``), so at 10
events/s most of what a mode spends is that price, and Reuse's saving of tasks shows as little
saving of cores. With a latency budget the source, not the trigger, decides: at each trigger
it hands over what was emitted only once that is worth a batch, i.e. it holds
:data:`PACED_BATCH` ``seq`` (under load: a batch as soon as there are enough) or its oldest
``seq`` has waited long enough that the next trigger would take it past the budget (few
events: batches up to the budget apart). Until then it reports no new data, and Spark runs no
batch (``noDataMicroBatches`` is off). Without a budget nothing changes.

The clock here is the replay's nominal one (``seq`` is emitted at ``t0 + seq / rate``), the
one every latency is measured from, so an event's wait in the source is part of its latency.
A broker-fed run has no such clock: its broker input hands a batch over by the same rule on
the arrival clock (:func:`paced_mark`: since when what was not handed over has waited).
"""

from __future__ import annotations

import time

__all__ = ["PACED_BATCH", "paced_offset", "paced_mark"]

#: ``seq`` that make a batch worth running at once (the columnar floor's batch: what the
#: kernels amortize their per-batch cost over)
PACED_BATCH = 1000


def paced_offset(t0_ms: int, rate: float, start: int, end: int, *, budget_s: float,
                 trigger_s: float, batch: int = PACED_BATCH,
                 now_ms: float | None = None) -> int:
    """The end to hand over now for the emitted ``[start, end)``: ``end`` when it holds
    ``batch`` ``seq`` or when ``start`` was emitted ``budget_s - trigger_s`` ago or more (the
    next trigger would be late), else ``start`` (nothing: no batch).

    Examples
    --------
    >>> paced_offset(0, 10.0, 0, 20, budget_s=10, trigger_s=1, now_ms=2000)  # 2 s: wait
    0
    >>> paced_offset(0, 10.0, 0, 90, budget_s=10, trigger_s=1, now_ms=9000)  # 9 s: go
    90
    >>> paced_offset(0, 1000.0, 0, 1000, budget_s=10, trigger_s=1, now_ms=1000)  # enough
    1000
    """
    if end <= start or end - start >= batch:
        return end
    now = time.time() * 1000 if now_ms is None else now_ms
    oldest_ms = t0_ms + start * 1000.0 / rate
    return end if now - oldest_ms >= (budget_s - trigger_s) * 1000 else start


def paced_mark(handed: int, mark: int, waiting_since: float | None, now: float, *,
               budget_s: float, trigger_s: float, batch: int = PACED_BATCH,
               ) -> tuple[int, float | None]:
    """A broker-fed run's pace under a latency budget: the ready mark to hand over now, and
    since when what is not handed over has waited (``None``: nothing waits). ``handed`` is
    the mark last handed over, ``mark`` the one the arrivals allow; ``[handed, mark)`` goes
    once it holds ``batch`` ``seq`` or has waited ``budget_s - trigger_s`` since the input saw
    it (the rule of :func:`paced_offset`, on the arrival clock).

    Examples
    --------
    >>> paced_mark(100, 150, None, 10.0, budget_s=5, trigger_s=1)  # seen now: wait
    (100, 10.0)
    >>> paced_mark(100, 180, 10.0, 14.0, budget_s=5, trigger_s=1)  # 4 s later: go
    (180, None)
    >>> paced_mark(100, 1100, 10.0, 10.5, budget_s=5, trigger_s=1)  # a batch's worth: go
    (1100, None)
    >>> paced_mark(100, 100, None, 10.0, budget_s=5, trigger_s=1)  # nothing new
    (100, None)
    """
    if mark <= handed:
        return handed, None
    since = now if waiting_since is None else waiting_since
    if mark - handed >= batch or now - since >= budget_s - trigger_s:
        return mark, None
    return handed, since

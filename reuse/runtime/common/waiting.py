"""Waiting for an engine to reach a ``seq``: an error only when it stops moving (issue 36).

An engine that is slower than its input is overloaded, not broken: it goes on with larger
batches, its backlog and latency grow, and they shrink again when the input slows down. A
fixed deadline ("reach seq N within 120 s") turns that into an error at the end of every run
that fell behind, however steadily it was catching up. So the one rule here, for every wait on
processing (the shared query and the query-per-DAG engines alike): the wait fails only when
the processed mark has not moved for ``stall_s`` seconds. A source that stops delivering
entirely, or a query that is stuck, still ends the run with a one-line error, after a time the
user sets (``reuse run --stall-timeout``).

Nothing here imports Spark; the engines pass how to read their mark and how to poll.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from reuse.runtime import SparkRuntimeError

__all__ = ["wait_progress"]


def wait_progress(target: int, mark: Callable[[], int], *, stall_s: float,
                  poll: Callable[[], None] = lambda: None, what: str = "the query",
                  task: str | None = None, sleep_s: float = 0.1,
                  clock: Callable[[], float] = time.monotonic,
                  sleep: Callable[[float], None] = time.sleep) -> float:
    """Wait until ``mark() >= target``; returns the seconds waited.

    Parameters
    ----------
    target
        The ``seq`` to reach.
    mark
        The engine's processed mark (every ``seq <=`` it is done).
    stall_s
        How long the mark may stay where it is before the wait fails.
    poll
        Called before each look (the engine's upkeep: failures surface from it).
    what, task
        Name the waited-on thing in the error (``task``: the task or query id it carries).

    Raises
    ------
    SparkRuntimeError
        The mark did not move for ``stall_s`` seconds.

    Examples
    --------
    A mark that moves slowly but steadily is waited for, however long it takes:

    >>> t = [0.0]
    >>> seen = iter(range(0, 100, 5))
    >>> wait_progress(50, lambda: next(seen), stall_s=1.0, clock=lambda: t[0],
    ...               sleep=lambda s: t.__setitem__(0, t[0] + 0.5))
    5.0

    A mark that stops is an error once ``stall_s`` has passed with no change:

    >>> t = [0.0]
    >>> wait_progress(50, lambda: 7, stall_s=2.0, clock=lambda: t[0],
    ...               sleep=lambda s: t.__setitem__(0, t[0] + 0.5))
    Traceback (most recent call last):
    ...
    reuse.runtime.SparkRuntimeError: the query did not reach seq 50: no progress for 2 s (at 7; \
set --stall-timeout to wait longer)
    """
    start = clock()
    last, since = None, start
    while True:
        poll()
        now_mark = mark()
        now = clock()
        if now_mark >= target:
            return now - start
        if last is None or now_mark > last:
            last, since = now_mark, now
        elif now - since >= stall_s:
            raise SparkRuntimeError(f"{what} did not reach seq {target}: no progress for "
                                    f"{stall_s:g} s (at {now_mark}; set --stall-timeout to "
                                    f"wait longer)", task=task)
        sleep(sleep_s)

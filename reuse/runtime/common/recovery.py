"""When a failed streaming query is started again, and when the run gives up: one rule for
both engines (the shared query and the query-per-DAG engines).

A query that fails (a Python worker killed, or one that did not connect back in time while
many queries started together on two cores) is started again from its checkpoint. Spark
re-runs the batch that was in flight from its offset log, the handler starts from the task
states saved after the batch before, and a re-run batch rewrites the same sink files and bus
messages under names fixed by ``(launch, batch)``: so the outputs stay exactly once. What
decides is plain data, kept here and tested without Spark: each failure is recorded with the
number of batches its query had finished, and a query that fails ``max_restarts`` times with
no batch finished in between is a fault that restarting will not cure: the run stops with a
one-line error. Starting a query runs Python too (the source's planning), so a start can fail
while the same fault is still going on: it is retried with a growing pause.

Nothing here imports Spark.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from reuse.runtime import SparkRuntimeError

__all__ = ["Failures", "start_with_retries"]

T = TypeVar("T")


@dataclass
class Failures:
    """The failures of a run's queries, in order (``events``: what the CSV's ``failures``
    counts and the ledger's log shows).

    Examples
    --------
    >>> f = Failures(max_restarts=2)
    >>> f.record("q", "boom", batches=3)["event"]
    'failure'
    >>> _ = f.record("q", "boom", batches=7)  # batches were done in between: a new streak
    >>> _ = f.record("q", "boom", batches=7)
    >>> f.record("q", "boom", batches=7)
    Traceback (most recent call last):
    ...
    reuse.runtime.SparkRuntimeError: task 'q': query failed 3 times in a row: boom
    >>> len(f)
    3
    """

    max_restarts: int = 5
    events: list[dict[str, Any]] = field(default_factory=list)

    def record(self, query: str, error: str, *, batches: int) -> dict[str, Any]:
        """Count a failure of ``query`` after it had finished ``batches`` batches; raise a
        one-line :class:`SparkRuntimeError` once it would be the ``max_restarts + 1``-th in a
        row with no batch finished in between (nothing is recorded then)."""
        streak = [e for e in self.events if e["query"] == query and e["batches"] == batches]
        if len(streak) >= self.max_restarts:
            raise SparkRuntimeError(f"query failed {len(streak) + 1} times in a row: {error}",
                                    task=query)
        event = {"event": "failure", "query": query, "error": error, "batches": batches,
                 "ms": time.time() * 1000}
        self.events.append(event)
        return event

    def __len__(self) -> int:
        return len(self.events)


def start_with_retries(start: Callable[[], T], *, query: str, attempts: int,
                       log: list[dict[str, Any]], pause_s: float = 0.5) -> T:
    """``start()``, tried up to ``attempts`` times with ``pause_s * attempt`` between tries
    (each failed try logged as ``restart_failed``); a one-line error after the last.

    Examples
    --------
    >>> tries = iter([RuntimeError("not yet\\nat ..."), None])
    >>> def start():
    ...     exc = next(tries)
    ...     if exc:
    ...         raise exc
    ...     return "started"
    >>> log = []
    >>> start_with_retries(start, query="q", attempts=3, log=log, pause_s=0.0)
    'started'
    >>> [(e["event"], e["error"]) for e in log]
    [('restart_failed', 'not yet')]
    """
    for attempt in range(1, attempts + 1):
        try:
            return start()
        except Exception as exc:  # noqa: BLE001 - retried, then one line
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            if attempt == attempts:
                raise SparkRuntimeError(f"query could not be restarted after {attempt} tries: "
                                        f"{first[:200]}", task=query) from None
            log.append({"event": "restart_failed", "query": query, "error": first[:300],
                        "ms": time.time() * 1000})
            time.sleep(pause_s * attempt)
    raise AssertionError("unreachable")  # attempts >= 1

"""The query-per-DAG engine watching its running queries (mixed into its ``Runtime``).

:meth:`QueryUpkeep.poll` restarts a failed query (:meth:`QueryUpkeep._recover`), stops the queries that have drained, tells a
producer to stop publishing a topic nobody still reads (through the query's control file) and
runs the bus upkeep: lag sampling and retention (issue 12; :mod:`reuse.runtime.dataplane.flow_control`,
:mod:`reuse.runtime.dataplane.retention`), so a slow consumer falls behind alone while its
shared producers run on, and each topic is truncated behind its slowest live consumer. The
high-water marks and the waits on them are here too.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.files import read_json, write_json
from reuse.runtime.common.recovery import Failures, start_with_retries
from reuse.runtime.common.waiting import wait_progress
from reuse.runtime.dataplane.flow_control import Consumer
from reuse.runtime.dataplane.retention import BusUpkeep
from reuse.runtime.engines.partial.queries import QueryInfo, TaskInfo, stop_between_batches

__all__ = ["QueryUpkeep"]


class QueryUpkeep:
    """Upkeep of the running queries; the engine's state it reads is declared here."""

    root: Path
    rate: float
    tasks: dict[str, TaskInfo]
    queries: dict[str, QueryInfo]
    log: list[dict[str, Any]]
    upkeep: BusUpkeep

    failures: Failures

    def _restart(self, qi: QueryInfo) -> None:
        """Start ``qi`` again from its checkpoint with a fresh handler (the engine's)."""
        raise NotImplementedError

    def _recover(self, qi: QueryInfo, error: str) -> None:
        """Start a failed query again from its checkpoint (its failed batch re-run exactly
        once), as :mod:`reuse.runtime.common.recovery` decides; the paper's engine gave up
        instead."""
        self.log.append(self.failures.record(qi.name, error, batches=qi.handler.batches))
        try:
            qi.handle.stop()
        except Exception:  # noqa: BLE001 - it has failed already; stopping only cleans up
            pass
        start_with_retries(lambda: self._restart(qi), query=qi.name,
                           attempts=self.failures.max_restarts, log=self.log)
        self.log.append({"event": "restart", "query": qi.name, "ms": time.time() * 1000})
    def _control(self, qi: QueryInfo) -> None:
        ctl: dict[str, Any] = {"publish": sorted(qi.publish), "end": qi.end,
                               "record": sorted(qi.record)}
        if qi.slow_s:
            ctl["slow_s"] = qi.slow_s
        write_json(self.root / "control" / f"{qi.name}.json", ctl)

    # --- upkeep --------------------------------------------------------------------------------

    def poll(self) -> None:
        """Stop drained queries, stop publishing topics nobody still reads, restart failed
        queries from their checkpoints."""
        for qi in list(self.queries.values()):
            if qi.status == "stopped":
                continue
            exc = qi.handle.exception() if qi.handle is not None else None
            if exc is not None:
                self._recover(qi, str(exc).splitlines()[0][:300])
                continue
            if qi.kind == "source" and qi.status == "draining":
                if not self._topics_read(qi.topics):
                    self._stop(qi)
                continue
            if qi.status == "draining" and (self.root / "final" / f"{qi.name}.json").exists():
                self._stop(qi)
        for qi in self.queries.values():
            if qi.kind != "partial" or qi.status == "stopped" or not qi.publish:
                continue
            keep = {p for p in qi.publish if self._still_read(p, qi.name)}
            if keep != qi.publish:
                qi.publish = keep
                self._control(qi)
        self.upkeep.tick(self._live_partials, self.consumers, self._topics)

    def _stop(self, qi: QueryInfo) -> None:
        stop_between_batches(qi)
        qi.handle.stop()
        qi.status = "stopped"
        qi.stopped_ms = time.time() * 1000
        self.log.append({"event": "stopped", "query": qi.name, "ms": qi.stopped_ms})
        if qi.kind == "partial":
            self.upkeep.forget(qi.name)

    # --- backpressure and retention -------------------------------------------------------------

    def _live_partials(self) -> list[str]:
        return [qn for qn, qi in self.queries.items()
                if qi.kind == "partial" and qi.status != "stopped"]

    def consumers(self) -> list[Consumer]:
        """Every partial query not stopped (running, paused or draining), as retention sees
        it: its input topics, its start offsets and what it has committed."""
        return [self.upkeep.consumer(qi.name, qi.inputs[0], qi.inputs[1])
                for qi in self.queries.values()
                if qi.kind == "partial" and qi.status != "stopped"]

    def _topics(self) -> set[str]:
        """Every topic this runtime has made or read (sources' and tasks' outputs)."""
        out = {t for qi in self.queries.values() for t in (*qi.topics, *qi.inputs[0])}
        out.update(t.topic for t in self.tasks.values() if t.kind != "sink")
        return out

    def retain(self) -> int:
        """Truncate every topic behind its slowest live consumer now; messages deleted
        (:meth:`poll` does this every ``retention_s``)."""
        return self.upkeep.retain(self.consumers(), self._topics())

    def lag(self) -> dict[str, dict[str, Any]]:
        """The latest lag report of each live partial query (see
        :meth:`~reuse.runtime.dataplane.flow_control.Admission.report`)."""
        out = {}
        for qn in self._live_partials():
            rep = self.upkeep.lag(qn)
            if rep is not None:
                out[qn] = rep
        return out

    def take_lag(self) -> tuple[int, int]:
        """``(largest lag in events, partial queries throttled)`` sampled since the last call
        (a run's step reports it as ``max_lag_events`` and ``throttled``)."""
        self.upkeep.sample(self._live_partials())
        return self.upkeep.take()

    def slow_down(self, qname: str, factor: float) -> None:
        """Test-only: make a partial query ``factor`` times slower than its producers: after
        each batch its handler sleeps ``factor`` times the source time the batch advanced its
        high-water mark (``factor / rate`` seconds per source ``seq``); ``factor`` 0 ends the
        slowdown (a sleep in progress is cut short). The sleep is in the driver's
        ``foreachBatch`` thread of that query only: it holds no Spark task slot and no core, so
        it slows that tenant and nothing else, as a slow machine would."""
        qi = self.queries[qname]
        qi.slow_s = float(factor) / self.rate if factor else 0.0
        self._control(qi)
        self.log.append({"event": "slow_down", "query": qname, "factor": factor,
                         "ms": time.time() * 1000})

    def _topics_read(self, topics: Iterable[str]) -> bool:
        """Whether a partial query that has not finished still reads any of ``topics`` (a
        private source replay runs until its dataflow's query has drained past its cut)."""
        wanted = set(topics)
        return any(qi.kind == "partial" and qi.status != "stopped"
                   and not (self.root / "final" / f"{qi.name}.json").exists()
                   and wanted.intersection(qi.inputs[0])
                   for qi in self.queries.values())

    def _still_read(self, producer_task: str, producer_query: str) -> bool:
        """Whether a query other than the producer still needs the task's topic: it has a live
        task reading it, or an ended one that has not yet drained past its end cut (a
        hand-over predecessor keeps reading until its final state)."""
        for qi in self.queries.values():
            if qi.kind != "partial" or qi.status == "stopped" or qi.name == producer_query:
                continue
            if producer_task in qi.tasks:
                continue
            if (self.root / "final" / f"{qi.name}.json").exists():
                continue
            for t in qi.tasks:
                if producer_task in self.tasks[t].parents:
                    end = qi.end.get(t)
                    if end is None or self.qhw(qi.name) < end - 1:
                        return True
        return False

    def qhw(self, qname: str | None = None) -> int:
        """High-water mark of a query: every source event ``<=`` it is fully processed. With
        no ``qname``, of the whole engine: the lowest over its live partial queries (``-1``:
        none)."""
        if qname is None:
            return min((self.qhw(qn) for qn, qi in self.queries.items()
                        if qi.kind == "partial" and qi.status != "stopped"), default=-1)
        qi = self.queries[qname]
        if qi.kind == "source":
            h = qi.handler
            return -1 if not h.batches else self._source_last(qi)
        last = qi.handler.states.latest() if qi.handler is not None else None
        if last is None:
            st = read_json(self.root / "final" / f"{qname}.json")
            return int(st["qhw"]) if st else -1
        return int(last.get("qhw", -1))

    def _source_last(self, qi: QueryInfo) -> int:
        prog = qi.handle.lastProgress
        try:
            return int(prog["sources"][0]["endOffset"]["seq"]) - 1 if prog else -1
        except (KeyError, TypeError, ValueError):
            return -1

    def wait_processed(self, seq: int, timeout_s: float = 120.0) -> None:
        """Block until every live partial query has processed every event ``<= seq``
        (drained queries count as done), polling as it goes; an error only when the slowest
        of them does not move for ``timeout_s`` (:func:`~reuse.runtime.common.waiting.wait_progress`)."""
        def behind() -> list[str]:
            return [qn for qn, qi in self.queries.items()
                    if qi.kind == "partial" and qi.status != "stopped"
                    and not (self.root / "final" / f"{qn}.json").exists()
                    and self.qhw(qn) < seq]

        def mark() -> int:  # the slowest pending query's: a stuck one stalls the wait
            pending = behind()
            return min((self.qhw(qn) for qn in pending), default=seq)

        wait_progress(seq, mark, stall_s=timeout_s, poll=self.poll,
                      what=f"the partial queries {behind()}", sleep_s=0.2)

    def wait_stopped(self, timeout_s: float = 120.0) -> None:
        """Block until every draining query has been stopped."""
        deadline = time.time() + timeout_s
        while any(qi.status == "draining" for qi in self.queries.values()):
            self.poll()
            if time.time() > deadline:
                raise SparkRuntimeError("draining queries did not finish in time")
            time.sleep(0.2)

"""What the query-per-DAG engine deploys: tasks and queries, and the source queries' batches.

:class:`TaskInfo` is a running task as deployed (its query, its topic, its window of source
``seq``); :class:`QueryInfo` one streaming query, a source replay or a partial DAG
(:mod:`reuse.runtime.engines.partial.dag`). A source query's ``foreachBatch`` is
:class:`SourceHandler`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reuse.runtime.dataplane.bus import Bus
from reuse.runtime.dataplane.frames import encode_frame

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import StreamingQuery

__all__ = ["TaskInfo", "QueryInfo", "SourceHandler", "publish_sources", "await_sources",
           "host_queries",
           "stop_between_batches", "short_name"]


@dataclass
class TaskInfo:
    """A running task as deployed: where it runs and which events it takes."""

    id: str
    type: str
    config: Any
    parents: tuple[str, ...]
    kind: str
    topic: str
    query: str | None
    start: int
    end: int | None = None


@dataclass
class QueryInfo:
    """One streaming query: a source replay or a partial DAG."""

    name: str
    kind: str  # "source" | "partial"
    launch: int
    tasks: list[str]
    handle: Any
    handler: Any
    started_ms: float
    status: str = "running"  # running | draining | stopped
    publish: set[str] = field(default_factory=set)
    record: set[str] = field(default_factory=set)
    end: dict[str, int] = field(default_factory=dict)
    stopped_ms: float | None = None
    successor: str | None = None
    spec: dict[str, Any] = field(default_factory=dict)
    inputs: tuple[list[str], dict[str, str]] = ([], {})
    topics: tuple[str, ...] = ()  # a source query's topics
    owner: str | None = None  # a private source query's dataflow incarnation
    slow_s: float = 0.0  # test-only: seconds the handler sleeps per input event


class SourceHandler:
    """foreachBatch of a source query: each stream's events of the batch become one frame whose
    ``hw`` is the batch's last seq (see :mod:`reuse.runtime.dataplane.frames`), encoded and published by
    the Python worker that generated them (Neptune's "sources at rate"): the driver only gets
    one count per stream, never the events."""

    def __init__(self, bus: Bus, launch: int) -> None:
        self.bus, self.launch = bus, launch
        self.batches = 0
        self.events = 0
        self.in_batch = False

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        self.in_batch = True
        try:
            self._batch(df, batch_id)
        finally:
            self.in_batch = False

    def _batch(self, df: DataFrame, batch_id: int) -> None:
        key = f"{self.launch:06d}-{batch_id:09d}"
        counts = df.mapInPandas(publish_sources(self.bus.spec(), key),
                                "src string, events long").collect()
        self.events += sum(int(n) for _, n in counts)
        self.batches += 1


def publish_sources(bus_spec: dict[str, str], key: str,
                     ) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """The worker side of :class:`SourceHandler`: group the batch's rows by stream, publish
    one frame per stream under ``key`` (a re-run batch rewrites the same message), yield the
    counts."""
    def fn(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        import pandas as pd

        from reuse.runtime.dataplane.bus import make_bus

        bus = make_bus(bus_spec)
        by_src: dict[str, list[tuple[int, str]]] = {}
        for f in frames:
            for seq, src, value in zip(f["seq"], f["src"], f["value"], strict=True):
                by_src.setdefault(src, []).append((int(seq), value))
        out = []
        for src, rows in by_src.items():
            rows.sort()
            bus.publish(f"src:{src}", key, encode_frame(rows[-1][0], [v for _, v in rows]))
            out.append((src, len(rows)))
        yield pd.DataFrame(out, columns=["src", "events"])

    return fn


def await_sources(q: StreamingQuery, timeout_s: float = 30.0) -> None:
    """Return once the query's sources are initialized (or it failed, or ``timeout_s``).

    Initializing a Python Data Source starts a fresh Python process on the driver, which Spark
    gives a fixed 10 s to connect back (``PythonWorkerFactory``'s simple workers; no setting
    changes it). Started together on two busy cores, many of them missed it ("Python worker
    failed to connect back"). Starting the next query only once this one's runner is up keeps
    at most one such process starting at a time; a failure left is restarted
    (:mod:`reuse.runtime.common.recovery`)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline and q.isActive:
        if q.status.get("message") != "Initializing sources":
            return
        time.sleep(0.02)


def stop_between_batches(qi: QueryInfo, timeout_s: float = 10.0) -> None:
    """Wait (briefly) for the query's batch in flight to end: interrupting a Python
    ``foreachBatch`` mid-call makes Spark log a long py4j error (harmless, since batches are
    idempotent, but noisy)."""
    deadline = time.time() + timeout_s
    while getattr(qi.handler, "in_batch", False) and time.time() < deadline:
        time.sleep(0.05)


def host_queries(groups: Iterable[Sequence[str]], new: Sequence[str],
                 tasks: Mapping[str, TaskInfo], queries: Mapping[str, QueryInfo]) -> list[str]:
    """The running queries of the running DAG(s) (``groups``: each one's runtime ids) the new
    tasks joined: a relaunch merge folds them into one query with the new tasks. A running DAG
    includes dataflows that share only a source, so folding them in too saves that query's
    per-batch overhead."""
    fresh = set(new)
    hosts: set[str] = set()
    for rts in groups:
        if fresh.intersection(rts):
            hosts.update(q for t in rts if t not in fresh
                         and (q := tasks[t].query) is not None
                         and queries[q].status == "running")
    return sorted(hosts)


def short_name(label: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "-" else "_" for ch in label)[:40]

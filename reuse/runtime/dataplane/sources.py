"""The Spark Python Data Sources the engines read: source replay, the bus, the shared query's clock.

- ``reusereplay`` (:class:`ReplayDataSource`) emits source event ``seq`` at nominal time
  ``t0 + seq * 1000 / rate`` (never earlier): deterministic content (RIoTBench SenML lines,
  looped, or synthetic events for sources without data), paced by the wall clock, replayable by
  offset (the query-per-DAG engine's source queries).
- ``reusebus`` (:class:`BusDataSource`) reads topics of the bus (:mod:`~reuse.runtime.dataplane.bus`)
  from a join point on, with backpressure (:mod:`reuse.runtime.dataplane.flow_control`): it
  admits whole messages per batch within its read limit and lag watermarks, writes its lag and
  throttle state to ``<root>/lag/<query>.json`` and, on ``commit``, its committed offsets to
  ``<root>/committed/<query>.json`` (the partial-DAG queries' input).
- ``reusetick`` (:class:`TickDataSource`) gives, per batch, each shard of the shared query its
  range of source ``seq`` (the shared-query engine's input).

:func:`register_sources` registers the three on a session.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from reuse.runtime.common.execution import held_offset, next_offset, read_hold, source_event
from reuse.runtime.common.files import read_json, safe_name, write_json
from reuse.runtime.common.pacing import paced_offset
from reuse.runtime.common.planners import stream_events_name
from reuse.runtime.dataplane.bus import BusError, make_bus
from reuse.runtime.dataplane.flow_control import Admission, Limits, admit

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ReplayDataSource", "BusDataSource", "TickDataSource", "register_sources"]


# --- reusereplay: the source replay ------------------------------------------------------------

class _Part(InputPartition):
    def __init__(self, value: Any) -> None:
        super().__init__(value)


class _ReplayReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        if "streams" in options:
            self.streams = [tuple(s) for s in json.loads(options["streams"])]
        else:
            self.streams = [(options["src"], options.get("src_type", options["src"]))]
        self.t0 = int(options["t0"])
        self.rate = float(options["rate"])
        self.start = int(options.get("start", "0"))
        self.data_dir = options.get("data_dir", "")
        self.limit = int(options.get("limit", "-1"))
        self.hold = options.get("hold", "")

    def initialOffset(self) -> dict:
        return {"seq": self.start}

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        lo = None if start is None else int(start["seq"])
        end = next_offset(self.t0, self.rate, limit=self.limit, start=lo)
        return {"seq": held_offset(end, read_hold(self.hold) if self.hold else None, lo)}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        if int(end["seq"]) <= int(start["seq"]):
            return []
        return [_Part((int(start["seq"]), int(end["seq"])))]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        lo, hi = partition.value  # type: ignore[attr-defined]
        for seq in range(lo, hi):
            for name, typ in self.streams:
                ev = source_event(stream_events_name(name), typ, seq, self.t0, self.rate,
                                  self.data_dir)
                yield (seq, name, json.dumps(ev, separators=(",", ":")))

    def commit(self, end: dict) -> None:
        pass


class ReplayDataSource(DataSource):
    """``spark.readStream.format("reusereplay")``: rows ``(seq long, src string, value string)``.

    Options: ``src`` (stream name, the events' ``src``), ``src_type`` (``SYS``/``TAXI``/``FIT`` or
    anything for synthetic), or ``streams`` (JSON list of ``[src, src_type]``: several streams
    paced together by one query, used for OPMW's many synthetic sources), ``t0`` (ms), ``rate`` (events/s), ``start`` (first seq),
    ``data_dir``, ``limit`` (stop before this seq; -1 = never), ``hold`` (a file holding a
    ``seq`` not to emit yet, :meth:`~reuse.runtime.engines.partial.engine.Runtime.hold`).
    """

    @classmethod
    def name(cls) -> str:
        return "reusereplay"

    def schema(self) -> str:
        return "seq long, src string, value string"

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return _ReplayReader(dict(self.options))


class _BusReader(DataSourceStreamReader):
    """The ``reusebus`` reader. ``latestOffset``, ``partitions`` and ``commit`` run in the
    query's source-runner Python process (one per query, kept between batches, so the throttle
    state lives here); ``read`` runs in a Python worker."""

    def __init__(self, options: dict[str, str]) -> None:
        self.topics: list[str] = json.loads(options["topics"])
        self.start: dict[str, str] = json.loads(options.get("start", "{}"))
        self.bus = make_bus(json.loads(options["bus_spec"]))
        self.limits = Limits.of_options(options)
        self.query = options.get("query", "")
        root = options.get("state_root", "")
        name = f"{safe_name(self.query)}.json"
        self.lag_path = Path(root) / "lag" / name if root and self.query else None
        self.committed_path = Path(root) / "committed" / name if root and self.query else None
        self.throttled: dict[str, bool] | None = None
        self._planned: tuple[dict[str, str], Admission] | None = None
        self._reported: dict[str, Any] | None = None

    def initialOffset(self) -> dict:
        return {t: self.start.get(t, "") for t in self.topics}

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        """The next batch's end: whole messages within the read limit and watermarks.

        ``limit`` is Spark's read limit: under the processing-time triggers the runtime uses it
        is ``ReadAllAvailable`` (our default read limit); the bound is in events, not rows (a
        row is a message of many events), so the options decide.
        """
        prev = {**self.initialOffset(), **(start or {})}
        if self.throttled is None:  # a restarted reader keeps its hysteresis
            old = read_json(self.lag_path, None) if self.lag_path else None
            self.throttled = {t: bool(v.get("throttled")) for t, v in
                              ((old or {}).get("topics") or {}).items()}
        index = {t: self.bus.index(t, prev[t]) for t in self.topics}
        adm = admit(index, prev, self.limits, self.throttled)
        self.throttled = dict(adm.throttled)
        self._planned = (prev, adm)
        report = adm.report()
        if self.lag_path is not None and report != self._reported:
            write_json(self.lag_path, {**report, "ms": round(time.time() * 1000)})
            self._reported = report
        return {t: adm.end[t] for t in self.topics}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        # one partition for all topics: the batch is small and goes to one operator anyway,
        # and every partition costs a Python reader invocation. Each range carries the number
        # of messages planned, so read() can tell if any vanished under it.
        planned = None
        if self._planned is not None and self._planned[0] == {**self.initialOffset(), **start}:
            planned = self._planned[1]
        ranges = []
        for t in self.topics:
            lo = start.get(t, "")
            if end[t] > lo:
                if planned is not None and planned.end.get(t) == end[t]:
                    n = planned.messages[t]
                else:  # a re-run batch (offsets from the log): count what is there now
                    n = sum(1 for k, _ in self.bus.index(t, lo) if k <= end[t])
                ranges.append((t, lo, end[t], n))
        return [_Part((self.query, ranges))] if ranges else []

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        query, ranges = partition.value  # type: ignore[attr-defined]
        for topic, after, upto, planned in ranges:
            n = 0
            for key, frame in self.bus.read(topic, after, upto):
                n += 1
                yield (topic, key, frame)
            if n < planned:
                raise BusError(f"{planned - n} of {planned} messages up to {upto} are missing "
                               "(deleted before this batch read them)", topic=topic,
                               query=query, key=after)

    def commit(self, end: dict) -> None:
        """Record the committed offsets for retention (``<root>/committed/<query>.json``)."""
        if self.committed_path is not None:
            write_json(self.committed_path, {t: end.get(t, "") for t in self.topics})


class BusDataSource(DataSource):
    """``spark.readStream.format("reusebus")``: rows ``(topic, key, frame)``, one per message.

    Frames pass through undecoded: the partial DAG's worker decodes them (and names the topic
    and key of a malformed one).

    Options: ``topics`` (JSON list), ``start`` (JSON topic -> key already consumed: the join
    point), ``bus_spec`` (JSON of :meth:`Bus.spec`); flow control (all optional):
    ``max_events``, ``lag_high``, ``lag_low`` (see :class:`~reuse.runtime.dataplane.flow_control.Limits`;
    no ``max_events``: every batch takes all pending messages), ``query`` and ``state_root``
    (where the lag and committed-offset files go; without them none is written).
    """

    @classmethod
    def name(cls) -> str:
        return "reusebus"

    def schema(self) -> str:
        return "topic string, key string, frame binary"

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return _BusReader(dict(self.options))


# --- reusetick: the shared query's clock ------------------------------------------------------

class _TickReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.t0 = int(options["t0"])
        self.rate = float(options["rate"])
        self.start = int(options.get("start", "0"))
        self.limit = int(options.get("limit", "-1"))
        self.shards = int(options.get("shards", "1"))
        self.max_events = int(options.get("max_events", "0"))
        self.ready_file = options.get("ready_file", "")
        self.hold = options.get("hold", "")
        self.budget_s = float(options.get("budget_s", "0"))
        self.trigger_s = float(options.get("trigger_s", "0"))

    def initialOffset(self) -> dict:
        return {"seq": self.start}

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        lo = None if start is None else int(start["seq"])
        if self.ready_file:
            return {"seq": ready_offset(self.ready_file, self.start if lo is None else lo,
                                        limit=self.limit, max_events=self.max_events)}
        end = next_offset(self.t0, self.rate, limit=self.limit, start=lo,
                          max_events=self.max_events)
        end = held_offset(end, read_hold(self.hold) if self.hold else None, lo)
        if self.budget_s > 0:  # a trigger that follows the rate (reuse.runtime.common.pacing)
            first = self.start if lo is None else lo
            at_limit = 0 <= self.limit <= end
            if not at_limit:  # the replay's last seq go at once: nothing more will come
                end = paced_offset(self.t0, self.rate, first, end, budget_s=self.budget_s,
                                   trigger_s=self.trigger_s)
        return {"seq": end}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        lo, hi = int(start["seq"]), int(end["seq"])
        if hi <= lo:
            return []
        return [_Part((s, lo, hi)) for s in range(self.shards)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        yield partition.value  # type: ignore[attr-defined]

    def commit(self, end: dict) -> None:
        pass


def ready_offset(path: str, lo: int, *, limit: int = -1, max_events: int = 0) -> int:
    """The end of the next range of a broker-fed shared query: the ``seq`` the driver wrote to
    ``path`` as claimable (:func:`reuse.runtime.dataplane.broker_feed.ready_seq`), never below
    ``lo``, at most ``max_events`` past it (0: no bound) and at most ``limit`` (-1: none).

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "ready")
    >>> ready_offset(p, 5)  # nothing written yet
    5
    >>> _ = open(p, "w").write("50")
    >>> ready_offset(p, 5), ready_offset(p, 5, max_events=10), ready_offset(p, 60)
    (50, 15, 60)
    """
    try:
        with open(path, encoding="utf-8") as fh:
            ready = int(fh.read().strip() or lo)
    except (FileNotFoundError, ValueError):
        ready = lo
    hi = max(lo, ready)
    if max_events > 0:
        hi = min(hi, lo + max_events)
    if limit >= 0:
        hi = min(hi, max(lo, limit))
    return hi


class TickDataSource(DataSource):
    """``spark.readStream.format("reusetick")``: per batch, one row ``(shard, lo, hi)`` per shard.

    ``[lo, hi)`` is the range of source ``seq`` whose nominal emit time has passed since the last
    batch (at most ``max_events`` of them when that is set, so a backlog is worked off in
    bounded batches). Options: ``t0`` (ms), ``rate`` (events/s per source), ``start``,
    ``limit`` (-1 = never), ``shards``, ``max_events`` (0 = no bound). With ``ready_file`` (a
    broker-fed run) the range ends where the driver says the sources' events have arrived
    (:func:`ready_offset`), not at the clock.
    """

    @classmethod
    def name(cls) -> str:
        return "reusetick"

    def schema(self) -> str:
        return "shard int, lo long, hi long"

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return _TickReader(dict(self.options))


def register_sources(spark: SparkSession) -> None:
    """Register ``reusereplay``, ``reusebus`` and ``reusetick`` on a session (idempotent)."""
    spark.dataSource.register(ReplayDataSource)
    spark.dataSource.register(BusDataSource)
    spark.dataSource.register(TickDataSource)

"""What the shared query's Spark Python workers need to know about where they run.

Which executor a worker serves (anti-affinity is checked against it), where the replay
data is: the driver's path on a shared disk, or the copy Spark shipped (``--no-shared-disk``),
and, on a broker-fed run, the bus the source events are read from (:func:`bus_reader`).
Used by the unsplit shard worker (:mod:`~reuse.runtime.engines.shared.engine`) and the split
stages (:mod:`~reuse.runtime.engines.shared.split_batch`) alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reuse.runtime.common.ledger import TaskOptions

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["executor_id", "worker_opts", "ship_data", "BusReader", "bus_reader"]

_EXECUTOR: tuple[int, str] | None = None  # (parent pid, executor id) of this Python worker


def executor_id() -> str:
    """The Spark executor this Python worker serves: ``--executor-id`` of the JVM it was
    forked from (a standalone executor, ``CoarseGrainedExecutorBackend``), ``driver`` in
    ``local`` mode. Read from the process tree once per worker process: the Python Data
    Source and ``TaskContext`` APIs do not say, and anti-affinity is checked against it."""
    global _EXECUTOR
    import os

    ppid = os.getppid()
    if _EXECUTOR is not None and _EXECUTOR[0] == ppid:
        return _EXECUTOR[1]
    import psutil

    found = "driver"
    try:
        for proc in psutil.Process().parents():
            if "java" not in proc.name():
                continue
            cmd = proc.cmdline()
            if "--executor-id" in cmd:
                found = f"{cmd[cmd.index('--executor-id') + 1]}@{proc.pid}"
            break
    except (psutil.Error, IndexError):
        found = "unknown"
    _EXECUTOR = (ppid, found)
    return found


def worker_opts(opts: TaskOptions) -> TaskOptions:
    """The task options as a Spark Python worker uses them: with ``data_file`` (a run with no
    shared disk) the replay data is the copy Spark shipped to this executor
    (:func:`ship_data`), not the driver's path; ``columnar`` is kept."""
    name = opts.get("data_file")
    if not name:
        return opts
    from pyspark import SparkFiles

    out: TaskOptions = {"data_dir": SparkFiles.get(str(name)),
                        "pi_iterations": opts["pi_iterations"], "record": opts["record"],
                        "limit": opts["limit"]}
    if "columnar" in opts:
        out["columnar"] = opts["columnar"]
    return out


def ship_data(spark: SparkSession, data_dir: str, root: Path) -> str:
    """Send the replay data directory to every executor and return the name executors find it
    under (:func:`worker_opts`). Spark ships a local directory only to a local master, so it
    goes as a zip archive (``SparkContext.addArchive``; each executor unpacks it once), made
    in the run directory. The same directory shipped again in the session is not re-sent."""
    import hashlib
    import shutil

    path = Path(data_dir).resolve()
    name = "data-" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if not any(a.endswith("#" + name) or a.rstrip("/").endswith("/" + name)
               for a in spark.sparkContext.listArchives):
        zipped = shutil.make_archive(str(root / "shipped" / name), "zip", str(path))
        spark.sparkContext.addArchive(f"{zipped}#{name}")
    return name


class BusReader:
    """One shard's source events for one batch ``[lo, hi)``, read once per source from the
    bus (:func:`~reuse.runtime.dataplane.broker_feed.read_events`) and cut to each task's
    window; every task gets its own copies."""

    def __init__(self, bus: Any, cursors: dict[str, str], lo: int, hi: int) -> None:
        self.bus, self.after, self.lo, self.hi = bus, cursors, lo, hi
        self.read: dict[str, tuple[list[dict[str, Any]], str]] = {}

    def __call__(self, source: str, a: int, b: int) -> list[dict[str, Any]]:
        from reuse.runtime.dataplane.broker_feed import read_events

        if source not in self.read:
            self.read[source] = read_events(self.bus, source, self.after.get(source, ""),
                                            self.lo, self.hi)
        return [dict(e) for e in self.read[source][0] if a <= e["seq"] < b]

    def cursors(self) -> dict[str, str]:
        return {s: cur for s, (_, cur) in self.read.items()}

    def keep(self, task: str, key: str, hw: int, lines: list[str]) -> None:
        """Append a sink's records of this batch to its bus topic under the batch's key (a
        re-run batch's append is dropped by the bus: idempotent per key)."""
        from reuse.runtime.dataplane.mqtt import keep_output

        keep_output(self.bus, task, key, hw, lines)


_BUSES: dict[str, Any] = {}  # bus spec -> the bus, one per Python worker process


def bus_reader(feed: dict[str, str], cursors: dict[str, str], lo: int, hi: int) -> BusReader:
    """A batch's reader, on the worker's one connection to the bus (Spark reuses its Python
    workers, so a connection and its scripts outlive the batch)."""
    from reuse.runtime.dataplane.bus import make_bus

    spec = json.dumps(feed, sort_keys=True)
    if spec not in _BUSES:
        _BUSES[spec] = make_bus(feed)
    return BusReader(_BUSES[spec], cursors, lo, hi)

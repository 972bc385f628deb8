"""What a run costs: CPU of every process of the run, and source-to-sink latency.

CPU. The paper summed ``top`` over its Storm hosts; we sum psutil ``cpu_times()`` (user + system)
over the run's process tree: the driver Python process (it runs ``foreachBatch`` and moves files),
its JVM (local mode) and the JVM's Python workers (``pyspark.daemon`` and forked workers, where
the tasks run: JVM counters do not include them), plus any extra roots (standalone master, worker
and executor JVMs, a Redis server). A sampler thread rescans the tree every ``interval`` seconds
and keeps each process's latest cumulative CPU, so processes that come and go are counted up to
their last sample. ``cores`` over a window is CPU seconds / wall seconds (1.0 = one busy core).

Latency: sink record output time minus the source event's nominal emit time ``ts``.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from reuse.runtime.common.files import safe_name
from reuse.runtime.engines.shared.deploy import REPLICA_MARK
from reuse.runtime.rows import CpuColumns

__all__ = ["CpuMeter", "SinkTail", "StepWindow", "hold_step", "percentile", "longest_pause"]


def _category(p: psutil.Process) -> str:
    try:
        name = p.name()
        cmd = " ".join(p.cmdline()[:4])
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return "gone"
    if "java" in name:
        if "deploy.master" in cmd or "deploy.worker.Worker" in cmd:
            return "cluster"
        return "jvm"
    if "redis" in name:
        return "broker"
    if "pyspark" in cmd or "python" in name:
        return "python-worker"
    return "other"


def forked_python_workers(root_pid: int | None = None) -> list[int]:
    """PIDs of Spark's forked Python workers in a process tree (``root_pid``, default this
    process): the children of ``pyspark.daemon``, where tasks run. Fault tests and
    ``benchmarks/runtime_faults.py`` kill these to fail a batch in flight."""
    out = []
    try:
        procs = psutil.Process(root_pid).children(recursive=True)
    except psutil.Error:
        return []
    for p in procs:
        try:
            parent = p.parent()
            if ("pyspark.daemon" in " ".join(p.cmdline()) and parent is not None
                    and "pyspark.daemon" in " ".join(parent.cmdline())):
                out.append(p.pid)
        except psutil.Error:
            continue
    return out


def kill_forked_workers(roots: Callable[[], Iterable[int]], seconds: float = 3.0, *,
                        all_along: bool = False) -> list[int]:
    """SIGKILL the forked Python workers (:func:`forked_python_workers`) under the processes
    ``roots()`` names (asked again each round: an executor may be replaced), every 20 ms for
    up to ``seconds``: until some were killed (between batches a JVM may have none), or,
    ``all_along``, for the whole time (so one lands in a batch); the PIDs killed."""
    killed: list[int] = []
    end = time.time() + seconds
    while time.time() < end and (all_along or not killed):
        for p in (w for r in roots() for w in forked_python_workers(r)):
            try:
                os.kill(p, signal.SIGKILL)
                killed.append(p)
            except ProcessLookupError:
                pass
        time.sleep(0.02)
    return killed


def executor_pids() -> list[int]:
    """PIDs of the executor JVMs (``CoarseGrainedExecutorBackend``) of standalone clusters on
    this machine: what ``benchmarks/runtime_faults.py`` and ``benchmarks/chaos.py`` kill as
    the executor fault."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if "CoarseGrainedExecutorBackend" in " ".join(p.info["cmdline"] or []):
                out.append(p.pid)
        except psutil.Error:
            continue
    return out


class CpuMeter:
    """Cumulative CPU of a process tree, sampled in the background.

    Parameters
    ----------
    roots
        PIDs whose whole descendant trees are measured (the driver itself is always included).
    interval
        Seconds between scans.
    """

    def __init__(self, roots: Iterable[int] = (), interval: float = 0.5) -> None:
        self.driver = os.getpid()
        self.roots = [self.driver, *roots]
        self.interval = interval
        self._cpu: dict[tuple[int, float], tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add_roots(self, pids: Iterable[int]) -> None:
        for p in pids:
            if p not in self.roots:
                self.roots.append(p)

    def sample(self) -> None:
        procs: dict[int, psutil.Process] = {}
        for r in self.roots:
            try:
                root = psutil.Process(r)
            except psutil.NoSuchProcess:
                continue
            procs[root.pid] = root
            try:
                for c in root.children(recursive=True):
                    procs[c.pid] = c
            except psutil.NoSuchProcess:
                pass
        with self._lock:
            for pid, p in procs.items():
                try:
                    t = p.cpu_times()
                    key = (pid, p.create_time())
                    cat = self._cpu[key][0] if key in self._cpu else (
                        "driver" if pid == self.driver else _category(p))
                    self._cpu[key] = (cat, t.user + t.system)
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue

    def total(self, by_category: bool = False) -> Any:
        """CPU seconds so far (all processes ever seen), or a dict per process category."""
        self.sample()
        with self._lock:
            if not by_category:
                return sum(v for _, v in self._cpu.values())
            out: dict[str, float] = {}
            for cat, v in self._cpu.values():
                out[cat] = out.get(cat, 0.0) + v
            return out

    def start(self) -> CpuMeter:
        """Sample in the background (a second call while sampling changes nothing)."""
        if self._thread is not None and self._thread.is_alive() and not self._stop.is_set():
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="cpu-meter", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


class SinkTail:
    """Reads new sink record files incrementally (each file is read once)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.dir = Path(root) / "sinks"
        self.seen: set[str] = set()

    def _new_files(self) -> Iterator[Path]:
        """Record files not read before (each is read once; temporary files are skipped)."""
        if not self.dir.is_dir():
            return
        replica_dir = safe_name(REPLICA_MARK)
        for sub in os.listdir(self.dir):
            if replica_dir in sub:
                continue  # a replica's copies of outputs its running task also writes
            d = self.dir / sub
            for name in os.listdir(d):
                if not name.endswith(".jsonl") or name.startswith("."):
                    continue
                path = f"{sub}/{name}"
                if path in self.seen:
                    continue
                self.seen.add(path)
                yield d / name

    def skip_existing(self) -> int:
        """Mark every record file already there as read (a resumed run's earlier outputs);
        how many there were."""
        return sum(1 for _ in self._new_files())

    def new_records(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for f in self._new_files():
            for line in f.read_text(encoding="utf-8").splitlines():
                if line:
                    out.append(json.loads(line))
        return out

    def new_latencies(self, per_file: int = 200) -> tuple[int, list[float]]:
        """``(records, latencies)`` of the new record files, cheaply: every record is counted,
        but only about ``per_file`` lines of a file are parsed; each parsed latency stands for
        the lines skipped after it (so percentiles keep each file's weight). Measuring must
        not cost the run more than the work it measures: at 300 events/s a RIoT peak writes
        tens of thousands of records a second."""
        import orjson

        count = 0
        lat: list[float] = []
        for f in self._new_files():
            lines = [ln for ln in f.read_bytes().splitlines() if ln]
            count += len(lines)
            stride = max(1, len(lines) // per_file)
            for i in range(0, len(lines), stride):
                r = orjson.loads(lines[i])
                if r.get("ts") is not None:
                    lat.extend([r["o"] - r["ts"]] * min(stride, len(lines) - i))
        return count, lat


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile: the smallest value with at least ``q`` % of the values at or
    below it (``None`` for no values).

    No interpolation: the result is always one of the measured latencies, so a p99 over 100
    records is the 99th smallest, not the maximum. The rank is ``ceil(q * n / 100)``, at least 1
    (``q = 0`` gives the minimum); a tiny slack keeps float noise in a fractional ``q``
    (``2.2 * 1500 / 100`` is ``33.00000000000001``) from moving an exact rank up by one.

    Examples
    --------
    >>> percentile([1, 2, 3, 4], 50), percentile([1, 2, 3, 4], 75), percentile([], 99)
    (2, 3, None)
    """
    if not values:
        return None
    s = sorted(values)
    rank = math.ceil(q * len(s) / 100 - 1e-9)
    return s[min(len(s), max(1, rank)) - 1]


def output_gaps(root: str | os.PathLike[str], copies: Mapping[str, Sequence[str]],
                lo_ms: float, hi_ms: float) -> dict[str, float]:
    """Per sink: the longest time in ``[lo_ms, hi_ms]`` with no record file written by any of
    its ``copies`` (its running task and, under k-safety, its replicas), in seconds.

    A shard writes one record file per sink per batch with events, under a name fixed by the
    batch, so the files' modification times are when output reached the sink. Consumers of a
    replicated sink read every copy (de-duplicating by ``(seq, digest)``), so the sink is
    without output only while no copy writes: what k-safety promises to keep short when an
    executor dies."""
    out: dict[str, float] = {}
    for sink, names in copies.items():
        times = []
        for name in names:
            d = Path(root) / "sinks" / safe_name(name)
            if d.is_dir():
                times += [e.stat().st_mtime * 1000 for e in os.scandir(d)
                          if e.name.endswith(".jsonl") and not e.name.startswith(".")]
        times = sorted(t for t in times if lo_ms <= t <= hi_ms)
        edges = [lo_ms] + times + [hi_ms]
        out[sink] = round(max(b - a for a, b in zip(edges, edges[1:], strict=False)) / 1000, 3)
    return out


@dataclass(frozen=True)
class StepWindow:
    """One step's measured window (:func:`hold_step`): ``t0`` to ``t1`` in seconds, the CPU
    seconds per process category over it, ``cores`` (their sum over the window) and
    ``cores_steady`` (the second half after the operation; ``None`` when under a quarter of
    the step was left for it)."""

    t0: float
    t1: float
    cpu: dict[str, float]
    cores: float
    cores_steady: float | None

    def cpu_columns(self) -> CpuColumns:
        """The step row's CPU seconds by kind: the driver, its JVM(s), the Python workers
        (where tasks run) and everything else (a cluster's daemons, Redis, instances)."""
        known = ("driver", "jvm", "python-worker")
        return {"cpu_driver": round(self.cpu.get("driver", 0.0), 3),
                "cpu_jvm": round(self.cpu.get("jvm", 0.0), 3),
                "cpu_python_workers": round(self.cpu.get("python-worker", 0.0), 3),
                "cpu_other": round(sum(v for k, v in self.cpu.items() if k not in known), 3)}


def hold_step(meter: CpuMeter, t0: float, cpu0: Mapping[str, float], step_seconds: float,
              op_s: float, tick: Callable[[], None]) -> StepWindow:
    """Call ``tick`` about every 0.25 s until the step that began at ``t0`` is over, and
    measure it: the one step measurement of every driver (``reuse run``'s engines, the
    coordinator across applications, a live engine's trace), so their ``cores`` mean the same.

    ``cpu0`` was read at ``t0``, before the step's operation, which took ``op_s``: the step's
    CPU covers its operation, and its window never ends before the operation did (starting
    queries on the query-per-DAG engine can outlast a step): a step's cost is never measured
    over almost no time (issue 33). ``tick`` runs once more at the end, so what arrived in
    the step's last moment is the step's.
    """
    mid = max(t0 + step_seconds / 2, t0 + op_s)
    cpu_mid: tuple[float, float] | None = None
    while True:
        now = time.time()
        if cpu_mid is None and now >= mid:
            cpu_mid = (meter.total(), now)
        tick()
        if now >= t0 + step_seconds:
            break
        time.sleep(min(0.25, max(0.0, t0 + step_seconds - time.time())))
    t1 = time.time()
    cpu1 = meter.total(by_category=True)
    dcpu = {k: cpu1.get(k, 0.0) - cpu0.get(k, 0.0) for k in cpu1}
    steady = ((sum(cpu1.values()) - cpu_mid[0]) / (t1 - cpu_mid[1])
              if cpu_mid and t1 - cpu_mid[1] >= step_seconds / 4 else None)
    return StepWindow(t0=t0, t1=t1, cpu=dcpu, cores=round(sum(dcpu.values()) / (t1 - t0), 4),
                      cores_steady=None if steady is None else round(steady, 4))


def longest_pause(ends: Sequence[float], lo: float, hi: float, origin: float) -> float:
    """The longest pause between output times ``ends`` (any order) that ends in ``[lo, hi]``:
    from one output (or ``origin``, before the first) to the next; with no output in
    ``[lo, hi]``, the pause that lasts all of it, from the last output before ``lo`` to ``hi``.

    A step's ``gap_s``, the same for every driver: ``reuse run`` over the shared query's batch
    completions, the apps coordinator over the output arrivals its consumers read. A pause is
    the step's it ends in, so a pause that outlasts a step is counted once, whole.

    Examples
    --------
    >>> longest_pause([1.0, 2.0, 5.0, 6.0], 3.0, 7.0, 0.0)  # 2 -> 5 ends in [3, 7]
    3.0
    >>> longest_pause([], 3.0, 7.0, 0.0)  # no output yet: since the origin
    7.0
    >>> longest_pause([1.0, 9.0], 3.0, 7.0, 0.0)  # none in the step: from the one before
    6.0
    """
    ordered = sorted(ends)
    i, j = bisect.bisect_left(ordered, lo), bisect.bisect_right(ordered, hi)
    last = ordered[i - 1] if i else origin
    gap = 0.0
    for e in ordered[i:j]:
        gap = max(gap, e - last)
        last = e
    return gap if j > i else hi - last

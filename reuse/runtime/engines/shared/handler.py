"""One batch of the shared query: its ``foreachBatch`` handler (in the driver) and the shards'
work it hands to Spark's Python workers (why a re-run is exact, and the cuts:
:mod:`reuse.runtime.engines.shared.engine`).

One batch:

1. The tick source (``reusetick``) claims the source ``seq`` range ``[lo, hi)`` emitted since the
   last batch, one input partition per shard. Spark writes the range to the query's offset log
   before the batch runs; the driver reads it from there.
2. ``foreachBatch`` (driver) takes the deployment's snapshot for that range under the lock
   (:meth:`Deployment.claim`) and the task states saved after the previous batch.
3. ``mapInPandas`` runs :func:`reuse.runtime.engines.shared.shard.run_shard` once per shard, in Spark's Python
   workers, in parallel: each shard generates its source events, runs its tasks parents-first
   and returns sink records, new task states and each task's CPU time.
4. Each shard writes its sink records under names fixed by the batch id; the driver then
   writes the task states (``ckpt/<query>/tstate/<batch>.json``) and a line of batch
   statistics (``batches.jsonl``).

Apart from the engine so that each holds one job: the engine enacts operations and keeps the
run's accounts; the handler turns a claimed ``seq`` range into records, states and a line of
``batches.jsonl``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.files import write_records
from reuse.runtime.common.states import BatchStates
from reuse.runtime.engines.contract import TaskOptions
from reuse.runtime.engines.shared.deploy import Epoch
from reuse.runtime.engines.shared.shard import absorber, seed_handovers, seed_replicas
from reuse.runtime.engines.shared.workers import bus_reader, executor_id, worker_opts

if TYPE_CHECKING:
    import threading
    from pathlib import Path

    import pandas as pd
    from pyspark.sql import DataFrame

    from reuse.runtime.engines.shared.deploy import Deployment
    from reuse.runtime.engines.shared.split import SplitPlan
    from reuse.runtime.engines.shared.split_batch import SplitResult

__all__ = ["QUERY", "BatchHooks", "ShardEngine", "ShardHandler"]

#: the shared query's name (its checkpoint, its log lines, its errors)
QUERY = "shared"


# --- one batch ---------------------------------------------------------------------------------

def _worker(epoch: Epoch, states: dict[str, Any], opts: TaskOptions, t0: int, rate: float,
            sinks_dir: str | None, key: str, feed: dict[str, str] | None = None,
            cursors: dict[str, str] | None = None, egress: bool = False,
            ) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """The shards' work, run by Spark's Python workers. Each shard writes its sink records
    itself (``<sinks_dir>/<task>/<key>.jsonl``, atomically, under a name fixed by the batch, so a
    re-run overwrites): moving them through Spark to the driver cost more than the tasks.
    The run directory must therefore be reachable from the executors, as on one machine.

    ``feed`` (a broker-fed run): the bus spec the source events are read from, each source's
    from its saved cursor (``cursors``); each shard returns the new cursors (rows of kind
    ``cursor``), the same in every shard that read the source. ``egress``: the run publishes
    its outputs on MQTT, so each shard keeps its sink records in the bus for the driver's
    egress (an instance across applications publishes to its output streams instead).

    ``sinks_dir=None`` (no shared disk): the records go back to the driver as rows of kind
    ``sink``, and the replay data is Spark's copy (:func:`worker_opts`)."""
    shards = epoch.shards

    def fn(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        import pandas as pd

        from reuse.runtime.common.files import write_records
        from reuse.runtime.engines.shared.shard import encode_rows, run_shard

        rows: list[tuple[int, str, str, str]] = []
        for f in frames:
            for shard, lo, hi in zip(f["shard"], f["lo"], f["hi"], strict=True):
                tasks = shards[int(shard)]
                if not tasks:
                    continue
                mine = {t["id"]: states[t["id"]] for t in tasks if t["id"] in states}
                read = bus_reader(feed, cursors or {}, int(lo), int(hi)) if feed else None
                res = run_shard(tasks, int(lo), int(hi), mine, worker_opts(opts), t0=t0,
                                rate=rate, feed=read)
                if read is not None:
                    rows += [(int(shard), "cursor", s, c) for s, c in read.cursors().items()]
                for task, lines in res["sinks"].items():
                    if sinks_dir is None:
                        rows.append((int(shard), "sink", task, "\n".join(lines) + "\n"))
                    else:
                        write_records(sinks_dir, task, key, "\n".join(lines) + "\n")
                    if read is not None and egress:  # kept in the bus for the driver's egress
                        read.keep(task, key, int(hi) - 1, lines)
                rows += encode_rows(int(shard), {**res, "sinks": {}}, int(lo), int(hi))
                rows.append((int(shard), "exec", executor_id(), ""))
        yield pd.DataFrame(rows, columns=["shard", "kind", "name", "text"])

    return fn


class BatchHooks(Protocol):
    """What an instance of a run replicated across applications (issue 24,
    :mod:`reuse.runtime.apps`) does in each batch, beside the engine's own work."""

    def epoch(self, epoch: Epoch, lo: int) -> Epoch:
        """The part of the batch's snapshot this instance runs (lock held)."""

    def seed(self, epoch: Epoch, states: dict[str, Any], lo: int) -> dict[str, Any]:
        """The states of tasks this instance runs from ``lo`` on but did not run before."""

    def done(self, lo: int, hi: int, states: dict[str, Any], sinks: dict[str, list[str]],
             executors: list[str]) -> None:
        """After the batch: its task states and sink records, to publish, and the executors
        its shards ran on."""


class ShardEngine(Protocol):
    """What the handler reads of its engine (the shared query's
    :class:`~reuse.runtime.engines.shared.engine.InplaceRuntime`), and the two calls it makes
    back: all of the coupling, in one place."""

    @property
    def root(self) -> Path: ...
    @property
    def lock(self) -> threading.RLock: ...
    @property
    def deployment(self) -> Deployment: ...
    @property
    def hooks(self) -> BatchHooks | None: ...
    @property
    def feed(self) -> dict[str, str] | None: ...
    @property
    def egress(self) -> bool: ...
    @property
    def opts(self) -> TaskOptions: ...
    @property
    def t0(self) -> int: ...
    @property
    def rate(self) -> float: ...
    @property
    def sinks_dir(self) -> str | None: ...
    @property
    def launch(self) -> int: ...
    @property
    def start_seq(self) -> int: ...
    @property
    def split(self) -> bool: ...

    def run_split(self, batch_id: int, epoch: Epoch, states: dict[str, Any], lo: int, hi: int,
                  key: str, cursors: dict[str, str]) -> tuple[SplitResult, SplitPlan]: ...

    def observe(self, task_cpu: dict[str, float], seqs: int) -> None: ...


class ShardHandler:
    """The ``foreachBatch`` function of the shared query (runs in the driver process)."""

    def __init__(self, engine: ShardEngine) -> None:
        self.engine = engine
        self.root = engine.root
        self.ckpt = engine.root / "ckpt" / QUERY / "spark"
        self.states = BatchStates(engine.root / "ckpt" / QUERY / "tstate")
        self.batches = 0
        self.busy_s = 0.0
        # every seq below this is done: on a checkpoint, what its last saved batch ended at. A
        # query restarted once its input had all been read runs no batch again, and a mark
        # back at -1 would be waited for forever (a loaded suite's split test: "did not reach
        # seq 399 ... at -2", 2026-11-28; the query-per-DAG engine had the same fix, 583fb70)
        last = self.states.latest()
        self.processed = int(last["hi"]) if last is not None and "hi" in last else -1
        if last is not None:  # a resumed run: its replicas start where the dead driver's did
            with engine.lock:
                engine.deployment.resume_starts(last.get("replicas", {}))
        self.in_batch = False

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        self.in_batch = True
        try:
            self._batch(df, batch_id)
        finally:
            self.in_batch = False

    def _offset(self, batch_id: int) -> int | None:
        """End ``seq`` of a batch from Spark's offset log (written before the batch runs)."""
        try:
            lines = (self.ckpt / "offsets" / str(batch_id)).read_text().splitlines()
        except FileNotFoundError:
            return None
        return int(json.loads(lines[-1])["seq"])

    def planned(self) -> int:
        """The end ``seq`` of the last batch in Spark's offset log (``-1``: none): a query
        restarted from its checkpoint re-runs up to there before it claims anything new."""
        try:
            ids = [int(n) for n in os.listdir(self.ckpt / "offsets") if n.isdigit()]
        except FileNotFoundError:
            return -1
        return max((o for o in map(self._offset, ids) if o is not None), default=-1)

    def _range(self, batch_id: int) -> tuple[int, int]:
        hi = self._offset(batch_id)
        if hi is None:
            raise SparkRuntimeError(f"batch {batch_id} has no offset log entry", task=QUERY)
        lo = self._offset(batch_id - 1) if batch_id > 0 else None
        return (self.engine.start_seq if lo is None else lo), hi

    def _batch(self, df: DataFrame, batch_id: int) -> None:
        t_start = time.time()
        c_start = time.process_time()
        lo, hi = self._range(batch_id)
        hooks = self.engine.hooks
        with self.engine.lock:
            epoch = self.engine.deployment.claim(lo, hi)
            if hooks is not None:
                epoch = hooks.epoch(epoch, lo)
        before = self.states.before(batch_id) or {}
        # a re-plan's started tasks first (a replica of one copies its seeded state), from the
        # states saved after the batch before: a predecessor freed at lo is only there
        states = seed_handovers([t for tasks in epoch.shards for t in tasks],
                                dict(before.get("tasks", {})), lo, absorber(self.engine.opts))
        states = seed_replicas(epoch, states, lo)
        if hooks is not None:
            states = hooks.seed(epoch, states, lo)
        sink_text: dict[str, list[str]] = {}
        cursors: dict[str, str] = dict(before.get("cursors", {}))
        feed = self.engine.feed
        new_states: dict[str, Any] = {}
        shard_exec: dict[int, str] = {}
        cpu: dict[str, float] = {}
        taken: dict[str, int] = {}
        shard_cpu: dict[int, float] = {}
        events = 0
        extra: dict[str, Any] = {}
        key = f"{self.engine.launch:06d}-{batch_id:09d}"
        if self.engine.split and not epoch.empty and hi > lo:
            res, plan = self.engine.run_split(batch_id, epoch, states, lo, hi, key, cursors)
            new_states, cpu, taken, events = res.states, res.cpu, res.counts, res.events
            cursors.update(res.cursors)
            for (task, _), text in sorted(res.sinks.items()):  # for the hooks, as unsplit
                sink_text.setdefault(task, []).append(text)
            shard_cpu, shard_exec = dict(res.partition_cpu), dict(res.executors)
            extra = {"split": {"partitions": plan.partitions, "stages": res.stages,
                               "critical_s": round(res.critical, 6),
                               "exchanged_bytes": res.exchanged,
                               "job_s": round(res.job_s, 4), "stage_s": res.stage_s}}
        elif not epoch.empty and hi > lo:
            rows = df.mapInPandas(_worker(epoch, states, self.engine.opts, self.engine.t0,
                                          self.engine.rate, self.engine.sinks_dir, key,
                                          feed, dict(cursors), self.engine.egress),
                                  "shard int, kind string, name string, text string").collect()
            for shard, kind, name, text in rows:
                if kind == "sink":  # no shared disk: the driver writes them
                    write_records(self.root / "sinks", name, f"{key}-s{shard}", text)
                    sink_text.setdefault(name, []).append(text)
                elif kind == "state":
                    new_states.update(json.loads(text))
                elif kind == "cursor":
                    cursors[name] = text
                elif kind == "exec":
                    shard_exec[int(shard)] = name
                else:
                    st = json.loads(text)
                    cpu.update(st["cpu"])
                    taken.update(st.get("counts", {}))
                    shard_cpu[int(shard)] = sum(st["cpu"].values())
                    events += int(st["events"])
        self.states.save(batch_id, {"tasks": new_states, "lo": lo, "hi": hi,
                                    "version": epoch.version, "cursors": cursors,
                                    "replicas": {t["id"]: int(t["start"]) for s in epoch.shards
                                                 for t in s if t.get("replica_of")}})
        if hooks is not None:
            hooks.done(lo, hi, new_states, sink_text, sorted(set(shard_exec.values())))
        self.processed = max(self.processed, hi)
        self.batches += 1
        self.engine.observe(cpu, hi - lo)
        wall = time.time() - t_start
        self.busy_s += wall
        stats = {"batch": batch_id, "lo": lo, "hi": hi, "version": epoch.version,
                 "ms": round(t_start * 1000), "wall_s": round(wall, 4),
                 "driver_cpu_s": round(time.process_time() - c_start, 4),
                 "events": events, "shard_cpu_s": shard_cpu, "shard_exec": shard_exec,
                 "task_cpu_s": {k: round(v, 6) for k, v in cpu.items()},
                 "task_events": taken, **extra}
        with open(self.root / "batches.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(stats, separators=(",", ":")) + "\n")

"""The shared-query engine (``--merge inplace``): one long-running query runs every task.

In the spirit of AStream (Karimov et al., SIGMOD 2019), which shares work between many
continuous queries inside one long-running Flink job: on Spark a running query's plan cannot
change, so instead of a query per partial DAG the engine starts ONE streaming query with
``shards`` partitions and keeps it for the whole run. What runs inside it is data: the
:class:`~reuse.runtime.engines.shared.deploy.Deployment` (tasks, shards, windows), which a submit or remove
changes under a lock at a cut in the future. No merge or unmerge starts, stops or hands over a
query, and a removed task is freed at its cut (nothing stays paused and costing).

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

Exactly once. A batch re-run after a restart gets the same range from the offset log, the same
states (those saved after the batch before it) and, for every ``seq`` below the frontier, the
same windows (changes take effect at cuts at or above the frontier), so it recomputes the same
records under the same names. Source events are generated, not read, so nothing is lost on the
way in.

Cuts. A cut is at least the frontier (the first ``seq`` no batch has claimed) and at least the
next ``seq`` to be emitted: a batch planned before the change cannot reach it (the tick source
never claims a ``seq`` before its nominal emit time), and a batch planned after takes a snapshot
that has the change. So a new dataflow's first events are in the next batch: submit to first
output takes one to two triggers.

Failures. When the shared query fails (a Python worker or an executor killed mid-batch; in
``local`` mode one failed Spark task fails the query), :meth:`InplaceRuntime.poll` logs it and
starts the query again from its checkpoint: the failed batch is re-run as above, so nothing is
lost or duplicated, and the outputs pause for the time that takes. When the driver itself dies,
``reuse run --resume`` rebuilds the engine from the run journal (:mod:`reuse.runtime.journal`:
the operations and their cuts) and the same checkpoint (:meth:`InplaceRuntime.replay`).

Default on the same engine (``--mode default --merge inplace``) deploys each dataflow's own
copy of every task, its sources included: as in the paper's baseline, each Default dataflow
generates its own source events.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from reuse.analysis.blast import check_parameters, replicated
from reuse.core.dataflow import Dataflow
from reuse.core.errors import ReuseError
from reuse.core.paths import riotbench_dir
from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.execution import emitted_bound
from reuse.runtime.common.files import write_json, write_records
from reuse.runtime.common.hold import SourceHold
from reuse.runtime.common.planners import Planner, make_planner, stream_events_name
from reuse.runtime.common.recovery import Failures, start_with_retries
from reuse.runtime.common.sink_history import ledger_removal, sink_segments
from reuse.runtime.common.states import BatchStates
from reuse.runtime.common.waiting import wait_progress
from reuse.runtime.engines.contract import (
    Counts,
    JournalOp,
    Ledger,
    LedgerDag,
    LedgerSource,
    LedgerTask,
    RemoveResult,
    SubmitResult,
    TaskOptions,
)
from reuse.runtime.engines.shared.deploy import Deployment, Epoch
from reuse.runtime.engines.shared.shard import absorber, seed_handovers, seed_replicas
from reuse.runtime.engines.shared.split import SplitPlan
from reuse.runtime.engines.shared.split_batch import (
    LayoutLog,
    SplitLayout,
    SplitResult,
    range_loads,
    rebalanced,
    run_split_batch,
)
from reuse.runtime.engines.shared.workers import bus_reader, executor_id, ship_data, worker_opts

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from reuse.runtime.engines.shared.broker_input import BrokerInput
    from reuse.runtime.spec import RunSpec

__all__ = ["BatchHooks", "InplaceRuntime", "ShardHandler"]

QUERY = "shared"


# --- one batch ---------------------------------------------------------------------------------

def _worker(epoch: Epoch, states: dict[str, Any], opts: TaskOptions, t0: int, rate: float,
            sinks_dir: str | None, key: str, feed: dict[str, str] | None = None,
            cursors: dict[str, str] | None = None,
            ) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """The shards' work, run by Spark's Python workers. Each shard writes its sink records
    itself (``<sinks_dir>/<task>/<key>.jsonl``, atomically, under a name fixed by the batch, so a
    re-run overwrites): moving them through Spark to the driver cost more than the tasks.
    The run directory must therefore be reachable from the executors, as on one machine.

    ``feed`` (a broker-fed run): the bus spec the source events are read from, each source's
    from its saved cursor (``cursors``); each shard returns the new cursors (rows of kind
    ``cursor``), the same in every shard that read the source.

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
                    if read is not None:  # kept in the bus, and published by the driver
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


class ShardHandler:
    """The ``foreachBatch`` function of the shared query (runs in the driver process)."""

    def __init__(self, engine: InplaceRuntime) -> None:
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
        feed = self.engine.broker.spec if self.engine.broker is not None else None
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
                                          feed, dict(cursors)),
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
                                    "version": epoch.version, "cursors": cursors})
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


# --- the engine --------------------------------------------------------------------------------

class InplaceRuntime:
    """Live enactment of submits and removes on the shared-query engine.

    The same calls as :class:`reuse.runtime.engines.partial.engine.Runtime` (``submit``, ``remove``, ``poll``,
    ``counts``, ``ledger``...), so :func:`reuse.runtime.run.run_trace` drives either.

    Configured by one :class:`~reuse.runtime.spec.RunSpec` (checked when it was built: this
    engine checks nothing the spec checks), of which it reads ``root`` (the run directory:
    checkpoint, task states, sink records, ``batches.jsonl``, ledger), the policy's mode,
    ``match`` (a residual task is an ordinary task reading its wide task, so the engine runs a
    semantic plan as it runs any merge), ``shards`` (default: the cores Spark has),
    ``rate``, ``trigger_s``, ``limit``, ``data_dir``, ``pi_iterations``, ``record``,
    ``batch_max_events`` (a bound on a batch's source ``seq``, so a replayed backlog is worked
    off in batches of bounded size; broker-fed, none), ``rebalance_s``, ``k_safe`` and
    ``replicate_min_users`` (issue 13: every live task used by at least that many dataflows
    runs ``k_safe`` more times, as replicas in other shards, see
    :mod:`reuse.runtime.engines.shared.deploy`), ``source``, ``first_message_s``,
    ``stall_s``, ``split`` and ``shared_disk``.

    What is not a setting but a moment of the run's life: ``t0_ms`` (the nominal emit time of
    ``seq`` 0; a resumed run keeps its dead driver's), ``resumed`` (a dead driver's run is
    rebuilt: a broker-fed one takes over its predecessor's bus and MQTT session),
    ``follow`` (an instance of a run across applications: its ready file) and ``bus_url`` (a
    broker-fed run's bus, when not its own).
    """

    def __init__(self, spark: SparkSession, spec: RunSpec, *, t0_ms: int | None = None,
                 follow: str | None = None, bus_url: str | None = None,
                 resumed: bool = False) -> None:
        if spec.engine != "inplace" or spec.root is None:
            raise SparkRuntimeError(f"the shared query runs a spec with --merge inplace and a "
                                    f"run directory, not {spec.policy.label} in {spec.root}")
        self.spec = spec
        split, source, match = spec.split, spec.source, spec.match
        self.policy = spec.policy
        # Reuse merges by the match policy (exact, or semantic: issue 25); Default refuses any
        # but exact. Built first, so a bad choice fails before anything is made. A remove may
        # re-plan (issue 36) only where this engine enacts the hand-over: unsplit, and not as
        # an instance of --replicas apps (its coordinator and the replica roles follow one
        # running sink task per dataflow)
        self.planner: Planner = make_planner(self.policy.shares, match,
                                             replan=not split and not follow)
        self.match = match
        self.mode, self.merge, self.unmerge = (self.policy.mode.value, "inplace", "free")
        self.spark = spark
        self.root = Path(spec.root).resolve()  # executors write here: not relative to cwd
        self.root.mkdir(parents=True, exist_ok=True)
        self._hold = SourceHold(self.root)
        self.rate, self.trigger_s = spec.rate, spec.trigger_s
        self.latency_budget_s = spec.latency_budget_s
        self.data_dir = str(riotbench_dir(spec.data_dir))
        # issue 35: the shards run columnar unless the spec says per event (--per-event)
        self.opts: TaskOptions = {"data_dir": self.data_dir, "pi_iterations": spec.pi_iterations,
                                  "record": spec.record, "limit": spec.limit,
                                  "columnar": spec.columnar}
        self.t0 = int(t0_ms if t0_ms is not None else time.time() * 1000)
        # issue 22: with no disk shared with the executors, Spark ships the replay data to
        # each executor and brings the sink records back to the driver, which writes them
        self.shared_disk = spec.shared_disk
        # issue 24: an instance of a run replicated across applications takes its ranges from
        # the file its follower writes (``follow``), its cuts from the journal, and publishes
        # its sink records itself, so they come back to the driver
        self.follow = follow
        self.sinks_dir: str | None = (str(self.root / "sinks") if spec.shared_disk and not follow
                                      else None)
        #: per-batch calls of an instance (:class:`reuse.runtime.apps.instance.Follower`)
        self.hooks: BatchHooks | None = None
        if not spec.shared_disk:
            self.opts["data_file"] = ship_data(spark, self.data_dir, self.root)
        self.limit = spec.limit
        # a broker-fed run claims whatever has arrived (issue 36): its rate is the stream's,
        # not one the user guessed; a replay bounds a backlog's batches at two triggers' worth
        self.max_events = spec.batch_max_events
        n = (spec.shards if spec.shards is not None
             else int(spark.sparkContext.defaultParallelism))
        self.k_safe, self.min_users = spec.k_safe, spec.replicate_min_users
        if self.k_safe:
            try:
                check_parameters(n, self.k_safe, self.min_users)
            except ReuseError as exc:
                raise SparkRuntimeError(f"{exc} (shards: --shards, or the cores Spark has)",
                                        task=QUERY) from None
        # measured CPU seconds per source seq, per task (EWMA over batches), and per type
        self.cost: dict[str, float] = {}
        self.type_cost: dict[str, float] = {}
        self.deployment = Deployment(n, self._weight)
        # issue 22: every running DAG split over the shards (key ranges and stages), instead of
        # each running DAG whole in one shard
        self.split = bool(split)
        self.layouts = LayoutLog(self.root / "ckpt" / QUERY / "layout")
        self.layout = SplitLayout.even(n)
        self._plans: dict[tuple[int, SplitLayout, tuple[str, ...]], SplitPlan] = {}
        self._split_tasks: list[dict[str, Any]] = []
        self.range_cpu: dict[int, float] = {}
        self.group_cpu: dict[str, float] = {}
        self.rebalance_s = spec.rebalance_s
        self._balanced_at = time.time()
        self.shards = n
        self.lock = threading.RLock()
        self.tasks: dict[str, LedgerTask] = {}
        self.dags: dict[str, LedgerDag] = {}
        self.sources: dict[str, str] = {}  # source stream -> "shared" (generated in the shards)
        self.log: list[dict[str, Any]] = []
        self.launch = 1
        self.start_seq = 0
        self.query: StreamingQuery | None = None
        self.handler: ShardHandler | None = None
        #: called as ``on_op(op, dag, cut)`` under the lock once the planner accepted an
        #: operation and before the deployment changes (the run journal's write-ahead record)
        self.on_op: Callable[[str, str, int], None] | None = None
        # restarts from the checkpoint, and when to give up (reuse.runtime.common.recovery)
        self.failures = Failures()
        self._replaying = False
        self.source = source
        self.broker: BrokerInput | None = None
        if source != "replay":
            from reuse.runtime.engines.shared.broker_input import BrokerInput

            self.broker = BrokerInput(self.root, source, needed=self._needed,
                                      outputs=self._outputs, bus_url=bus_url,
                                      tick_s=min(0.2, self.trigger_s / 4),
                                      first_message_s=spec.first_message_s,
                                      stall_s=spec.stall_s, resume=resumed)

    def _outputs(self) -> dict[str, list[tuple[str, str, int, int | None]]]:
        """Running sink task -> ``(dataflow, sink, J, R)`` for every dataflow it computes a
        sink of, submitted so far (a removed one's outputs below its cut ``R`` still count)."""
        with self.lock:
            out: dict[str, list[tuple[str, str, int, int | None]]] = {}
            for info in self.dags.values():
                for sink, segs in sink_segments(info).items():
                    for rid, lo, hi in segs:  # after a re-plan, each task over its sub-window
                        out.setdefault(rid, []).append((info["dag"], sink, lo, hi))
            return out

    def _needed(self) -> dict[str, int]:
        """Source stream -> the first ``seq`` a live source task reads it from (broker-fed
        runs: what a batch must wait for)."""
        with self.lock:
            frontier = self.deployment.frontier
            out: dict[str, int] = {}
            for t in self.deployment.tasks.values():
                if t.kind == "source" and (t.end is None or t.end > frontier):
                    s = stream_events_name(t.stream)
                    out[s] = min(out.get(s, t.start), t.start)
            return out

    def run_split(self, batch_id: int, epoch: Epoch, states: dict[str, Any],
                  lo: int, hi: int, key: str, cursors: dict[str, str],
                  ) -> tuple[SplitResult, SplitPlan]:
        """One batch with every running DAG split over the shards (called by the handler):
        the layout is pinned for the batch (a re-run routes as the first run did), the plan
        made once per deployment version and layout.

        Broker-fed, every partition reads its sources' events of the batch from the bus
        from the one cursor per source saved with the states (``cursors``), and the sink
        records come back here: each sink's records of the batch are appended to its bus
        topic once, under the batch's key, as one shard's are (a re-run's append is dropped),
        for the egress to publish."""
        tasks = [t for shard in epoch.shards for t in shard]
        with self.lock:
            current = self.layout
        layout = self.layouts.pinned(batch_id, current)
        # (the task set too: an instance across applications runs a part of the epoch, which
        # its role may change at a cut)
        which = (epoch.version, layout, tuple(t["id"] for t in tasks))
        plan = self._plans.get(which)
        if plan is None:
            plan = layout.plan(tasks)
            self._plans = {which: plan}
        feed = self.broker.spec if self.broker is not None else None
        res = run_split_batch(self.spark, tasks, plan, states, self.opts, t0=self.t0,
                              rate=self.rate, lo=lo, hi=hi,
                              sinks_dir=None if feed else self.sinks_dir, key=key, feed=feed,
                              cursors=dict(cursors))
        kept: dict[str, list[str]] = {}
        for (task, p), text in sorted(res.sinks.items()):  # the driver writes them
            write_records(self.root / "sinks", task, f"{key}-p{p}", text)
            kept.setdefault(task, []).extend(text.splitlines())
        if self.broker is not None:
            self.broker.keep(kept, key, hi - 1)
        by_range, by_group = range_loads(plan, res.stats)
        seqs = max(1, hi - lo)
        with self.lock:
            if layout == current and self.layout == current:  # new groups keep their place
                self.layout = SplitLayout.of(plan)
            self._split_tasks = tasks
            _fold(self.range_cpu, by_range, seqs)
            _fold(self.group_cpu, by_group, seqs)
        return res, plan

    def resplit(self, partitions: int) -> dict[str, Any]:
        """Split the running DAGs over ``partitions`` shards from the next batch: the key
        ranges and groups move (:func:`~reuse.runtime.engines.shared.split.resplit`), and the
        shared query restarts from its checkpoint with that many partitions. Exact: states are
        whole between batches, and the next batch cuts them by the new table."""
        if not self.split:
            raise SparkRuntimeError("resplit needs an engine started with split=True",
                                    task=QUERY)
        if not isinstance(partitions, int) or partitions < 1:
            raise SparkRuntimeError(f"partitions must be a positive integer, got {partitions!r}",
                                    task=QUERY)
        from reuse.runtime.engines.shared.split import resplit

        with self.lock:
            plan = self.layout.plan(self._split_tasks)
            new, moves = resplit(plan, partitions)
            self.layout = SplitLayout.of(new)
            self.shards = partitions
            self.range_cpu, self.group_cpu = {}, {}
        if self.query is not None:
            self.restart()
        self.log.append({"event": "resplit", "partitions": partitions, "moves": len(moves),
                         "ms": time.time() * 1000})
        return {"partitions": partitions, "moves": len(moves)}

    def _rebalance(self) -> list[dict[str, Any]]:
        """One rebalance by measured CPU (lock held): whole running DAGs between shards, or,
        split, key ranges and groups."""
        if not self.split:
            return [_action(a) for a in self.deployment.rebalance()]
        if not self._split_tasks:
            return []
        new = rebalanced(self.layout, self._split_tasks, self.range_cpu, self.group_cpu)
        if new is None:
            return []
        moved = [r for r, (a, b) in enumerate(zip(self.layout.ranges.owner, new.ranges.owner,
                                                  strict=True)) if a != b]
        self.layout = new
        return [{"action": "ranges", "moved": moved, "groups": [list(g) for g in new.groups]}]

    def _weight(self, t: Any) -> float:
        """A task's load: its measured CPU per seq, else its type's, else one unit's worth
        (the mean measured cost, or 1 before anything is measured)."""
        if t.kind == "source":
            return 0.0
        if t.id in self.cost:
            return self.cost[t.id]
        if t.type in self.type_cost:
            return self.type_cost[t.type]
        return (sum(self.cost.values()) / len(self.cost)) if self.cost else 1.0

    def observe(self, task_cpu: dict[str, float], seqs: int) -> None:
        """Fold one batch's per-task CPU into the cost estimates (called by the handler)."""
        if seqs <= 0:
            return
        with self.lock:
            _fold(self.cost, task_cpu, seqs)
            for tid in task_cpu:
                d = self.tasks.get(tid)
                if d is not None:
                    self.type_cost[d["type"]] = self.cost[tid]

    # --- clock and cuts --------------------------------------------------------------------------

    def arrival_rate(self) -> float:
        """Source ``seq`` per second the input brings: ``rate`` on replay; on a broker-fed run
        what the broker delivered lately (0 until it has delivered for a while)."""
        if self.broker is not None:
            return self.broker.arrival_rate()
        return self.rate

    def bound(self) -> int:
        """Largest source ``seq`` emitted so far (nominally, below a :meth:`hold`; on a
        broker-fed run, received)."""
        if self.broker is not None:
            return self.broker.bound()
        return self._hold.bound(emitted_bound(self.t0, self.rate))

    def hold(self, seq: int | None) -> None:
        """Keep the replayed sources from emitting ``seq`` and past it until the next call
        (``None``: release): :class:`~reuse.runtime.common.hold.SourceHold`. A broker-fed
        run's input is the broker's pace, not held."""
        self._hold.set(seq, emitted_bound(self.t0, self.rate))

    def _cut(self, at: int | None, what: str) -> int:
        """A cut no batch has claimed or can claim without seeing the change (lock held)."""
        floor = max(self.deployment.frontier, self.bound() + 1)
        if self._replaying or self.follow:
            # the recorded cuts of a resumed run, or the journal's of an instance (issue 24):
            # batches decide, not the clock
            floor = self.deployment.frontier
        if at is None:
            return floor
        if at < floor:
            raise SparkRuntimeError(f"{what}: cut point {at} is not in the future (the next "
                                    f"seq no batch can have seen is {floor})")
        return at

    # --- the query ---------------------------------------------------------------------------------

    def start_sources(self, types: Iterable[str]) -> None:
        """Note the source streams the run uses and start the shared query (sources are
        generated inside the shards, so there is no source query to start)."""
        for t in types:
            self.sources.setdefault(t, QUERY)
        self._ensure_query()

    def _ensure_query(self) -> None:
        if self.query is None and not self._replaying and not self.follow:
            if self.broker is not None:
                self.broker.wait_first()
            self.start_seq = max(0, self.bound() + 1)
            self._start_query()

    def _start_query(self) -> None:
        opts = {"t0": str(self.t0), "rate": str(self.rate), "start": str(self.start_seq),
                "limit": str(self.limit if self.limit is not None else -1),
                "shards": str(self.shards), "max_events": str(self.max_events),
                "hold": str(self._hold.file)}
        if self.latency_budget_s is not None:  # the sources' pace (reuse.runtime.common.pacing)
            opts.update(budget_s=str(self.latency_budget_s), trigger_s=str(self.trigger_s))
        if self.broker is not None:
            opts["ready_file"] = str(self.broker.ready_file)
            self.broker.start(self.start_seq)
        elif self.follow:
            opts["ready_file"] = self.follow
        self.handler = ShardHandler(self)
        df = self.spark.readStream.format("reusetick").options(**opts).load()
        self.query = (df.writeStream.foreachBatch(self.handler).queryName(QUERY)
                      .option("checkpointLocation", str(self.handler.ckpt))
                      .trigger(processingTime=f"{self.trigger_s} seconds").start())
        self.log.append({"event": "launch", "query": QUERY, "shards": self.shards,
                         "ms": time.time() * 1000})

    def start_following(self, start_seq: int) -> None:
        """Start an instance's shared query (issue 24) at ``start_seq``, or from its checkpoint
        when it has one (a restarted instance): its ranges end where its follower's file
        says, its operations come from the journal at their cuts."""
        if not self.follow or self.query is not None:
            raise SparkRuntimeError("start_following needs an engine made with follow= whose "
                                    "query has not started", task=QUERY)
        self.start_seq = int(start_seq)
        self._start_query()

    def replay(self, ops: Iterable[JournalOp], flows: Mapping[str, Dataflow], *,
               start_seq: int) -> None:
        """Rebuild a dead driver's engine: enact the journaled operations at their recorded
        cuts (``{"op", "dag", "cut"}``, in order; the planners give the same runtime ids), then
        start the shared query from its checkpoint. Spark re-runs the batch that was in flight
        from its offset log with the task states saved before it, so the run continues
        exactly once; the events emitted while the driver was down are worked off in batches
        of at most ``max_events``."""
        if self.query is not None:
            raise SparkRuntimeError("replay needs an engine whose query has not started",
                                    task=QUERY)
        self.start_seq = int(start_seq)
        if self.split:  # the layout of the last batch on record, re-runs pin their own
            self.layout = self.layouts.latest() or self.layout
            self.shards = self.layout.partitions
        ops = list(ops)
        self._replaying = True
        try:
            for o in ops:
                if o["op"] == "submit":
                    self.submit(flows[o["dag"]], at=int(o["cut"]))
                else:
                    self.remove(o["dag"], at=int(o["cut"]))
        finally:
            self._replaying = False
        self._start_query()
        self.log.append({"event": "resume", "ops": len(ops), "ms": time.time() * 1000})

    def restart(self, qname: str = QUERY) -> None:
        """Stop the shared query abruptly and start it again from its checkpoint with a fresh
        handler (as after a driver crash): Spark resumes from its offset log, the handler from
        the task states saved after the last batch, the deployment from memory."""
        assert self.query is not None
        self.query.stop()
        handler = self.handler
        self._start_query()
        self._keep_counters(handler)
        self.log.append({"event": "restart", "query": QUERY, "ms": time.time() * 1000})

    def _keep_counters(self, old: ShardHandler | None) -> None:
        """A restarted query's fresh handler takes over the run's counters (its processed
        mark it reads from the checkpoint: :class:`ShardHandler`)."""
        if old is not None and self.handler is not None and self.handler is not old:
            self.handler.batches, self.handler.busy_s = old.batches, old.busy_s

    # --- submit / remove ---------------------------------------------------------------------------

    def submit(self, flow: Dataflow, *, at: int | None = None) -> SubmitResult:
        """Merge (Reuse) or deploy (Default) a dataflow; its join point ``J`` is the next cut."""
        t_start = time.time()
        self._ensure_query()
        with self.lock:
            join = self._cut(at, f"submit {flow.id}")
            placement = self.planner.submit(flow)
            if self.on_op is not None:
                self.on_op("submit", flow.id, join)
            kinds = {t.id: t.kind for t in placement.start}
            kinds.update({t: i["kind"] for t, i in self.tasks.items() if t not in kinds})
            leaves = {r for r in placement.sinks.values() if kinds[r] == "task"}
            actions = self.deployment.deploy(placement, join, record=leaves)
            actions += self._replicate(join)
            for t in placement.start:
                topic = f"src:{t.stream}" if t.kind == "source" else t.id
                self.tasks[t.id] = {"type": t.type, "config": t.config,
                                    "parents": list(t.parents), "kind": t.kind, "topic": topic,
                                    "start": join, "end": None}
                if t.kind == "source":
                    self.sources.setdefault(t.stream, QUERY)
            self.dags[placement.instance] = {
                "dag": flow.id, "J": join, "R": None, "sinks": dict(placement.sinks),
                "tasks": [t.id for t in placement.start], "reused": list(placement.reused)}
        took = time.time() - t_start
        self.log.append({"event": "submit", "dag": flow.id, "J": join,
                         "started": len(placement.start), "reused": len(placement.reused),
                         "actions": [_action(a) for a in actions], "s": took,
                         "ms": time.time() * 1000})
        return {"dag": flow.id, "J": join, "started": [t.id for t in placement.start],
                "reused": list(placement.reused), "sinks": dict(placement.sinks),
                "seconds": took}

    def remove(self, dag_id: str, *, at: int | None = None) -> RemoveResult:
        """Unmerge (Reuse) or undeploy (Default) with end cut ``R``; the tasks it stops are
        freed once every batch starts past ``R``."""
        t_start = time.time()
        with self.lock:
            cut = self._cut(at, f"remove {dag_id}")
            removal = self.planner.remove(dag_id)
            if self.on_op is not None:
                self.on_op("remove", dag_id, cut)
            kinds = {t.id: t.kind for t in removal.start}
            leaves = {r for m in removal.sinks.values() for r in m.values()
                      if (kinds[r] if r in kinds else self.tasks[r]["kind"] if r in self.tasks
                          else None) == "task"}
            actions = self.deployment.end(removal, cut, record=leaves)
            actions += self._replicate(cut)
            # the stopped tasks end, a re-plan's (issue 36) start with what they continue
            ledger_removal(self.tasks, self.dags, removal, cut)
        took = time.time() - t_start
        self.log.append({"event": "remove", "dag": dag_id, "R": cut,
                         "stopped": len(removal.stop), "started": len(removal.start),
                         "replanned": sorted(removal.sinks),
                         "actions": [_action(a) for a in actions],
                         "s": took, "ms": time.time() * 1000})
        return {"dag": dag_id, "R": cut, "stop": list(removal.stop),
                "started": [t.id for t in removal.start],
                "replanned": {d: dict(m) for d, m in removal.sinks.items()}, "seconds": took}

    def defragment(self, *, at: int | None = None) -> dict[str, Any]:
        """Rebalance the shards by one move if that lowers the largest load (no query is
        relaunched: a move is a new epoch)."""
        with self.lock:
            actions = self._rebalance()
        self.log.append({"event": "defragment", "actions": actions, "ms": time.time() * 1000})
        return {"moved": actions, "relaunched": [], "stopped": []}

    def move(self, task: str, shard: int) -> dict[str, Any]:
        """Move the running DAG holding ``task`` to ``shard`` at the frontier (with its state)."""
        if self.split:
            raise SparkRuntimeError("a split engine moves key ranges, not running DAGs (see "
                                    "resplit and the rebalance)", task=QUERY)
        with self.lock:
            actions = self.deployment.move(task, shard)
        self.log.append({"event": "move", "actions": [_action(a) for a in actions],
                         "ms": time.time() * 1000})
        return {"moved": [_action(a) for a in actions]}

    def _replicate(self, at: int) -> list[Any]:
        """k-safety: replicas for exactly the live tasks used by ``>= U`` dataflows (lock held)."""
        if not self.k_safe:
            return []
        live = {t for t, d in self.deployment.tasks.items()
                if d.end is None and d.replica_of is None}
        wanted = replicated(self.planner.users(), self.min_users) & live
        return self.deployment.replicate(wanted, self.k_safe, at)

    # --- upkeep ------------------------------------------------------------------------------------

    def poll(self) -> None:
        """Surface a failure of the shared query as a one-line error; every ``rebalance_s``
        rebalance the shards by measured CPU (one move at most, at the frontier)."""
        if self.query is None:
            return
        if self.broker is not None:
            self.broker.check()
        if self.rebalance_s > 0 and time.time() - self._balanced_at > self.rebalance_s:
            self._balanced_at = time.time()
            with self.lock:
                actions = self._rebalance()
            if actions:
                self.log.append({"event": "rebalance", "actions": actions,
                                 "loads": self.deployment.loads(), "ms": time.time() * 1000})
        exc = self.query.exception()
        if exc is not None:
            self._recover(str(exc).splitlines()[0][:300])

    def _recover(self, error: str) -> None:
        """Start the failed shared query again from its checkpoint (the batch that failed is
        re-run exactly once), as :mod:`reuse.runtime.common.recovery` decides."""
        batches = self.handler.batches if self.handler is not None else 0
        self.log.append(self.failures.record(QUERY, error, batches=batches))
        handler = self.handler
        start_with_retries(self._start_query, query=QUERY,
                           attempts=self.failures.max_restarts, log=self.log)
        self._keep_counters(handler)
        self.log.append({"event": "restart", "query": QUERY, "ms": time.time() * 1000})

    def qhw(self, qname: str = QUERY) -> int:
        """Every source ``seq <=`` this has been processed by every shard."""
        return -1 if self.handler is None else self.handler.processed - 1

    def warm(self) -> bool:
        """The shared query ran a batch (its input is the shards' own sources)."""
        return self.handler is not None and self.handler.batches > 0

    def wait_processed(self, seq: int, timeout_s: float = 120.0) -> None:
        """Wait until every shard has processed ``seq``; an error only when nothing is
        processed for ``timeout_s`` (:func:`~reuse.runtime.common.waiting.wait_progress`:
        an engine behind its input is overloaded, not broken)."""
        wait_progress(seq, self.qhw, stall_s=timeout_s, poll=self.poll,
                      what="the shared query", task=QUERY)

    def wait_stopped(self, timeout_s: float = 120.0) -> None:
        """Nothing drains on this engine: removed tasks are freed at their cut."""

    def take_lag(self) -> tuple[int | None, int | None]:
        """No bus, so no consumer lag and nothing throttled: ``(None, None)``."""
        return None, None

    def malformed(self) -> int | None:
        """Malformed messages received so far over every broker topic (``None``: replay);
        per topic they are in the ledger (``source.counts``)."""
        if self.broker is None:
            return None
        return sum(c.malformed for c in self.broker.counts().values())

    # --- reporting ---------------------------------------------------------------------------------

    def counts(self) -> Counts:
        """Live tasks (sources count as generated streams, not tasks); never any paused."""
        live = sum(1 for t in self.deployment.tasks.values()
                   if t.end is None and t.kind != "source" and t.replica_of is None)
        replicas = sum(1 for t in self.deployment.tasks.values()
                       if t.end is None and t.kind != "source" and t.replica_of is not None)
        active = 1 if self.query is not None and self.query.isActive else 0
        return {"running_tasks": live, "paused_tasks": 0, "queries": active,
                "replica_tasks": replicas}

    def ledger(self) -> Ledger:
        source: LedgerSource = {"kind": "replay"}
        if self.broker is not None:
            upto = self.handler.processed if self.handler is not None else 0
            source = {"kind": "mqtt", "broker": str(self.broker.url),
                      "counts": {t: c.to_dict() for t, c in self.broker.counts().items()},
                      "published": dict(self.broker.published),
                      "restarts": self.broker.restarts()}
            if self.broker.open:
                source["recorded"] = str(self.broker.record(upto))
            elif (self.root / "recorded").is_dir():
                source["recorded"] = str(self.root / "recorded")
        return {"mode": self.mode, "match": self.match, "source": source, "unmerge": self.unmerge, "merge": self.merge,
                "engine": "inplace", "shards": self.shards, "split": self.split,
                "shared_disk": self.shared_disk, "t0": self.t0, "rate": self.rate,
                "limit": self.limit, "data_dir": self.data_dir, "opts": self.opts,
                "tasks": self.tasks, "dags": self.dags, "log": self.log,
                "k_safe": self.k_safe, "replicate_min_users": self.min_users,
                "replicas": {r: v.copy() for r, v in self.deployment.replica_log.items()}}

    def save_ledger(self) -> Path:
        path = self.root / "ledger.json"
        write_json(path, self.ledger())
        with self.lock:
            write_json(self.root / "deployment.json", self.deployment.as_dict())
        return path

    def close(self, *, clean: bool = False) -> None:
        if self.query is not None:
            deadline = time.time() + 10
            while self.handler is not None and self.handler.in_batch and time.time() < deadline:
                time.sleep(0.05)
            try:
                self.query.stop()
            except Exception:  # noqa: BLE001 - best effort
                pass
        self.save_ledger()
        if self.broker is not None:
            self.broker.close()
        if clean:
            import shutil

            shutil.rmtree(self.root, ignore_errors=True)


def _fold(store: dict[Any, float], cpu: Mapping[Any, float], seqs: int) -> None:
    """Fold one batch's CPU seconds per key into ``store``'s CPU per ``seq`` (an EWMA, 0.3 to
    the new batch): the tasks' costs and the split's range and group loads alike."""
    for k, c in cpu.items():
        per = c / seqs
        store[k] = per if k not in store else 0.7 * store[k] + 0.3 * per


def _action(a: Any) -> dict[str, Any]:
    return {"action": type(a).__name__.lower(), **{k: v for k, v in vars(a).items()}}

"""The shared-query engine (``--merge inplace``): one long-running query runs every task.

In the spirit of AStream (Karimov et al., SIGMOD 2019), which shares work between many
continuous queries inside one long-running Flink job: on Spark a running query's plan cannot
change, so instead of a query per partial DAG the engine starts ONE streaming query with
``shards`` partitions and keeps it for the whole run. What runs inside it is data: the
:class:`~reuse.runtime.engines.shared.deploy.Deployment` (tasks, shards, windows), which a submit or remove
changes under a lock at a cut in the future. No merge or unmerge starts, stops or hands over a
query, and a removed task is freed at its cut (nothing stays paused and costing).

One batch is the handler's (:mod:`reuse.runtime.engines.shared.handler`): the tick source
claims the ``seq`` range ``[lo, hi)``, the driver takes the deployment's snapshot for it, the
shards run in Spark's Python workers, and the driver saves the task states and a line of
statistics.

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

import shutil
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from reuse.runtime.common.sink_history import ledger_removal, ledger_submit, sink_outputs
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
from reuse.runtime.engines.shared.costs import TaskCosts
from reuse.runtime.engines.shared.deploy import Deployment, Epoch
from reuse.runtime.engines.shared.handler import QUERY, BatchHooks, ShardHandler
from reuse.runtime.engines.shared.split import SplitPlan
from reuse.runtime.engines.shared.split_batch import (
    SplitBatches,
    SplitResult,
    run_split_batch,
)
from reuse.runtime.engines.shared.workers import ship_data

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from reuse.runtime.engines.shared.broker_input import BrokerInput
    from reuse.runtime.spec import RunSpec

__all__ = ["InplaceRuntime"]


class InplaceRuntime:
    """Live enactment of submits and removes on the shared-query engine: the
    :class:`~reuse.runtime.engines.contract.Engine` contract, as the query-per-DAG engine's.

    Configured by one :class:`~reuse.runtime.spec.RunSpec` alone (checked when it was built:
    this engine checks nothing the spec checks; its fields say what each one does). A
    semantic match needs nothing of its own here: a residual task is an ordinary task reading
    its wide task. What is not a setting but a moment of the run's life: ``t0_ms`` (the
    nominal emit time of ``seq`` 0; a resumed run keeps its dead driver's), ``resumed`` (a
    dead driver's run is rebuilt: a broker-fed one takes over its predecessor's bus and MQTT
    session), ``follow`` (an instance of a run across applications: its ready file; ``feed``:
    the bus its coordinator's ingest fills, broker-fed) and ``bus_url`` (a broker-fed run's
    bus, when not its own).
    """

    def __init__(self, spark: SparkSession, spec: RunSpec, *, t0_ms: int | None = None,
                 follow: str | None = None, bus_url: str | None = None,
                 resumed: bool = False, feed: Mapping[str, str] | None = None) -> None:
        if spec.engine != "inplace" or spec.root is None:
            raise SparkRuntimeError(f"the shared query runs a spec with --merge inplace and a "
                                    f"run directory, not {spec.policy.label} in {spec.root}")
        self.spec, self.policy = spec, spec.policy
        split, source, match = spec.split, spec.source, spec.match
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
        self.opts = _task_options(spark, spec, self.data_dir, self.root)
        self.t0 = int(t0_ms if t0_ms is not None else time.time() * 1000)
        self.shared_disk = spec.shared_disk
        # issue 24: an instance of a run replicated across applications takes its ranges from
        # the file its follower writes (``follow``), its cuts from the journal, and publishes
        # its sink records itself, so they come back to the driver
        self.follow = follow
        self.sinks_dir: str | None = (str(self.root / "sinks") if spec.shared_disk and not follow
                                      else None)
        #: per-batch calls of an instance (:class:`reuse.runtime.apps.instance.Follower`)
        self.hooks: BatchHooks | None = None
        self.limit = spec.limit
        # a broker-fed run claims whatever has arrived (issue 36): its rate is the stream's,
        # not one the user guessed; a replay bounds a backlog's batches at two triggers' worth
        self.max_events = spec.batch_max_events
        n = _shard_count(spark, spec)
        self.k_safe, self.min_users = spec.k_safe, spec.replicate_min_users
        self.costs = TaskCosts()  # measured CPU per source seq: the rebalance's weights
        self.deployment = Deployment(n, self.costs.weight)
        # issue 22: every running DAG split over the shards (key ranges and stages), instead of
        # each running DAG whole in one shard
        self.split = bool(split)
        self.splits = SplitBatches(self.root / "ckpt" / QUERY / "layout", n, spec.k_safe + 1)
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
        self.broker = None if source == "replay" else self._broker_input(bus_url, resumed)
        # the shards' source bus: the broker input's or (an instance) its coordinator's
        self.feed = self.broker.spec if self.broker else None if feed is None else dict(feed)
        self.egress = self.broker is not None  # outputs published on MQTT

    def _broker_input(self, bus_url: str | None, resumed: bool) -> BrokerInput:
        """A broker-fed run's ingest into the bus, and its egress (``broker_input``)."""
        from reuse.runtime.engines.shared.broker_input import BrokerInput

        return BrokerInput(self.root, self.source, needed=self._needed, outputs=self._outputs,
                           bus_url=bus_url, tick_s=min(0.2, self.trigger_s / 4),
                           first_message_s=self.spec.first_message_s,
                           stall_s=self.spec.stall_s, resume=resumed,
                           budget_s=self.latency_budget_s, trigger_s=self.trigger_s)

    def _outputs(self) -> dict[str, list[tuple[str, str, int, int | None]]]:
        """What the broker input publishes, for whom (:func:`sink_outputs`)."""
        with self.lock:
            return sink_outputs(self.dags.values())

    def _needed(self) -> dict[str, int]:
        """Source stream -> the first ``seq`` a live source task reads it from (broker-fed
        runs: what a batch must wait for)."""
        with self.lock:
            return self.deployment.source_starts(stream_events_name)

    def run_split(self, batch_id: int, epoch: Epoch, states: dict[str, Any],
                  lo: int, hi: int, key: str, cursors: dict[str, str],
                  ) -> tuple[SplitResult, SplitPlan]:
        """One batch with every running DAG split over the shards (called by the handler):
        the layout is pinned for the batch, the plan made once per deployment version and
        layout (:class:`~reuse.runtime.engines.shared.split_batch.SplitBatches`).

        Broker-fed, every partition reads its sources' events of the batch from the bus
        from the one cursor per source saved with the states (``cursors``), and the sink
        records come back here: each sink's records of the batch are appended to its bus
        topic once, under the batch's key, as one shard's are (a re-run's append is dropped),
        for the egress to publish."""
        tasks = [t for shard in epoch.shards for t in shard]
        with self.lock:
            current = self.splits.layout
        layout, plan = self.splits.plan(batch_id, epoch.version, tasks, current)
        feed = self.feed
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
        with self.lock:
            self.splits.measured(layout, current, plan, tasks, res.stats, hi - lo)
        return res, plan

    def resplit(self, partitions: int) -> dict[str, Any]:
        """Split the running DAGs over ``partitions`` shards from the next batch: the key
        ranges and groups move (:func:`~reuse.runtime.engines.shared.split_moves.resplit`), and the
        shared query restarts from its checkpoint with that many partitions. Exact: states are
        whole between batches, and the next batch cuts them by the new table."""
        if not self.split:
            raise SparkRuntimeError("resplit needs an engine started with split=True",
                                    task=QUERY)
        if not isinstance(partitions, int) or partitions < 1:
            raise SparkRuntimeError(f"partitions must be a positive integer, got {partitions!r}",
                                    task=QUERY)
        with self.lock:
            moves = self.splits.resplit(partitions)
            self.shards = partitions
        if self.query is not None:
            self.restart()
        self.log.append({"event": "resplit", "partitions": partitions, "moves": moves,
                         "ms": time.time() * 1000})
        return {"partitions": partitions, "moves": moves}

    def _rebalance(self) -> list[dict[str, Any]]:
        """One rebalance by measured CPU (lock held): whole running DAGs between shards, or,
        split, key ranges and groups."""
        if self.split:
            return self.splits.rebalance()
        return [_action(a) for a in self.deployment.rebalance()]

    def observe(self, task_cpu: dict[str, float], seqs: int) -> None:
        """Fold one batch's per-task CPU into the cost estimates (called by the handler)."""
        with self.lock:
            self.costs.observe(task_cpu, seqs, {t: d["type"] for t, d in self.tasks.items()})

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
        if self.latency_budget_s is not None and self.broker is None:  # a replay's pace
            opts.update(budget_s=str(self.latency_budget_s), trigger_s=str(self.trigger_s))
        if self.broker is not None:  # the broker input paces it (and keeps the budget)
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
            self.shards = self.splits.resume()
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
        self._relaunch(self._start_query)

    def _relaunch(self, start: Callable[[], None]) -> None:
        """Start the query again (``start``) with a fresh handler, which takes over the run's
        counters (its processed mark it reads from the checkpoint: :class:`ShardHandler`)."""
        old = self.handler
        start()
        if old is not None and self.handler is not None and self.handler is not old:
            self.handler.batches, self.handler.busy_s = old.batches, old.busy_s
        self.log.append({"event": "restart", "query": QUERY, "ms": time.time() * 1000})

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
            ledger_submit(self.tasks, self.dags, placement, join)
            self.sources.update({t.stream: QUERY for t in placement.start
                                 if t.kind == "source"})
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
            moved = [_action(a) for a in self.deployment.move(task, shard)]
        self.log.append({"event": "move", "actions": moved, "ms": time.time() * 1000})
        return {"moved": moved}

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
        self._relaunch(lambda: start_with_retries(self._start_query, query=QUERY,
                                                  attempts=self.failures.max_restarts,
                                                  log=self.log))

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
        return (None if self.broker is None
                else sum(c.malformed for c in self.broker.counts().values()))

    # --- reporting ---------------------------------------------------------------------------------

    def counts(self) -> Counts:
        """Live tasks (sources count as generated streams, not tasks); never any paused."""
        own = [t.replica_of is None for t in self.deployment.tasks.values()
               if t.end is None and t.kind != "source"]
        active = 1 if self.query is not None and self.query.isActive else 0
        return {"running_tasks": sum(own), "paused_tasks": 0, "queries": active,
                "replica_tasks": len(own) - sum(own)}

    def ledger(self) -> Ledger:
        source: LedgerSource = {"kind": "replay"}
        if self.broker is not None:
            upto = self.handler.processed if self.handler is not None else 0
            source = self.broker.ledger_source(upto)
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
            shutil.rmtree(self.root, ignore_errors=True)


def _task_options(spark: SparkSession, spec: RunSpec, data_dir: str, root: Path,
                  ) -> TaskOptions:
    """What every shard's tasks are built with. Issue 35: columnar unless the spec says per
    event (``--per-event``). Issue 22: with no disk shared with the executors, Spark ships
    the replay data to each executor (and the driver writes the sink records they return)."""
    opts: TaskOptions = {"data_dir": data_dir, "pi_iterations": spec.pi_iterations,
                         "record": spec.record, "limit": spec.limit, "columnar": spec.columnar}
    if not spec.shared_disk:
        opts["data_file"] = ship_data(spark, data_dir, root)
    return opts


def _shard_count(spark: SparkSession, spec: RunSpec) -> int:
    """The shared query's partitions: ``--shards``, else the cores Spark has; with k-safety,
    enough for a task's replicas to sit in other shards (one line if not)."""
    n = spec.shards if spec.shards is not None else int(spark.sparkContext.defaultParallelism)
    if spec.k_safe:
        try:
            check_parameters(n, spec.k_safe, spec.replicate_min_users)
        except ReuseError as exc:
            raise SparkRuntimeError(f"{exc} (shards: --shards, or the cores Spark has)",
                                    task=QUERY) from None
    return n


def _action(a: Any) -> dict[str, Any]:
    return {"action": type(a).__name__.lower(), **{k: v for k, v in vars(a).items()}}

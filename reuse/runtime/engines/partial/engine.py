"""Enact plan deltas as Spark streaming queries: Reuse or Default mode, pause or stop, defragment.

Mapping of the paper's Storm binding (Section 4.3) onto Spark:

- *Partial DAG*: every submit that starts tasks launches ONE new query holding its new tasks
  ``T_x`` and streams ``S*_x`` (:mod:`reuse.runtime.engines.partial.dag`). Running queries are never touched
  by a merge (a running query's plan cannot change anyway).
- *Boundary streams* ``S+_x``: a reused task ``u`` inside a running query starts copying its
  output to topic ``u`` when the runtime adds it to that query's control file (the paper's control
  topic); the new query reads the topic from the join point on. Reuse's source tasks are shared
  source streams (one replay query per source). Default's are private by default, as in the
  paper's baseline: each Default dataflow gets one replay query of its own for all its sources,
  started with it and stopped once its query has drained after its removal
  (``sources="shared"`` feeds Default from the shared replays instead). A private replay
  emits exactly the shared stream's events, so both modes see identical input events.
- *Join point* ``J``: the first source ``seq`` a new task processes. Chosen after the publish
  switches and the input offsets are in place, as the first ``seq`` not yet emitted (or given by
  the caller, who must pick one still in the future), so no reused producer can have processed
  an event ``>= J`` before it started publishing, and the new query sees every event ``>= J``.
- *Warm state*: a reused stateful task keeps the state it built since its own join point. So a
  submitted DAG's sink outputs, from its ``J`` on, equal those of the reference execution in which
  every running task processes the events from its own join point (see
  :func:`reuse.runtime.accounting.reference_records`); when no reused ancestor of a sink is
  stateful they equal what Default produces for the same ``J``.
- *Unmerge* by ``pause`` (paper): the removed tasks get an end cut ``R`` in their query's control
  file and then skip every event; queries keep running (and costing). By ``stop``: a query whose
  tasks are all removed is stopped once drained past ``R``; a query mixing removed and kept tasks
  is *handed over*: all its tasks end at ``R``, a successor query with the kept tasks starts at
  ``R`` from the input offsets taken at the cut, and waits for the predecessor's final state.
  By ``lazy`` (ours): a query left with no live task is stopped, as by ``stop``; removed tasks
  of a query that keeps live ones are paused, as by ``pause``, until the next hand-over of that
  query (a relaunch merge or ``defragment``) drops them. A removal then never starts a query:
  on Spark a query's start costs more CPU than the paused tasks' skipped events.
- *Defragment*: hand over every query of a running DAG to one new query with all its live tasks.

Every cut ``R`` is placed in the future (``rate * cut_margin_s`` events ahead) and checked after
the control files are written: if the clock had already passed it, the ledger records it.

*Backpressure and retention* (issue 12; :mod:`reuse.runtime.dataplane.flow_control`,
:mod:`reuse.runtime.dataplane.retention`): every partial query reads the bus within a per-topic read limit
and lag watermarks, so a slow consumer falls behind alone, in bounded batches, while its shared
producers run on; ``poll`` samples the consumers' lag and truncates each topic behind its
slowest live consumer.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reuse.core.dataflow import Dataflow
from reuse.core.paths import riotbench_dir
from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.execution import emitted_bound, parents_first, task_kind
from reuse.runtime.common.files import write_json
from reuse.runtime.common.hold import SourceHold
from reuse.runtime.common.ledger import LedgerDag, TaskOptions
from reuse.runtime.common.planners import Planner, make_planner, private_stream, source_stream
from reuse.runtime.common.policy import Merge, Mode, Unmerge
from reuse.runtime.common.recovery import Failures
from reuse.runtime.dataplane.bus import Bus, FileBus
from reuse.runtime.dataplane.flow_control import Limits, default_max_events
from reuse.runtime.dataplane.retention import BusUpkeep
from reuse.runtime.engines.contract import Counts, JournalOp, Ledger, RemoveResult, SubmitResult
from reuse.runtime.engines.partial.dag import PartialHandler
from reuse.runtime.engines.partial.queries import (
    QueryInfo,
    SourceHandler,
    TaskInfo,
    await_sources,
    host_queries,
    short_name,
    stop_between_batches,
)
from reuse.runtime.engines.partial.upkeep import QueryUpkeep
from reuse.tasks.sources import SOURCE_FILES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from reuse.runtime.spec import RunSpec

__all__ = ["Runtime"]


class Runtime(QueryUpkeep):
    """Live Spark enactment of submits and removes, a query per partial DAG (the paper's
    binding; the module docstring): the :class:`~reuse.runtime.engines.contract.Engine`
    contract, as the shared query's.

    Configured by one :class:`~reuse.runtime.spec.RunSpec` (checked when it was built; its
    fields say what each one does: the policy's merge ``partial`` or ``relaunch``, unmerge
    ``pause``, ``stop`` or ``lazy`` and Default's ``sources``, and ``bus_max_events``, the
    events per topic a lagging partial query admits per micro-batch, default
    :func:`~reuse.runtime.dataplane.flow_control.default_max_events`). Besides the spec:
    ``bus`` (default a :class:`FileBus` under ``root``), ``t0_ms`` (the nominal emit time of
    ``seq`` 0, default now) and the engine's own tuning, which no user sets: ``cut_margin_s``,
    ``lag_high`` and ``lag_low`` (the readers' lag watermarks in events: throttled above
    ``lag_high`` until below ``lag_low``; default twice and half the read limit) and
    ``retention_s`` (seconds between retention passes in :meth:`poll`; ``0``: never).
    """

    def __init__(self, spark: SparkSession, spec: RunSpec, *, bus: Bus | None = None,
                 t0_ms: int | None = None, cut_margin_s: float = 1.0,
                 lag_high: int | None = None, lag_low: int | None = None,
                 retention_s: float = 10.0) -> None:
        if spec.engine != "queries" or spec.root is None:
            raise SparkRuntimeError(f"the query-per-DAG engine runs a spec with --merge partial "
                                    f"or relaunch and a run directory, not {spec.policy.label} "
                                    f"in {spec.root}")
        self.spec = spec
        self.policy = spec.policy
        match, limit = spec.match, spec.limit
        # Reuse or Default: what a submit or remove means in runtime tasks (fresh ids, one
        # incarnation per submission: see reuse.runtime.common.planners); Reuse merges by the
        # match policy (exact or semantic), Default refuses any but exact
        self.planner: Planner = make_planner(self.policy.shares, match)
        self.spark = spark
        self.root = Path(spec.root).resolve()  # executors write here: not relative to cwd
        self.root.mkdir(parents=True, exist_ok=True)
        self.match, self.mode = match, self.policy.mode.value
        self.merge, self.unmerge = self.policy.merge.value, self.policy.unmerge.value
        self.rate, self.trigger_s = spec.rate, spec.trigger_s
        self.data_dir = str(riotbench_dir(spec.data_dir))
        self.opts: TaskOptions = {"data_dir": self.data_dir, "pi_iterations": spec.pi_iterations,
                                  "record": spec.record, "limit": limit}
        self.source = "replay"  # replayed sources only: --source needs the shared query
        self.bus = bus or FileBus(self.root)
        self.t0 = int(t0_ms if t0_ms is not None else time.time() * 1000)
        self.limit = limit
        self.cut_margin = max(1, round(self.rate * cut_margin_s))
        self.tasks: dict[str, TaskInfo] = {}
        # one entry per *incarnation* of a submitted DAG (a random walk may submit a DAG again
        # after removing it)
        self.dags: dict[str, LedgerDag] = {}
        self.queries: dict[str, QueryInfo] = {}
        self.sources: dict[str, str] = {}  # stream name -> query name
        self.log: list[dict[str, Any]] = []
        self._launch = 0
        n = (default_max_events(self.rate, self.trigger_s) if spec.bus_max_events is None
             else spec.bus_max_events)
        self.limits = Limits(n, lag_high, lag_low) if n > 0 else Limits(None)
        self.upkeep = BusUpkeep(self.bus, self.root, retention_s=retention_s)
        # restarts from checkpoints, and when to give up (reuse.runtime.common.recovery)
        self.failures = Failures()
        #: called as ``on_op(op, dag, cut)`` once an operation's cut is known: a remove's before
        #: any query changes, a submit's once its queries launched (no journal drives it today)
        self.on_op: Callable[[str, str, int], None] | None = None
        self.start_seq = 0  # the first seq the sources emit (set when they start)
        self._hold = SourceHold(self.root)

    # --- clock and cuts ------------------------------------------------------------------------

    def bound(self) -> int:
        """Largest source ``seq`` emitted so far (nominally; below a :meth:`hold`)."""
        return self._hold.bound(emitted_bound(self.t0, self.rate))

    def warm(self) -> bool:
        """A source query ran a batch (each partial query's first batch is its own)."""
        return any(qi.kind == "source" and qi.handler is not None and qi.handler.batches > 0
                   for qi in self.queries.values())

    def hold(self, seq: int | None) -> None:
        """Keep every source from emitting ``seq`` and past it until the next call (``None``:
        release): :class:`~reuse.runtime.common.hold.SourceHold`."""
        self._hold.set(seq, emitted_bound(self.t0, self.rate))

    def _future(self, at: int | None, margin: int) -> int:
        b = self.bound()
        if at is None:
            return b + 1 + margin
        if at <= b:
            raise SparkRuntimeError(f"cut point {at} is not in the future (seq {b} already "
                                    "emitted)")
        return at

    def _check_future(self, cut: int, what: str) -> None:
        if self.bound() >= cut:
            self.log.append({"event": "late_cut", "what": what, "cut": cut,
                             "bound": self.bound()})

    # --- sources -------------------------------------------------------------------------------

    def _ensure_source(self, stream: str, type_name: str) -> str:
        if stream not in self.sources:
            self._start_sources([(stream, type_name)])
        return f"src:{stream}"

    def _start_sources(self, streams: list[tuple[str, str]], owner: str | None = None) -> str:
        """One replay query pacing ``streams`` (``[(name, type)]``) together; its name."""
        self._launch += 1
        name = f"src{self._launch}-{short_name(owner or streams[0][0])}"
        handler = SourceHandler(self.bus, self._launch)
        start = max(0, self.bound() + 1)
        if not self.queries:
            self.start_seq = start
        opts = {"streams": json.dumps(streams), "t0": str(self.t0), "rate": str(self.rate),
                "start": str(start), "data_dir": self.data_dir,
                "limit": str(self.limit if self.limit is not None else -1),
                "hold": str(self._hold.file)}
        q = self._start(self._replay_input(opts), handler, name)
        self.queries[name] = QueryInfo(name, "source", self._launch, [], q, handler,
                                       time.time() * 1000, spec={"replay": opts},
                                       topics=tuple(f"src:{s}" for s, _ in streams), owner=owner)
        for stream, _ in streams:
            self.sources[stream] = name
        return name

    def _replay_input(self, opts: dict[str, str]) -> DataFrame:
        return self.spark.readStream.format("reusereplay").options(**opts).load()

    def start_sources(self, types: Iterable[str]) -> None:
        """Start the source streams of these source types now (shared by all DAGs of both
        modes; starting them ahead keeps the first submit's launch short). Each RIoTBench
        source gets its own replay query; all other (synthetic, e.g. OPMW) sources share one,
        since a query per synthetic source would cost more than the tasks they feed. With
        private sources (Default's default) there is nothing to start ahead: each dataflow's
        replay starts with it."""
        if self.policy.private_sources:
            return
        synthetic = []
        for t in dict.fromkeys(types):
            stream = source_stream(t, "source")
            if stream in self.sources:
                continue
            if t in SOURCE_FILES:
                self._ensure_source(stream, t)
            else:
                synthetic.append((stream, t))
        if synthetic:
            self._start_sources(synthetic)

    def _start(self, df: DataFrame, handler: Any, name: str) -> StreamingQuery:
        ckpt = self.root / "ckpt" / name / "spark"
        q = (df.writeStream.foreachBatch(handler).queryName(name)
             .option("checkpointLocation", str(ckpt))
             .trigger(processingTime=f"{self.trigger_s} seconds").start())
        await_sources(q)
        return q

    # --- partial DAG queries -------------------------------------------------------------------

    def _bus_input(self, name: str, in_topics: list[str], offsets: dict[str, str]) -> DataFrame:
        """The ``reusebus`` stream of a partial query, with its read limit and watermarks, and
        where its reader reports lag and committed offsets."""
        opts = {"topics": json.dumps(in_topics), "start": json.dumps(offsets),
                "bus_spec": json.dumps(self.bus.spec()), "query": name,
                "state_root": str(self.root), **self.limits.options()}
        return self.spark.readStream.format("reusebus").options(**opts).load()

    def _launch_partial(self, tids: list[str], *, label: str, at: int | None = None,
                        initial: Iterable[str] = (), start_floor: int | None = None,
                        record: Iterable[str] = ()) -> int:
        """Start one query for ``tids`` (topological). Returns its join cut ``J``."""
        internal = set(tids)
        ext: list[str] = []
        for t in tids:
            for p in self.tasks[t].parents:
                if p not in internal and p not in ext:
                    ext.append(p)
        changed = set()
        for p in ext:
            producer = self.tasks[p].query
            if producer is not None and p not in self.queries[producer].publish:
                self.queries[producer].publish.add(p)
                changed.add(producer)
        for qn in changed:
            self._control(self.queries[qn])
        topics = {p: self.tasks[p].topic for p in ext}
        in_topics = sorted(set(topics.values()))
        offsets = self.bus.offsets(in_topics)
        cut = self._future(at, 0) if start_floor is None else start_floor
        if start_floor is not None:
            self._check_future(cut, f"handover {label}")
        self._launch += 1
        name = f"q{self._launch}-{short_name(label)}"
        spec = {
            "name": name, "launch": self._launch,
            "tasks": [{"id": t, "type": self.tasks[t].type, "config": self.tasks[t].config,
                       "parents": list(self.tasks[t].parents)} for t in tids],
            "topics": topics, "name_of": {t: self.tasks[t].topic for t in tids},
            "start": {t: max(cut, self.tasks[t].start) if start_floor is not None else cut
                      for t in tids},
            "opts": self.opts, "initial": list(initial),
        }
        for t in tids:
            if start_floor is None:  # a hand-over keeps the task's logical join point
                self.tasks[t].start = cut
            self.tasks[t].query = name
        qi = QueryInfo(name, "partial", self._launch, list(tids), None, None, time.time() * 1000)
        qi.record = set(record) & internal
        self.queries[name] = qi
        self._control(qi)
        handler = PartialHandler(spec, str(self.root), self.bus.spec())
        write_json(self.root / "specs" / f"{name}.json", spec)
        qi.inputs = (in_topics, offsets)  # before the start: retention keeps its join point
        qi.handle = self._start(self._bus_input(name, in_topics, offsets), handler, name)
        qi.handler = handler
        qi.spec = spec
        self.log.append({"event": "launch", "query": name, "tasks": list(tids), "cut": cut,
                         "ms": time.time() * 1000})
        return cut

    def _add_task(self, rid: str, type_name: str, config: Any, parents: Iterable[str]) -> None:
        kind = task_kind(type_name, config)
        if kind == "source":
            stream = source_stream(type_name, config)
            if self.policy.private_sources:  # started by submit, one replay query per dataflow
                topic = f"src:{private_stream(stream, rid)}"
            else:
                topic = self._ensure_source(stream, type_name)
            self.tasks[rid] = TaskInfo(rid, type_name, config, (), kind, topic, None, 0)
        else:
            self.tasks[rid] = TaskInfo(rid, type_name, config, tuple(parents), kind, rid, None, 0)

    # --- submit / remove -----------------------------------------------------------------------

    def submit(self, flow: Dataflow, *, at: int | None = None) -> SubmitResult:
        """Merge (Reuse) or deploy (Default) a dataflow; returns what was done.

        ``at``: the join point (a ``seq`` still in the future); default: the next one emitted.
        """
        t_start = time.time()
        placement = self.planner.submit(flow)
        inst = placement.instance
        new = [(t.id, t.type, t.config, t.parents) for t in placement.start]
        sinks = dict(placement.sinks)
        reused = list(placement.reused)
        for rid, type_name, config, parents in new:
            self._add_task(rid, type_name, config, parents)
        if self.policy.private_sources:
            own = [(self.tasks[rid].topic.split(":", 1)[1], type_name)
                   for rid, type_name, *_ in new if self.tasks[rid].kind == "source"]
            if own:
                self._start_sources(own, owner=inst)
        # a DAG whose sink is an ordinary task (OPMW leaves): record that task's outputs; a
        # running one starts recording through its control file before the join point is taken
        leaves = {r for r in sinks.values() if self.tasks[r].kind == "task"}
        for r in leaves:
            q = self.tasks[r].query
            if q is not None and r not in self.queries[q].record:
                self.queries[q].record.add(r)
                self._control(self.queries[q])
        partial = [rid for rid, *_ in new if self.tasks[rid].kind != "source"]
        hosts = (host_queries(self.planner.groups(), partial, self.tasks, self.queries)
                 if self.policy.merge is Merge.RELAUNCH and self.planner.shares else [])
        if partial and hosts:
            join = self._future(at, self.cut_margin)
            for rid in partial:
                self.tasks[rid].start = join
            self._handover(hosts, join, flow.id, extra=partial, record=leaves)
        elif partial:
            join = self._launch_partial(partial, label=flow.id, at=at, record=leaves)
        else:
            join = self._future(at, 0)
        if self.on_op is not None:  # here the cut is known only once the queries launched
            self.on_op("submit", flow.id, join)
        self.dags[inst] = {"dag": flow.id, "J": join, "R": None, "sinks": sinks,
                              "tasks": [rid for rid, *_ in new], "reused": reused}
        took = time.time() - t_start
        self.log.append({"event": "submit", "dag": flow.id, "J": join, "started": len(new),
                         "reused": len(reused), "s": took, "ms": time.time() * 1000})
        return {"dag": flow.id, "J": join, "started": [r for r, *_ in new], "reused": reused,
                "sinks": sinks, "seconds": took}

    def remove(self, dag_id: str, *, at: int | None = None) -> RemoveResult:
        """Unmerge (Reuse) or undeploy (Default) a dataflow with end cut ``R`` (future)."""
        t_start = time.time()
        removal = self.planner.remove(dag_id)
        inst = removal.instance
        stop = list(removal.stop)
        cut = self._future(at, self.cut_margin)
        if self.on_op is not None:
            self.on_op("remove", dag_id, cut)
        self.dags[inst]["R"] = cut
        self._end_tasks([t for t in stop if self.tasks[t].kind != "source"], cut, dag_id)
        for t in stop:
            if self.tasks[t].kind == "source":
                self.tasks[t].end = cut
        for qi in self.queries.values():
            if qi.owner == inst and qi.status == "running":
                qi.status = "draining"  # stopped by poll once nothing reads its topics
        self._check_future(cut, f"remove {dag_id}")
        took = time.time() - t_start
        self.log.append({"event": "remove", "dag": dag_id, "R": cut, "stopped": len(stop),
                         "s": took, "ms": time.time() * 1000})
        # this engine never re-plans a remove (issue 36 is the shared query's): none started
        return {"dag": dag_id, "R": cut, "stop": stop, "started": [], "replanned": {},
                "seconds": took}

    def _end_tasks(self, stop: list[str], cut: int, label: str) -> None:
        by_query: dict[str, list[str]] = {}
        for t in stop:
            self.tasks[t].end = cut
            q = self.tasks[t].query
            if q is not None:
                by_query.setdefault(q, []).append(t)
        for qn, ts in by_query.items():
            qi = self.queries[qn]
            for t in ts:
                qi.end[t] = cut
            live = [t for t in qi.tasks if t not in qi.end]
            if self.policy.unmerge is Unmerge.STOP and live:
                self._handover([qn], cut, label)
            else:
                self._control(qi)
                if not live and (self.policy.unmerge is not Unmerge.PAUSE
                                 or self.policy.mode is Mode.DEFAULT):
                    qi.status = "draining"  # Default: the DAG's own query is stopped

    def _handover(self, qnames: list[str], cut: int, label: str, *, extra: Iterable[str] = (),
                  record: Iterable[str] = ()) -> list[str]:
        """End every task of ``qnames`` at ``cut``; relaunch their live tasks from ``cut``.

        Live tasks, with the new tasks ``extra`` (whose outputs in ``record`` are recorded), are
        regrouped one query per running DAG (Reuse) in topological order.
        """
        live: list[str] = list(extra)
        for qn in qnames:
            qi = self.queries[qn]
            live += [t for t in qi.tasks if t not in qi.end]
            for t in qi.tasks:
                qi.end.setdefault(t, cut)
            qi.status = "draining"
            self._control(qi)
        initial = [str(self.root / "final" / f"{qn}.json") for qn in qnames]
        groups = self._group(live)
        names = []
        for i, g in enumerate(groups):
            before = set(self.queries)
            self._launch_partial(g, label=f"{label}-h{i}", initial=initial, start_floor=cut,
                                 record=record)
            (new,) = set(self.queries) - before
            names.append(new)
            for t in g:
                for qn in qnames:
                    if t in self.queries[qn].publish:
                        self.queries[new].publish.add(t)
                    if t in self.queries[qn].record:
                        self.queries[new].record.add(t)
            self._control(self.queries[new])
        for qn in qnames:
            self.queries[qn].successor = ",".join(names)
        return names

    def _group(self, tids: list[str]) -> list[list[str]]:
        parents = {t: info.parents for t, info in self.tasks.items()}
        order = {t: n for n, t in enumerate(parents_first(parents))}
        if not self.planner.shares:
            return [sorted(tids, key=order.__getitem__)] if tids else []
        groups: dict[str, list[str]] = {}
        which = {}
        for n, rts in enumerate(self.planner.groups()):
            for t in rts:
                which[t] = str(n)
        for t in tids:
            groups.setdefault(which.get(t, "?"), []).append(t)
        return [sorted(g, key=order.__getitem__) for g in groups.values()]

    def defragment(self, *, at: int | None = None) -> dict[str, Any]:
        """Relaunch each running DAG that spans several queries (or has paused tasks) as one.

        Only Reuse mode has merged running DAGs; the affected queries are handed over at a future
        cut, so no event is lost or duplicated (outputs pause for the hand-over).
        """
        if not self.planner.shares:
            return {"relaunched": [], "stopped": []}
        t_start = time.time()
        affected: list[str] = []
        for rts in self.planner.groups():
            qs: set[str] = set()
            for t in rts:
                q = self.tasks[t].query
                if q is not None:
                    qs.add(q)
            paused = any(self.queries[q].end for q in qs)
            if len(qs) > 1 or paused:
                affected += [q for q in sorted(qs) if q not in affected]
        paused_only = [qn for qn, qi in self.queries.items()
                       if qi.kind == "partial" and qi.status == "running" and qn not in affected
                       and qi.tasks and all(t in qi.end for t in qi.tasks)]
        if not affected and not paused_only:
            return {"relaunched": [], "stopped": [], "seconds": 0.0}
        cut = self._future(at, self.cut_margin)
        for qn in paused_only:
            self.queries[qn].status = "draining"
        new = self._handover(affected, cut, "defrag") if affected else []
        self._check_future(cut, "defragment")
        took = time.time() - t_start
        self.log.append({"event": "defragment", "cut": cut, "stopped": affected + paused_only,
                         "relaunched": new, "s": took, "ms": time.time() * 1000})
        return {"cut": cut, "stopped": affected + paused_only, "relaunched": new,
                "seconds": took}

    def restart(self, qname: str) -> None:
        """Stop a query abruptly and start it again from its checkpoint, with a fresh handler
        (as after a driver crash): Spark resumes from the committed offsets, a partial query's
        handler from the task states saved beside them, and a source query's re-run batch
        republishes its frames under the same keys."""
        qi = self.queries[qname]
        qi.handle.stop()
        self._restart(qi)
        self.log.append({"event": "restart", "query": qname, "ms": time.time() * 1000})

    def _restart(self, qi: QueryInfo) -> None:
        handler: Any
        if qi.kind == "source":
            handler = SourceHandler(self.bus, qi.launch)
            df = self._replay_input(qi.spec["replay"])
        else:
            handler = PartialHandler(qi.spec, str(self.root), self.bus.spec())
            in_topics, offsets = qi.inputs
            df = self._bus_input(qi.name, in_topics, offsets)
        old = qi.handler
        qi.handle = self._start(df, handler, qi.name)
        qi.handler = handler
        handler.batches, handler.busy_s = old.batches, getattr(old, "busy_s", 0.0)

    # --- the contract's uniform answers (reuse.runtime.engines.contract) ----------------------

    def arrival_rate(self) -> float:
        """Source ``seq`` per second: replayed sources only, so ``rate``."""
        return self.rate

    def malformed(self) -> int | None:
        """Replayed sources only: no broker, no malformed message (``None``)."""
        return None

    def replay(self, ops: Iterable[JournalOp], flows: Mapping[str, Dataflow], *,
               start_seq: int) -> None:
        """A query-per-DAG run is not journaled, so a dead driver's run cannot be rebuilt:
        ``reuse run --resume`` is the shared query's (``RunSpec.check_resumable`` refuses it
        before this is reached)."""
        raise SparkRuntimeError(f"{self.policy.label}: a query-per-DAG run cannot be resumed "
                                "(use --merge inplace)")

    # --- reporting -----------------------------------------------------------------------------

    def counts(self) -> Counts:
        """Running / paused tasks and active queries now (sources count as queries, not tasks)."""
        active = {qn for qn, qi in self.queries.items() if qi.status != "stopped"}
        running = paused = 0
        for t in self.tasks.values():
            if t.kind == "source" or t.query not in active:
                continue
            if t.end is None:
                running += 1
            else:
                paused += 1
        # a query per partial DAG cannot hold a replica (--k-safe needs the shared query)
        return {"running_tasks": running, "paused_tasks": paused, "queries": len(active),
                "replica_tasks": 0}

    def ledger(self) -> Ledger:
        """Everything the accounting needs to recompute the expected outputs of the run."""
        return {
            "engine": "queries", "mode": self.mode, "match": self.match, "merge": self.merge,
            "unmerge": self.unmerge, "source": {"kind": "replay"}, "replicas": {},
            "sources": "private" if self.policy.private_sources else "shared",
            "t0": self.t0, "rate": self.rate,
            "limit": self.limit, "data_dir": self.data_dir, "opts": self.opts,
            "tasks": {t.id: {"type": t.type, "config": t.config, "parents": list(t.parents),
                             "kind": t.kind, "topic": t.topic, "start": t.start, "end": t.end}
                      for t in self.tasks.values()},
            "dags": self.dags, "log": self.log,
            "bus": {**self.limits.options(), **self.upkeep.stats()},
        }

    def save_ledger(self) -> Path:
        path = self.root / "ledger.json"
        write_json(path, self.ledger())
        return path

    def close(self, *, clean: bool = False) -> None:
        """Stop every query this runtime started (the session stays up)."""
        for qi in self.queries.values():
            if qi.status != "stopped" and qi.handle is not None:
                stop_between_batches(qi)
                try:
                    qi.handle.stop()
                except Exception:  # noqa: BLE001 - best effort
                    pass
                qi.status = "stopped"
                qi.stopped_ms = time.time() * 1000
        self.save_ledger()
        if clean:
            shutil.rmtree(self.root, ignore_errors=True)



"""One instance of a run replicated across applications: its own driver and Spark application,
following the run's journal (``python -m reuse.runtime.apps.instance SPEC.json``).

The coordinator (:mod:`reuse.runtime.apps.coordinator`) starts each instance as a child process
in its own process group and gives it an :class:`InstanceSpec`. The instance runs the shared
query (:class:`~reuse.runtime.engines.shared.engine.InplaceRuntime`) with three changes, all made
by its :class:`Follower`:

- **Ranges.** The tick source claims up to the mark the follower writes every tick:
  ``min(clock, H, the next cut)`` (:func:`~reuse.runtime.apps.roles.ready_mark`), after the
  follower has applied every operation the same atomic :meth:`OpLog.sync` returned. So every
  instance applies every operation at its journal cut, and every cut is a batch boundary.
- **Tasks.** Each batch runs the instance's set (:func:`~reuse.runtime.apps.roles.instance_tasks`:
  the home every task, a replica the shared ones). A stateful task the instance starts running
  at a cut takes its state there from the other instances (:class:`CutStates`); so does every
  stateful task of a replacement that joins at a cut.
- **Outputs.** After each batch, every dataflow sink's records in the batch are published to
  its de-duplicated stream (:class:`OutputLog`), ``(seq, digest)`` keyed: consumers read each
  record once, from whichever instance published it first. The task states at a cut are
  offered to the others (:meth:`CutStates.put`).

The instance registers its driver's PID and, as its batches run, their executors
(:class:`Registry`, read by the coordinator into ``apps.json``), beats with its frontier every
tick, and exits once it has processed everything below the journal's ``stop`` cut.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reuse.runtime.apps.roles import RoleLog, instance_tasks, ready_mark
from reuse.runtime.common.execution import is_stateful, next_offset
from reuse.runtime.common.planners import source_stream, stream_events_name
from reuse.runtime.control import OpLog, OutputLog, Registry
from reuse.runtime.control.cutstates import CutStates
from reuse.runtime.control.flows import FlowBook
from reuse.runtime.dataplane.bus import make_bus

if TYPE_CHECKING:
    from reuse.core.dataflow import Dataflow
    from reuse.runtime.control.oplog import Operation
    from reuse.runtime.engines.shared.deploy import Epoch
    from reuse.runtime.engines.shared.engine import InplaceRuntime

__all__ = ["Follower", "InstanceSpec", "key_of", "main", "sink_stream"]


@dataclass(frozen=True)
class InstanceSpec:
    """What the coordinator tells an instance (written as JSON, read by :func:`main`).

    ``join``: the cut a replacement joins at (its states come from the live instances);
    ``None`` for the first instances and for one restarted from its own ``root``."""

    id: str
    home: bool
    run: str
    redis: str
    root: str
    t0: int
    start_seq: int
    flows: list[dict[str, Any]]
    mode: str = "reuse"
    match: str = "exact"
    master: str = "local[1]"
    shards: int | None = None
    max_events: int | None = None
    rate: float = 10.0
    trigger_s: float = 2.0
    pi_iterations: int = 1600
    data_dir: str | None = None
    min_users: int = 2
    join: int | None = None
    conf: dict[str, str] = field(default_factory=dict)
    seed_timeout_s: float = 120.0
    #: each running DAG split over the instance's shards (``--split``)
    split: bool = False
    #: the standalone cluster's folder, whose ``cluster.json`` says how to join it
    cluster_dir: str | None = None
    #: the shards run columnar (``--per-event``: false)
    columnar: bool = True
    #: a broker-fed run's bus (its spec), which the coordinator's ingest fills: the shards
    #: read their source events there, and the clock is what has arrived (``None``: replay)
    feed: dict[str, str] | None = None
    #: how long a control-plane call retries a refused connection: the run's Redis is
    #: restarted by the coordinator, or by ``reuse run --resume`` after the coordinator's own
    #: death (issue 34); past it the instance fails, and the resumed coordinator restarts it
    patience_s: float = 120.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> InstanceSpec:
        return cls(**d)


def sink_stream(dag: str, join: int, sink: str) -> str:
    """The output stream of one submission's sink: a dataflow submitted again is a new one.

    >>> sink_stream("ETL", 120, "sink")
    'ETL@120/sink'
    """
    return f"{dag}@{int(join)}/{sink}"


def _source_streams(flow: Dataflow) -> set[str]:
    """The bus streams of the source events a dataflow reads."""
    return {stream_events_name(source_stream(flow.task(n).type, flow.task(n).config))
            for n in flow.sources}


class Follower:
    """The instance's side of the control plane, and the engine's per-batch hooks
    (:class:`~reuse.runtime.engines.shared.handler.BatchHooks`); see the module docstring."""

    def __init__(self, engine: InplaceRuntime, spec: InstanceSpec,
                 flows: dict[str, Dataflow]) -> None:
        self.engine, self.spec, self.flows = engine, spec, flows
        wait = spec.patience_s
        self.oplog = OpLog(spec.redis, spec.run, patience_s=wait)
        self.registry = Registry(spec.redis, spec.run, patience_s=wait)
        self.outputs = OutputLog(spec.redis, spec.run, patience_s=wait)
        self.cut_states = CutStates(spec.redis, spec.run, patience_s=wait)
        self.book = FlowBook(spec.redis, spec.run, patience_s=wait)  # a live engine's submits
        self.ready_path = Path(str(engine.follow))
        self.ready_path.parent.mkdir(parents=True, exist_ok=True)
        self.applied = 0  # operations of the journal applied
        self.cuts: set[int] = set()
        self.roles = RoleLog()
        self.stop_cut: int | None = None
        self.ran: frozenset[str] = frozenset()
        self.executors: tuple[str, ...] = ()
        self.batches = 0  # batches this process ran (apps.json: none, no executors to name)
        self.bus = None if spec.feed is None else make_bus(spec.feed)
        #: every source stream the run's dataflows read (a broker-fed clock's floor)
        self.streams = {s for f in flows.values() for s in _source_streams(f)}
        from reuse.runtime.engines.shared.handler import ShardHandler

        #: an instance restarted from its own checkpoint has claimed up to here already
        self.floor = ShardHandler(engine).planned()

    # --- the control loop (the follower's thread: the instance's main thread) --------------

    def register(self, *, done: bool = False) -> None:
        """Describe this instance; ``done``: it processed everything below the stop cut and
        exits cleanly (how a resumed coordinator, which is not its parent and cannot read its
        exit code, tells a finished instance from a dead one)."""
        self.registry.register(self.spec.id, executors=self.executors, home=self.spec.home,
                               root=self.spec.root, join=self.spec.join, batches=self.batches,
                               done=done)

    def clock(self) -> int:
        """The first ``seq`` the sources have not brought yet: on a replay, its nominal clock;
        broker-fed, the first ``seq`` not arrived on the bus of every source a live task reads
        (:func:`~reuse.runtime.dataplane.broker_feed.ready_seq`; with none read, past the last
        arrived on any). Every instance reads the same bus, so their clocks agree."""
        if self.bus is None:
            return next_offset(self.spec.t0, self.spec.rate)
        from reuse.runtime.dataplane.broker_feed import last_seq, ready_seq

        with self.engine.lock:
            needed = self.engine.deployment.source_starts(stream_events_name)
        arrived = {s: last_seq(self.bus, s) for s in self.streams | set(needed)}
        return ready_seq(needed, arrived, floor=max(arrived.values(), default=-1) + 1)

    def sync(self) -> int:
        """Apply the journal's new operations, then write the ready mark; returns it."""
        clock = self.clock()
        horizon, ops = self.oplog.sync(self.applied, advance_to=clock)
        for op in ops:
            self._apply(op)
            self.applied += 1
        with self.engine.lock:
            frontier = max(self.engine.deployment.frontier, self.engine.start_seq, self.floor)
            mark = ready_mark(clock, horizon, self.cuts, frontier)
            if self.stop_cut is not None:
                mark = min(mark, max(self.stop_cut, frontier))
        tmp = self.ready_path.with_name(self.ready_path.name + ".tmp")
        tmp.write_text(str(mark), encoding="utf-8")
        os.replace(tmp, self.ready_path)
        self.registry.beat(self.spec.id, self.processed())
        return mark

    def processed(self) -> int:
        """Every ``seq`` below this has been processed (and published)."""
        h = self.engine.handler
        return -1 if h is None or h.processed < 0 else h.processed

    def _apply(self, op: Operation) -> None:
        eng = self.engine
        if op.op == "submit":
            flow = self.book.get(op.key) or self.flows[op.dag]
            if flow is not self.flows.get(op.dag):  # learnt while running: its sources count
                self.flows[op.dag] = flow
                self.streams |= _source_streams(flow)
            res = eng.submit(flow, at=op.cut)
            for sink in res["sinks"]:
                self.outputs.open_sink(sink_stream(op.dag, op.cut, sink), op.cut)
        elif op.op == "remove":
            eng.remove(op.dag, at=op.cut)
        elif op.op == "stop":
            self.stop_cut = op.cut
        with eng.lock:
            self.cuts.add(op.cut)
            if op.op in ("submit", "remove"):
                live = {t: d["parents"] for t, d in eng.tasks.items() if d["end"] is None}
                self.roles.set(op.cut, instance_tasks(self.spec.home, eng.planner.users(),
                                                      live, self.spec.min_users))

    def run(self, tick_s: float) -> None:
        """Follow until everything below the ``stop`` cut is processed."""
        while True:
            self.sync()
            self.engine.poll()
            if self.stop_cut is not None and max(self.processed(),
                                                 self.engine.start_seq) >= self.stop_cut:
                # (a joiner whose cut is the stop, or an instance restarted from a checkpoint
                # already at the stop, has nothing to run: it ran no batch, on no executor)
                self.register(done=True)  # the final batch count, for apps.json
                return
            time.sleep(tick_s)

    # --- the engine's hooks (the handler's thread, in each batch) ----------------------------

    def epoch(self, epoch: Epoch, lo: int) -> Epoch:
        from reuse.runtime.engines.shared.deploy import Epoch

        keep = self.roles.at(lo)
        if keep is not None:
            epoch = Epoch(epoch.version,
                          tuple(tuple(t for t in s if t["id"] in keep) for s in epoch.shards))
        self.ran = frozenset(t["id"] for s in epoch.shards for t in s)
        return epoch

    def seed(self, epoch: Epoch, states: dict[str, Any], lo: int) -> dict[str, Any]:
        need = [t["id"] for s in epoch.shards for t in s
                if int(t["start"]) < lo and t["id"] not in states
                and is_stateful(t, self.engine.opts)]
        if need:  # joining, or a task newly shared enough to run here: warm, from a live one
            states.update(self.cut_states.take(lo, need, timeout_s=self.spec.seed_timeout_s))
        return states

    def done(self, lo: int, hi: int, states: dict[str, Any], sinks: dict[str, list[str]],
             executors: list[str]) -> None:
        self.batches += 1
        if executors and tuple(executors) != self.executors:  # for apps.json
            self.executors = tuple(executors)
            self.register()
        with self.engine.lock:
            at_cut = hi in self.cuts
            subs = [(d["dag"], int(d["J"]), d["R"], dict(d["sinks"]))
                    for d in self.engine.dags.values()]
        if at_cut:
            self.cut_states.put(hi, states)
        parsed: dict[str, list[tuple[int, str, str]]] = {}
        for dag, join, end, snk in subs:
            a, b = max(lo, join), hi if end is None else min(hi, int(end))
            if a >= b:
                continue
            for sink, rid in snk.items():
                if rid not in self.ran:
                    continue
                if rid not in parsed:
                    parsed[rid] = sorted((key_of(line) + (line,) for text in sinks.get(rid, ())
                                          for line in text.splitlines() if line),
                                         key=lambda x: x[0])
                mine = [x for x in parsed[rid] if a <= x[0] < b]
                self.outputs.publish(sink_stream(dag, join, sink), a, b, mine, by=self.spec.id)


def key_of(line: str) -> tuple[int, str]:
    """A sink record line's ``(seq, digest)``, without parsing the JSON (a publish takes every
    record of every sink: :func:`reuse.runtime.common.execution.record_line` writes them).

    >>> from reuse.runtime.common.execution import record_line
    >>> key_of(record_line({"src": "S", "seq": 42, "ts": 1, "x": 1}, 2.0))[0]
    42
    """
    q = line.index('"q":') + 4
    d = line.index('"d":"', q) + 5
    return int(line[q:line.index(",", q)]), line[d:line.index('"', d)]


def main(argv: list[str] | None = None) -> int:
    """Run one instance from its spec file until the journal's ``stop`` cut; a one-line error
    and exit code 2 on a refused start, 3 once the run's Redis is gone past ``patience_s``
    (:class:`~reuse.runtime.control.lifeline.Lifeline` ends the process however stuck)."""
    from redis.exceptions import RedisError

    from reuse.core.dataflow import parse_dataflow
    from reuse.core.errors import ReuseError
    from reuse.runtime.cluster import client
    from reuse.runtime.control.lifeline import EXIT_CODE, Lifeline
    from reuse.runtime.engines.shared.engine import InplaceRuntime
    from reuse.runtime.session import get_session, stop_session
    from reuse.runtime.spec import RunSpec

    args = sys.argv[1:] if argv is None else argv
    spec = InstanceSpec.from_dict(json.loads(Path(args[0]).read_text(encoding="utf-8")))
    flows = {f.id: f for f in (parse_dataflow(d) for d in spec.flows)}
    lifeline = Lifeline(spec.redis, spec.patience_s, f"instance {spec.id}")
    lifeline.start()
    spark = None
    try:
        joins = client(spec.master, spec.cluster_dir)
        spark = get_session(spec.master, extra=spec.conf, host=joins.host,
                            properties=joins.properties)
        # one copy of the run: its own shards hold no replica (the K+1 applications are the
        # copies), its cuts and ranges come from the journal it follows
        run = RunSpec.of(mode=spec.mode, root=Path(spec.root), shards=spec.shards,
                         rate=spec.rate, trigger_s=spec.trigger_s, master=spec.master,
                         pi_iterations=spec.pi_iterations,
                         data_dir=None if spec.data_dir is None else Path(spec.data_dir),
                         max_events=0 if spec.feed is not None else spec.max_events,
                         match=spec.match, split=spec.split, columnar=spec.columnar)
        engine = InplaceRuntime(spark, run, t0_ms=spec.t0, feed=spec.feed,
                                follow=str(Path(spec.root) / "ckpt" / "shared" / "ready"))
        follower = Follower(engine, spec, flows)
        engine.hooks = follower
        follower.register()
        follower.sync()  # every operation so far (a joiner's before its cut too)
        engine.start_following(spec.start_seq)
        try:
            follower.run(min(0.2, spec.trigger_s / 4))
        finally:
            engine.close()
    except ReuseError as exc:
        print(f"instance {spec.id}: {exc}", file=sys.stderr)
        return 2
    except RedisError as exc:  # a control-plane call gave up after its patience
        print(f"instance {spec.id}: {str(exc).splitlines()[0]}", file=sys.stderr)
        return EXIT_CODE
    finally:
        if spark is not None:
            stop_session(spark)
    return 0


if __name__ == "__main__":
    sys.exit(main())

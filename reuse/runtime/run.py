"""Replay a submit/remove trace live on Spark and write one CSV row per operation.

Each step: the operation is enacted at the step's start, then the run idles (polling the
runtime) until ``step_seconds`` have passed, like the paper's fixed 1-minute steps. Per step we
record the deployed tasks and queries, the CPU of the whole run in cores over the step
(``cores``) and over its second half (``cores_steady``, launch costs excluded), source-to-sink
latency percentiles of the sink records written during the step, source events emitted
(``events_in``) and sink outputs written (``events_out``). After the last step the run drains,
then the pure-Python reference execution recomputes what every submitted sink should have
output (:mod:`reuse.runtime.accounting`); missing and extra outputs are charged to the step in
which their source event was emitted (``lost``, ``duplicated``). On the query-per-DAG engines a
step also reports the largest consumer lag sampled in it (``max_lag_events``: events pending
on one topic for one partial query) and how many partial queries were throttled at some point
in it (``throttled``; :mod:`reuse.runtime.dataplane.flow_control`); the shared query has no bus: empty.
``failures`` counts the failures recovered in the step (a restarted query; a driver death, in
the step a resumed run measures again), and ``gap_s`` is the longest pause between two batch
completions of the shared query in the step: the longest output pause a failure caused.
``replica_tasks`` counts k-safety's live replicas (shared query, ``--k-safe``); each replica's
own outputs are checked against the reference too, into ``<root>/replicas.json``.
"""

from __future__ import annotations

import csv
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from reuse.core.dataflow import Dataflow
from reuse.core.traces import Op, check_trace
from reuse.runtime import SparkRuntimeError
from reuse.runtime.accounting import (
    account,
    charge_to_steps,
    leaked_records,
    reference_records,
    replica_account,
)
from reuse.runtime.cluster import client
from reuse.runtime.common.files import read_batches, write_json
from reuse.runtime.common.policy import LIVE_MODES
from reuse.runtime.engines.contract import Engine
from reuse.runtime.engines.partial.engine import Runtime
from reuse.runtime.engines.shared.engine import InplaceRuntime
from reuse.runtime.journal import JOURNAL, JournalState, RunJournal, step_started_ms
from reuse.runtime.measure import CpuMeter, SinkTail, hold_step, longest_pause, percentile
from reuse.runtime.progress import StepBar
from reuse.runtime.rows import CSV_COLUMNS, StepRow
from reuse.runtime.spec import RunSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from reuse.runtime.dataplane.bus import Bus
    from reuse.runtime.dataplane.mqtt import BrokerUrl
    from reuse.runtime.dataplane.redis_bus import Broker as RedisBroker

__all__ = ["CSV_COLUMNS", "LIVE_MODES", "check_broker", "live_run", "resume_run", "run_trace",
           "write_rows"]



def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _warm_up(runtime: Engine, warmup_s: float, stall_s: float) -> None:
    """Run the sources for ``warmup_s``, and on until the engine ran its first batch (a cold
    cluster's executors, a loaded machine: seen at 22 s), failing only after ``stall_s`` more."""
    end = time.time() + warmup_s
    while time.time() < end or not runtime.warm():
        if time.time() > end + stall_s:
            raise SparkRuntimeError(f"the engine ran no batch in {warmup_s + stall_s:g} s of "
                                    "warm-up (see the driver's log)")
        runtime.poll()
        time.sleep(0.25)


def run_trace(runtime: Engine, flows: Mapping[str, Dataflow], ops: Sequence[Op], *,
              step_seconds: float, meter: CpuMeter | None = None, check: bool = True,
              defrag_every: int = 0, warmup_s: float = 0.0,
              progress: Callable[[str], None] | None = _progress,
              journal: RunJournal | None = None, journal_params: Mapping[str, object] | None = None,
              resumed: JournalState | None = None,
              stall_s: float = 60.0) -> list[StepRow]:
    """Enact ``ops`` one per step on ``runtime``; return the CSV rows (see module doc).

    ``runtime``: a :class:`~reuse.runtime.engines.partial.engine.Runtime` (a query per partial DAG) or an
    :class:`~reuse.runtime.engines.shared.engine.InplaceRuntime` (the shared query); both take the same calls.
    ``warmup_s``: the sources run that long before the first step, unmeasured, so step 1 is
    not charged with the JVM's warm-up (both modes get the same). ``progress`` gets one line
    per step; a :class:`reuse.runtime.progress.StepBar` (the notebooks' progress bar) also gets
    each row.

    ``journal`` (shared-query engine): every operation and row is journaled, with
    ``journal_params`` in the start record, so ``reuse run --resume`` can finish the run if
    this process dies. ``resumed``: the journal of such a run, whose engine has been rebuilt
    (:meth:`~reuse.runtime.engines.shared.engine.InplaceRuntime.replay`); its rows are kept, the step the
    driver died in is measured again from now (``failures`` counts the death), and the trace
    goes on from the first operation never enacted.

    ``stall_s``: after the last step the run waits for the engine to process what was emitted
    for as long as it makes progress, and fails only when nothing moves for ``stall_s``
    (an engine behind its input is overloaded, not broken: issue 36).
    """
    # a live engine's trace may remove what was submitted before it; a resumed run's trace is
    # the whole run again, from its first step
    check_trace(ops, flows, present=() if resumed is not None else runtime.planner.instances)
    meter = meter or CpuMeter()
    meter.start()
    tail = SinkTail(runtime.root)
    trace = _Trace(runtime.policy.label, len(ops), journal, progress)
    runtime.start_sources(sorted({flows[o.dag].task(s).type for o in ops
                                  for s in flows[o.dag].sources}))
    if resumed is not None:
        trace.rows, trace.marks = [r.copy() for r in resumed.rows], list(resumed.marks)
        tail.skip_existing()  # the dead driver's steps' outputs are not the next step's
    else:
        if journal is not None:
            journal.start({**(journal_params or {}), "t0": runtime.t0,
                           "start_seq": runtime.start_seq})
        if warmup_s > 0:
            trace.say(f"[{trace.label}] warming up {warmup_s:g} s (sources only, not measured)")
            _warm_up(runtime, warmup_s, stall_s)
    trace.t_run = time.time()
    try:
        if resumed is not None and resumed.pending is not None:
            _measure_died_step(runtime, meter, tail, step_seconds, resumed, trace)
        first = resumed.next_step if resumed is not None else 1
        for step, op in enumerate(ops, start=1):
            if step >= first:
                cut, t0, b0, cpu0 = _enact(runtime, flows, op, step, meter, journal,
                                           defrag_every)
                row = _measure_step(runtime, meter, tail, step_seconds, step, op.op, op.dag,
                                    cut, t0, b0, time.time() - t0, cpu0)
                trace.finish(row, b0 + 1)
        upto = runtime.bound() + 1
        if runtime.limit is not None:
            upto = min(upto, runtime.limit)
        runtime.wait_processed(upto - 1, timeout_s=stall_s)
        runtime.wait_stopped(timeout_s=120.0)
    finally:
        meter.stop()
        runtime.save_ledger()
    _output_gaps(trace.rows, runtime.root)
    if check:
        _check_outputs(runtime, trace, upto)
    return trace.rows


@dataclass
class _Trace:
    """A trace's run so far: its rows, each step's first source ``seq`` (what outputs are
    charged to), and where a finished step goes (the journal, the progress line)."""

    label: str
    n_ops: int
    journal: RunJournal | None
    progress: Callable[[str], None] | None
    rows: list[StepRow] = field(default_factory=list)
    marks: list[int] = field(default_factory=list)
    t_run: float = field(default_factory=time.time)

    def say(self, msg: str) -> None:
        if self.progress:
            self.progress(msg)

    def finish(self, row: StepRow, mark: int) -> None:
        """A step's row is done: keep it, journal it, report it."""
        self.rows.append(row)
        self.marks.append(mark)
        if self.journal is not None:
            self.journal.row(row, mark)
        if not self.progress:
            return
        step, n_ops = int(row["step"]), self.n_ops
        elapsed = time.time() - self.t_run
        eta = (n_ops - step) * (row["t_end_ms"] - row["t_start_ms"]) / 1000
        self.progress(f"[{self.label} {step}/{n_ops} {elapsed:.0f}s, ~{eta:.0f}s left] "
                      f"{row['op']} {row['dag']}: {row['running_tasks']} tasks "
                      f"(+{row['paused_tasks']} paused), {row['queries']} queries, "
                      f"{row['cores']:.2f} cores, p50 {row['p50_latency_ms']} ms"
                      + (f", {row['failures']} failure(s)" if row["failures"] else ""))
        if isinstance(self.progress, StepBar):  # the notebooks' bar also takes each row
            self.progress.step(step, n_ops, row)


def _enact(runtime: Engine, flows: Mapping[str, Dataflow], op: Op, step: int, meter: CpuMeter,
           journal: RunJournal | None, defrag_every: int,
           ) -> tuple[int, float, int, dict[str, float]]:
    """Step ``step``'s operation (journaled first, with the step's first ``seq``), and the
    step's start: the operation's cut (``J`` or ``R``), the time, the bound and the CPU then
    (the step's CPU covers its operation)."""
    t0 = time.time()
    cpu0 = meter.total(by_category=True)
    b0 = runtime.bound()
    if journal is not None:
        runtime.on_op = (lambda o, d, c: journal.op(step, o, d, c, b0 + 1,
                                                    t_ms=round(t0 * 1000)))
    cut = (runtime.submit(flows[op.dag])["J"] if op.op == "submit"
           else runtime.remove(op.dag)["R"])
    if defrag_every and step % defrag_every == 0:
        runtime.defragment()
    return cut, t0, b0, cpu0


def _measure_died_step(runtime: Engine, meter: CpuMeter, tail: SinkTail, step_seconds: float,
                       resumed: JournalState, trace: _Trace) -> None:
    """The step the driver died in, measured again from now (its operation was enacted)."""
    pending = resumed.pending
    assert pending is not None
    step = int(pending["step"])
    trace.say(f"[{trace.label}] resumed at step {step}/{trace.n_ops} "
              f"({pending['op']} {pending['dag']} was enacted at {pending['cut']})")
    row = _measure_step(runtime, meter, tail, step_seconds, step, pending["op"], pending["dag"],
                        int(pending["cut"]), time.time(), runtime.bound(), 0.0,
                        meter.total(by_category=True), died=1)
    # the step began when the dead driver started it: its output pause counts from there
    # (its cores are measured from the resume)
    row["t_start_ms"] = step_started_ms(resumed, step, row["t_start_ms"])
    trace.finish(row, int(pending["mark"]))


def _check_outputs(runtime: Engine, trace: _Trace, upto: int) -> None:
    """Account every sink's outputs against the run's one reference execution, charging the
    missing and extra ones to the steps their source events were emitted in; check each
    k-safety replica on its own window into ``<root>/replicas.json``."""
    trace.say("checking outputs against the reference execution ...")
    ledger = runtime.ledger()
    ref = reference_records(ledger, upto)
    acc = account(runtime.root, ledger, upto, ref)
    # outputs of a task at or past its end cut (or before its start) belong to no DAG's
    # window, so the per-DAG accounting cannot see them: counted as duplicated
    leaks = [s for seqs in leaked_records(runtime.root, ledger, upto).values() for s in seqs]
    charge_to_steps(trace.rows, trace.marks,
                    lost=[s for a in acc.values() for s in a["lost_seqs"]],
                    duplicated=[s for a in acc.values() for s in a["duplicated_seqs"]] + leaks)
    if leaks:
        trace.say(f"{len(leaks)} outputs of tasks outside their windows (counted as "
                  "duplicated)")
    if ledger.get("replicas"):
        rep = replica_account(runtime.root, ledger, upto, ref)
        write_json(Path(runtime.root) / "replicas.json", rep)
        bad = {r: a for r, a in rep.items() if a["lost"] or a["duplicated"]}
        trace.say(f"k-safety: {len(rep)} recorded replicas checked on their own windows, "
                  f"{len(bad)} differ from the reference" + (f": {bad}" if bad else ""))


def _measure_step(runtime: Engine, meter: CpuMeter, tail: SinkTail, step_seconds: float,
                  step: int, op: str, dag: str, cut: int, t0: float, b0: int,
                  op_s: float, cpu0: Mapping[str, float], died: int = 0) -> StepRow:
    """Poll the runtime until the step's time is up (:func:`hold_step`, every driver's one
    step measurement: ``measured_s`` is its window); the step's row. ``died``: the driver
    died in this step (a resumed run measures the step again)."""
    failed0 = len(runtime.failures)
    malformed0 = runtime.malformed()
    runtime.take_lag()  # forget what the previous step saw (the query-per-DAG engines' bus)
    w = hold_step(meter, t0, cpu0, step_seconds, op_s, runtime.poll)
    b1 = runtime.bound()
    n_out, lat = tail.new_latencies()
    n_src = len(runtime.sources)
    c = runtime.counts()
    lag, throttled = runtime.take_lag()
    return {"step": step, "op": op, "dag": dag, **c,
            "cores": w.cores, "cores_steady": w.cores_steady,
            "p50_latency_ms": _r(percentile(lat, 50)),
            "p99_latency_ms": _r(percentile(lat, 99)),
            "events_in": (b1 - b0) * n_src, "events_out": n_out,
            "lost": None, "duplicated": None,
            "cut": cut, "op_seconds": round(op_s, 3),
            "measured_s": round(w.t1 - t0, 3), **w.cpu_columns(),
            "failures": died + len(runtime.failures) - failed0,
            "gap_s": None, "max_lag_events": lag, "throttled": throttled,
            "malformed": None if malformed0 is None else (runtime.malformed() or 0) - malformed0,
            "t_start_ms": round(t0 * 1000), "t_end_ms": round(w.t1 * 1000)}


def _output_gaps(rows: list[StepRow], root: Path) -> None:
    """``gap_s`` of each step: :func:`longest_pause` over the shared query's batch completions
    (``batches.jsonl``), counted from the first step's start before the first output. Sinks
    output in every batch that has events, so this is the longest output
    pause a failure (or anything else) caused. A resumed run's step starts when the dead
    driver started it, so the time it was dead counts. The query-per-DAG engines keep no such
    log: ``None``."""
    if not (Path(root) / "batches.jsonl").exists():
        return
    ends = [float(b["ms"]) + 1000 * float(b["wall_s"]) for b in read_batches(root)]
    starts = [float(r["t_start_ms"]) for r in rows if r.get("t_start_ms")]
    origin = min(starts) if starts else None
    for r in rows:
        lo, hi = float(r.get("t_start_ms") or 0), float(r.get("t_end_ms") or 0)
        if hi and origin is not None:
            r["gap_s"] = round(longest_pause(ends, lo, hi, origin) / 1000, 3)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def write_rows(rows: Sequence[StepRow], path: str | os.PathLike[str]) -> None:
    """Write the CSV atomically (a failed run leaves no half-written file)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    os.replace(tmp, p)


def live_run(flows: Mapping[str, Dataflow], ops: Sequence[Op], spec: RunSpec, *,
             progress: Callable[[str], None] | None = _progress,
             resume: JournalState | None = None) -> list[StepRow]:
    """Set up a session, bus and CPU meter, replay ``ops`` live (:func:`run_trace`), tear down.

    The one entry point of ``reuse run`` and the notebooks. Everything the run is configured
    with is ``spec`` (:class:`~reuse.runtime.spec.RunSpec`, checked when it was built: a bad
    value or combination never reaches here); what is checked here needs the outside world
    (the broker answering, the run directory free, the cluster's workers). ``spec.root``
    ``None``: a new temporary directory.

    On the shared query the run is journaled in its root (:mod:`reuse.runtime.journal`), so a
    run whose process died can be finished by :func:`resume_run` (``resume``: its journal); a
    new run refuses a root that already holds one. ``replicas="apps"`` runs K+1 engine
    instances, each its own driver and Spark application, following one journal (issue 24,
    :func:`reuse.runtime.apps.runs.apps_run`). A SparkSession that is already active
    (tests share one) is used and left running; one started here is stopped here (with
    ``ui`` its web UI is on and its address printed), and so is a Redis broker started for
    ``bus="redis"``.
    """
    from pyspark.sql import SparkSession

    from reuse.runtime import SparkRuntimeError
    from reuse.runtime.session import get_session, stop_session

    if spec.root is None:
        spec = replace(spec, root=Path(tempfile.mkdtemp(prefix="reuse-run-")))
    root = Path(spec.root)  # type: ignore[arg-type]  # set just above
    if resume is not None:
        spec.check_resumable()
    if spec.broker_fed:
        check_broker(spec.source, root)
    if spec.replicated_apps:
        return _apps_run(flows, ops, spec, progress)
    if resume is None and (root / JOURNAL).exists():
        raise SparkRuntimeError("already holds a run (journal.jsonl): resume it with "
                                "--resume, or choose a new --root", file=str(root))
    meter = CpuMeter()
    broker, bus_obj = _start_bus(spec, meter)
    try:
        if spec.master.startswith("spark://"):
            from reuse.runtime.cluster import DEFAULT_DIR, pids

            meter.add_roots(pids(spec.cluster_dir or DEFAULT_DIR).values())
        owned = SparkSession.getActiveSession() is None
        joins = client(spec.master, spec.cluster_dir)
        spark = get_session(spec.master, ui=spec.ui, host=joins.host,
                            properties=joins.properties)
        if spec.ui and progress:
            progress(f"Spark UI: {spark.sparkContext.uiWebUrl}")
        try:
            rt = _engine(spark, spec, bus_obj, resume)
            journal, params = _journal_of(rt, spec, flows, ops, resume, meter)
            try:
                return run_trace(rt, flows, ops, step_seconds=spec.step_seconds, meter=meter,
                                 check=spec.check, defrag_every=spec.defrag_every,
                                 warmup_s=spec.warmup_s, progress=progress, journal=journal,
                                 journal_params=params, resumed=resume, stall_s=spec.stall_s)
            finally:
                rt.close()
        finally:
            if owned:
                stop_session(spark)
    finally:
        if broker is not None:
            broker.stop()


def check_broker(source: str, root: Path) -> None:
    """A broker that accepts no connection is a one-line error before any JVM starts; its
    password is kept under the run root for a resume (the journal holds the URL masked):
    ``reuse run --resume`` and ``reuse.live.Engine.resume`` read it back."""
    from reuse.runtime.dataplane.mqtt import parse_broker_url

    url = parse_broker_url(source)
    _reachable(url)
    if url.password is not None:
        from reuse.runtime.common.run_secrets import keep_secret

        keep_secret(root, "broker", url.password)


def _journal_of(rt: Engine, spec: RunSpec, flows: Mapping[str, Dataflow], ops: Sequence[Op],
                resume: JournalState | None, meter: CpuMeter,
                ) -> tuple[RunJournal | None, dict[str, object]]:
    """The shared query's run journal and its start record (the spec as resolved by the
    engine: shards, batch bound, data), with a resumed engine rebuilt from the dead driver's
    journal first; the query-per-DAG engine keeps none. A broker input's processes join the
    CPU meter."""
    if not isinstance(rt, InplaceRuntime):
        return None, {}
    if rt.broker is not None:
        meter.add_roots(rt.broker.pids)
    if resume is not None:
        rt.replay(resume.enacted, flows, start_seq=int(resume.start["start_seq"]))
    resolved = spec.resolved(shards=rt.shards, max_events=rt.max_events, data_dir=rt.data_dir)
    return RunJournal(Path(rt.root)), {"flows": [f.to_dict() for f in flows.values()],
                                       "ops": [[o.op, o.dag] for o in ops],
                                       **resolved.to_journal()}


def _start_bus(spec: RunSpec, meter: CpuMeter) -> tuple[RedisBroker | None, Bus | None]:
    """The query-per-DAG engine's bus (and the Redis it runs on, measured by ``meter``); the
    shared query has none: every task runs inside it."""
    if spec.engine == "inplace":
        return None, None
    if spec.bus == "redis":
        from reuse.runtime.common.run_secrets import run_secret
        from reuse.runtime.dataplane.redis_bus import start_redis

        root = Path(spec.root)  # type: ignore[arg-type]
        broker = start_redis(root / "redis", password=run_secret(root, "redis"))
        meter.add_roots([broker.pid])
        return broker, broker.bus()
    from reuse.runtime.dataplane.bus import FileBus

    return None, FileBus(Path(spec.root))  # type: ignore[arg-type]


def _engine(spark: SparkSession, spec: RunSpec, bus: Bus | None,
            resume: JournalState | None) -> Engine:
    """The engine ``spec`` names; a resumed one keeps its dead driver's ``t0``."""
    if spec.engine == "inplace":
        return InplaceRuntime(spark, spec,
                              t0_ms=None if resume is None else int(resume.start["t0"]),
                              resumed=resume is not None)
    return Runtime(spark, spec, bus=bus)


def _apps_run(flows: Mapping[str, Dataflow], ops: Sequence[Op], spec: RunSpec,
              progress: Callable[[str], None] | None) -> list[StepRow]:
    """``--replicas apps``: count the cluster's workers and hand over to the coordinator, which
    checks there are K+1 of them before anything starts (the spec refused the rest)."""
    from reuse.runtime.apps.runs import apps_run, cluster_workers

    return apps_run(flows, ops, spec, workers=cluster_workers(spec), progress=progress)


def _reachable(broker: BrokerUrl) -> None:
    """Raise the one-line :class:`~reuse.runtime.dataplane.mqtt.MqttError` of a broker that
    accepts no connection (checked before a Spark session is started for nothing)."""
    import socket

    from reuse.runtime.dataplane.mqtt import connect_error

    try:
        socket.create_connection((broker.host, broker.port), timeout=5).close()
    except OSError as exc:
        raise connect_error(broker, exc) from None


def resume_run(root: str | os.PathLike[str], *, ui: bool = False,
               cluster_dir: str | os.PathLike[str] | None = None,
               progress: Callable[[str], None] | None = _progress) -> list[StepRow]:
    """Finish a shared-query run whose driver died (``reuse run --resume RUN_DIR``): the rows
    of the whole trace, those written before the death included.

    Everything comes from the run directory: the journal (the dataflows, the trace, the
    parameters, the operations enacted and their cuts, the rows written) and the shared
    query's checkpoint. The step the driver died in is measured again from the resume and
    counts one failure; ``gap_s`` shows the output pause the death caused. A run across
    applications (``--replicas apps``: its folder holds ``apps.json``) is resumed by its
    coordinator's side (:func:`reuse.runtime.apps.runs.resume_apps`), which adopts the
    instances that outlived the dead coordinator.
    """
    from reuse.core.dataflow import parse_dataflow
    from reuse.core.traces import Op
    from reuse.runtime.journal import load_journal

    if (Path(root) / "apps.json").exists():
        from reuse.runtime.apps.runs import resume_apps

        return resume_apps(root, progress=progress)
    state = load_journal(Path(root))
    p = state.start
    journal = str(Path(root) / JOURNAL)
    spec = replace(RunSpec.from_journal(p, file=journal), ui=ui,
                   cluster_dir=None if cluster_dir is None else Path(cluster_dir))
    try:
        flows = {f.id: f for f in (parse_dataflow(d) for d in p["flows"])}
        ops = [Op(o, d) for o, d in p["ops"]]
    except (KeyError, TypeError, ValueError) as exc:
        from reuse.core.errors import StateError

        raise StateError(f"start record is incomplete ({type(exc).__name__}: {exc})",
                         file=journal) from None
    return live_run(flows, ops, spec, progress=progress, resume=state)

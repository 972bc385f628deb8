"""The live engine: one Python object a notebook, the CLI or a script drives (issue 23).

::

    from reuse.live import Engine
    eng = Engine(master="local[2]", source="mqtt://127.0.0.1:1883")  # or source="replay"
    eng.submit(flow)          # a Dataflow, a dataflow JSON file, or a dict
    eng.remove("D3")
    eng.metrics()             # per task: events/s, cores, CPU share, users, shard; latency
    eng.outputs("D3", n=10)   # its sinks' latest outputs
    eng.view()                # the visualizer, bound to this engine
    eng.stop()                # nothing left running

It wraps the shared-query engine (:class:`~reuse.runtime.engines.shared.engine.InplaceRuntime`,
the one the batch uses) with what interactive use needs:

- **Safe from a notebook while batches run.** A background thread polls the engine (failure
  recovery, rebalancing) every ``poll_s``; every call takes the same lock, so a submit never
  interleaves with a poll. A failure the engine cannot recover from (or a stalled broker input)
  does not kill the kernel: it is kept in :attr:`Engine.errors` and shown by the view, and the
  next call raises it.
- **Bad input changes nothing.** A dataflow that does not parse, or is already submitted, is a
  one-line :class:`~reuse.core.errors.ReuseError` naming the file or dataflow, raised before the
  engine is touched (the planner refuses before it changes state).
- **Outputs are kept whole.** Sinks record the full output events (``record="full"``), so
  :meth:`Engine.outputs` can show them, not only digests.
- **stop leaves nothing running**: the polling thread, the streaming query, the broker ingest
  and its Redis, and the Spark session when this engine started it.
- **A dead engine is resumed, not lost** (issue 32). Every operation is journaled in the run
  directory before the deployment changes (``journal.jsonl``, :mod:`reuse.runtime.journal`:
  the resolved settings, then each submit with its dataflow and each remove, at its cut), and
  the shared query checkpoints there. When the process that drove it dies (a notebook kernel
  killed, a machine restarted), :meth:`Engine.resume` on the same directory re-enacts the
  operations at their recorded cuts and restarts the query from its checkpoint: every
  dataflow's outputs go on exactly once (what a broker published meanwhile waits in its
  persistent session). A new engine refuses a directory that holds a journal.

:meth:`Engine.run_trace` runs a prepared trace on this engine with the batch's trace runner
(:func:`reuse.runtime.run.run_trace`, per-step rows). ``reuse run`` and the batch's
``live_run`` still build the shared-query engine themselves rather than an ``Engine``: the
package's layers put ``reuse.live`` (with its view) above ``reuse.runtime``, and the runtime
may not import upward. Both drive the same engine class with the same trace runner.
"""

from __future__ import annotations

import inspect
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from reuse.core.dataflow import Dataflow, load_dataflow, parse_dataflow
from reuse.core.errors import ReuseError
from reuse.core.traces import Op
from reuse.live.metrics import (
    cores_series,
    first_records,
    latency,
    recent_records,
    task_table,
)
from reuse.runtime.common.files import read_batches
from reuse.runtime.common.sink_history import current_sinks, sink_segments
from reuse.runtime.engines.contract import RemoveResult, SubmitResult
from reuse.runtime.journal import JOURNAL, JournalState, RunJournal, load_journal
from reuse.runtime.rows import StepRow
from reuse.runtime.spec import Record, RunSpec

if TYPE_CHECKING:
    from reuse.live.view import LiveView

__all__ = ["Engine", "as_dataflow"]


def as_dataflow(flow: Dataflow | str | Path | Mapping[str, Any]) -> Dataflow:
    """A dataflow from what a user has: a :class:`Dataflow`, a JSON file's path, or a dict.

    Raises
    ------
    ReuseError
        A file that is missing or not JSON, or a dataflow that does not check (the error names
        the file, dataflow and task).
    """
    if isinstance(flow, Dataflow):
        return flow
    if isinstance(flow, (str, Path)):
        path = Path(flow)
        if not path.exists():
            raise ReuseError("no such dataflow file", file=str(path))
        return load_dataflow(path)  # its errors name the file (not JSON, too deep, ...)
    if isinstance(flow, Mapping):
        return parse_dataflow(dict(flow))
    raise ReuseError(f"cannot submit a {type(flow).__name__}: give a Dataflow, a JSON file "
                     "or a dict")


def init_signature(cls: type) -> inspect.Signature:
    """``cls``'s ``__init__`` signature without ``self``: what ``help`` and a notebook's
    completion show for ``cls(...)``, which ``Engine.__new__``'s ``*args, **kwargs`` (the
    dispatch on ``replicas``) would hide."""
    sig = inspect.signature(cls.__init__)  # type: ignore[misc]
    return sig.replace(parameters=list(sig.parameters.values())[1:])


def _warm_workers(spark: Any, shards: int) -> None:
    """Start the shards' Python workers (pandas, pyarrow, the task code and Redis client
    imported) with one tiny job, so a user's first submit does not wait for a cold worker:
    Spark reuses the workers, and without this the first outputs came 10-20 s after the first
    submit instead of within two triggers."""

    def touch(frames: Any) -> Any:
        import reuse.runtime.dataplane.broker_feed  # noqa: F401 - imported to warm the worker
        import reuse.runtime.engines.shared.shard  # noqa: F401
        import reuse.tasks  # noqa: F401

        yield from frames

    n = max(1, int(shards))
    spark.range(n).repartition(n).mapInPandas(touch, "id long").collect()


class Engine:
    """A running shared-query engine you submit to and remove from, live.

    Parameters
    ----------
    master
        Spark master (``local[2]``, or ``spark://host:port``); an active session is used as is.
    source
        ``"replay"`` (generated RIoTBench replay, paced at ``rate``) or ``"mqtt://host:port"``
        (what a publisher sends, see ``reuse publish``).
    mode
        ``"reuse"`` or ``"default"``.
    match
        What Reuse merges by: ``"exact"`` or ``"semantic"`` (issue 25: canonical configs,
        order-free inputs, a narrower filter or window reading a running wider one); the view
        draws residual tasks dashed.
    root
        Run directory (default: a new temporary one).
    rate, trigger_s, shards, data_dir
        As for :class:`~reuse.runtime.engines.shared.engine.InplaceRuntime` (``rate``: events/s
        per source of the replay; a broker-fed engine does not use it: each batch claims what
        has arrived, at whatever rate the publishers send).
    poll_s
        How often the background thread polls the engine and samples its CPU (0: no thread,
        the caller polls, as :meth:`run_trace` does).
    workload
        The dataflows the view's picker offers (a registry name; ``None``: none).
    record
        What sinks record: ``"full"`` (whole output events, for :meth:`outputs`) or
        ``"digest"`` (``seq`` and digest only, as the batch's runs, cheaper).
    ui
        Start Spark's web UI (its address is ``eng.spark.sparkContext.uiWebUrl``).
    catch_up
        Return only once the new query has caught up with its sources (see
        :meth:`_catch_up`).
    k_safe, replicate_min_users, split, stall_s
        As ``reuse run``'s ``--k-safe``, ``--replicate-min-users``, ``--split`` and
        ``--stall-timeout``.
    columnar
        The shards run the tasks a batch at a time on columns (the default); ``False`` is
        ``reuse run --per-event``. All the settings are checked together, once, as a
        :class:`~reuse.runtime.spec.RunSpec` (``eng.spec``), before any JVM starts.
    replicas
        ``"shards"`` (replicas of shared tasks inside this application, with ``k_safe``) or
        ``"apps"``: K+1 applications, each its own driver, following one journal, as
        ``reuse run --replicas apps``; ``Engine(...)`` then builds a
        :class:`~reuse.live.apps.AppsEngine` (its differences are in its module).
    """

    #: the ``replicas`` this class runs; ``Engine(replicas=...)`` builds the subclass that
    #: runs it (``reuse.live`` imports them all: :class:`~reuse.live.apps.AppsEngine`)
    replicas_kind: ClassVar[str] = "shards"

    def __new__(cls, *args: Any, **kwargs: Any) -> Engine:
        want = kwargs.get("replicas", "shards")
        if cls is Engine and want != cls.replicas_kind:
            for sub in Engine.__subclasses__():
                if sub.replicas_kind == want:
                    return super().__new__(sub)
        return super().__new__(cls)

    def __init__(self, master: str = "local[2]", source: str = "replay", *,
                 mode: str = "reuse", root: str | Path | None = None, rate: float = 10.0,
                 trigger_s: float = 2.0, shards: int | None = None,
                 data_dir: str | Path | None = None, poll_s: float = 0.5,
                 workload: str | None = "riot", record: Record = "full", ui: bool = False,
                 catch_up: bool = True, match: str = "exact", k_safe: int = 0,
                 replicate_min_users: int = 2, split: bool = False,
                 stall_s: float = 60.0, columnar: bool = True,
                 replicas: str = "shards") -> None:
        if replicas != self.replicas_kind:  # a subclass's (__new__); else a one-line error
            RunSpec.of(replicas=replicas, k_safe=k_safe)  # type: ignore[arg-type]
            raise ReuseError(f"Engine has no replicas={replicas!r}")
        run_root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="reuse-live-"))
        # the one configuration of the engine, checked before any JVM starts
        spec = RunSpec.of(mode=mode, master=master, source=source, root=run_root,
                          rate=rate, trigger_s=trigger_s, shards=shards,
                          data_dir=None if data_dir is None else Path(data_dir),
                          record=record, match=match, ui=ui, k_safe=k_safe,
                          replicate_min_users=replicate_min_users, split=split,
                          stall_s=stall_s, columnar=columnar)
        if (run_root / JOURNAL).exists():
            raise ReuseError("already holds a run (journal.jsonl): resume it with "
                             "Engine.resume(root), or choose a new root", file=str(run_root))
        if spec.broker_fed:  # answering, before any JVM; its password kept for a resume
            from reuse.runtime.run import check_broker

            check_broker(spec.source, run_root)
        self._open(spec, poll_s=poll_s, workload=workload, catch_up=catch_up, resume=None)

    @classmethod
    def resume(cls, root: str | Path, *, master: str | None = None, poll_s: float = 0.5,
               workload: str | None = "riot", ui: bool = False,
               catch_up: bool = True) -> Engine:
        """The engine of a run directory whose driver died, running again: the settings it was
        started with, its dataflows at their journaled cuts, its query from its checkpoint.
        ``master``: another Spark master than the journal's (``None``: the same). A directory
        of a live engine across applications (it holds ``apps.json``) is resumed by
        :meth:`reuse.live.apps.AppsEngine.resume`.

        Raises
        ------
        ReuseError
            A directory with no journal, one that holds a ``reuse run`` trace (finish that
            with ``reuse run --resume``), or a damaged journal: one line naming the file,
            before anything starts.
        """
        if cls is Engine and (Path(root) / "apps.json").exists():  # across applications
            sub = next(s for s in Engine.__subclasses__() if s.replicas_kind == "apps")
            return sub.resume(root, master=master, poll_s=poll_s, workload=workload, ui=ui,
                              catch_up=catch_up)
        state = load_journal(root)
        file = str(Path(root) / JOURNAL)
        if "ops" in state.start:
            raise ReuseError("holds a reuse run's trace, not a live engine's: finish it with "
                             "reuse run --resume", file=file)
        spec = RunSpec.from_journal(state.start, file=file)
        spec = replace(spec, ui=ui, master=spec.master if master is None else master)
        spec.check_resumable()
        eng = cls.__new__(cls)
        eng._open(spec, poll_s=poll_s, workload=workload, catch_up=catch_up, resume=state)
        return eng

    def _open(self, spec: RunSpec, *, poll_s: float, workload: str | None, catch_up: bool,
              resume: JournalState | None) -> None:
        """Start the engine ``spec`` describes: fresh (its query from the sources' next
        ``seq``, a new journal), or a dead one's (``resume``: its operations re-enacted at
        their cuts, its query from its checkpoint, its journal continued)."""
        from pyspark.sql import SparkSession

        from reuse.runtime.cluster import client
        from reuse.runtime.engines.shared.engine import InplaceRuntime
        from reuse.runtime.measure import CpuMeter
        from reuse.runtime.session import get_session

        self.spec = spec
        self.root = Path(spec.root)  # type: ignore[arg-type]  # always set by the callers
        self.workload = workload
        self.poll_s = poll_s
        self._owned = SparkSession.getActiveSession() is None
        joins = client(spec.master)  # the default cluster folder's, if it runs that master
        self.spark = get_session(spec.master, ui=spec.ui, host=joins.host,
                                 properties=joins.properties)
        self.lock = threading.RLock()
        self.flows: dict[str, Dataflow] = {}
        self.ops: list[Op] = []
        self.errors: list[str] = []
        self.submitted_ms: dict[str, float] = {}  # dataflow -> when submit returned
        # (dataflow, its submit time) -> seconds to its first output: found once, never changes
        self._first_output: dict[tuple[str, float], float] = {}
        self._cpu: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._paused = threading.Event()  # run_trace polls itself
        self._thread: threading.Thread | None = None
        self._known: dict[str, Dataflow] = {}  # every dataflow handed in (journaled on submit)
        self.meter = CpuMeter()
        try:
            self.runtime = InplaceRuntime(
                self.spark, self.spec, resumed=resume is not None,
                t0_ms=None if resume is None else int(resume.start["t0"]))
        except BaseException:
            self._stop_session()
            raise
        try:
            if self.runtime.broker is not None:
                self.meter.add_roots(self.runtime.broker.pids)
            _warm_workers(self.spark, self.runtime.shards)
            self._journal = RunJournal(self.root)
            if resume is None:
                self.runtime.start_sources([])
                rt = self.runtime
                self._journal.start({**self.spec.resolved(
                    shards=rt.shards, max_events=rt.max_events, data_dir=rt.data_dir,
                ).to_journal(), "t0": rt.t0, "start_seq": rt.start_seq, "front": "live"})
                self._step = 0
            else:
                self._replay(resume)
            self.runtime.on_op = self._journaled  # write-ahead, under the engine's lock
            if catch_up:
                self._catch_up()
            self.meter.start()
        except BaseException:
            self.runtime.close()
            self._stop_session()
            raise
        if poll_s > 0:
            self._thread = threading.Thread(target=self._loop, name="reuse-live-poll",
                                            daemon=True)
            self._thread.start()

    def _replay(self, state: JournalState) -> None:
        """Re-enact a dead engine's journaled operations at their cuts and start its query
        from the checkpoint; what it knew (dataflows, operations, submit times) comes back."""
        flows = state.flows
        self.runtime.replay(state.enacted, flows, start_seq=int(state.start["start_seq"]))
        self._step = state.next_step - 1
        self._known.update(flows)
        for o in state.ops:
            dag = str(o["dag"])
            self.ops.append(Op(str(o["op"]), dag))
            if o["op"] == "submit":
                self.flows[dag] = flows[dag]
                if o.get("t_ms") is not None:
                    self.submitted_ms[dag] = float(o["t_ms"])

    def _journaled(self, op: str, dag: str, cut: int) -> None:
        """The engine's ``on_op``: journal an operation the planner accepted, before the
        deployment changes (a submit with its dataflow, so a resume can enact it again)."""
        self._step += 1
        flow = self._known[dag].to_dict() if op == "submit" else None
        self._journal.op(self._step, op, dag, cut, self.runtime.bound() + 1,
                         t_ms=round(time.time() * 1000), flow=flow)

    def _catch_up(self, timeout_s: float = 120.0) -> None:
        """Return once the new query has run a few batches and is within a trigger of the
        sources: a fresh query's first batches are slow (planning) and then work off what
        arrived meanwhile, and a submit before that would wait for them."""
        rt = self.runtime
        deadline = time.time() + timeout_s
        while True:
            rt.poll()
            h = rt.handler
            if (h is not None and h.batches >= 3  # within a trigger of what has arrived
                    and rt.qhw() >= rt.bound() - max(1.0, rt.arrival_rate()) * rt.trigger_s):
                return
            if time.time() > deadline:
                raise ReuseError(f"the engine's query did not catch up with its sources in "
                                 f"{timeout_s:g} s")
            time.sleep(0.1)

    # --- the background poll -------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_s):
            self._cpu.append((time.time(), float(self.meter.total())))
            del self._cpu[:-600]  # the last few minutes
            if self._paused.is_set():
                continue
            try:
                with self.lock:
                    self.runtime.poll()
            except Exception as exc:  # noqa: BLE001 - kept for the view and the next call
                msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                if not self.errors or self.errors[-1] != msg:
                    self.errors.append(msg)

    def _check(self) -> None:
        if self._stop.is_set():
            raise ReuseError("the engine is stopped")
        if self.errors:
            raise ReuseError(f"the engine failed: {self.errors[-1]}")

    # --- operations ----------------------------------------------------------------------------

    def submit(self, flow: Dataflow | str | Path | Mapping[str, Any]) -> SubmitResult:
        """Merge a dataflow into what runs (Reuse) or deploy it alone (Default); its first
        events are those of the next batch. Returns the engine's answer: join point ``J``,
        tasks started, tasks reused, sinks."""
        dn = as_dataflow(flow)
        with self.lock:
            self._check()
            if dn.id in self.runtime.planner.instances:
                raise ReuseError("is already submitted", dag=dn.id)
            self._known[dn.id] = dn
            info = self.runtime.submit(dn)
            self.submitted_ms[dn.id] = time.time() * 1000
            self.flows[dn.id] = dn
            self.ops.append(Op("submit", dn.id))
        return info

    def remove(self, dag_id: str) -> RemoveResult:
        """Unmerge a dataflow: stop what no other dataflow still needs, at the next cut."""
        with self.lock:
            self._check()
            if dag_id not in self.runtime.planner.instances:
                raise ReuseError("is not submitted", dag=dag_id)
            info = self.runtime.remove(dag_id)
            self.ops.append(Op("remove", dag_id))
        return info

    @property
    def running(self) -> bool:
        """Not stopped yet."""
        return not self._stop.is_set()

    @property
    def submitted(self) -> list[str]:
        """The dataflows running now, in submission order."""
        return list(self.runtime.planner.instances)

    # --- what runs -----------------------------------------------------------------------------

    def users(self) -> dict[str, tuple[str, ...]]:
        """Live runtime task -> the submitted dataflows it serves."""
        with self.lock:
            out: dict[str, set[str]] = {}
            for info in self.runtime.dags.values():
                if info["R"] is not None:
                    continue
                for t in self._closure(info):
                    out.setdefault(t, set()).add(info["dag"])
            return {t: tuple(sorted(u)) for t, u in out.items()}

    def _closure(self, info: Mapping[str, Any]) -> set[str]:
        """A live dataflow's runtime tasks: its sinks and their ancestors (after a re-plan,
        issue 36, the sink tasks that compute it now)."""
        tasks = self.runtime.tasks
        seen: set[str] = set()
        todo = list(current_sinks(info).values())
        while todo:
            t = todo.pop()
            if t in seen or t not in tasks:
                continue
            seen.add(t)
            todo.extend(tasks[t]["parents"])
        return seen

    def metrics(self, window_s: float = 10.0) -> dict[str, Any]:
        """What runs now: ``tasks`` (a pandas DataFrame, a row per live task: type, shard,
        users, reuse, events/s, cores, CPU share, bill per user), ``dataflows`` (per submitted
        dataflow: join point, tasks, output latency p50/p99), ``cores`` (cores over time,
        measured from the processes), ``counts`` (running tasks, queries), ``malformed`` (per
        broker topic) and ``errors``."""
        import pandas as pd

        with self.lock:
            live = {t.id: {"type": t.type, "kind": t.kind, "shard": t.shard}
                    for t in self.runtime.deployment.tasks.values()
                    if t.end is None and t.replica_of is None}
            dags = {i["dag"]: i.copy() for i in self.runtime.dags.values() if i["R"] is None}
            counts = self.runtime.counts()
            broker = self.runtime.broker
        users = self.users()
        rows = task_table(read_batches(self.root), live, users, now_ms=time.time() * 1000,
                          window_s=window_s)
        flows = []
        for dag, info in dags.items():
            recs = [r for rid in current_sinks(info).values()
                    for r in recent_records(self.root / "sinks", rid)]
            flows.append({"dag": dag, "J": info["J"], "tasks": len(self._closure(info)),
                          "started": len(info["tasks"]), "reused": len(info["reused"]),
                          "first_output_s": self.first_output_s(dag),
                          "last_seq": max((int(r["q"]) for r in recs), default=None),
                          **latency(recs)})
        cores = cores_series(list(self._cpu))
        return {"tasks": pd.DataFrame(rows), "dataflows": pd.DataFrame(flows),
                "cores": pd.DataFrame(cores, columns=["t", "cores"]), "counts": counts,
                "malformed": ({t: c.malformed for t, c in broker.counts().items()}
                              if broker is not None else {}),
                "errors": list(self.errors)}

    def first_output_s(self, dag_id: str) -> float | None:
        """Seconds from the dataflow's submit to its first output (``None``: none yet)."""
        with self.lock:
            info = next((i for i in self.runtime.dags.values() if i["dag"] == dag_id), None)
            t_sub = self.submitted_ms.get(dag_id)
        if info is None or t_sub is None:
            return None
        if (dag_id, t_sub) in self._first_output:  # the view asks once per trigger
            return self._first_output[(dag_id, t_sub)]
        first = [float(r["o"]) for rid in info["sinks"].values()
                 for r in first_records(self.root / "sinks", rid, int(info["J"]))]
        if not first:
            return None
        self._first_output[(dag_id, t_sub)] = out = round((min(first) - t_sub) / 1000, 3)
        return out

    def outputs(self, dag_id: str, n: int = 10) -> list[dict[str, Any]]:
        """The last ``n`` outputs of a dataflow's sinks: ``sink``, ``seq``, ``latency_ms`` and
        the output ``event``."""
        with self.lock:
            info = next((i for i in self.runtime.dags.values() if i["dag"] == dag_id), None)
        if info is None:
            raise ReuseError("was never submitted", dag=dag_id)
        out = []
        for sink, rid, lo, hi in [(s, *seg) for s, segs in sink_segments(info).items()
                                  for seg in segs]:  # after a re-plan, each over its sub-window
            for r in recent_records(self.root / "sinks", rid):
                if not (lo <= r["q"] and (hi is None or r["q"] < hi)):
                    continue
                out.append({"sink": sink, "seq": r["q"],
                            "latency_ms": (None if r.get("ts") is None
                                           else round(float(r["o"]) - float(r["ts"]), 1)),
                            "event": r.get("e")})
        out.sort(key=lambda r: (r["seq"], r["sink"]))
        return out[-n:] if n > 0 else []

    def view(self, **kwargs: Any) -> LiveView:
        """The visualizer bound to this engine (display it in a notebook)."""
        from reuse.live.view import LiveView

        return LiveView(self, **kwargs)

    def wait_outputs(self, dag_id: str, n: int = 1, timeout_s: float = 60.0) -> None:
        """Block until the dataflow has at least ``n`` outputs (a script's or a test's wait)."""
        deadline = time.time() + timeout_s
        while len(self.outputs(dag_id, n)) < n:
            self._check()
            if time.time() > deadline:
                raise ReuseError(f"no {n} outputs within {timeout_s:g} s", dag=dag_id)
            time.sleep(0.2)

    def run_trace(self, ops: Sequence[Op], flows: Mapping[str, Dataflow], *,
                  step_seconds: float = 10.0, check: bool = True,
                  **kwargs: Any) -> list[StepRow]:
        """Replay a prepared trace on this engine, one operation per ``step_seconds``, and
        return the per-step rows, as ``reuse run`` writes them (``kwargs`` go to
        :func:`reuse.runtime.run.run_trace`: warm-up, progress)."""
        from reuse.runtime.run import run_trace

        self._check()
        self._paused.set()  # run_trace polls the engine itself, from this thread
        self._known.update(flows)  # journaled as its steps enact them
        kwargs.setdefault("progress", None)
        try:
            rows = run_trace(self.runtime, flows, ops, step_seconds=step_seconds,
                             meter=self.meter, check=check, **kwargs)
        finally:
            self._paused.clear()
        with self.lock:  # what was enacted, in order
            self.flows.update(flows)
            self.ops = [Op(e["event"], e["dag"]) for e in self.runtime.log
                        if e["event"] in ("submit", "remove")]
        return rows

    # --- the end -------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop everything this engine started (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        with self.lock:
            if getattr(self, "runtime", None) is not None:
                self.runtime.close()
        self.meter.stop()
        self._stop_session()

    def _stop_session(self) -> None:
        if self._owned and self.spark is not None:
            from reuse.runtime.session import stop_session

            stop_session(self.spark)
            self._owned = False

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        from reuse.runtime.dataplane.mqtt import masked

        return (f"<Engine {self.runtime.mode} {masked(self.runtime.source)} root={self.root} "
                f"dataflows={self.submitted}>")


Engine.__signature__ = init_signature(Engine)  # type: ignore[attr-defined]

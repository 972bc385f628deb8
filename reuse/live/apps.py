"""The live engine across K+1 applications (issue 32): ``Engine(..., k_safe=K,
replicas="apps")``, the front for ``reuse run --k-safe K --replicas apps``.

Each of the K+1 instances is its own driver and Spark application, following one operation
journal in the run's Redis (:mod:`reuse.runtime.apps`); this object is their coordinator,
driven by calls instead of a trace. What differs from the one-application engine, and why:

- **A submit's dataflow travels with it.** A trace's run gives every instance every dataflow
  up front; a live engine learns them one call at a time, so each submit's dataflow is kept in
  the run's flow book under the operation's proposal key before the operation is proposed
  (:mod:`reuse.runtime.control.flows`), and every instance, a replacement too, reads it there.
- **Outputs are the consumers' streams**: each sink's records, de-duplicated across the
  copies, in the run's Redis (``seq``, digest and arrival; the events themselves stay in the
  instance that made them, so :meth:`AppsEngine.outputs` shows no ``event``).
- **A check needs every instance stopped at one cut.** The outputs are accounted against the
  reference execution once the instances have stopped below a common cut; so
  :meth:`AppsEngine.run_trace` (like ``reuse run``) ends with the run, checked, and
  :meth:`AppsEngine.stop` stops it unchecked. A dead instance is replaced while the engine
  runs (a background thread watches them every ``poll_s``), as in ``reuse run``.
- **A resume takes over the instances.** The process driving this engine is the run's
  coordinator; when it dies the instances run on, following the journal, and
  ``Engine.resume(root)`` (which hands a run directory holding ``apps.json`` to
  :meth:`AppsEngine.resume`) adopts the run's Redis and the live instances by PID, as
  ``reuse run --resume`` does for a trace's run (:func:`reuse.runtime.apps.runs.adopt_run`),
  and rebuilds its book-keeping by proposing every decided operation again under its own key
  (idempotent), each submit's dataflow read back from the flow book. The settings come from
  ``apps-live.json``, written once the instances are up.
- Not here: the view and per-task metrics (the tasks run in K+1 other processes; ``metrics``
  gives the counts and the instances).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, cast

from reuse.core.dataflow import Dataflow
from reuse.core.errors import ReuseError, StateError
from reuse.core.traces import Op
from reuse.live.engine import Engine, as_dataflow, init_signature
from reuse.runtime.engines.contract import RemoveResult, SubmitResult
from reuse.runtime.rows import StepRow
from reuse.runtime.spec import RunSpec

__all__ = ["AppsEngine"]


class AppsEngine(Engine):
    """:class:`~reuse.live.Engine` across K+1 applications (``replicas="apps"``; see the
    module docstring). Built by ``Engine(...)`` itself when ``replicas="apps"``."""

    replicas_kind: ClassVar[str] = "apps"

    def __init__(self, master: str = "local[2]", source: str = "replay", *,
                 mode: str = "reuse", root: str | Path | None = None, rate: float = 10.0,
                 trigger_s: float = 2.0, shards: int | None = None,
                 data_dir: str | Path | None = None, poll_s: float = 0.5,
                 workload: str | None = "riot", match: str = "exact", k_safe: int = 1,
                 replicate_min_users: int = 2, split: bool = False, stall_s: float = 60.0,
                 columnar: bool = True, replicas: str = "apps", catch_up: bool = True,
                 first_message_s: float = 30.0, **unused: Any) -> None:
        import tempfile
        from dataclasses import replace

        from reuse.runtime.apps.runs import LIVE_RECORD, cluster_workers, start_apps
        from reuse.runtime.common.files import write_json

        # catch_up: every instance has run a batch when start_apps returns, whatever it says
        if unused:  # the one-application engine's own settings (the view's record, ui...)
            raise ReuseError(f"Engine(replicas='apps') takes no {', '.join(sorted(unused))}")
        run_root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="reuse-live-"))
        self.spec = RunSpec.of(mode=mode, master=master, source=source, root=run_root,
                               rate=rate, trigger_s=trigger_s, shards=shards,
                               data_dir=None if data_dir is None else Path(data_dir),
                               match=match, k_safe=k_safe, replicas=replicas,  # type: ignore[arg-type]
                               replicate_min_users=replicate_min_users, split=split,
                               stall_s=stall_s, columnar=columnar,
                               first_message_s=first_message_s)
        self._setup(self.spec, run_root, workload)
        self.coord = start_apps(self._known, self.spec, workers=cluster_workers(self.spec))
        try:
            write_json(run_root / LIVE_RECORD, replace(
                self.spec, dead_s=self.coord.dead_s,
                data_dir=Path(str(self.coord.base.data_dir))).to_journal(), private=True)
        except BaseException:
            self.coord.close()
            raise
        self._start(poll_s)

    def _setup(self, spec: RunSpec, root: Path, workload: str | None) -> None:
        """The book-keeping a new engine and a resumed one start with."""
        self.spec, self.root, self.workload = spec, root, workload
        self.lock = threading.RLock()
        self.flows: dict[str, Dataflow] = {}
        self.ops: list[Op] = []
        self.errors: list[str] = []
        self.submitted_ms: dict[str, float] = {}
        self._stop = threading.Event()
        self._keys = 0  # proposals made by this engine (their keys: live-N, tN-step-M)
        self._traces = 0
        self._known: dict[str, Dataflow] = {}  # the coordinator's planner reads these
        self._streams: dict[str, list[str]] = {}  # dataflow -> its submissions' sink streams
        self.accounting: dict[str, Any] | None = None
        self._thread: threading.Thread | None = None

    def _start(self, poll_s: float, *, replay: bool = False) -> None:
        """The flow book, a resumed engine's replay (:meth:`_replay_journal`), and the thread that
        watches the instances (once ``self.coord``)."""
        from reuse.runtime.apps.coordinator import PATIENCE_S
        from reuse.runtime.apps.runs import RUN
        from reuse.runtime.control.flows import FlowBook

        self.poll_s = poll_s
        self.book = FlowBook(self.coord.base.redis, RUN, patience_s=PATIENCE_S)
        if replay:
            self._replay_journal()
        if poll_s > 0:
            self._thread = threading.Thread(target=self._loop, name="reuse-live-apps",
                                            daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        """Watch the instances (replace the dead) and read the streams, every ``poll_s``."""
        while not self._stop.wait(self.poll_s):
            try:
                with self.lock:
                    if not self.coord.stopping:
                        self.coord.hold(0)
            except Exception as exc:  # noqa: BLE001 - kept for the next call
                msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                if not self.errors or self.errors[-1] != msg:
                    self.errors.append(msg)

    def _propose(self, op: str, flow: Dataflow | None, dag: str, key: str) -> int:
        """Keep a submit's dataflow in the flow book, then propose the operation (lock held);
        a submit's sink streams are the ones the coordinator opened for it (a stream's name
        is not parsed back: a dataflow id may hold its ``@``)."""
        if flow is None:
            return self.coord.propose(op, dag, key=key)
        self.book.put(key, flow)
        self._known[dag] = flow
        before = set(self.coord.streams)
        cut = self.coord.propose(op, dag, key=key)
        self._streams.setdefault(dag, []).extend(sorted(self.coord.streams - before))
        return cut

    def submit(self, flow: Dataflow | str | Path | Mapping[str, Any]) -> SubmitResult:
        """Merge a dataflow into every instance at one cut (Reuse) or deploy it alone."""
        dn = as_dataflow(flow)
        with self.lock:
            self._check()
            if dn.id in self.coord.planner.instances:
                raise ReuseError("is already submitted", dag=dn.id)
            self._keys += 1
            t0 = time.time()
            cut = self._propose("submit", dn, dn.id, f"live-{self._keys}")
            self.submitted_ms[dn.id] = time.time() * 1000
            self.flows[dn.id] = dn
            self.ops.append(Op("submit", dn.id))
        return {"dag": dn.id, "J": cut, "started": [], "reused": [], "sinks": {},
                "seconds": time.time() - t0}

    def remove(self, dag_id: str) -> RemoveResult:
        """Unmerge a dataflow from every instance at one cut."""
        with self.lock:
            self._check()
            if dag_id not in self.coord.planner.instances:
                raise ReuseError("is not submitted", dag=dag_id)
            self._keys += 1
            t0 = time.time()
            cut = self._propose("remove", None, dag_id, f"live-{self._keys}")
            self.ops.append(Op("remove", dag_id))
        return {"dag": dag_id, "R": cut, "stop": [], "started": [], "replanned": {},
                "seconds": time.time() - t0}

    @property
    def submitted(self) -> list[str]:
        return list(self.coord.planner.instances)

    def metrics(self, window_s: float = 10.0) -> dict[str, Any]:
        """What runs now: ``counts`` (running tasks, the copies the replicas run),
        ``instances`` (id, PID, state, home) and ``errors``."""
        with self.lock:
            return {"counts": self.coord.counts(),
                    "instances": [{"id": c.spec.id, "pid": c.pid, "state": c.state,
                                   "home": c.spec.home} for c in self.coord.children.values()],
                    "errors": list(self.errors)}

    def first_output_s(self, dag_id: str) -> float | None:
        recs = self._records(dag_id)
        t_sub = self.submitted_ms.get(dag_id)
        if not recs or t_sub is None:
            return None
        return round((min(ms for _, _, ms, _, _ in recs) - t_sub) / 1000, 3)

    def _records(self, dag_id: str) -> list[tuple[int, str, int, int | None, str]]:
        with self.lock:
            self.coord.consumer.read(sorted(self.coord.streams))
            records = self.coord.consumer.records
            return [r for s in self._streams.get(dag_id, []) for r in records.get(s, [])]

    def outputs(self, dag_id: str, n: int = 10) -> list[dict[str, Any]]:
        """The last ``n`` records of a dataflow's sink streams, as consumers read them:
        ``seq``, digest, ``latency_ms`` (arrival minus emit); no ``event`` (module
        docstring)."""
        if dag_id not in self.flows:
            raise ReuseError("was never submitted", dag=dag_id)
        recs = sorted(self._records(dag_id))
        out: list[dict[str, Any]] = [
            {"seq": q, "digest": d, "event": None,
             "latency_ms": None if ts is None else float(ms - ts)} for q, d, ms, ts, _ in recs]
        return out[-n:] if n > 0 else []

    def view(self, **kwargs: Any) -> Any:
        raise ReuseError("the view draws one application's tasks: not across applications")

    def users(self) -> dict[str, tuple[str, ...]]:
        raise ReuseError("a task's users are known inside each instance: not across "
                         "applications (metrics() gives the counts)")

    @classmethod
    def resume(cls, root: str | Path, *, master: str | None = None, poll_s: float = 0.5,
               workload: str | None = "riot", ui: bool = False,
               catch_up: bool = True) -> Engine:
        """The engine of a run across applications whose driving process (its coordinator)
        died, driving its instances again (see the module docstring). ``master`` must be
        ``None`` (the instances keep theirs); ``ui`` and ``catch_up`` do not apply (no view;
        the instances never stopped).

        Raises
        ------
        ReuseError
            A directory that holds no such engine (its records, or one of them unreadable),
            a trace's run across applications (finish it with ``reuse run --resume``), or a
            journaled submit whose dataflow the flow book lacks: one line naming the file.
        """
        from reuse.runtime.apps.runs import (
            BASE_SPEC,
            LIVE_RECORD,
            RUN_RECORD,
            adopt_run,
            read_record,
        )

        where = Path(root).resolve()
        if master is not None:
            raise ReuseError("an engine across applications resumes on its instances' "
                             f"master, not {master}", file=str(where))
        if (where / RUN_RECORD).exists():
            raise StateError("holds a reuse run's trace across applications, not a live "
                             "engine's: finish it with reuse run --resume", file=str(where))
        rec, apps, base_d = (read_record(p) for p in (where / LIVE_RECORD, where / "apps.json",
                                                      where / "apps" / BASE_SPEC))
        if not isinstance(rec, dict) or not isinstance(apps, dict) or not isinstance(base_d,
                                                                                      dict):
            raise StateError(f"holds no live engine across applications ({LIVE_RECORD}, "
                             f"apps.json and apps/{BASE_SPEC})", file=str(where))
        spec = RunSpec.from_journal(rec, file=str(where / LIVE_RECORD))
        eng = cast(AppsEngine, cls.__new__(cls))
        eng._setup(spec, where, workload)
        eng.coord = adopt_run(where, spec, apps, base_d, eng._known, None)
        try:
            eng._start(poll_s, replay=True)
        except BaseException:
            eng.coord.close()
            raise
        return eng

    def _replay_journal(self) -> None:
        """Propose every decided submit and remove again under its key (the journal keeps
        its cut), so the coordinator's planner, the streams and this engine's calls are as
        before the death; new keys continue after the dead engine's."""
        import re

        for o in self.coord.oplog.ops():
            if o.op not in ("submit", "remove"):
                continue  # an instance's join, the stop
            flow = self.book.get(o.key) if o.op == "submit" else None
            if o.op == "submit" and flow is None:
                raise StateError(f"the submit of {o.dag} ({o.key}) has no dataflow in the "
                                 "run's flow book", file=str(self.root / "apps.json"))
            self._propose(o.op, flow, o.dag, o.key)
            self.ops.append(Op(o.op, o.dag))
            if flow is not None:
                self.flows[o.dag] = flow
            if m := re.fullmatch(r"live-(\d+)", o.key):
                self._keys = max(self._keys, int(m[1]))
            elif m := re.fullmatch(r"t(\d+)-step-\d+", o.key):
                self._traces = max(self._traces, int(m[1]))

    def run_trace(self, ops: Sequence[Op], flows: Mapping[str, Dataflow], *,
                  step_seconds: float = 10.0, check: bool = True,
                  **kwargs: Any) -> list[StepRow]:
        """Replay a prepared trace on the instances, one operation per ``step_seconds``, then
        stop them at one cut and check every output since the engine started (the live
        operations before the trace included, charged to its first step) against the
        reference execution: the rows ``reuse run`` writes. The engine is stopped after.
        ``kwargs``: ``warmup_s`` (watch this long first) and ``on_step(n, coordinator)``,
        called as step ``n`` begins (a test kills an instance there, as with ``apps_run``)."""
        from reuse.core.traces import check_trace
        from reuse.runtime.apps.runs import finish_run, trace_steps

        with self.lock:
            self._check()
            check_trace(ops, flows, present=self.coord.planner.instances)
            self._traces += 1
            prefix = f"t{self._traces}-step-"
            for n, op in enumerate(ops, 1):
                if op.op == "submit":
                    self.book.put(f"{prefix}{n}", flows[op.dag])
            self._known.update(flows)
            warm = float(kwargs.get("warmup_s") or 0.0)
            if warm > 0:
                self.coord.hold(warm)
            rows = trace_steps(self.coord, ops, step_seconds, kwargs.get("on_step"), None,
                               key_prefix=prefix)
            self.ops += list(ops)
            self.flows.update({o.dag: flows[o.dag] for o in ops if o.op == "submit"})
            rows = finish_run(self.coord, rows, check=check)
            self.accounting = _read_accounting(self.root)
        self.stop()
        return rows

    def stop(self) -> None:
        """Stop the instances (at a cut, unchecked) and everything this engine started
        (idempotent)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        with self.lock:
            try:
                if not self.coord.stopping:
                    self.coord.stop()
            finally:
                self.coord.close()

    def __repr__(self) -> str:
        return (f"<Engine apps K={self.spec.k_safe} root={self.root} "
                f"dataflows={self.submitted}>")


def _read_accounting(root: Path) -> dict[str, Any] | None:
    from reuse.runtime.common.files import read_json

    got = read_json(root / "accounting.json")
    return None if got is None else dict(got)


AppsEngine.__signature__ = init_signature(AppsEngine)  # type: ignore[attr-defined]

"""Test harness shipped with the package: one shared local Spark session and tiny helpers.

Tests exercise the real runtime on tiny inputs. Starting a session costs ~10 s, so one session
(``local[2]``, UI off) is shared by every Spark test of a pytest run and stopped at its end.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from reuse.core.paths import riotbench_dir

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["spark", "mqtt_broker", "warm_up", "riot_flows", "rerun_outputs",
           "kill_workers_until_failure", "ROOT", "REQUIRE_ENV", "PARTS", "missing",
           "required_parts", "missing_part", "execute_tasks", "run_flow", "shuffled"]

ROOT = Path(__file__).resolve().parent.parent

#: a comma-separated list of real parts whose absence fails a test instead of skipping it
#: (``.ci/run`` sets it: a skip must not hide a set-up step that failed)
REQUIRE_ENV = "REUSE_REQUIRE"
PARTS = ("redis", "browser", "data", "mqtt", "namespaces")


def missing(part: str, why: str) -> str:
    """The skip reason of a test that needs a real ``part`` (one of :data:`PARTS`) this machine
    lacks: tests/conftest.py turns the skip into a failure when ``$REUSE_REQUIRE`` names it.

    Examples
    --------
    >>> missing("data", "data/riotbench is not set up")
    'missing data: data/riotbench is not set up'
    >>> missing_part("Skipped: missing data: data/riotbench is not set up")
    'data'
    """
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}: one of {', '.join(PARTS)}")
    return f"missing {part}: {why}"


def missing_part(reason: str) -> str | None:
    """The part a skip reason made by :func:`missing` names (``None`` for any other skip)."""
    text = reason.removeprefix("Skipped: ")
    for part in PARTS:
        if text.startswith(f"missing {part}: "):
            return part
    return None


def required_parts(environ: dict[str, str] | None = None) -> set[str]:
    """The parts ``$REUSE_REQUIRE`` names; a one-line error for a name that is not a part.

    Examples
    --------
    >>> sorted(required_parts({"REUSE_REQUIRE": "redis, data"}))
    ['data', 'redis']
    >>> required_parts({"REUSE_REQUIRE": "redis,gpu"})
    Traceback (most recent call last):
    ...
    ValueError: $REUSE_REQUIRE names 'gpu': the parts are redis, browser, data, mqtt, namespaces
    """
    env = os.environ if environ is None else environ
    names = {n.strip() for n in env.get(REQUIRE_ENV, "").split(",") if n.strip()}
    for n in sorted(names):
        if n not in PARTS:
            raise ValueError(f"${REQUIRE_ENV} names {n!r}: the parts are {', '.join(PARTS)}")
    return names


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The shared SparkSession (started on first use, stopped after the last test)."""
    from reuse.runtime.session import get_session, stop_session

    session = get_session("local[2]")
    warm_up(session)
    try:
        yield session
    finally:
        stop_session(session)


@pytest.fixture
def mqtt_broker(tmp_path: Path) -> Iterator[str]:
    """The URL of a mosquitto of the test's own (``reuse broker start`` on a free port under
    ``tmp_path``), stopped by its PID afterwards; skipped when mosquitto is not installed."""
    from reuse.runtime.dataplane import mosquitto
    from reuse.runtime.dataplane.mqtt import MqttError
    from reuse.runtime.dataplane.redis_bus import free_port

    try:
        mosquitto.mosquitto_exe()
    except MqttError as exc:
        pytest.skip(missing("mqtt", str(exc)))
    started = mosquitto.start(tmp_path / "broker", port=free_port())
    try:
        yield str(started["url"])
    finally:
        if mosquitto.pid(tmp_path / "broker") is not None:
            mosquitto.stop(tmp_path / "broker")


def warm_up(session: SparkSession) -> None:
    """Start the Python worker the partial-DAG queries use (its pandas and pyarrow, and the
    partial-DAG module, imported) with one tiny ``mapInPandas`` job, so the first timed test
    does not pay for it: on a cold machine that start-up alone can outlast a test's short
    steps. The task code itself is still imported by the first batch that runs a task."""

    def touch(frames: Iterator[Any]) -> Iterator[Any]:
        import reuse.runtime.engines.partial.dag  # noqa: F401 - imported for its side effect: warm caches

        yield from frames

    session.range(4).coalesce(1).mapInPandas(touch, "id long").collect()


def riot_flows(*ids: str, data_dir: str | Path | None = None, keying: str = "field",
               ) -> dict[str, Any]:
    """The named RIoTBench dataflows, parsed (all 21 when no id is given), with a keying of
    their stateful tasks (``reuse dags --keying``)."""
    from reuse.core.dataflow import parse_dataflow
    from reuse.workloads.riotbench import build_dataflows

    base = Path(data_dir) if data_dir is not None else riotbench_dir()
    flows = {d["id"]: parse_dataflow(d) for d in build_dataflows(base, keying=keying)}
    return {i: flows[i] for i in ids} if ids else flows


def execute_tasks(tasks: Mapping[str, tuple[str, Any, Sequence[str]]], data_dir: Any,
                  built: dict[str, Any], limit: int = 40) -> dict[str, Any]:
    """Each task's outputs (a sink's: what it receives) as a multiset (``Counter``) of event
    texts: the tasks' own code, in plain Python, on the first ``limit`` messages of each
    RIoTBench source. ``tasks`` maps an id to ``(type, config, parents)``; a task with several
    inputs reads them one after the other, in parent order. Stateless tasks are built once per
    config (``built`` keeps them across calls)."""
    import json
    from collections import Counter

    from reuse.tasks import SOURCE_TYPES, make_task
    from reuse.tasks.sources import replay

    out: dict[str, list[dict[str, Any]]] = {}

    def of(tid: str) -> list[dict[str, Any]]:
        if tid not in out:
            type_, config, parents = tasks[tid]
            if type_ in SOURCE_TYPES:
                out[tid] = list(replay(type_, data_dir, limit=limit))
            else:
                seen = [e for p in parents for e in of(p)]
                if type_ == "MQTTPublish":
                    out[tid] = seen
                else:
                    key = json.dumps([type_, config], sort_keys=True)
                    task = built.get(key) or make_task(type_, config, data_dir=data_dir)
                    if not task.stateful:
                        built[key] = task
                    out[tid] = [o for e in seen for o in task.process(e)]
        return out[tid]

    return {t: Counter(json.dumps(e, sort_keys=True, default=str) for e in of(t))
            for t in tasks}


def run_flow(flow: Any, data_dir: Any, built: dict[str, Any], limit: int = 40,
             ) -> dict[str, Any]:
    """What each sink of a dataflow (:class:`~reuse.core.dataflow.Dataflow`) receives run
    alone, by :func:`execute_tasks`."""
    outs = execute_tasks({t.id: (t.type, t.config, flow.parents[t.id]) for t in flow.tasks},
                         data_dir, built, limit)
    return {s: outs[s] for s in flow.sinks}


def checked_replay(flows: Iterable[Any], ops: Iterable[tuple[str, str]], data_dir: Any,
                   built: dict[str, Any], limit: int = 40, match: Any = None) -> Iterator[Any]:
    """Replay ``ops`` (``("submit"|"remove", dag)``) through a manager under ``match`` (the
    semantic policy by default), checking after each step: the invariants hold, and on the
    real streams (the first ``limit`` messages of each) the plan of each submitted dataflow,
    and the running tasks run once as the merged DAG, give each sink what the dataflow alone
    gives, and every residual's wide task still runs. Yields the manager after each step's
    checks (a test adds its own)."""
    from reuse.core.invariants import assert_invariants
    from reuse.core.manager import Manager
    from reuse.tasks.matching import SEMANTIC

    by_id = {f.id: f for f in flows}
    alone = {d: run_flow(f, data_dir, built, limit) for d, f in by_id.items()}
    m = Manager(match=SEMANTIC if match is None else match)
    for op, dag in ops:
        if op == "submit":
            m.submit(by_id[dag])
        else:
            m.remove(dag)
        assert_invariants(m)
        running = execute_tasks({t.id: (t.type, t.config, t.parents) for t in m.running_tasks()},
                                data_dir, built, limit)
        for d in m.submitted:
            assert run_flow(m.plan(d), data_dir, built, limit) == alone[d], d
            assert {s: running[r] for s, r in m.sink_map(d).items()} == alone[d], d
            for r in m.rewrites(d):
                assert m.running_id(d, r.via) == r.wider, (d, r)
        yield m


def ranged_tenant(dag: str, shrink: float, topic: str, *, window: int | None = None,
                  data_dir: str | Path | None = None) -> Any:
    """A SYS tenant ``src -> parse -> range -> kalman -> out`` whose range is ``shrink`` of
    each field's width inside the workload's (so a larger ``shrink`` is contained in a smaller
    one: issue 25's containment, issue 36's re-plans); ``window``: also ``parse -> bwa(window)
    -> out2``."""
    from reuse.core.dataflow import parse_dataflow
    from reuse.workloads.riotbench import source_configs

    cfg = source_configs("SYS", riotbench_dir(data_dir))
    rng = {k: [lo + shrink * (hi - lo), hi - shrink * (hi - lo)]
           for k, (lo, hi) in cfg["RangeFilter.drop"]["valid_range"].items()}
    tasks = [("src", "SYS", "source"), ("parse", "SenMLParse", cfg["SenMLParse"]),
             ("range", "RangeFilter", {"valid_range": rng}),
             ("kalman", "KalmanFilter", cfg["KalmanFilter"]),
             ("out", "MQTTPublish", {"topic": topic})]
    streams = [["src", "parse"], ["parse", "range"], ["range", "kalman"], ["kalman", "out"]]
    if window is not None:
        tasks += [("bwa", "BlockWindowAverage", {**cfg["BlockWindowAverage"], "window": window}),
                  ("out2", "MQTTPublish", {"topic": topic + "-w"})]
        streams += [["parse", "bwa"], ["bwa", "out2"]]
    return parse_dataflow({"id": dag, "tasks": [{"id": i, "type": t, "config": c}
                                                for i, t, c in tasks], "streams": streams})


def window_tenant(dag: str, window: int, topic: str, *,
                  data_dir: str | Path | None = None) -> Any:
    """A SYS tenant ``src -> parse -> bwa(window) -> out`` (a window of a multiple of a running
    one's reads its panes: the ``panes`` rule)."""
    from reuse.core.dataflow import parse_dataflow
    from reuse.workloads.riotbench import source_configs

    cfg = source_configs("SYS", riotbench_dir(data_dir))
    return parse_dataflow({"id": dag, "tasks": [
        {"id": "src", "type": "SYS", "config": "source"},
        {"id": "parse", "type": "SenMLParse", "config": cfg["SenMLParse"]},
        {"id": "bwa", "type": "BlockWindowAverage",
         "config": {**cfg["BlockWindowAverage"], "window": window}},
        {"id": "out", "type": "MQTTPublish", "config": {"topic": topic}}],
        "streams": [["src", "parse"], ["parse", "bwa"], ["bwa", "out"]]})


def deployed_at_zero(flows: Iterable[Any], shards: int, opts: Mapping[str, Any], *,
                     planner: Any = None) -> tuple[Any, dict[str, Any]]:
    """Every dataflow submitted at ``seq`` 0 into a fresh ``Deployment`` of ``shards``, as the
    shared engine deploys them (a sink that is a plain task is recorded), and the ledger the
    reference execution reads for it: tests and benchmarks that run the shard worker by hand
    (``planner``: Reuse's, exact, by default)."""
    from reuse.runtime.common.planners import ReusePlanner
    from reuse.runtime.common.sink_history import ledger_submit
    from reuse.runtime.engines.shared.deploy import Deployment

    planner = planner or ReusePlanner()
    dep = Deployment(shards)
    tasks: dict[str, Any] = {}
    dags: dict[str, Any] = {}
    for flow in flows:
        p = planner.submit(flow)
        ledger_submit(tasks, dags, p, 0)
        leaves = {r for r in p.sinks.values() if tasks[r]["kind"] == "task"}
        dep.deploy(p, 0, record=leaves)
    ledger = {"t0": 0, "rate": 10.0, "data_dir": opts["data_dir"], "opts": dict(opts),
              "tasks": tasks, "dags": dags}
    return dep, ledger


def kill_group(proc: Any, timeout_s: float = 30.0) -> None:
    """Kill a process started with ``start_new_session=True`` with its whole process group
    (its JVM, its Python workers: as a machine's death takes them), and wait until it and
    every process it had started are gone (or zombies)."""
    import signal

    import psutil

    group = [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=timeout_s)
    deadline = time.time() + timeout_s
    while any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
              for p in group) and time.time() < deadline:
        time.sleep(0.2)


def journal_kinds(root: str | Path) -> list[str]:
    """The record kinds of a live run's journal so far (``start``, ``op``, ``row``), for tests
    that wait on a run in another process: no journal yet is none, a torn last line is
    skipped."""
    from reuse.runtime.common.files import read_jsonl

    return [r["kind"] for r in read_jsonl(Path(root) / "journal.jsonl")]


def rerun_outputs(spark: SparkSession, run: str | Path, root: str | Path,
                  ) -> tuple[dict[str, Any], dict[str, Any], int]:
    """An oracle independent of the run's own accounting: run again, fault-free and on the
    local session, what a shared-query run journaled (its dataflows, their operations at the
    recorded cuts, up to the last ``seq`` it processed) and return both runs' outputs per DAG
    and sink (:func:`~reuse.runtime.accounting.dag_outputs`, replicas de-duplicated) and that
    ``seq`` bound. A fault (a killed worker, executor or driver) must change no output.

    The rerun's clock starts in the past, so every event is already due: the shared query
    works the whole trace off in catch-up batches instead of waiting in wall time.
    """
    import json

    from reuse.core.dataflow import parse_dataflow
    from reuse.runtime.accounting import dag_outputs
    from reuse.runtime.common.files import read_batches
    from reuse.runtime.engines.shared.engine import InplaceRuntime
    from reuse.runtime.journal import load_journal
    from reuse.runtime.spec import RunSpec

    run, root = Path(run), Path(root)
    state = load_journal(run)
    p = state.start
    flows = {f.id: f for f in (parse_dataflow(d) for d in p["flows"])}
    upto = max(b["hi"] for b in read_batches(run))
    # the same dataflows, cuts and pace; fault-free, whole and unreplicated: the plainest run
    spec = replace(RunSpec.from_journal(p, file=str(run / "journal.jsonl")), root=root,
                   limit=upto, k_safe=0, split=False, shared_disk=True, source="replay")
    t0 = int(time.time() * 1000 - 1000 * (upto + 1) / spec.rate) - 1000
    rt = InplaceRuntime(spark, spec, t0_ms=t0)
    try:
        rt.replay(state.enacted, flows, start_seq=int(p["start_seq"]))
        rt.wait_processed(upto - 1, timeout_s=300)
        ledger = rt.ledger()
    finally:
        rt.close()
    first = json.loads((run / "ledger.json").read_text())
    return dag_outputs(run, first, upto), dag_outputs(root, ledger, upto), upto


def kill_workers_until_failure(rt: Any, in_batch: Callable[[], bool], *,
                               until: Callable[[], bool] = lambda: False,
                               timeout_s: float = 60.0) -> list[int]:
    """Kill every forked Python worker (``kill -9``) while a batch runs, polling the engine,
    until one of its queries has failed once (``rt.failures``), ``until()`` or the timeout;
    returns the PIDs killed. The fault tests' way to fail a batch in flight."""
    import os
    import signal
    import time

    from reuse.runtime.measure import forked_python_workers

    killed: list[int] = []
    deadline = time.time() + timeout_s
    while not rt.failures and time.time() < deadline and not until():
        if in_batch():
            for pid in forked_python_workers():
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                except ProcessLookupError:
                    pass
        rt.poll()
        time.sleep(0.01)
    return killed


def shuffled(items: list[Any], seed: int, module_of: Callable[[Any], str]) -> list[Any]:
    """``items`` with their modules in a random order and each module's items in a random
    order, both drawn from ``seed`` (the same seed, the same order): ``pytest --shuffle SEED``
    hunts order dependence while each module's fixtures are still made once.

    Examples
    --------
    >>> items = ["a1", "a2", "b1", "b2", "c1"]
    >>> out = shuffled(items, 3, lambda i: i[0])
    >>> sorted(out) == items and out == shuffled(items, 3, lambda i: i[0])
    True
    >>> from itertools import groupby
    >>> len([m for m, _ in groupby(out, key=lambda i: i[0])])  # each module's items together
    3
    """
    import random

    rng = random.Random(seed)
    by_module: dict[str, list[Any]] = {}
    for item in items:
        by_module.setdefault(module_of(item), []).append(item)
    modules = sorted(by_module)
    rng.shuffle(modules)
    out: list[Any] = []
    for m in modules:
        group = by_module[m]
        rng.shuffle(group)
        out += group
    return out

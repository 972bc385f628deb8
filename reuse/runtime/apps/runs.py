"""A trace on a run across applications (``reuse run --k-safe K --replicas apps``): start the
run's Redis and its K+1 instances, replay the trace's steps through the
:class:`~reuse.runtime.apps.coordinator.Coordinator`, resume after the coordinator's death,
and account the consumers' view against the reference execution.

**The coordinator's own death** (issue 34) stops no output: the instances run in their own
sessions, raise the horizon themselves and publish to the run's Redis, which is durable (an
append-only file under ``<root>/redis``) and restarted when it dies (a keeper thread here; every
control-plane client retries for a while). What dies is the trace's replay: ``reuse run
--resume ROOT`` (:func:`resume_apps`) takes it up from the run's files alone. The start record
``apps-run.json`` holds the dataflows, the trace and the spec; the journal holds the trace's
position (its ``step-N`` keys: proposing one again returns the operation already decided, so
replaying the decided steps rebuilds the planner without a second operation); ``apps.json``
holds the instances, which are adopted by PID when they still run (and replaced as usual when
they do not), and so is the Redis (started again from its file when it died too); the
consumers' view is read again from the streams' start. The step the
coordinator died in is measured again and counts one failure. A broker-fed run is the
exception: its one ingest lives here (:func:`_feed_input`), so while the coordinator is dead
the instances get no new events and their outputs pause (nothing is lost: the MQTT session is
persistent, and the resumed coordinator's ingest takes it over).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from reuse.core.dataflow import Dataflow
from reuse.core.traces import Op, check_trace
from reuse.runtime import SparkRuntimeError
from reuse.runtime.apps.coordinator import Child, Coordinator, Held, recorded_instances
from reuse.runtime.apps.instance import InstanceSpec, sink_stream
from reuse.runtime.apps.roles import check_apps
from reuse.runtime.common.execution import emitted_bound
from reuse.runtime.common.files import read_json, read_jsonl, write_json
from reuse.runtime.common.run_secrets import run_secret
from reuse.runtime.control import longest_gap
from reuse.runtime.measure import CpuMeter, hold_step, longest_pause, percentile
from reuse.runtime.rows import StepRow
from reuse.runtime.spec import RunSpec

if TYPE_CHECKING:
    from reuse.runtime.engines.shared.broker_input import BrokerInput

__all__ = ["apps_run", "cluster_workers", "resume_apps", "start_apps", "trace_steps",
           "finish_run", "adopt_run", "read_record", "RUN_RECORD", "LIVE_RECORD", "BASE_SPEC",
           "RUN"]

RUN = "run"  # the control plane's run name: the run's Redis is its own
#: The start record of a run across applications: its dataflows, trace and spec (for --resume).
RUN_RECORD = "apps-run.json"
#: A live engine's settings across applications (``reuse.live.Engine(replicas="apps")``): what
#: its ``Engine.resume`` reads, beside ``apps.json``.
LIVE_RECORD = "apps-live.json"
#: What every instance of the run is told, but its id and role (holds the Redis password).
BASE_SPEC = "base.spec.json"


def _instance_master(master: str, k: int) -> tuple[str, dict[str, str]]:
    """Each instance's master and extra Spark settings: on ``local[N]`` a share of the cores,
    on a standalone cluster its own executor (one worker's cores).

    >>> _instance_master("local[2]", 1)
    ('local[1]', {})
    >>> _instance_master("spark://h:7077", 1)[1]["spark.cores.max"]
    '1'
    """
    import re

    m = re.fullmatch(r"local\[(\d+)\]", master)
    if m is not None:
        return f"local[{max(1, int(m.group(1)) // (k + 1))}]", {}
    if master.startswith("spark://"):
        return master, {"spark.cores.max": "1", "spark.executor.cores": "1",
                        "spark.app.name": "reuse-instance"}
    return master, {}


def cluster_workers(spec: RunSpec) -> int | None:
    """A standalone cluster's workers (each instance needs one: :func:`start_apps` checks
    there are K+1); ``None`` on ``local[N]``."""
    if not spec.master.startswith("spark://"):
        return None
    from reuse.runtime.cluster import DEFAULT_DIR, pids

    return sum(1 for r in pids(spec.cluster_dir or DEFAULT_DIR) if r.startswith("worker"))


def start_apps(flows: Mapping[str, Dataflow], spec: RunSpec, *, workers: int | None = None,
               progress: Callable[[str], None] | None = None) -> Coordinator:
    """Start a run's Redis and its K+1 instances and wait until each has run a batch; the
    coordinator, which owns them (:meth:`Coordinator.close`). ``spec`` (``--replicas apps``)
    is the run's one configuration: K, U, the policy's mode, match, master, pace, shards,
    batch bound, data and the heartbeat timeout (``dead_s``; default three triggers, at least
    5 s). ``workers``: a standalone cluster's workers (each instance needs one). The
    benchmarks drive it directly; :func:`apps_run` replays a trace on it."""
    from reuse.core.paths import riotbench_dir
    from reuse.runtime.common.planners import make_planner
    from reuse.runtime.dataplane.redis_bus import start_redis

    if spec.root is None or not spec.replicated_apps:
        raise SparkRuntimeError("a run across applications needs a spec with --replicas apps "
                                "and a run directory")
    k_safe, replicate_min_users, trigger_s = spec.k_safe, spec.replicate_min_users, spec.trigger_s
    mode, match, rate = spec.policy.mode.value, spec.match, spec.rate
    check_apps(k_safe, replicate_min_users, workers=workers)
    make_planner(mode == "reuse", match)  # a meaningless --match fails before anything starts
    root = Path(spec.root).resolve()
    if (root / "apps.json").exists():
        raise SparkRuntimeError("already holds a run (apps.json): choose a new --root",
                                file=str(root))
    (root / "apps").mkdir(parents=True, exist_ok=True)
    inst_master, conf = _instance_master(spec.master, k_safe)
    meter = CpuMeter().start()
    # durable: the journal, the registry and the output streams outlive this process and
    # this server (a resumed coordinator starts it again from its file)
    broker = start_redis(root / "redis", password=run_secret(root, "redis"), durable=True)
    meter.add_roots([broker.pid])
    t0 = int(time.time() * 1000)
    feed: BrokerInput | None = None
    try:
        feed = _feed_input(root, spec, broker.url, resume=False)
        start = emitted_bound(t0, rate) + 1 if feed is None else feed.wait_first() + 1
    except BaseException:
        if feed is not None:
            feed.close()
        broker.stop()
        meter.stop()
        raise
    base = InstanceSpec(id="", home=False, run=RUN, redis=broker.url, root="", t0=t0,
                        start_seq=start, flows=[f.to_dict() for f in flows.values()],
                        mode=mode, match=match, master=inst_master, shards=spec.shards,
                        max_events=spec.max_events, rate=rate, trigger_s=trigger_s,
                        pi_iterations=spec.pi_iterations,
                        data_dir=str(riotbench_dir(spec.data_dir)),
                        min_users=replicate_min_users, conf=conf, split=spec.split,
                        columnar=spec.columnar, feed=None if feed is None else feed.spec,
                        cluster_dir=None if spec.cluster_dir is None else str(spec.cluster_dir))
    write_json(root / "apps" / BASE_SPEC, base.as_dict(), private=True)
    coord = Coordinator(root, base, k_safe, flows,
                        dead_s=spec.dead_s or max(3 * trigger_s, 5.0), meter=meter,
                        log=progress)
    coord.keep(broker, feed)
    try:
        coord.oplog.open(start)
        for i in range(k_safe + 1):
            coord.spawn(home=(i == 0))
        coord.wait_ready()
        coord.write_apps()
    except BaseException:
        coord.close()
        raise
    if progress:
        progress(f"{k_safe + 1} instances up: "
                 + ", ".join(f"{c.spec.id} pid {c.pid}" for c in coord.live()))
    return coord


def apps_run(flows: Mapping[str, Dataflow], ops: Sequence[Op], spec: RunSpec, *,
             workers: int | None = None,
             on_step: Callable[[int, Coordinator], None] | None = None,
             progress: Callable[[str], None] | None = None) -> list[StepRow]:
    """Replay ``ops`` on K+1 instances replicated across applications (:func:`start_apps`);
    the CSV rows of :func:`reuse.runtime.run.run_trace` (columns it cannot fill are empty),
    with the spec's warm-up, step length and check.

    ``on_step(n, coordinator)`` is called as step ``n`` begins (the fault benchmark and the
    test kill an instance there).
    """
    check_trace(ops, flows)
    coord = start_apps(flows, spec, workers=workers, progress=progress)
    try:
        # what --resume needs besides the journal and apps.json (issue 34)
        write_json(coord.root / RUN_RECORD,
                   {"flows": [f.to_dict() for f in flows.values()],
                    "ops": [[o.op, o.dag] for o in ops],
                    **replace(spec, dead_s=coord.dead_s,
                              data_dir=Path(str(coord.base.data_dir))).to_journal()})
        coord.hold(spec.warmup_s)
        rows = trace_steps(coord, ops, spec.step_seconds, on_step, progress)
        return finish_run(coord, rows, check=spec.check)
    finally:
        coord.close()


def resume_apps(root: str | os.PathLike[str], *,
                on_step: Callable[[int, Coordinator], None] | None = None,
                progress: Callable[[str], None] | None = None) -> list[StepRow]:
    """Finish a run across applications whose coordinator died (``reuse run --resume``): the
    rows of the whole trace, those written before the death included (see the module
    docstring). The run's Redis is adopted when the dead coordinator left it running (the
    instances, still writing to it, see no gap), else started again from its file on its
    port (their calls retry meanwhile); the live instances are adopted, the dead ones replaced
    as during the run.

    Raises
    ------
    StateError
        The folder holds no start record (the coordinator died before its first step, so
        nothing was run: start a new run), or a record is unreadable; one line, nothing
        started.
    """

    from reuse.core.dataflow import parse_dataflow
    from reuse.core.errors import StateError

    root = Path(root).resolve()
    record = root / RUN_RECORD
    if (root / LIVE_RECORD).exists():
        raise StateError("holds a live engine's run across applications, not a trace's: "
                         "resume it with reuse.live.Engine.resume", file=str(root))
    rec, apps, base_d = (read_record(p) for p in (record, root / "apps.json",
                                                   root / "apps" / BASE_SPEC))
    if not isinstance(rec, dict) or not isinstance(apps, dict) or not isinstance(base_d, dict):
        raise StateError(f"holds no complete run across applications ({RUN_RECORD}, apps.json "
                         f"and apps/{BASE_SPEC}): its coordinator died before the trace began; "
                         "start a new run", file=str(root))
    spec = RunSpec.from_journal(rec, file=str(record))
    try:
        flows = {f.id: f for f in (parse_dataflow(d) for d in rec["flows"])}
        ops = [Op(str(o), str(d)) for o, d in rec["ops"]]
        check_trace(ops, flows, file=str(record))
    except (KeyError, TypeError, ValueError) as exc:
        raise StateError(f"start record is incomplete ({type(exc).__name__}: {exc})",
                         file=str(record)) from None
    done = [cast(StepRow, {k: v for k, v in r.items() if k != "replicated_streams"})
            for r in read_jsonl(root / "rows.jsonl")]
    coord = adopt_run(root, spec, apps, base_d, flows, progress)
    try:
        decided = {o.key for o in coord.oplog.sync(0)[1]}
        for n, op in enumerate(ops, 1):
            if f"step-{n}" in decided:
                coord.propose(op.op, op.dag, key=f"step-{n}")
        coord.consumer.read(sorted(coord.streams))  # the view so far, not this step's outputs
        if progress:
            progress(f"resumed at step {len(done) + 1} of {len(ops)}: "
                     f"{len(coord.live())} instance(s) adopted "
                     + ", ".join(f"{c.spec.id} pid {c.pid}" for c in coord.live()))
        rows = done + trace_steps(coord, ops, spec.step_seconds, on_step, progress,
                                  first=len(done) + 1)
        return finish_run(coord, rows, check=spec.check)
    finally:
        coord.close()


def adopt_run(root: Path, spec: RunSpec, apps: Mapping[str, Any], base_d: Mapping[str, Any],
              flows: Mapping[str, Dataflow], progress: Callable[[str], None] | None,
              ) -> Coordinator:
    """The coordinator of a run across applications whose coordinator died, taking over what
    it left (``apps``: its ``apps.json``; ``base_d``: the instances' base spec): its Redis,
    adopted if it still runs, else started again from its file on its port; a broker-fed
    run's ingest, taking its MQTT session over; the live instances by PID. Both fronts use it:
    ``reuse run --resume`` (:func:`resume_apps`) and a live engine's resume
    (:meth:`reuse.live.apps.AppsEngine.resume`), whose ``flows`` it fills as it re-proposes.
    A record that cannot be read is one line (:class:`StateError`), before anything starts."""
    from urllib.parse import urlparse

    from reuse.core.errors import StateError
    from reuse.runtime.dataplane.redis_bus import start_redis

    try:
        base = InstanceSpec.from_dict(dict(base_d))
        port = urlparse(base.redis).port
    except (KeyError, TypeError, ValueError) as exc:
        raise StateError(f"cannot be read ({type(exc).__name__}: {exc})",
                         file=str(root / "apps" / BASE_SPEC)) from None
    try:
        recorded = recorded_instances(root, apps)
        events = [dict(e) for e in apps["replacements"]]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StateError(f"cannot be read ({type(exc).__name__}: {exc})",
                         file=str(root / "apps.json")) from None
    meter = CpuMeter().start()
    broker = start_redis(root / "redis", port, password=run_secret(root, "redis"),
                         durable=True, adopt=True)
    meter.add_roots([broker.pid])
    try:
        feed = _feed_input(root, spec, broker.url, resume=True)
    except BaseException:
        broker.stop()
        meter.stop()
        raise
    coord = Coordinator(root, base, spec.k_safe, flows,
                        dead_s=spec.dead_s or max(3 * base.trigger_s, 5.0), meter=meter,
                        log=progress)
    coord.keep(broker, feed)
    try:
        coord.adopt(recorded, events)
    except BaseException:
        coord.close()
        raise
    return coord


def _feed_input(root: Path, spec: RunSpec, bus_url: str, *, resume: bool) -> BrokerInput | None:
    """A broker-fed run's one ingest (``--replicas apps`` with ``--source``): the broker's
    messages into the run's durable Redis, where every instance's shards read them
    (``None``: a replay). It lives in the coordinator, under ``<root>/ingest``, with a
    persistent MQTT session (QoS 1): while the coordinator is dead, what is published waits
    in the broker, and a resumed coordinator's ingest takes the session over and appends
    from where the bus ends. The instances' outputs are the de-duplicated streams, as on a
    replay (no MQTT egress)."""
    if not spec.broker_fed:
        return None
    from reuse.runtime.engines.shared.broker_input import BrokerInput

    return BrokerInput(root / "ingest", spec.source, needed=dict, bus_url=bus_url,
                       first_message_s=spec.first_message_s, stall_s=spec.stall_s,
                       resume=resume)


def read_record(path: Path) -> Any:
    """A JSON file of the run (``None``: absent); a torn or unreadable one is one line."""
    from reuse.core.errors import StateError

    try:
        return read_json(path)
    except (OSError, ValueError) as exc:
        raise StateError(f"cannot be read ({type(exc).__name__}: {exc})", file=str(path)) from None


def finish_run(coord: Coordinator, rows: list[StepRow], *, check: bool,
               ) -> list[StepRow]:
    """Stop the instances at a cut, read the streams to their end, account and report."""
    stop_cut = coord.stop()
    coord.consumer.read(sorted(coord.streams))
    coord.write_apps()
    if check:
        _account(coord, rows, stop_cut)
    _report_streams(coord, stop_cut)
    return rows


def trace_steps(coord: Coordinator, ops: Sequence[Op], step_seconds: float,
                on_step: Callable[[int, Coordinator], None] | None,
                progress: Callable[[str], None] | None, *, first: int = 1,
                key_prefix: str = "step-") -> list[StepRow]:
    """Steps ``first``.. of the trace; a ``first`` above 1 is a resume, whose first step
    counts the coordinator's death as one failure. Step ``n`` is proposed under the key
    ``key_prefix + n`` (a live engine's traces each take their own prefix)."""
    rows: list[StepRow] = []
    ends: list[float] = []  # every output's arrival (ms), as the consumers read them
    origin = time.time() * 1000
    for n, op in enumerate(ops, 1):
        if n < first:
            continue
        t0 = time.time()
        cpu0 = coord.meter.total(by_category=True)  # the step's CPU covers its operation
        if on_step is not None:
            on_step(n, coord)
        cut = coord.propose(op.op, op.dag, key=f"{key_prefix}{n}")
        op_s = time.time() - t0
        seen = Held()
        w = hold_step(coord.meter, t0, cpu0, step_seconds, op_s, partial(coord.tick, seen))
        resumed = n == first > 1  # the coordinator's death is this step's failure
        failures = seen.failures + int(resumed)
        ends += [float(ms) for ms, _ in seen.arrivals]
        lat = [float(ms - ts) for ms, ts in seen.arrivals if ts is not None]
        counts = coord.counts()
        row: StepRow = {
               "step": n, "op": op.op, "dag": op.dag, "running_tasks": counts["running_tasks"],
               "replica_tasks": counts["replica_tasks"], "paused_tasks": 0,
               "queries": len(coord.live()), "cores": w.cores, "cores_steady": w.cores_steady,
               "p50_latency_ms": percentile(lat, 50), "p99_latency_ms": percentile(lat, 99),
               "events_in": None, "events_out": len(seen.arrivals), "lost": None,
               "duplicated": None, "cut": cut, "op_seconds": round(op_s, 3),
               "measured_s": round(w.t1 - t0, 3), "failures": failures,
               "gap_s": round(longest_pause(ends, t0 * 1000, w.t1 * 1000, origin) / 1000, 3),
               "t_start_ms": round(t0 * 1000), "t_end_ms": round(w.t1 * 1000)}
        rows.append(row)
        with open(coord.root / "rows.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps({**row, "replicated_streams": sorted(coord.replicated_streams())})
                     + "\n")
        if progress:
            progress(f"[apps {n}/{len(ops)}] {op.op} {op.dag} at cut {cut}: "
                     f"{row['running_tasks']} tasks, {row['queries']} instances, "
                     f"{row['cores']:.2f} cores, gap {row['gap_s']} s"
                     + (f", {failures - resumed} instance(s) replaced"
                        if failures > resumed else "")
                     + (", its coordinator resumed" if resumed else ""))
    return rows


def _survivor_ledger(coord: Coordinator) -> dict[str, Any]:
    """The ledger of an instance that ran to the end (every instance's planner and deployment
    are the same: they applied the same journal); the home's when it survived."""
    done = sorted((c for c in coord.children.values() if c.state == "stopped"),
                  key=lambda c: (not c.spec.home, c.spec.id))
    for c in done:
        led = read_json(Path(c.spec.root) / "ledger.json")
        if led:
            return dict(led)
    raise SparkRuntimeError("no instance ran to the end of the run (see apps/<id>.log)",
                            file=str(coord.root))


def _account(coord: Coordinator, rows: list[StepRow], stop_cut: int) -> None:
    """``lost`` and ``duplicated`` per step, as consumers read the streams, against the
    reference execution; each output charged to the step its source ``seq`` fell in."""
    from reuse.runtime.accounting import charge_to_steps, reference_records

    ledger = _survivor_ledger(coord)
    if coord.feed is not None:  # broker-fed: the events received, which the reference runs on
        ledger["source"] = dict(coord.feed.ledger_source(stop_cut))
    ref = reference_records(ledger, stop_cut)
    reused = {c.spec.root for c in coord.children.values() if c.spec.join is None
              and sum(1 for o in coord.children.values() if o.spec.root == c.spec.root) > 1}
    own = {}
    for c in coord.children.values():
        if not (c.spec.home or c.spec.min_users <= 1):
            continue
        if c.state == "stopped":
            own[c.spec.id] = _own_outputs(c, ledger, ref, stop_cut)
        elif c.spec.root not in reused:  # a dead one, up to its last batch's saved states
            own[c.spec.id] = _own_outputs(c, ledger, ref, min(stop_cut, _saved_upto(c)))
    lost: list[int] = []
    dup: list[int] = []
    report = {}
    consumer = coord.consumer
    for info in ledger["dags"].values():
        lo = int(info["J"])
        hi = stop_cut if info["R"] is None else min(int(info["R"]), stop_cut)
        for sink, rid in info["sinks"].items():
            s = sink_stream(info["dag"], lo, sink)
            exp = Counter({k: n for k, n in ref.get(rid, Counter()).items() if lo <= k[0] < hi})
            obs = Counter((q, d) for q, d, *_ in consumer.records.get(s, []))
            lost += [q for (q, _), n in (exp - obs).items() for _ in range(n)]
            dup += [q for (q, _), n in (obs - exp).items() for _ in range(n)]
            report[s] = {"expected": sum(exp.values()), "observed": sum(obs.values()),
                         "lost": sum((exp - obs).values()), "duplicated": sum((obs - exp).values()),
                         "window": [lo, hi]}
    charge_to_steps(rows, [r["cut"] or 0 for r in rows], lost=lost, duplicated=dup)
    write_json(coord.root / "accounting.json", {"streams": report, "instances": own})


def _saved_upto(child: Child) -> int:
    """The end of the last batch whose states (saved after its sink records) an instance
    wrote: a dead instance's records are complete below it."""
    d = Path(child.spec.root) / "ckpt" / "shared" / "tstate"
    files = sorted(d.glob("*.json")) if d.is_dir() else []
    return int(read_json(files[-1])["hi"]) if files else child.spec.start_seq


def _own_outputs(child: Child, ledger: Mapping[str, Any], ref: Mapping[str, Counter[Any]],
                 stop_cut: int) -> dict[str, Any]:
    """One instance's own sink records (in its run directory, whether consumers read its copy
    or another's) against the reference, from its first ``seq`` (a joiner's: its join cut) to
    ``stop_cut`` (the run's stop, or where a dead one stopped): a replacement must compute
    exactly what the reference does from where it joined. For instances that run every task
    (the home; every instance with ``U = 1``): a replica's set of sinks changes with their
    users. An instance restarted from a dead one's directory is counted once, as the one that
    ran last there."""
    from reuse.runtime.accounting import observed_records

    first = child.spec.join if child.spec.join is not None else child.spec.start_seq
    exp_n = obs_n = lost = dup = 0
    for info in ledger["dags"].values():
        lo = max(int(info["J"]), first)
        hi = stop_cut if info["R"] is None else min(int(info["R"]), stop_cut)
        for rid in info["sinks"].values():
            obs = Counter((int(r["q"]), str(r["d"])) for r in observed_records(child.spec.root, rid)
                          if lo <= r["q"] < hi)
            exp = Counter({k: n for k, n in ref.get(rid, Counter()).items() if lo <= k[0] < hi})
            exp_n, obs_n = exp_n + sum(exp.values()), obs_n + sum(obs.values())
            lost += sum((exp - obs).values())
            dup += sum((obs - exp).values())
    return {"from": first, "upto": stop_cut, "expected": exp_n, "observed": obs_n,
            "lost": lost, "duplicated": dup}


def _report_streams(coord: Coordinator, stop_cut: int) -> None:
    """``<root>/streams.json``: per sink stream, who published its records, when each became
    readable (Redis's clock) and its longest pause, as consumers saw it."""
    consumer = coord.consumer
    out = {}
    for s, recs in consumer.records.items():
        times = [ms for _, _, ms, _, _ in recs]
        out[s] = {"records": len(recs), "by": dict(Counter(b for *_, b in recs)),
                  "longest_gap_s": round(longest_gap(times) / 1000, 3) if times else None,
                  "first_ms": min(times) if times else None,
                  "last_ms": max(times) if times else None, "arrivals_ms": times}
    write_json(coord.root / "streams.json", {"stop_cut": stop_cut, "streams": out})

"""Chaos on a broker-fed run (issue 34, item 2): a seeded schedule kills one process at a time.

One ``reuse run --source mqtt://...`` (the shared query, ``local[2]``) follows a long RIoT
trace over SYS (submits, removals and resubmissions of three dataflows that share their source
and parser), fed by ``reuse publish`` through a mosquitto of its own (``reuse broker start``'s,
under its keeper). A seeded schedule picks, one after another, a process type and a moment
(uniformly ``--wait`` seconds after the previous fault's recovery) and kills that process with
SIGKILL:

=========== =====================================================================================
type        what is killed, and what brings it back
=========== =====================================================================================
driver      ``reuse run`` and everything in its process group (its JVM, its Python workers and
            the ingest thread inside it); the harness runs ``reuse run --resume``
worker      every forked Python worker of the driver's JVM (of the executor's, with
            ``--cluster``), for up to 3 s (a batch in flight fails; the engine restarts the
            query from its checkpoint)
executor    with ``--cluster`` only (a local standalone cluster, one worker with both cores):
            the executor JVM; the master starts a new one
redis       the run's own Redis (the ingest's bus): the driver's keeper starts it again
mqtt        mosquitto: its keeper (``reuse broker start``) starts it again
publisher   ``reuse publish``: the harness starts it again from the ``seq`` after the last one
            its own subscriber saw (what the broker had; the ingest drops copies by ``seq``)
=========== =====================================================================================

Not here, and why: the ingest on its own (a thread of the driver: it dies with it). A run
across applications (its coordinator, its instances) is ``--apps``: :mod:`benchmarks.chaos_apps`.

Recovered means: the killed process (or its replacement) is back, and an output of an event
published after the kill arrived on ``out/#`` (end to end: it includes one event's normal
latency, about a trigger; an output a batch finished before the kill, published a moment
after it, does not count). The time to recover is the later of the two (``back_s`` and
``output_s`` are each; ``docs/bench/chaos.json`` predates them and its ``recover_s`` is the
output's, which there always came after the process was back: a broker-fed run's outputs need
it). Per fault: what was killed and when, the time to recover, the longest pause between output
messages from the last one before the kill to the recovery (as a subscriber on ``out/#`` sees
them), and the lost and duplicated outputs of the step it fell in (the run's own accounting against the reference execution on the recorded events). Per
run: lost and duplicated over all steps, the ingest's missed/stale counts, and whether the
recorded events hold every ``seq`` once. The raw output goes to ``--out`` with its provenance.

    python benchmarks/chaos.py --seed 1 --faults 30 [--types driver,worker,redis,mqtt,publisher]
        [--cluster] [--out docs/bench/chaos.json]
    python benchmarks/chaos.py --apps --seed 1 --faults 30 [--out docs/bench/chaos_apps.json]

About 20 s per fault (a driver's death costs a JVM's start). One Spark job: run nothing else.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.provenance import raw_file  # noqa: E402

TYPES = ("driver", "worker", "redis", "mqtt", "publisher")
CLUSTER_TYPES = (*TYPES, "executor")
DAGS = ("etl-sys", "stats-sys", "clean-sys")
REUSE = [sys.executable, "-m", "reuse"]


def trace_ops(steps: int) -> list[tuple[str, str]]:
    """``steps`` operations: the three dataflows submitted, then each removed and submitted
    again in turn (merges and unmerges all along).

    >>> trace_ops(6)
    [('submit', 'etl-sys'), ('submit', 'stats-sys'), ('submit', 'clean-sys'), ('remove', 'etl-sys'), ('submit', 'etl-sys'), ('remove', 'stats-sys')]
    """
    ops = [("submit", d) for d in DAGS]
    i = 0
    while len(ops) < steps:
        d = DAGS[i % len(DAGS)]
        ops += [("remove", d), ("submit", d)]
        i += 1
    return ops[:steps]


def schedule(seed: int, faults: int, types: tuple[str, ...], wait: tuple[float, float],
             ) -> list[tuple[str, float]]:
    """The seeded schedule: per fault its type and the seconds to wait after the previous
    recovery. Every type comes once before any comes again (a shuffled round), so a short
    schedule still covers them.

    >>> [t for t, _ in schedule(1, 5, TYPES, (5, 10))] == sorted(TYPES, key=[t for t, _ in
    ...     schedule(1, 5, TYPES, (5, 10))].index)
    True
    >>> sorted(t for t, _ in schedule(1, 5, TYPES, (5, 10))) == sorted(TYPES)
    True
    """
    rng = random.Random(seed)
    out: list[tuple[str, float]] = []
    while len(out) < faults:
        round_ = list(types)
        rng.shuffle(round_)
        out += [(t, round(rng.uniform(*wait), 2)) for t in round_]
    return out[:faults]


@dataclass
class Listener:
    """A subscriber to ``sensors/#`` (the last ``seq`` per source the broker delivered) and
    ``out/#`` (when each output message arrived), subscribing again on every reconnect."""

    url: str
    last_seq: dict[str, int] = field(default_factory=dict)
    # per output message: when it arrived (ms) and the largest source seq of its records
    outputs: list[tuple[float, int]] = field(default_factory=list)
    client: Any = None

    def start(self) -> Listener:
        import paho.mqtt.client as mqtt

        from reuse.runtime.dataplane.mqtt import parse_broker_url

        b = parse_broker_url(self.url)
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        c.reconnect_delay_set(1, 2)

        def on_connect(cl: Any, *_a: Any) -> None:
            cl.subscribe([("sensors/#", 0), ("out/#", 0)])

        def on_message(_c: Any, _u: Any, msg: Any) -> None:
            if msg.topic.startswith("out/"):
                now = time.time() * 1000
                try:
                    top = max(int(json.loads(line)["q"]) for line in msg.payload.splitlines())
                except (ValueError, KeyError, TypeError):
                    top = -1
                self.outputs.append((now, top))
                return
            try:
                seq = int(json.loads(msg.payload)["seq"])
            except (ValueError, KeyError, TypeError):
                return
            src = msg.topic.split("/", 1)[1]
            self.last_seq[src] = max(self.last_seq.get(src, -1), seq)

        c.on_connect = on_connect
        c.on_message = on_message
        c.connect(b.host, b.port)
        c.loop_start()
        self.client = c
        return self

    def stop(self) -> None:
        if self.client is not None:
            self.client.disconnect()
            self.client.loop_stop()

    def output_after(self, ms: float, above: int = -1) -> float | None:
        """When the first output message after ``ms`` holding a record of a ``seq`` above
        ``above`` arrived (``None``: none yet)."""
        return next((t for t, q in list(self.outputs) if t > ms and q > above), None)

    def pause_around(self, kill_ms: float, back_ms: float) -> float:
        """The longest time without an output message from the last one before the kill to
        ``back_ms`` (the recovery), as a subscriber on ``out/#`` sees it."""
        from reuse.runtime.control import longest_gap

        got = [t for t, _ in list(self.outputs)]
        before = max((t for t in got if t <= kill_ms), default=kill_ms)
        return longest_gap([t for t in got if before <= t <= back_ms]) / 1000


def redis_pid(root: Path) -> int | None:
    """The PID of a run's own Redis, from its pidfile (``None``: none running)."""
    try:
        return int((root / "redis" / "redis.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def kill_redis(root: Path, running: Any) -> tuple[list[int], Any]:
    """SIGKILL a run's own Redis; the PIDs killed and what shows it is back (a new pid: its
    keeper restarted it). No Redis running: nothing killed, and ``running`` says it is back."""
    p = redis_pid(root)
    if p is None:
        return [], running
    os.kill(p, signal.SIGKILL)
    return [p], lambda: redis_pid(root) not in (None, p)


class Harness:
    """The processes of one chaos run, and how to kill and bring back each."""

    def __init__(self, work: Path, rate: float, step_s: float, steps: int,
                 cluster: bool = False) -> None:
        from reuse.runtime.dataplane import mosquitto
        from reuse.runtime.dataplane.redis_bus import free_port

        self.work, self.rate, self.step_s = work, rate, step_s
        self.cluster: Path | None = None
        master: list[str] = []
        if cluster:
            self.cluster = work / "cluster"
            res = subprocess.run([*REUSE, "cluster", "start", "--dir", str(self.cluster),
                                  "--port", str(free_port()), "--ui-port", str(free_port()),
                                  "--workers", "1", "--cores", "2"],
                                 capture_output=True, text=True)
            if res.returncode != 0:
                raise RuntimeError(f"cluster start failed: {res.stderr.strip()[-300:]}")
            master = ["--master", json.loads(res.stdout)["url"], "--cluster-dir",
                      str(self.cluster)]
        self.broker_dir = work / "broker"
        self.url = str(mosquitto.start(self.broker_dir, port=free_port())["url"])
        self.root, self.csv = work / "run", work / "rows.csv"
        dags = work / "dags"
        from reuse.core.paths import riotbench_dir
        from reuse.workloads.riotbench import build_dataflows, write_dags

        write_dags([d for d in build_dataflows(riotbench_dir()) if d["id"] in DAGS], dags)
        self.ops = trace_ops(steps)
        trace = work / "trace.json"
        trace.write_text(json.dumps({"ops": [{"op": o, "dag": d} for o, d in self.ops]}))
        self.listener = Listener(self.url).start()
        self.publisher = self._publish(0)
        self.log = open(work / "run.log", "a")  # noqa: SIM115 - closed by close()
        self.driver = self._spawn([*REUSE, "run", "--dags", str(dags), "--trace", str(trace),
                                   "--source", self.url, "--step-seconds", f"{step_s:g}",
                                   "--trigger-seconds", "1", "--warmup-seconds", "2",
                                   "--root", str(self.root), "--out", str(self.csv),
                                   *master])
        self.resumes: list[subprocess.Popen[bytes]] = []

    def _spawn(self, argv: list[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def _publish(self, start: int) -> subprocess.Popen[bytes]:
        return subprocess.Popen([*REUSE, "publish", "--workload", "riot", "--sources", "SYS",
                                 "--rate", f"{self.rate:g}", "--broker", self.url,
                                 "--start-seq", str(start)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)

    def running(self) -> bool:
        return self.driver.poll() is None

    def published(self) -> int:
        """The last ``seq`` the broker delivered (an output of a later one is news)."""
        return self.listener.last_seq.get("SYS", -1)

    def result(self, done: list[dict[str, Any]], rc: int) -> dict[str, Any]:
        """The broker-fed run's own figures besides the faults': the ingest's counts, the
        servers' restarts and whether the recorded events hold every ``seq`` once."""
        from reuse.runtime.dataplane import mosquitto
        from reuse.runtime.dataplane.broker_feed import load_recorded

        ledger = json.loads((self.root / "ledger.json").read_text()) if (
            self.root / "ledger.json").is_file() else {}
        src = ledger.get("source", {})
        recorded = load_recorded(src["recorded"])["SYS"] if src.get("recorded") else {}
        seqs = sorted(recorded)
        contiguous = bool(seqs) and seqs == list(range(seqs[0], seqs[-1] + 1))
        return {"cluster": self.cluster is not None, "ingest": src.get("counts", {}),
                "redis_restarts": src.get("restarts", []),
                "mqtt_restarts": mosquitto.restarts(self.broker_dir),
                "recorded_events": len(seqs), "recorded_contiguous": contiguous}

    def step(self) -> int:
        """The step in progress: operations the journal holds (1-based)."""
        from reuse.testing import journal_kinds

        return journal_kinds(self.root).count("op")

    def kill(self, kind: str) -> tuple[list[int], Any]:
        """Kill one process of ``kind``; returns the PIDs killed and what shows it is back."""
        from reuse.runtime.dataplane import mosquitto
        from reuse.runtime.measure import executor_pids, kill_forked_workers

        if kind == "driver":
            os.killpg(self.driver.pid, signal.SIGKILL)
            self.driver.wait(timeout=60)
            pids = [self.driver.pid]
            time.sleep(1.0)
            self.driver = self._spawn([*REUSE, "run", "--resume", str(self.root),
                                       "--out", str(self.csv)])
            return pids, self.running
        if kind == "executor":
            pids = executor_pids()
            for p in pids:
                os.kill(p, signal.SIGKILL)
            return pids, lambda: bool(set(executor_pids()) - set(pids))
        if kind == "worker":
            return kill_forked_workers(lambda: executor_pids() if self.cluster is not None
                                       else [self.driver.pid]), self.running
        if kind == "redis":
            return kill_redis(self.root, self.running)
        if kind == "mqtt":
            p = mosquitto.pid(self.broker_dir)
            if p is None:
                return [], self.running
            os.kill(p, signal.SIGKILL)
            return [p], lambda: mosquitto.pid(self.broker_dir) not in (None, p)
        if kind == "publisher":
            p = self.publisher.pid
            os.kill(p, signal.SIGKILL)
            self.publisher.wait(timeout=30)
            time.sleep(0.5)  # what it sent reaches the subscriber first
            self.publisher = self._publish(self.listener.last_seq.get("SYS", -1) + 1)
            return [p], lambda: self.publisher.poll() is None
        raise ValueError(kind)

    def close(self) -> None:
        from reuse.runtime.dataplane import mosquitto

        for p in (self.driver, self.publisher):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=30)
        self.listener.stop()
        if mosquitto.pid(self.broker_dir) is not None:
            mosquitto.stop(self.broker_dir)
        if self.cluster is not None:
            subprocess.run([*REUSE, "cluster", "stop", "--dir", str(self.cluster)],
                           capture_output=True)
        self.log.close()



def run(seed: int, faults: int, types: tuple[str, ...], *, rate: float = 20.0,
        step_s: float = 10.0, wait: tuple[float, float] = (4.0, 10.0),
        recover_s: float = 120.0, work: Path | None = None,
        steps: int | None = None, cluster: bool = False, apps: bool = False) -> dict[str, Any]:
    """One chaos run; the raw result (see the module docstring). ``steps``: the trace's
    length (default: long enough for the schedule, a driver's or an instance's death counted
    30 s). ``apps``: a run across applications (:mod:`benchmarks.chaos_apps`)."""
    plan = schedule(seed, faults, types, wait)
    if steps is None:
        slow = sum(t in ("driver", "instance") for t, _ in plan)
        per_fault_s = 8.0 + 30.0 * slow / max(1, len(plan)) + \
            sum(w for _, w in plan) / max(1, len(plan))
        steps = max(6, int(len(plan) * per_fault_s / step_s) + 4)
    work = Path(tempfile.mkdtemp(prefix="chaos-")) if work is None else work
    h: Any
    if apps:
        from benchmarks.chaos_apps import AppsHarness

        h = AppsHarness(work, rate, step_s, trace_ops(steps))
    else:
        h = Harness(work, rate, step_s, steps, cluster)
    done: list[dict[str, Any]] = []
    t0 = time.time()
    try:
        # the first outputs: the run is up
        deadline = time.time() + 180
        while h.listener.output_after(t0 * 1000) is None:
            if not h.running() or time.time() > deadline:
                raise RuntimeError(f"the run never produced an output (log: {work}/run.log)")
            time.sleep(0.2)
        for i, (kind, wait_s) in enumerate(plan):
            time.sleep(wait_s)
            if not h.running() or h.step() >= len(h.ops):
                break  # the trace is over: no more faults
            step = h.step()
            # recovered: an output of an event the publisher sent after the kill (not one a
            # batch finished before it, published a moment later)
            published = h.published()
            kill_ms = time.time() * 1000
            pids, back = h.kill(kind)
            row: dict[str, Any] = {"i": i, "type": kind, "at_s": round(kill_ms / 1000 - t0, 2),
                                   "step": step, "killed": pids, "recover_s": None}
            deadline = time.time() + recover_s
            back_ms: float | None = None
            while time.time() < deadline:
                first = h.listener.output_after(kill_ms, above=published)
                if pids and back_ms is None and back():
                    back_ms = time.time() * 1000
                if back_ms is not None and first is not None:
                    done_ms = max(first, back_ms)
                    row["recover_s"] = round((done_ms - kill_ms) / 1000, 2)
                    row["back_s"] = round((back_ms - kill_ms) / 1000, 2)
                    row["output_s"] = round((first - kill_ms) / 1000, 2)
                    row["pause_s"] = round(h.listener.pause_around(kill_ms, done_ms), 2)
                    break
                if kind not in ("driver", "coordinator") and not h.running():
                    break
                time.sleep(0.1)
            done.append(row)
            print(f"fault {i + 1}/{len(plan)}: {kind} {pids} at {row['at_s']} s, step {step}, "
                  f"recovered in {row['recover_s']} s", flush=True)
            if row["recover_s"] is None:
                break
        rc = h.driver.wait(timeout=steps * step_s + 600)
    finally:
        h.close()
    return _result(h, done, rc, seed, plan, steps, step_s, rate)


def _result(h: Any, done: list[dict[str, Any]], rc: int, seed: int,
            plan: list[tuple[str, float]], steps: int, step_s: float,
            rate: float) -> dict[str, Any]:
    rows = list(csv.DictReader(h.csv.open())) if h.csv.is_file() else []
    by_step = {int(r["step"]): r for r in rows}
    for f in done:
        r = by_step.get(max(1, f["step"]))
        f["lost"] = int(r["lost"]) if r else None
        f["duplicated"] = int(r["duplicated"]) if r else None
    by_type: dict[str, dict[str, Any]] = {}
    for kind in sorted({f["type"] for f in done}):
        mine = [f for f in done if f["type"] == kind]
        pauses = [f["pause_s"] for f in mine if f.get("pause_s") is not None]
        recs = [f["recover_s"] for f in mine if f["recover_s"] is not None]
        by_type[kind] = {"faults": len(mine), "recovered": len(recs),
                         "pause_median_s": round(median(pauses), 2) if pauses else None,
                         "pause_max_s": max(pauses, default=None),
                         "recover_median_s": round(median(recs), 2) if recs else None,
                         "recover_max_s": max(recs, default=None)}
    return {"seed": seed, "planned": [t for t, _ in plan], "steps": steps, "step_s": step_s,
            "rate": rate, "rc": rc, "faults": done, "by_type": by_type,
            "survived": sum(f["recover_s"] is not None for f in done),
            "lost": sum(int(r["lost"]) for r in rows),
            "duplicated": sum(int(r["duplicated"]) for r in rows),
            "rows": len(rows), **h.result(done, rc), "work": str(h.work)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--faults", type=int, default=30)
    ap.add_argument("--types", default="",
                    help=f"comma-separated (default: {','.join(TYPES)}; with --cluster also "
                         "executor)")
    ap.add_argument("--cluster", action="store_true",
                    help="run on a local standalone cluster (one worker, both cores)")
    ap.add_argument("--apps", action="store_true",
                    help="a run across applications (--replicas apps, K=1, U=1) on the replay; "
                         "types: coordinator, instance, worker, redis (benchmarks/chaos_apps.py)")
    ap.add_argument("--rate", type=float, default=20.0)
    ap.add_argument("--step-seconds", type=float, default=10.0)
    ap.add_argument("--steps", type=int, default=None,
                    help="the trace's length (default: an estimate long enough for the schedule)")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    from benchmarks.chaos_apps import TYPES as APPS_TYPES

    if args.apps and args.cluster:
        print("chaos: --apps runs on local[2] (each instance its own application); "
              "--cluster is for the broker-fed run", file=sys.stderr)
        return 2
    known = APPS_TYPES if args.apps else CLUSTER_TYPES if args.cluster else TYPES
    types = tuple(t for t in args.types.split(",") if t) or known
    bad = [t for t in types if t not in known]
    if bad:
        print(f"chaos: unknown fault type {bad[0]!r} (one of {', '.join(known)})",
              file=sys.stderr)
        return 2
    res = run(args.seed, args.faults, types, rate=args.rate, step_s=args.step_seconds,
              cluster=args.cluster, apps=args.apps, steps=args.steps)
    for kind, s in res["by_type"].items():
        print(f"{kind:10s} {s['faults']:3d} faults, {s['recovered']} recovered; pause median "
              f"{s['pause_median_s']} s, max {s['pause_max_s']} s; recovery median "
              f"{s['recover_median_s']} s, max {s['recover_max_s']} s")
    print(f"rc {res['rc']}; {res['survived']}/{len(res['faults'])} faults survived; lost "
          f"{res['lost']}, duplicated {res['duplicated']}; "
          + (f"{res['pauses_within_target']} pauses within {res['target_pause_s']} s"
             if args.apps else f"recorded events contiguous: {res['recorded_contiguous']}"))
    if args.out:
        raw_file(args.out, res)
    ok = (res["rc"] == 0 and res["lost"] == 0 and res["duplicated"] == 0
          and res["survived"] == len(res["faults"]) and res.get("recorded_contiguous", True))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Chaos across applications (issue 34, item 2): ``benchmarks/chaos.py --apps``.

The same seeded schedule as :mod:`benchmarks.chaos` (one fault at a time, each after the
previous one's recovery), on one ``reuse run --replicas apps --k-safe 1 --replicate-min-users
1`` over the generated SYS replay: two instances, each its own driver and Spark application
(``local[1]`` each), both running every task, so every sink is replicated. What is killed
(SIGKILL), and what brings it back:

=========== =====================================================================================
type        what is killed, and what brings it back
=========== =====================================================================================
coordinator the ``reuse run`` process alone (its instances and Redis live on); the harness runs
            ``reuse run --resume``, which adopts the live instances
instance    one live instance's driver with its process group (its JVM and Python workers, as
            a machine's death takes them); the coordinator replaces it: a new instance joins at
            a journal cut, warm from the survivor's states
worker      the forked Python workers of one live instance's JVM, for up to 3 s (a batch in
            flight fails; that instance's engine restarts it from its checkpoint)
redis       the run's Redis (journal, registry, output streams): the coordinator's keeper starts
            it again from its append-only file; every client retries meanwhile
=========== =====================================================================================

Not here, and why: a broker-fed run across applications (its instances read the generated
replay only: not combined yet, issue 32), and an executor JVM (the instances run ``local[1]``:
the executor is the instance's driver JVM, killed with the instance).

The outputs are watched where consumers read them: a thread reads every sink's de-duplicated
stream on the run's Redis (``reuse:ctl:run:out:<sink>``) and notes each record's arrival
(Redis's stream time) and source ``seq``. Recovered: the killed process (or its replacement) is
back (a resumed coordinator has adopted the instances; a replacement has caught up, K-safe
again), and a record of an event emitted after the kill has arrived. The pause is the longest
time without a record from the last one before the kill to the recovery; the issue's target is
at most two triggers for any single fault of a replicated dataflow.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from reuse.runtime.common.files import read_jsonl

REUSE = [sys.executable, "-m", "reuse"]
TYPES = ("coordinator", "instance", "worker", "redis")
TRIGGER_S = 1.0


class StreamListener:
    """A consumer of every sink stream of a run across applications (a thread polling the
    run's Redis): per record, its arrival (ms) and ``seq``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.outputs: list[tuple[float, int]] = []
        self.cursors: dict[bytes, bytes] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="streams", daemon=True)
        self._client: Any = None

    def start(self) -> StreamListener:
        self._thread.start()
        return self

    def _connect(self) -> Any:
        from reuse.runtime.common.redis_client import redis_client

        base = json.loads((self.root / "apps" / "base.spec.json").read_text())
        return redis_client(base["redis"], patience_s=30.0)

    def _loop(self) -> None:
        while not self._stop.wait(0.2):
            try:
                if self._client is None:
                    self._client = self._connect()
                self.poll()
            except Exception:  # noqa: BLE001 - not up yet, or restarting: try again
                time.sleep(0.5)

    def poll(self) -> None:
        c = self._client
        for key in c.scan_iter(match="reuse:ctl:run:out:*", count=1000):
            if b"#" in key:
                continue  # a stream's #seen and #mark
            after = self.cursors.get(key)
            got = c.xrange(key, b"(" + after if after else "-", "+", count=5000)
            for sid, f in got:
                self.outputs.append((float(sid.split(b"-")[0]), int(f[b"q"])))
            if got:
                self.cursors[key] = got[-1][0]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def output_after(self, ms: float, above: int = -1) -> float | None:
        """When the first record after ``ms`` of a ``seq`` above ``above`` arrived."""
        return next((t for t, q in list(self.outputs) if t > ms and q > above), None)

    def pause_around(self, kill_ms: float, back_ms: float) -> float:
        """The longest time without a record from the last one before the kill to
        ``back_ms``, in seconds."""
        from reuse.runtime.control import longest_gap

        got = sorted(t for t, _ in list(self.outputs))
        before = max((t for t in got if t <= kill_ms), default=kill_ms)
        return longest_gap([t for t in got if before <= t <= back_ms]) / 1000


class AppsHarness:
    """The processes of one chaos run across applications, and how to kill and bring back
    each (the interface of :class:`benchmarks.chaos.Harness`)."""

    def __init__(self, work: Path, rate: float, step_s: float,
                 ops: list[tuple[str, str]]) -> None:
        from reuse.core.paths import riotbench_dir
        from reuse.workloads.riotbench import build_dataflows, write_dags

        self.work, self.rate, self.step_s, self.ops = work, rate, step_s, ops
        self.root, self.csv = work / "run", work / "rows.csv"
        dags = work / "dags"
        names = {d for _, d in ops}
        write_dags([d for d in build_dataflows(riotbench_dir()) if d["id"] in names], dags)
        trace = work / "trace.json"
        trace.write_text(json.dumps({"ops": [{"op": o, "dag": d} for o, d in ops]}))
        self.log = open(work / "run.log", "a")  # noqa: SIM115 - closed by close()
        self.driver = self._spawn([*REUSE, "run", "--dags", str(dags), "--trace", str(trace),
                                   "--replicas", "apps", "--k-safe", "1",
                                   "--replicate-min-users", "1", "--master", "local[2]",
                                   "--rate", f"{rate:g}", "--step-seconds", f"{step_s:g}",
                                   "--trigger-seconds", f"{TRIGGER_S:g}",
                                   "--warmup-seconds", "2", "--root", str(self.root),
                                   "--out", str(self.csv)])
        deadline = time.time() + 120
        while not (self.root / "apps" / "base.spec.json").is_file():
            if self.driver.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"the run did not start (log: {work}/run.log)")
            time.sleep(0.2)
        base = json.loads((self.root / "apps" / "base.spec.json").read_text())
        self.t0 = int(base["t0"])
        self.listener = StreamListener(self.root).start()
        self.resumes = 0

    def _spawn(self, argv: list[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def running(self) -> bool:
        return self.driver.poll() is None

    def published(self) -> int:
        """The last ``seq`` the replay has emitted (a record of a later one is news)."""
        from reuse.runtime.common.execution import emitted_bound

        return emitted_bound(self.t0, self.rate)

    def step(self) -> int:
        """The step in progress (1-based): the rows written, plus one."""
        try:
            return len((self.root / "rows.jsonl").read_text().splitlines()) + 1
        except FileNotFoundError:
            return 1

    def _apps(self) -> dict[str, Any]:
        try:
            return dict(json.loads((self.root / "apps.json").read_text()))
        except (OSError, ValueError):
            return {"instances": [], "replacements": []}

    def _live(self) -> list[dict[str, Any]]:
        """The instances ``apps.json`` says are live and not still catching up."""
        apps = self._apps()
        pending = {e["new"] for e in apps["replacements"] if e["restored_ms"] is None}
        return [i for i in apps["instances"] if i["state"] == "live" and i["id"] not in pending]

    def redis_pid(self) -> int | None:
        from benchmarks.chaos import redis_pid

        return redis_pid(self.root)

    def kill(self, kind: str) -> tuple[list[int], Any]:
        """Kill one process of ``kind``; returns the PIDs killed and what shows it is back."""
        from benchmarks.chaos import kill_redis
        from reuse.runtime.measure import kill_forked_workers

        if kind == "coordinator":
            p = self.driver.pid
            os.kill(p, signal.SIGKILL)
            self.driver.wait(timeout=60)
            time.sleep(1.0)
            self.resumes += 1
            mark = "resumed at step"
            seen = (self.work / "run.log").read_text().count(mark)
            self.driver = self._spawn([*REUSE, "run", "--resume", str(self.root),
                                       "--out", str(self.csv)])
            return [p], lambda: (self.running() and (self.work / "run.log").read_text()
                                 .count(mark) > seen)
        live = self._live()
        if not live:
            return [], self.running
        victim = live[0]  # the lowest id: the home first, then its replacements
        if kind == "instance":
            p = int(victim["driver_pid"])
            os.killpg(p, signal.SIGKILL)

            def restored() -> bool:
                return any(e["dead"] == victim["id"] and e["restored_ms"] is not None
                           for e in self._apps()["replacements"])
            return [p], restored
        if kind == "worker":
            killed = kill_forked_workers(lambda: [int(victim["driver_pid"])])
            return killed, lambda: any(i["id"] == victim["id"] for i in self._live())
        if kind == "redis":
            return kill_redis(self.root, self.running)
        raise ValueError(kind)

    def result(self, done: list[dict[str, Any]], rc: int) -> dict[str, Any]:
        """The run's own figures besides the faults': the replacements, the Redis restarts,
        the coordinator's resumes, and every pause against two triggers."""
        apps = self._apps()
        restarts = read_jsonl(self.root / "redis" / "restarts.jsonl")
        pauses = [f["pause_s"] for f in done if f.get("pause_s") is not None]
        return {"apps": True, "k_safe": 1, "replicate_min_users": 1, "trigger_s": TRIGGER_S,
                "instances": len(apps["instances"]), "replacements": apps["replacements"],
                "redis_restarts": restarts, "coordinator_resumes": self.resumes,
                "target_pause_s": 2 * TRIGGER_S,
                "pauses_within_target": sum(p <= 2 * TRIGGER_S for p in pauses)}

    def close(self) -> None:
        if self.driver.poll() is None:
            os.killpg(self.driver.pid, signal.SIGKILL)
            self.driver.wait(timeout=30)
        for i in self._apps()["instances"]:  # what a failure left running
            try:
                os.killpg(int(i["driver_pid"]), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        import psutil

        p = self.redis_pid()
        try:
            if p is not None and "redis" in psutil.Process(p).name():
                os.kill(p, signal.SIGTERM)  # left by a failure (a clean end stops it)
        except (psutil.Error, ProcessLookupError):
            pass
        self.listener.stop()
        self.log.close()

"""k-safety across applications on Spark (issue 24's acceptance), and a run that outlives its
coordinator (issue 34, item 1), in one run: two engine instances, each its own driver and Spark
application, follow one journal on Redis.

``reuse run --replicas apps`` runs as its own process; once outputs flow (from step 2 on) that
process alone is killed (SIGKILL: no clean-up). Its two instances (in their own sessions) and
its Redis live on, and the outputs go on while nobody coordinates. ``resume_apps`` (what
``reuse run --resume`` calls, here in the test's process so its steps can be hooked) takes the
trace up from the run's files: it adopts the Redis left running (not started again: the
instances see no gap) and both instances by PID, and finishes the trace. (A Redis that died
with its coordinator is started again from its file: ``tests/runtime/dataplane/test_redis_bus.py``.)

The resumed coordinator then does what a run's coordinator does. Two identical dataflows over
SYS (a stateful Kalman filter before the sink) merge when the second arrives and unmerge when it
leaves; ``clean-sys`` (stateful Bloom filter) arrives later. With ``U = 1`` both instances run
every task, so every sink is replicated. One adopted driver is killed by PID in the step after
the resume, with its JVM (its process group, as a machine's death would take it). The
replacement joins at a cut decided in the journal, warm: its Kalman and Bloom states come from
the live instance's states at that cut, and its own records are checked against the reference
from there. Then every instance is killed at once (``twin-b`` submitted again meanwhile): each
restarts from its own run directory, and the run still ends with nothing lost or duplicated.
(One run, not two: the two tests it was took 135 s of the suite; issue 34, item 5.)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from reuse.runtime.control import longest_gap
from reuse.testing import missing

pytestmark = [pytest.mark.spark, pytest.mark.many_jvms]

TRIGGER = 2.0
STEPS = 6
DEAD_S = 4.0  # how long nobody coordinates, at least
# the first process is killed once outputs flow, in step 2 or 3 on an idle machine (in step 4
# on a loaded one, when the first working batches come late); the adopted driver is killed a
# step after the resume, and every instance at step 5, or a step after that (the sixth step
# is that slack: with five, a loaded pass found its trace nearly over, 2026-11-29)
OPS = [("submit", "twin-a"), ("submit", "twin-b"), ("submit", "clean-sys"),
       ("remove", "twin-b"), ("submit", "twin-b"), ("remove", "twin-a")]


def _working(root: Path, iid: str, after_ms: float) -> int:
    """The batches with events an instance finished after ``after_ms``."""
    from reuse.runtime.common.files import read_batches

    return sum(1 for b in read_batches(root / "apps" / iid)
               if b["events"] > 0 and b["ms"] > after_ms)


def _lines(path: Path) -> int:
    try:
        return len(path.read_text(encoding="utf-8").splitlines())
    except FileNotFoundError:
        return 0


def _instance_pids(root: Path) -> dict[str, int]:
    try:
        return {i["id"]: i["driver_pid"]
                for i in json.loads((root / "apps.json").read_text())["instances"]}
    except (OSError, ValueError, KeyError):
        return {}


def _start_and_kill_the_coordinator(tmp_path: Path, flows: dict[str, Any], root: Path,
                                    ) -> tuple[int, dict[str, int], float]:
    """Start the run as its own process and kill that process alone once outputs flow; return
    the step it died in, the instances' PIDs and when it died (ms), once an instance has run
    two working batches with nobody coordinating."""
    import psutil

    dags = tmp_path / "dags"
    dags.mkdir()
    for f in flows.values():
        (dags / f"{f.id}.json").write_text(json.dumps(f.to_dict()))
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"ops": [{"op": o, "dag": d} for o, d in OPS]}))
    argv = [sys.executable, "-m", "reuse", "run", "--dags", str(dags), "--trace", str(trace),
            "--replicas", "apps", "--k-safe", "1", "--replicate-min-users", "1",
            "--master", "local[2]", "--step-seconds", "8", "--trigger-seconds", str(TRIGGER),
            "--rate", "10", "--warmup-seconds", "2", "--root", str(root),
            "--out", str(tmp_path / "first.csv")]
    log = tmp_path / "first.log"
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        # kill while outputs flow: step 1 is over and both instances have run working
        # batches (a loaded machine can take seconds over the first one)
        deadline = time.time() + 240
        while _lines(root / "rows.jsonl") < 1 or min(_working(root, i, 0)
                                                      for i in ("i0", "i1")) < 2:
            assert proc.poll() is None, log.read_text()[-2000:]
            assert time.time() < deadline, "the run never reached step 2 with outputs"
            time.sleep(0.2)
        died_step = _lines(root / "rows.jsonl") + 1
        pids = _instance_pids(root)
        died_ms = time.time() * 1000
        os.kill(proc.pid, signal.SIGKILL)  # the coordinator alone
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # nobody coordinates for DEAD_S at least, and until an instance has finished two working
    # batches since (so one ran wholly while no coordinator did)
    deadline = time.time() + 120
    while (time.time() * 1000 < died_ms + DEAD_S * 1000
           or max(_working(root, i, died_ms) for i in ("i0", "i1")) < 2):
        assert time.time() < deadline, "no instance ran a batch after the kill"
        time.sleep(0.2)
    assert set(pids) == {"i0", "i1"}, pids
    assert all(psutil.pid_exists(p) for p in pids.values()), "an instance died with it"
    return died_step, pids, died_ms


def test_a_killed_driver_pauses_no_output_and_a_replacement_joins_warm(
        tmp_path: Path, twin_flows: dict[str, Any]) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip(missing("redis", "redis-server is not installed"))
    from reuse.runtime.apps.coordinator import Coordinator
    from reuse.runtime.apps.runs import resume_apps
    from reuse.runtime.dataplane.redis_bus import stop_orphan

    root = tmp_path / "run"
    killed: dict[str, Any] = {}
    died_step = 0  # set before the resume calls the hook

    def on_step(n: int, coord: Coordinator) -> None:
        if n == died_step + 1:  # one adopted driver, mid-step
            victim = next(c for c in coord.live() if c.spec.id == "i1")

            def working() -> bool:  # it ran a batch with tasks, on an executor
                reg = {i.id: i for i in coord.registry.instances()}.get("i1")
                return reg is not None and bool(reg.executors)

            def kill() -> None:
                # a driver that works (it has since the resume, on a machine that is not
                # loaded): wait for that first
                deadline = time.time() + 90
                while not working() and time.time() < deadline:
                    time.sleep(0.2)
                time.sleep(3.0)
                killed.update(pid=victim.pid, ms=time.time() * 1000)
                os.killpg(victim.pid, signal.SIGKILL)

            killer = threading.Thread(target=kill, daemon=True)
            killer.start()
            killed["thread"] = killer
        elif n == max(5, died_step + 2):  # once K-safe again: every instance at once
            killed["thread"].join(timeout=120)
            assert "pid" in killed, "i1 never ran a working batch to be killed in"
            deadline = time.time() + 60
            while coord.events and coord.events[0]["restored_ms"] is None:
                assert time.time() < deadline, "K-safety was not restored within 60 s"
                coord.hold(0.5)
            killed["all_ms"] = time.time() * 1000
            victims = coord.live()
            for c in victims:
                os.killpg(c.pid, signal.SIGKILL)
            deadline = time.time() + 30
            while any(c.proc.poll() is None for c in victims):  # gone before the coordinator
                assert time.time() < deadline, "a killed instance outlived 30 s"  # looks again
                time.sleep(0.05)


    try:
        died_step, pids, died_ms = _start_and_kill_the_coordinator(tmp_path, twin_flows, root)
        # the driver kill comes a step after the resume, and every instance's a step later
        assert died_step <= STEPS - 2, "the trace was nearly over before outputs flowed"
        resumed_ms = time.time() * 1000
        lines: list[str] = []
        rows = resume_apps(root, on_step=on_step, progress=lines.append)
    finally:
        for pid in _instance_pids(root).values():  # whatever a failure left running
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if "thread" in killed:
            killed["thread"].join(timeout=5)
        # the run's durable Redis outlives a coordinator killed before the resume stops it
        stop_orphan(root / "redis" / "redis.pid")

    apps = json.loads((root / "apps.json").read_text())
    by_id = {i["id"]: i for i in apps["instances"]}
    # the run's Redis takes the run's password (issue 34): masked where anyone may read it,
    # only in the instances' specs, which only the user can read
    assert ":***@" in apps["redis"]
    assert all(p.stat().st_mode & 0o077 == 0 for p in (root / "apps").glob("*.spec.json"))
    assert set(by_id) == {"i0", "i1", "i2", "i3", "i4"}
    assert all(i["driver_pid"] > 0 for i in by_id.values())
    # every instance that registered a batch names its executors, and the two that ran from
    # the start (one killed after the resume, the other with every instance) did. A replacement restarted (i3, i4) from a
    # checkpoint already at the stop cut runs none (all instances died at once, so nobody
    # moved the horizon): it exits at once, on no executor. (The joiner i2 ran batches, as
    # its records' accounting below shows, but its registration is not asserted here: once
    # in a full run it showed none, and apps.json is a description, not the accounting.)
    assert all(i["executors"] for i in by_id.values() if i["batches"]), by_id
    assert all(by_id[i]["batches"] > 0 for i in ("i0", "i1")), by_id
    assert by_id["i1"]["driver_pid"] == killed["pid"]
    assert [by_id[i]["state"] for i in ("i0", "i1", "i2", "i3", "i4")] == [
        "dead", "dead", "dead", "stopped", "stopped"]

    # lost = duplicated = 0 as consumers read the de-duplicated streams, through every kill
    assert [int(r["step"]) for r in rows] == list(range(1, STEPS + 1))
    assert sum(r["lost"] for r in rows) == 0 and sum(r["duplicated"] for r in rows) == 0
    # the coordinator's death counts once, in the step it died in (measured again from the
    # resume); the driver's once and every instance's twice
    assert [r["failures"] for r in rows[:died_step]] == [0] * (died_step - 1) + [1]
    assert sum(r["failures"] for r in rows) == 4

    # the resume: at the step the coordinator died in, both instances adopted by PID (none
    # replaced for its death), and its Redis too: started once in the whole run
    assert f"resumed at step {died_step} of {STEPS}: 2 instance(s) adopted" in "\n".join(lines)
    assert {i: by_id[i]["driver_pid"] for i in ("i0", "i1")} == pids
    assert (root / "redis" / "redis.log").read_text().count("Ready to accept") == 1

    # the survivor kept publishing from the first kill to the second (which took every
    # instance: there the outputs wait for the restarts). How long its outputs paused is a
    # performance figure, whose target (at most 2 triggers) benchmarks/runtime_faults.py
    # --replicas apps decides over repetitions (docs/bench/faults_apps_u*.json); here the
    # bound is 3 triggers, which a survivor that stopped would pass and a busy machine would
    # not fail (one run measured 4.09 s against 2 triggers' 4 s)
    streams = json.loads((root / "streams.json").read_text())["streams"]
    # while nobody coordinated, the instances kept publishing (they raise the horizon
    # themselves): outputs arrived between the coordinator's death and the resume
    assert [ms for s in streams.values() for ms in s["arrivals_ms"] if died_ms < ms < resumed_ms]
    after = [ms for s in streams.values() for ms in s["arrivals_ms"]
             if killed["ms"] <= ms < killed["all_ms"]]
    assert after, "no output after the kill"
    gap = longest_gap(after, start_ms=killed["ms"], end_ms=killed["all_ms"])
    assert gap <= 3 * TRIGGER * 1000, f"outputs paused {gap / 1000:.2f}s after the kill"

    # the replacement joined at a journal cut, warm, and caught up (K-safe again); its own
    # records equal the reference from its join cut (i4 restarted in its directory: counted
    # as one instance, from the join cut to the stop)
    join, *later = apps["replacements"]
    assert join["event"] == "join" and join["dead"] == "i1" and join["new"] == "i2"
    assert join["restored_ms"] is not None
    acc = json.loads((root / "accounting.json").read_text())["instances"]
    assert by_id["i4"]["root"] == by_id["i2"]["root"]
    assert acc["i4"]["from"] == join["cut"] and acc["i4"]["expected"] > 0
    # every instance dead at once: each restarts from its own directory (no live instance has
    # states to give), and the run is still exact as consumers read it
    assert sorted((e["event"], e["dead"]) for e in later) == [("restart", "i0"),
                                                               ("restart", "i2")]
    for i in acc:
        assert acc[i]["expected"] > 0, (i, acc[i])
        assert acc[i]["lost"] == acc[i]["duplicated"] == 0, (i, acc[i])

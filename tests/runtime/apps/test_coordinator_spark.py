"""A run across applications outlives its coordinator (issue 34, item 1).

``reuse run --replicas apps`` runs as its own process; once outputs flow (from step 2 on) that
process alone is killed (SIGKILL: no clean-up). Its two instances, each its own driver and Spark
application in its own session, and its Redis live on. ``reuse run --resume`` then takes the
trace up from the run's files: it adopts the Redis left running (not started again: the
instances see no gap) and both instances by PID, and finishes the trace. Nothing is lost or
duplicated as consumers read the streams, no instance is replaced, and the outputs did not
stop while no coordinator ran. (A Redis that died with its coordinator is started again from
its file: ``tests/runtime/dataplane/test_redis_bus.py``.)
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reuse.testing import missing

pytestmark = [pytest.mark.spark, pytest.mark.many_jvms]

TRIGGER = 2.0
STEP = 6.0
DEAD_S = 4.0  # how long nobody coordinates, at least
STEPS = 5  # the trace's: a loaded machine's instances can take 20 s over their first batches


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


def test_a_dead_coordinator_is_resumed_and_adopts_the_live_instances(
        tmp_path: Path, twin_flows: dict[str, Any]) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip(missing("redis", "redis-server is not installed"))
    import psutil

    dags = tmp_path / "dags"
    dags.mkdir()
    for f in twin_flows.values():
        (dags / f"{f.id}.json").write_text(json.dumps(f.to_dict()))
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"ops": [{"op": "submit", "dag": "twin-a"},
                                         {"op": "submit", "dag": "twin-b"},
                                         {"op": "submit", "dag": "clean-sys"},
                                         {"op": "remove", "dag": "twin-b"},
                                         {"op": "remove", "dag": "clean-sys"}]}))
    root, out = tmp_path / "run", tmp_path / "rows.csv"
    reuse = [sys.executable, "-m", "reuse", "run"]
    argv = [*reuse, "--dags", str(dags), "--trace", str(trace), "--replicas", "apps",
            "--k-safe", "1", "--replicate-min-users", "1", "--master", "local[2]",
            "--step-seconds", str(STEP), "--trigger-seconds", str(TRIGGER), "--rate", "10",
            "--warmup-seconds", "1", "--root", str(root), "--out", str(out)]
    log_path = tmp_path / "run.log"
    pids: dict[str, int] = {}
    with log_path.open("w") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            # kill while outputs flow: step 1 is over and both instances have run working
            # batches (a loaded machine can take seconds over the first one)
            deadline = time.time() + 240
            while _lines(root / "rows.jsonl") < 1 or min(_working(root, i, 0)
                                                          for i in ("i0", "i1")) < 2:
                assert proc.poll() is None, log_path.read_text()[-2000:]
                assert time.time() < deadline, "the run never reached step 2 with outputs"
                time.sleep(0.2)
            died_step = _lines(root / "rows.jsonl") + 1
            assert died_step <= STEPS, "the trace was over before outputs flowed"
            pids = {i["id"]: i["driver_pid"]
                    for i in json.loads((root / "apps.json").read_text())["instances"]}
            died_ms = time.time() * 1000
            os.kill(proc.pid, signal.SIGKILL)  # the coordinator alone
            proc.wait(timeout=30)
            # nobody coordinates for DEAD_S at least, and until an instance has finished two
            # working batches since (so one ran wholly while no coordinator did)
            deadline = time.time() + 120
            while (time.time() * 1000 < died_ms + DEAD_S * 1000
                   or max(_working(root, i, died_ms) for i in ("i0", "i1")) < 2):
                assert time.time() < deadline, "no instance ran a batch after the kill"
                time.sleep(0.2)
            assert all(psutil.pid_exists(p) for p in pids.values()), "an instance died with it"
            resumed_ms = time.time() * 1000
            resumed = subprocess.run([*reuse, "--resume", str(root), "--out", str(out)],
                                     stdout=log, stderr=subprocess.STDOUT, timeout=300)
        finally:
            if not pids:  # failed before reading them: the instances live in their own sessions
                try:
                    pids = {i["id"]: i["driver_pid"] for i in
                            json.loads((root / "apps.json").read_text())["instances"]}
                except (OSError, ValueError, KeyError):
                    pass
            for pid in [proc.pid, *pids.values()]:  # whatever a failure left running
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
    text = log_path.read_text()
    assert resumed.returncode == 0, text[-3000:]
    assert f"resumed at step {died_step} of {STEPS}: 2 instance(s) adopted" in text, text[-3000:]

    rows = list(csv.DictReader(out.open()))
    assert [int(r["step"]) for r in rows] == list(range(1, STEPS + 1))
    # the step it died in is measured again, and counts the death as its one failure
    assert [int(r["failures"]) for r in rows] == [int(s == died_step)
                                                  for s in range(1, STEPS + 1)]
    assert sum(int(r["lost"]) for r in rows) == 0 and sum(int(r["duplicated"]) for r in rows) == 0

    # every sink stream as consumers read it, against the reference: all there, once
    acc = json.loads((root / "accounting.json").read_text())["streams"]
    assert len(acc) == 3 and all(s["observed"] == s["expected"] > 0 for s in acc.values()), acc

    # both instances were adopted and ran to the stop cut: none was replaced
    apps = json.loads((root / "apps.json").read_text())
    assert {i["id"]: i["driver_pid"] for i in apps["instances"]} == pids
    assert [i["state"] for i in apps["instances"]] == ["stopped", "stopped"]
    assert apps["replacements"] == []
    # the Redis was adopted: started once in the whole run
    assert (root / "redis" / "redis.log").read_text().count("Ready to accept") == 1

    # while nobody coordinated, the instances kept publishing (they raise the horizon
    # themselves): outputs arrived in the window between the kill and the resume
    streams = json.loads((root / "streams.json").read_text())["streams"]
    during = [ms for s in streams.values() for ms in s["arrivals_ms"]
              if died_ms < ms < resumed_ms]
    assert during, "no output while the coordinator was dead"

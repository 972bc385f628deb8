"""A run across applications outlives its coordinator (issue 34, item 1).

``reuse run --replicas apps`` runs as its own process; in the trace's second step that process
alone is killed (SIGKILL: no clean-up). Its two instances, each its own driver and Spark
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
DEAD_S = 4.0  # how long nobody coordinates


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
                                         {"op": "remove", "dag": "twin-b"}]}))
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
            deadline = time.time() + 240
            while _lines(root / "rows.jsonl") < 1:  # step 1 is done: step 2 was proposed
                assert proc.poll() is None, log_path.read_text()[-2000:]
                assert time.time() < deadline, "step 1 never ended"
                time.sleep(0.2)
            time.sleep(2.0)
            pids = {i["id"]: i["driver_pid"]
                    for i in json.loads((root / "apps.json").read_text())["instances"]}
            died_ms = time.time() * 1000
            os.kill(proc.pid, signal.SIGKILL)  # the coordinator alone
            proc.wait(timeout=30)
            time.sleep(DEAD_S)
            assert all(psutil.pid_exists(p) for p in pids.values()), "an instance died with it"
            resumed = subprocess.run([*reuse, "--resume", str(root), "--out", str(out)],
                                     stdout=log, stderr=subprocess.STDOUT, timeout=300)
        finally:
            for pid in [proc.pid, *pids.values()]:  # whatever a failure left running
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
    text = log_path.read_text()
    assert resumed.returncode == 0, text[-3000:]
    assert "resumed at step 2 of 4: 2 instance(s) adopted" in text, text[-3000:]

    rows = list(csv.DictReader(out.open()))
    assert [int(r["step"]) for r in rows] == [1, 2, 3, 4]
    # the step it died in is measured again, and counts the death as its one failure
    assert [int(r["failures"]) for r in rows] == [0, 1, 0, 0]
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
              if died_ms < ms < died_ms + DEAD_S * 1000]
    assert during, "no output while the coordinator was dead"

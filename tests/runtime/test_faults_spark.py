"""Failures on real Spark: a Python worker and the driver killed by PID (``kill -9``).

Both engines must notice a failed query and restart it from its checkpoint, and a
run whose ``reuse run`` process (with its JVM) was killed must finish with ``--resume``; both
end with every sink's outputs equal to the reference execution's (lost = duplicated = 0).
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reuse.core.paths import riotbench_dir
from reuse.runtime.accounting import account, leaked_records
from reuse.runtime.common.files import read_batches
from reuse.runtime.engines.partial.engine import Runtime
from reuse.runtime.spec import RunSpec
from reuse.testing import (
    journal_kinds,
    kill_group,
    kill_workers_until_failure,
    rerun_outputs,
    riot_flows,
)
from reuse.workloads.riotbench import build_dataflows, write_dags

pytestmark = [pytest.mark.spark, pytest.mark.many_jvms]

RATE = 20.0
LIMIT = 400


def _in_batch(rt: Runtime) -> bool:
    return any(qi.handler.in_batch for qi in rt.queries.values())


def test_killed_python_worker_is_recovered(spark: Any, tmp_path: Path) -> None:
    """The engine restarts the failed query from its checkpoint instead of giving up, and
    outputs stay exact. The query-per-DAG case runs Default, with a source query of each
    dataflow's own, so either kind of query (source or partial) may be the one that failed;
    Reuse's partial queries restart by the same code. The shared query's case is
    ``test_broker_spark.py``'s (a worker killed mid-batch, the same checks, broker-fed), which
    made a replayed twin here redundant: one Spark test less (issue 34, the suite's time)."""
    flows = riot_flows("stats-sys", "clean-sys")
    t0 = int(time.time() * 1000) + 500
    rt = Runtime(spark, RunSpec.of(mode="default", merge="partial", root=tmp_path, rate=RATE,
                                   trigger_s=1.0, limit=LIMIT), t0_ms=t0)
    killed: list[int] = []
    try:
        rt.start_sources(["SYS"])
        # cuts in the future whatever the machine's load (starting queries takes seconds):
        # the sources are held at each cut until its submit is enacted
        first = max(60, rt.bound() + 40)
        rt.hold(first)
        rt.submit(flows["stats-sys"], at=first)
        second = max(first + 40, rt.bound() + 40)
        rt.hold(second)
        rt.submit(flows["clean-sys"], at=second)
        rt.hold(None)
        while rt.bound() < second + 60:
            rt.poll()
            time.sleep(0.05)
        # kill every forked worker while batches run, until a query has failed once
        killed = kill_workers_until_failure(rt, lambda: _in_batch(rt),
                                            until=lambda: rt.bound() >= LIMIT - 1)
        rt.wait_processed(LIMIT - 1, timeout_s=120)
        ledger = rt.ledger()
    finally:
        rt.close()
    assert killed, "no Python worker was found to kill"
    assert rt.failures, "killing workers mid-batch never failed a query"
    events = [e["event"] for e in ledger["log"]]
    assert "failure" in events and "restart" in events
    acc = account(tmp_path, ledger, LIMIT)
    for dag, a in acc.items():
        assert a["expected"] > 0 and (a["lost"], a["duplicated"]) == (0, 0), (dag, a)
    assert leaked_records(tmp_path, ledger, LIMIT) == {}


def _outputs_done(root: Path) -> bool:
    """Some batch with events has completed (``batches.jsonl``)."""
    return any(b["events"] > 0 for b in read_batches(root))


def test_driver_killed_and_resumed(spark: Any, tmp_path: Path) -> None:
    """``reuse run`` (driver and its JVM) killed with SIGKILL in step 2 or later, once outputs
    flow; ``--resume`` finishes the trace from the journal and the checkpoint, with nothing
    lost or duplicated. The broker-fed case (a publisher going on while the driver is dead) is
    the chaos test's (``test_chaos_spark.py``), among other faults."""
    _kill_and_resume(spark, tmp_path)
    ledger = json.loads((tmp_path / "run" / "ledger.json").read_text())
    assert ledger["source"]["kind"] == "replay"


def _kill_and_resume(spark: Any, tmp_path: Path) -> None:
    dags = tmp_path / "dags"
    write_dags([d for d in build_dataflows(riotbench_dir())
                if d["id"] in ("etl-sys", "etl-annotate-sys", "stats-sys")], dags)
    trace = tmp_path / "trace.json"
    ops = [("submit", "etl-sys"), ("submit", "stats-sys"), ("submit", "etl-annotate-sys"),
           ("remove", "etl-sys")]
    trace.write_text(json.dumps({"ops": [{"op": o, "dag": d} for o, d in ops]}))
    root = tmp_path / "run"
    reuse = [sys.executable, "-m", "reuse"]
    proc = subprocess.Popen([*reuse, "run", "--dags", str(dags), "--trace", str(trace),
                             "--step-seconds", "5", "--trigger-seconds", "1",
                             "--warmup-seconds", "1", "--rate", "20", "--root", str(root),
                             "--out", str(tmp_path / "first.csv")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.time() + 240
        # step 2's operation enacted and some output done (the first batch of a cold JVM can
        # take longer than a step): kill while outputs flow, so the pause has a start
        while journal_kinds(root).count("op") < 2 or not _outputs_done(root):
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.time() < deadline, "the run never reached step 2 with outputs"
            time.sleep(0.1)
        kill_group(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert not (tmp_path / "first.csv").exists()
    died = journal_kinds(root).count("op")  # the step the driver died in
    time.sleep(3)  # the trace goes on in wall time while nobody runs it
    out = tmp_path / "resumed.csv"
    res = subprocess.run([*reuse, "run", "--resume", str(root), "--out", str(out)],
                         capture_output=True, text=True, timeout=400)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = list(csv.DictReader(out.open()))
    assert [(r["op"], r["dag"]) for r in rows] == ops
    assert all(r["lost"] == "0" and r["duplicated"] == "0" for r in rows)
    assert [int(r["failures"]) for r in rows] == [int(s == died) for s in range(1, len(ops) + 1)]
    # the output pause covers the time the driver was dead (>= the 3 s above, plus a JVM's
    # start): it begins in the step it died in and may last into the next
    gaps = [float(r["gap_s"]) for r in rows]
    assert max(gaps[died - 1:died + 1]) >= 3.0, gaps
    assert sum(int(r["events_out"]) for r in rows[1:]) > 0
    # independent of the run's accounting: the same operations at the same cuts, run again
    # with no fault, output exactly the same
    killed_out, clean_out, upto = rerun_outputs(spark, root, tmp_path / "rerun")
    assert upto > 0 and killed_out == clean_out
    assert all(sum(c.values()) > 0 for per in clean_out.values() for c in per.values())
    # a fresh run refuses a directory that holds one
    again = subprocess.run([*reuse, "run", "--dags", str(dags), "--trace", str(trace),
                            "--root", str(root), "--out", str(tmp_path / "x.csv")],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 1 and "already holds a run" in again.stderr
    assert again.stderr.count("\n") == 1

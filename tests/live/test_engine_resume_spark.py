"""``reuse.live.Engine`` after its driver dies (issue 32: the live front with a death, then a
resume): the process that drove the engine is killed with its JVM while outputs flow, right
after a journaled remove; ``Engine.resume`` on the run directory brings the same dataflows
back at their cuts, and everything the engine ever ran is exact against the reference. The
engine runs k-safe in shards (K = 1, every task replicated: issue 32's k-safety with a death
on the live front), so its replicas are rebuilt by the resume too, and each replica's records
equal the reference over its own window."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reuse.core.errors import ReuseError
from reuse.core.traces import Op
from reuse.live import Engine
from reuse.runtime.common.files import read_batches
from reuse.testing import journal_kinds, kill_group, riot_flows

pytestmark = pytest.mark.spark

#: the driver: an engine with two merged dataflows, one of them removed once outputs flow;
#: then it waits to be killed
_DRIVER = """
import sys, time
from reuse.live import Engine
from reuse.testing import riot_flows
flows = riot_flows("stats-sys", "clean-sys")
eng = Engine(root=sys.argv[1], rate=20, trigger_s=1.0, shards=2, poll_s=0.2, workload=None,
             k_safe=1, replicate_min_users=1)
eng.submit(flows["stats-sys"])
eng.submit(flows["clean-sys"])
eng.wait_outputs("stats-sys", 3)
eng.remove("stats-sys")
print("READY", flush=True)
time.sleep(600)
"""


def _first_line_then_dead(driver: str, root: Path, *, kills_itself: bool = False) -> str:
    """Run ``driver`` on ``root`` in a session of its own and return its first line of output,
    once it and its JVM are dead: killed here, or (``kills_itself``) waited for."""
    proc = subprocess.Popen([sys.executable, "-c", driver, str(root)], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if kills_itself:
            proc.wait(timeout=60)
        return line
    finally:
        if proc.poll() is None:
            kill_group(proc)


def test_a_dead_engine_is_resumed_exactly(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "run"
    said = _first_line_then_dead(_DRIVER, root)
    assert said == "READY", "the driver never got outputs"
    done = max(b["hi"] for b in read_batches(root))
    assert journal_kinds(root) == ["start", "op", "op", "op"]
    time.sleep(2)  # the sources go on in wall time while nobody runs the engine
    with pytest.raises(ReuseError, match="already holds a run"):
        Engine(root=root)
    eng = Engine.resume(root, poll_s=0.2, workload=None)
    try:
        assert eng.submitted == ["clean-sys"]
        assert eng.ops == [Op("submit", "stats-sys"), Op("submit", "clean-sys"),
                           Op("remove", "stats-sys")]
        # outputs go on past what the dead driver had processed
        deadline = time.time() + 60
        while max((o["seq"] for o in eng.outputs("clean-sys", n=1)), default=-1) <= done:
            assert time.time() < deadline, "no outputs after the resume"
            time.sleep(0.2)
        # one more operation, journaled after the resume; then everything the engine ever ran
        # (the dead driver's operations included) is checked against the reference
        rows = eng.run_trace([Op("submit", "etl-sys")], riot_flows("etl-sys"),
                             step_seconds=3.0)
        assert [(r["op"], r["dag"], r["lost"], r["duplicated"]) for r in rows] == [
            ("submit", "etl-sys", 0, 0)]
        assert eng.metrics()["errors"] == []
    finally:
        eng.stop()
    assert journal_kinds(root) == ["start", "op", "op", "op", "op"]
    replicas = json.loads((root / "replicas.json").read_text())
    assert len(replicas) >= 3, replicas  # sinks of stats-sys, clean-sys and etl-sys at least
    assert all(a["expected"] > 0 and a["lost"] == a["duplicated"] == 0
               for a in replicas.values()), replicas


#: the driver of the second test: replicas only of tasks two dataflows use (U = 2), so a
#: second copy of a dataflow (sinks and all) replicates primaries that already ran, at its
#: cut; the driver dies with its JVM as soon as the batch holding that cut is committed,
#: before the next one can be
_MOVED = """
import os, signal, sys, time
from reuse.core.dataflow import parse_dataflow
from reuse.live import Engine
from reuse.runtime.common.files import read_batches
from reuse.testing import riot_flows
first = riot_flows("stats-sys")["stats-sys"]
again = parse_dataflow({**first.to_dict(), "id": "stats-sys-2"})
eng = Engine(root=sys.argv[1], rate=20, trigger_s=1.0, shards=2, poll_s=0.2, workload=None,
             k_safe=1, replicate_min_users=2)
eng.submit(first)
eng.wait_outputs("stats-sys", 3)
cut = eng.submit(again)["J"]
commits = os.path.join(sys.argv[1], "ckpt", "shared", "spark", "commits")
while True:  # Spark's commit too: a batch without one is run again, claims and all
    done = [b for b in read_batches(sys.argv[1]) if b["hi"] > cut]
    if done and os.path.exists(os.path.join(commits, str(done[0]["batch"]))):
        print("CUT", cut, len(done), done[0]["lo"], done[0]["hi"], flush=True)
        os.killpg(os.getpgid(0), signal.SIGKILL)
    time.sleep(0.005)
"""


def test_a_replica_moved_in_the_last_batch_before_a_death_resumes_warm(
        spark: Any, tmp_path: Path) -> None:
    """A replica made inside a batch starts at that batch's end, seeded with its primary's
    state there. When that batch is the last the driver completed, the resume re-enacts the
    replication at its cut and must still start the replica at the batch's end, from the
    state saved there (it once ran cold from the checkpoint: ``Deployment.resume_starts``)."""
    root = tmp_path / "run"
    said = _first_line_then_dead(_MOVED, root, kills_itself=True).split()
    assert said[:1] == ["CUT"], "the driver never saw the batch holding its cut"
    cut, batches, lo, hi = map(int, said[1:])
    # the case itself: the cut fell strictly inside the last batch the driver completed
    assert batches == 1 and lo < cut < hi, said
    eng = Engine.resume(root, poll_s=0.2, workload=None)
    try:
        rows = eng.run_trace([Op("submit", "etl-sys")], riot_flows("etl-sys"),
                             step_seconds=3.0)
        assert [(r["lost"], r["duplicated"]) for r in rows] == [(0, 0)]
        assert eng.metrics()["errors"] == []
    finally:
        eng.stop()
    replicas = json.loads((root / "replicas.json").read_text())
    # the shared sinks' replicas, started at the batch's end and checked from there
    assert any(a["window"][0] == hi for a in replicas.values()), replicas
    assert all(a["expected"] > 0 and a["lost"] == a["duplicated"] == 0
               for a in replicas.values()), replicas

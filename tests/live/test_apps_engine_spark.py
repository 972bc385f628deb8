"""``reuse.live.Engine`` across applications (issue 32: the live front with ``--replicas
apps``): two instances, each its own driver and Spark application, follow the engine's live
submits and removes (whose dataflows they learn from the run's flow book); a prepared trace
then ends the run, and every output since the engine started is checked against the
reference, as consumers read the streams and in each instance's own records."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest

from reuse.core.errors import ReuseError
from reuse.core.traces import Op
from reuse.live import AppsEngine, Engine
from reuse.testing import riot_flows

pytestmark = [pytest.mark.spark, pytest.mark.many_jvms]


def test_the_live_engine_across_applications_is_exact(tmp_path: Path) -> None:
    flows = riot_flows("stats-sys", "clean-sys", "etl-sys")
    eng = Engine(replicas="apps", k_safe=1, replicate_min_users=1, root=tmp_path / "run",
                 rate=20, trigger_s=1.0, poll_s=0.3, workload=None)
    assert isinstance(eng, AppsEngine)
    pids: list[int] = []
    try:
        a = eng.submit(flows["stats-sys"])
        b = eng.submit(flows["clean-sys"].to_dict())
        assert a["J"] <= b["J"]
        with pytest.raises(ReuseError, match="already submitted"):
            eng.submit(flows["stats-sys"])
        eng.wait_outputs("stats-sys", 3, timeout_s=120)
        eng.wait_outputs("clean-sys", 3, timeout_s=60)
        m = eng.metrics()
        pids = [i["pid"] for i in m["instances"]]
        assert len(pids) == 2 and m["counts"]["replica_tasks"] > 0  # U = 1: all replicated
        assert all(o["event"] is None and o["seq"] >= a["J"] for o in eng.outputs("stats-sys"))
        eng.remove("stats-sys")
        assert eng.submitted == ["clean-sys"]
        rows = eng.run_trace([Op("submit", "etl-sys")], {"etl-sys": flows["etl-sys"]},
                             step_seconds=4.0)
        assert [(r["op"], r["dag"], r["lost"], r["duplicated"]) for r in rows] == [
            ("submit", "etl-sys", 0, 0)]
    finally:
        eng.stop()
    assert not eng.running
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                   for p in pids)
    acc = json.loads((tmp_path / "run" / "accounting.json").read_text())
    # the consumers' view: every stream of every submission, the live ones included
    assert {s.split("@")[0] for s in acc["streams"]} == {"stats-sys", "clean-sys", "etl-sys"}
    assert all(s["lost"] == s["duplicated"] == 0 and s["observed"] > 0
               for s in acc["streams"].values())
    # each instance's own records equal the reference too (both run every task with U = 1)
    assert len(acc["instances"]) == 2
    assert all(i["lost"] == i["duplicated"] == 0 and i["observed"] > 0
               for i in acc["instances"].values())

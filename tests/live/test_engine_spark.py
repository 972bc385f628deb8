"""``reuse.live.Engine`` on real Spark, fed by a real Mosquitto: submit (a Dataflow, a dict, a
JSON file), watch the merge in the metrics and the view, read outputs, remove, stop."""

from __future__ import annotations

import copy
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from reuse.core.errors import ReuseError
from reuse.core.traces import Op
from reuse.live import Engine
from reuse.runtime.dataplane.publish import Publisher, Stream
from reuse.testing import riot_flows

pytestmark = pytest.mark.spark


def _until(cond: Any, timeout_s: float = 60.0) -> None:
    deadline = time.time() + timeout_s
    while not cond():
        assert time.time() < deadline, "timed out"
        time.sleep(0.2)


def test_live_engine_merge_outputs_unmerge(spark: Any, tmp_path: Path, mqtt_broker: str) -> None:
    flows = riot_flows("stats-sys", "clean-sys")
    (tmp_path / "clean.json").write_text(json.dumps(flows["clean-sys"].to_dict()))
    pub = Publisher(mqtt_broker, [Stream("SYS", "SYS")], rate=20).connect()
    publishing = threading.Thread(target=pub.run, daemon=True)
    publishing.start()
    eng = None
    try:
        eng = Engine(source=mqtt_broker, root=tmp_path / "run", rate=20, trigger_s=1.0,
                     shards=2, poll_s=0.2, match="semantic")
        a = eng.submit(flows["stats-sys"].to_dict())
        b = eng.submit(tmp_path / "clean.json")
        assert b["reused"], "clean-sys merges into stats-sys"
        # bad input: one-line errors, nothing changes
        with pytest.raises(ReuseError, match="already submitted"):
            eng.submit(flows["stats-sys"])
        with pytest.raises(ReuseError, match="no such dataflow file"):
            eng.submit(tmp_path / "missing.json")
        assert eng.submitted == ["stats-sys", "clean-sys"]
        eng.wait_outputs("stats-sys", 3)
        eng.wait_outputs("clean-sys", 3)
        view = eng.view(refresh_s=0.5)
        m = eng.metrics()
        shared = m["tasks"][m["tasks"]["reuse"] == 2]
        assert set(b["reused"]) <= set(shared["id"])
        assert {tuple(u) for u in shared["users"]} == {("clean-sys", "stats-sys")}
        assert set(m["dataflows"]["dag"]) == {"stats-sys", "clean-sys"}
        assert (m["tasks"]["shard"].isin([0, 1])).all()
        _until(lambda: eng.metrics()["tasks"]["events_per_s"].max() > 0)
        # the view's scene has the engine's merge: the shared tasks with a reuse count of 2
        snap = view.snapshot
        assert {t.id for t in snap.tasks.values() if t.reuse_count == 2}
        out = eng.outputs("clean-sys", n=5)
        assert len(out) == 5 and all(o["event"] is not None for o in out)
        # semantic match: a narrower clean-sys runs its range filter as a residual behind
        # clean-sys's running one, and the view marks it
        narrow = copy.deepcopy(flows["clean-sys"].to_dict())
        narrow["id"] = "narrow-clean-sys"
        for t in narrow["tasks"]:
            if t["type"] == "RangeFilter":
                t["config"]["valid_range"].update(temperature=[0.0, 30.0])
        n = eng.submit(narrow)
        assert "clean-sys.range" in n["reused"]
        view.refresh()
        residuals = {t.id: t.residual_of for t in view.snapshot.tasks.values() if t.residual}
        assert residuals == {"narrow-clean-sys.range": ("clean-sys.range", "range")}
        eng.remove("narrow-clean-sys")
        r = eng.remove("stats-sys")
        # the remaining dataflow's outputs keep arriving past the cut
        _until(lambda: max(o["seq"] for o in eng.outputs("clean-sys", n=1)) > r["R"] + 20)
        view.refresh()
        snap = view.snapshot
        assert snap.op is not None and snap.op.op == "remove"
        assert all(t.reuse_count <= 1 for t in snap.tasks.values())
        assert eng.metrics()["errors"] == []
        view.close()
        # a prepared trace on the same engine, checked against the reference on everything
        # the engine ran (the live operations above included)
        extra = riot_flows("etl-sys")
        rows = eng.run_trace([Op("submit", "etl-sys")], extra, step_seconds=3.0)
        assert [(r["op"], r["dag"], r["lost"], r["duplicated"]) for r in rows] == [
            ("submit", "etl-sys", 0, 0)]
        assert eng.ops[-1] == Op("submit", "etl-sys") and "etl-sys" in eng.submitted
    finally:
        if eng is not None:
            eng.stop()
        pub.halt()
        publishing.join(timeout=10)
        pub.close()
    assert eng is not None and not eng.running
    assert eng.runtime.query is not None and not eng.runtime.query.isActive
    with pytest.raises(ReuseError, match="stopped"):
        eng.submit(flows["stats-sys"])
    ledger = json.loads((tmp_path / "run" / "ledger.json").read_text())
    assert ledger["source"]["kind"] == "mqtt"
    assert a["J"] <= b["J"]

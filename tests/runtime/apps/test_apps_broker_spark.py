"""k-safety across applications, broker-fed, split and semantic, driven live (issue 32: the
five meet).

A publisher sends SYS events to a Mosquitto broker; ``reuse.live.Engine(replicas="apps",
k_safe=1, split=True, source="mqtt://...")`` (the live front of ``--replicas apps``) runs two
instances, each its own driver and Spark application with its running DAGs split over two
shards and merged by semantic matching (read back from the run's record by the resume),
reading the events the coordinator's one ingest appends to the run's Redis. One dataflow is
submitted live (its dataflow reaches the instances through the run's flow book) by a process
of its own, which is then killed with its process group: the engine's coordinator, its
ingest and the run's Redis die, the instances run on. ``Engine.resume``
takes the run up in this process (the run's Redis started again from its file, the MQTT
session taken over, the instances adopted by PID, the live submit known again), then a
prepared trace merges an identical dataflow and removes the first (an unmerge). As the
trace begins, one instance's driver is killed with its process group (as a machine's death
would take it); a replacement joins at a journal cut, warm, and reads the same bus from there.
The consumers' streams hold every expected record once (lost = duplicated = 0, against the
reference run on the events the bus recorded, the live submit's outputs included), every
instance's own records equal the reference from its first ``seq``, and the records carry the
publisher's stamps: the shards computed on its events. The engine's calls answer as
documented: a second submit of a running dataflow is a one-line error, the metrics name both
instances, the outputs are the consumers' records.
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

import pytest

from reuse.core.errors import ReuseError
from reuse.core.traces import Op
from reuse.live import AppsEngine, Engine
from reuse.runtime.dataplane.publish import Publisher, Stream

pytestmark = [pytest.mark.spark, pytest.mark.many_jvms]

RATE = 10.0
OPS = [Op("submit", "twin-b"), Op("remove", "twin-a")]  # after twin-a, submitted live
#: the engine's first driving process: start, submit twin-a live, wait for its outputs, READY
FIRST = """
import json, sys, time
from reuse.core.dataflow import parse_dataflow
from reuse.live import Engine
root, broker, flow = sys.argv[1], sys.argv[2], parse_dataflow(json.loads(sys.argv[3]))
eng = Engine("local[2]", broker, root=root, k_safe=1, replicas="apps", replicate_min_users=1,
             shards=2, split=True, trigger_s=1.0, poll_s=0.3, first_message_s=20, workload=None,
             match="semantic")
eng.submit(flow)
eng.wait_outputs(flow.id, 3, timeout_s=90)
print("READY", flush=True)
time.sleep(600)
"""


def test_split_broker_fed_instances_outlive_a_killed_driver(
        tmp_path: Path, twin_flows: dict[str, Any], mqtt_broker: str) -> None:
    from reuse.runtime.accounting import observed_records
    from reuse.runtime.apps.coordinator import Coordinator
    from reuse.runtime.dataplane.redis_bus import stop_orphan

    flows = {n: twin_flows[n] for n in ("twin-a", "twin-b")}
    root = tmp_path / "run"
    pub = Publisher(mqtt_broker, [Stream("SYS", "SYS")], rate=RATE).connect()
    publishing = threading.Thread(target=pub.run, daemon=True)
    killed: dict[str, Any] = {}

    def on_step(n: int, coord: Coordinator) -> None:
        if n != 1:
            return
        victim = next(c for c in coord.live() if c.spec.id == "i1")

        def kill() -> None:  # once it works (it ran a batch on an executor), mid-step
            deadline = time.time() + 90
            while time.time() < deadline:
                reg = {i.id: i for i in coord.registry.instances()}.get("i1")
                if reg is not None and reg.executors:
                    break
                time.sleep(0.2)
            time.sleep(2.0)
            killed.update(pid=victim.pid, ms=time.time() * 1000)
            os.killpg(victim.pid, signal.SIGKILL)

        killed["thread"] = threading.Thread(target=kill, daemon=True)
        killed["thread"].start()

    eng = None
    first = None
    try:
        publishing.start()
        first = subprocess.Popen([sys.executable, "-c", FIRST, str(root), mqtt_broker,
                                  json.dumps(flows["twin-a"].to_dict())], text=True,
                                 stdout=subprocess.PIPE, start_new_session=True)
        assert first.stdout is not None and first.stdout.readline().strip() == "READY"
        os.killpg(first.pid, signal.SIGKILL)  # the coordinator, its ingest and its Redis
        first.wait(timeout=30)
        time.sleep(2.0)  # the instances run on with nobody coordinating
        eng = Engine.resume(root, poll_s=0.3, workload=None)
        assert isinstance(eng, AppsEngine) and eng.submitted == ["twin-a"]
        with pytest.raises(ReuseError, match="already submitted"):
            eng.submit(flows["twin-a"].to_dict())
        eng.wait_outputs("twin-a", 3, timeout_s=90)
        assert all(o["event"] is None for o in eng.outputs("twin-a"))
        assert len(eng.metrics()["instances"]) == 2
        rows = eng.run_trace(OPS, flows, step_seconds=8.0, warmup_s=2.0, on_step=on_step)
        assert not eng.running  # a trace across applications ends the run, checked
    finally:
        if first is not None and first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
        if eng is not None:
            eng.stop()
        pub.halt()
        publishing.join(timeout=10)
        pub.close()
        if "thread" in killed:
            killed["thread"].join(timeout=5)
        apps_file = root / "apps.json"
        for inst in (json.loads(apps_file.read_text())["instances"]
                     if apps_file.exists() else []):  # whatever a failure left running
            try:
                os.killpg(inst["driver_pid"], signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        stop_orphan(root / "redis" / "redis.pid")  # a Redis the resume started, if it failed

    assert "pid" in killed, "i1 never ran a working batch to be killed in"
    assert [int(r["step"]) for r in rows] == [1, 2]
    assert sum(r["lost"] for r in rows) == 0 and sum(r["duplicated"] for r in rows) == 0, rows
    assert sum(r["failures"] for r in rows) >= 1, rows
    apps = json.loads((root / "apps.json").read_text())
    by_id = {i["id"]: i for i in apps["instances"]}
    assert by_id["i1"]["state"] == "dead" and by_id["i1"]["driver_pid"] == killed["pid"]
    join = apps["replacements"][0]
    assert join["event"] == "join" and join["dead"] == "i1", apps["replacements"]
    acc = json.loads((root / "accounting.json").read_text())
    assert any(s["expected"] > 0 for s in acc["streams"].values()), acc["streams"]
    for i, a in acc["instances"].items():  # each instance's own records, from its first seq
        assert a["expected"] > 0 and a["lost"] == a["duplicated"] == 0, (i, a)
    # the shards read the publisher's events from the bus (its t0 stamps them): none generated
    home = root / "apps" / "i0"
    sinks = {rid for d in json.loads((home / "ledger.json").read_text())["dags"].values()
             for rid in d["sinks"].values()}
    recs = [r for rid in sinks for r in observed_records(home, rid)]
    assert recs and all(r["ts"] == pub.t0_ms + round(r["q"] * 1000 / RATE) for r in recs)

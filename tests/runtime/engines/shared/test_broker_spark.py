"""The shared query fed by a real MQTT broker (issue 23): Mosquitto, the publisher, the ingest
into Redis, shards reading their ranges from the bus.

One run: a merge, a killed Python worker mid-batch, the run's Redis killed (and restarted by
its keeper), an unmerge. The outputs must equal the
reference execution on the events the bus recorded (lost = duplicated = 0), no task may
output outside its window, and a malformed message is counted, not appended. The run matches
semantically and keeps a replica of every shared task (``--k-safe 1``): broker input,
k-safety and semantic matching in one run (issue 32's pairs).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from reuse.runtime.accounting import account, dag_outputs, leaked_records, observed_records
from reuse.runtime.dataplane.broker_feed import load_recorded
from reuse.runtime.dataplane.publish import Publisher, Stream
from reuse.runtime.engines.shared.engine import InplaceRuntime
from reuse.runtime.spec import RunSpec
from reuse.testing import kill_workers_until_failure, riot_flows

pytestmark = pytest.mark.spark

RATE = 20.0


def _publish_bad(url: str) -> None:
    import paho.mqtt.client as mqtt

    from reuse.runtime.dataplane.mqtt import parse_broker_url

    b = parse_broker_url(url)
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    c.connect(b.host, b.port)
    c.loop_start()
    c.publish("sensors/SYS", b"not json", qos=1).wait_for_publish(5)
    c.disconnect()
    c.loop_stop()


def _subscribe(url: str, got: list[tuple[str, bytes]]) -> Any:
    import paho.mqtt.client as mqtt

    from reuse.runtime.dataplane.mqtt import parse_broker_url

    b = parse_broker_url(url)
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    ready = threading.Event()
    c.on_message = lambda _c, _u, msg: got.append((msg.topic, msg.payload))
    c.on_subscribe = lambda *_a: ready.set()
    c.connect(b.host, b.port)
    c.loop_start()
    c.subscribe("out/#", qos=1)
    assert ready.wait(10)
    return c


def test_broker_fed_merge_kill_unmerge(spark: Any, tmp_path: Path, mqtt_broker: str) -> None:
    flows = riot_flows("stats-sys", "clean-sys")
    received: list[tuple[str, bytes]] = []
    listener = _subscribe(mqtt_broker, received)
    pub = Publisher(mqtt_broker, [Stream("SYS", "SYS")], rate=RATE).connect()
    publishing = threading.Thread(target=pub.run, daemon=True)
    root = tmp_path / "run"
    rt: Any = None
    killed: list[int] = []
    try:
        publishing.start()
        rt = InplaceRuntime(spark, RunSpec.of(root=root, shards=2, rate=RATE, trigger_s=1.0,
                                              source=mqtt_broker, first_message_s=20,
                                              k_safe=1, match="semantic"))
        rt.start_sources(["SYS"])
        s0 = rt.start_seq
        rt.submit(flows["stats-sys"])
        _publish_bad(mqtt_broker)
        while rt.qhw() < s0 + 60:
            rt.poll()
            time.sleep(0.05)
        merged = rt.submit(flows["clean-sys"])
        assert merged["reused"], "clean-sys reuses stats-sys's source and parse"
        assert set(rt.deployment.replicas()) >= set(merged["reused"]), "shared: replicated"
        while rt.qhw() < merged["J"] + 40:
            rt.poll()
            time.sleep(0.05)
        killed = kill_workers_until_failure(
            rt, lambda: rt.handler is not None and rt.handler.in_batch)
        # the run's own Redis (the ingest's bus, the shards' input) killed by PID: started
        # again from its file, and the run goes on (issue 34)
        (redis_pid,) = rt.broker.pids
        os.kill(redis_pid, signal.SIGKILL)
        hw = rt.qhw()
        while rt.qhw() < hw + 40:
            rt.poll()
            time.sleep(0.05)
        removed = rt.remove("stats-sys")
        rt.wait_processed(removed["R"] + 60, timeout_s=120)
        limit = rt.qhw() + 1
        ledger = rt.ledger()
    finally:
        if rt is not None:
            rt.close()  # publishes the last batches' outputs
        time.sleep(0.5)
        listener.disconnect()
        listener.loop_stop()
        pub.halt()
        publishing.join(timeout=10)
        pub.close()
    assert killed and rt.failures, "killing workers mid-batch never failed the query"
    src = ledger["source"]
    assert src["kind"] == "mqtt"
    (restart,) = src["restarts"]
    assert restart["service"] == "redis" and restart["back_ms"] is not None, restart
    counts = src["counts"]["sensors/SYS"]
    assert counts["malformed"] == 1 and "JSON" in counts["last_error"], counts
    recorded = load_recorded(src["recorded"])["SYS"]
    assert all(s in recorded for s in range(s0, limit)), "the bus holds every published seq"
    acc = account(root, ledger, limit)
    assert set(acc) == {"stats-sys", "clean-sys"}
    for dag, a in acc.items():
        assert a["expected"] > 0 and (a["lost"], a["duplicated"]) == (0, 0), (dag, a)
    assert leaked_records(root, ledger, limit) == {}
    # every output was published once on out/<dataflow>/<sink>, none outside its window
    seen = dag_outputs(root, ledger, limit)
    for dag in ("stats-sys", "clean-sys"):
        got = Counter((r["q"], r["d"]) for t, p in received if t == f"out/{dag}/publish"
                      for r in map(json.loads, p.splitlines()) if r["q"] < limit)
        assert got == seen[dag]["publish"] and got, dag
    # the shards read the publisher's events (its t0 stamps them), they did not generate them
    recs = [r for info in ledger["dags"].values() for rid in info["sinks"].values()
            for r in observed_records(root, rid)]
    stamped = sum(r["ts"] == pub.t0_ms + round(r["q"] * 1000 / RATE) for r in recs)
    assert recs and stamped == len(recs), (stamped, len(recs))

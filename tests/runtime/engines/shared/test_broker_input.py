"""The driver's side of a broker-fed shared query on a real Mosquitto and Redis (no Spark):
the ready mark follows the sources the deployment reads, and stalls are one-line errors."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from reuse.runtime.dataplane.mqtt import MqttError
from reuse.runtime.dataplane.publish import Publisher, Stream
from reuse.runtime.engines.shared.broker_input import BrokerInput

pytestmark = pytest.mark.realtime  # waits on its own server, thread or process


def _until(cond, timeout_s: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.time() + timeout_s
    while not cond():
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


def test_ready_mark_and_stall(tmp_path: Path, mqtt_broker: str) -> None:
    pytest.importorskip("redis")
    needed: dict[str, int] = {}
    inp = BrokerInput(tmp_path, mqtt_broker, needed=lambda: dict(needed), stall_s=1.0,
                      first_message_s=10)
    pub = Publisher(mqtt_broker, [Stream("SYS", "SYS")], rate=50).connect()
    th = threading.Thread(target=pub.run, daemon=True)
    try:
        th.start()
        start = inp.wait_first() + 1
        inp.start(start)
        _until(lambda: inp.ready > start + 20)  # nothing needed: the mark follows arrivals
        # a restarted query's start() writes the mark from the engine's thread while this
        # input's own thread updates it: for 2 s both at once, and no write fails (one
        # temporary file between them failed a loaded suite's rename, 2026-11-28)
        until = time.time() + 2.0
        while time.time() < until:
            inp.start(start)
        inp.check()
        needed["SYS"] = 0
        mark = inp.ready
        _until(lambda: inp.ready > mark + 10)
        assert inp.ready <= inp.bound() + 1  # never past what arrived
        inp.check()
        # a dataflow now reads TAXI, which nobody publishes: the mark waits for it, and once
        # it has waited stall_s while SYS went on, check() says which topic
        needed["TAXI"] = inp.ready
        held = inp.ready
        time.sleep(1.5)
        assert inp.ready == held
        # said once SYS went on for stall_s: at once on an idle machine; a starved one (the
        # README command runs this at nice 19 beside two Spark lanes) may take longer
        said: list[str] = []

        def stalled() -> bool:
            try:
                inp.check()
            except MqttError as exc:
                said.append(str(exc))
                return True
            return False

        _until(stalled, timeout_s=30)
        assert re.search(r"no new message on sensors/TAXI .*none yet", said[-1]), said
        assert inp.ready == held and int(inp.ready_file.read_text()) == held
        # the publisher stops: every source silent is no error (it may have finished, and the
        # engine then works off what arrived); the TAXI stall above was
        del needed["TAXI"]
        pub.halt()
        th.join(timeout=5)
        time.sleep(1.5)
        inp.check()
    finally:
        pub.halt()
        th.join(timeout=5)
        pub.close()
        counts = inp.close()
    assert counts["sensors/SYS"].appended > 0 and counts["sensors/SYS"].malformed == 0


def test_no_publisher_is_one_line(tmp_path: Path, mqtt_broker: str) -> None:
    pytest.importorskip("redis")
    inp = BrokerInput(tmp_path, mqtt_broker, needed=dict, first_message_s=0.5)
    try:
        with pytest.raises(MqttError, match="no message on sensors/# .* is a publisher running"):
            inp.wait_first()
    finally:
        inp.close()

"""A hole the broker lost is asked for by the ingest and sent again by the publisher (issue 34:
the keeper test lost ``seq`` sent earlier than any rewind covers)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from reuse.runtime.dataplane.bus import FileBus
from reuse.runtime.dataplane.frames import decode_frame
from reuse.runtime.dataplane.ingest import Ingest
from reuse.runtime.dataplane.mqtt import bus_topic, parse_broker_url
from reuse.runtime.dataplane.publish import Publisher, Stream, message
from reuse.runtime.dataplane.resend import Schedule, encode_request, resend_topic

pytestmark = pytest.mark.realtime  # waits on its own server, thread or process


def test_a_schedule_gives_each_seq_the_stamp_it_was_sent_with() -> None:
    s = Schedule()
    s.add(5, 100, 10.0)
    s.add(5, 200, 20.0)  # replaced before anything went out
    s.add(9, 900, 50.0)
    assert [s.at(q) for q in (4, 5, 8, 9, 10 ** 9)] == [None, (200, 20.0), (200, 20.0),
                                                        (900, 50.0), (900, 50.0)]


def _raw_client(url: str):  # type: ignore[no-untyped-def]
    import paho.mqtt.client as mqtt

    b = parse_broker_url(url)
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    b.authenticate(c)
    c.connect(b.host, b.port)
    c.loop_start()
    return c


def test_a_lost_seq_is_asked_for_and_sent_again_as_it_was(tmp_path: Path,
                                                          mqtt_broker: str) -> None:
    """The publisher sends seq 0-9 while nobody listens (the broker drops them, as a killed one
    would); seq 0, 1 and 3 then reach the ingest another way. The hole at 2 is asked for, the
    publisher generates seq 2 again with its first stamp, and the bus holds 0-3 byte for byte.
    Requests that are garbage, for another source or for what was never sent change nothing."""
    sys_ = Stream("SYS", "SYS")
    pub = Publisher(mqtt_broker, [sys_], rate=500.0).connect()
    bus = FileBus(tmp_path / "bus")
    ingest = Ingest(bus, mqtt_broker, flush_s=0.05, gap_s=20.0, resend_s=0.2)
    raw = _raw_client(mqtt_broker)
    try:
        pub.run(10 / 500)
        assert pub.wait_acked()  # at the broker, with no subscriber: dropped
        first = {q: message(sys_, q, pub.t0_ms, 500.0) for q in range(4)}
        ingest.start()
        for topic, payload in [(resend_topic("SYS"), b"{not json"),
                               (resend_topic("GRID"), encode_request(0, 3)),
                               (resend_topic("SYS"), encode_request(50, 60))]:
            raw.publish(topic, payload, qos=1).wait_for_publish(5)
        for q in (0, 1, 3):
            raw.publish("sensors/SYS", first[q], qos=1).wait_for_publish(5)
        deadline = time.time() + 15
        while time.time() < deadline:
            c = ingest.counts().get("sensors/SYS")
            if c is not None and c.last_seq == 3 and c.pending == 0:
                break
            time.sleep(0.05)
        counts = ingest.stop()["sensors/SYS"]
        deadline = time.time() + 5
        while pub.bad_requests < 1 and time.time() < deadline:  # the garbage went first
            time.sleep(0.02)
    finally:
        raw.disconnect()
        raw.loop_stop()
        report = pub.close()
    assert counts.missed == 0 and counts.appended == 4 and counts.last_seq == 3
    assert ingest.requests >= 1
    assert pub.resent >= 1 and pub.bad_requests == 1 and report.resent == pub.resent and "not JSON" in pub.last_bad_request
    lines = [v for k, f in bus.read(bus_topic("SYS"), "", "\uffff")
             for v in decode_frame(f, topic=bus_topic("SYS"), key=k).values]
    assert [json.loads(v)["seq"] for v in lines] == [0, 1, 2, 3]
    assert [v.encode() for v in lines] == [first[q] for q in range(4)]

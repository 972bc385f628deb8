"""The raw MQTT load of benchmarks/broker_rate.py: packets as bytes, the bulk parser on streams
cut anywhere, and a short flood through a real mosquitto (to its own subscriber, and to an
ingest appending to a FileBus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reuse.runtime.dataplane.bus import FileBus
from reuse.runtime.dataplane.frames import decode_frame
from reuse.runtime.dataplane.ingest import Ingest
from reuse.runtime.dataplane.mqtt import MqttError, bus_topic, encode_message
from reuse.runtime.dataplane.mqtt_load import (
    acks_for,
    flood,
    puback_packet,
    publish_packet,
    remaining_length,
    scan_packets,
)

pytestmark = pytest.mark.realtime  # waits on its own server, thread or process


def test_a_long_publish_has_a_multi_byte_length() -> None:
    payload = b"x" * 20_000
    pk = publish_packet("sensors/SYS", payload, 65535)
    assert pk[0] == 0x32 and pk[1:4] == remaining_length(2 + 11 + 2 + 20_000)
    (first, a, b), = scan_packets(pk)[0]
    assert (first, b) == (0x32, len(pk)) and pk[a:b].endswith(payload)
    assert acks_for(pk, [(first, a, b)]) == (1, puback_packet(65535))


@pytest.mark.parametrize(("kw", "why"), [
    ({"packet_id": 0}, "packet id 0 is not in 1..65535"),
    ({"packet_id": 1, "qos": 2}, "QoS 2 is not supported"),
])
def test_bad_packets_are_refused(kw: dict, why: str) -> None:
    with pytest.raises(MqttError, match=why):
        publish_packet("t", b"", **kw)


def test_a_length_over_four_bytes_is_malformed() -> None:
    with pytest.raises(MqttError, match="remaining length over 4 bytes"):
        scan_packets(b"\x30\xff\xff\xff\xff\x01")


@given(sizes=st.lists(st.integers(0, 300), min_size=1, max_size=20),
       cuts=st.lists(st.integers(1, 50), min_size=1, max_size=10))
def test_a_stream_cut_anywhere_yields_every_packet_once(sizes: list[int], cuts: list[int]
                                                        ) -> None:
    packets = [publish_packet(f"sensors/S{i % 3}", bytes([i % 256]) * n, i + 1)
               for i, n in enumerate(sizes)]
    stream = b"".join(packets)
    buf, got, acks, at, k = bytearray(), 0, b"", 0, 0
    while at < len(stream):  # feed it in pieces, as recv() returns them
        step = cuts[k % len(cuts)]
        k += 1
        buf += stream[at:at + step]
        at += step
        pk, pos = scan_packets(buf)
        n, a = acks_for(buf, pk)
        del buf[:pos]
        got, acks = got + n, acks + a
    assert not buf and got == len(packets)
    assert acks == b"".join(puback_packet(i + 1) for i in range(len(packets)))


def test_flood_parameters_are_checked() -> None:
    with pytest.raises(MqttError, match="more messages than its window"):
        flood("mqtt://127.0.0.1:1", [("sensors/A", b"x")] * 10, seconds=1.0, window=10)
    with pytest.raises(MqttError, match="at most 65535 to cycle"):
        flood("mqtt://127.0.0.1:1", [("sensors/A", b"x")] * 70_000, seconds=1.0)


def events(n: int) -> list[tuple[str, bytes]]:
    return [(f"sensors/{src}", encode_message({"src": src, "seq": q, "ts": q,
                                               "payload": f"{src}:{q}" * 20}))
            for q in range(n) for src in ("A", "B")]


def test_flood_delivers_everything_it_sent(mqtt_broker: str) -> None:
    r = flood(mqtt_broker, events(300), seconds=0.5, window=100)
    assert r.sent > 600  # it cycled
    assert r.delivered == r.acked == r.sent and r.rate > 0 and r.cpu_s > 0


def test_flood_into_an_ingest_appends_every_event_in_order(mqtt_broker: str, tmp_path: Path
                                                           ) -> None:
    bus = FileBus(tmp_path / "bus")
    ing = Ingest(bus, mqtt_broker, flush_s=0.05).start()
    try:
        r = flood(mqtt_broker, events(2000), seconds=30.0, cycle=False, window=200,
                  delivered=lambda: sum(c.received for c in ing.counts().values()))
    finally:
        counts = ing.stop()
    assert r.sent == r.delivered == 4000  # every message once, then it stopped
    assert {t: (c.appended, c.stale, c.missed) for t, c in counts.items()} == {
        "sensors/A": (2000, 0, 0), "sensors/B": (2000, 0, 0)}
    for src in "AB":
        topic = bus_topic(src)
        seqs = [json.loads(v)["seq"] for k, data in bus.read(topic, "", bus.latest(topic))
                for v in decode_frame(data, topic=topic, key=k).values]
        assert seqs == list(range(2000))

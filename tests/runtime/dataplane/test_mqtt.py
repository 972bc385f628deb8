"""The MQTT path as plain data: broker URLs, topic names, decoding, and the ingest into a FileBus
(its ``receive`` is what the MQTT callback calls, so no broker is needed here; the broker-fed
ingest is tested in tests/cli/test_broker.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reuse.runtime.common.execution import source_event
from reuse.runtime.dataplane.bus import FileBus
from reuse.runtime.dataplane.frames import decode_frame
from reuse.runtime.dataplane.mqtt import (
    BrokerUrl,
    Ingest,
    Malformed,
    Message,
    MqttError,
    bus_topic,
    connect_error,
    decode_message,
    encode_message,
    parse_broker_url,
    source_of,
    topic_of,
)


@pytest.mark.parametrize(("url", "host", "port"), [
    ("mqtt://127.0.0.1:1884", "127.0.0.1", 1884),
    ("mqtt://localhost", "localhost", 1883),
    ("mqtt://broker.example/", "broker.example", 1883),
    ("  mqtt://[::1]:1999 ", "::1", 1999),
])
def test_broker_urls(url: str, host: str, port: int) -> None:
    b = parse_broker_url(url)
    assert (b.host, b.port) == (host, port)
    assert parse_broker_url(str(b)) == b


@pytest.mark.parametrize(("url", "why"), [
    ("tcp://127.0.0.1:1883", "the scheme must be mqtt://"),
    ("127.0.0.1:1883", "the scheme must be mqtt://"),
    ("mqtt://:1883", "it has no host"),
    ("mqtt://h:0", "the port must be a number in 1..65535"),
    ("mqtt://h:70000", "the port must be a number in 1..65535"),
    ("mqtt://h:port", "the port must be a number in 1..65535"),
    ("mqtt://u@h:1883", "give both a user and a password (mqtt://user:password@...), or neither"),
    ("mqtt://h:1883/sensors", "it must not have a path, query or fragment"),
    ("mqtt://h:1883?x=1", "it must not have a path, query or fragment"),
])
def test_bad_broker_urls_are_one_line_errors(url: str, why: str) -> None:
    with pytest.raises(MqttError) as e:
        parse_broker_url(url)
    assert str(e.value) == f"bad broker URL {url!r}: {why} (mqtt://host:port)"


def test_connect_errors_name_the_broker() -> None:
    b = BrokerUrl("127.0.0.1", 1999)
    assert "start one with reuse broker start --port 1999" in str(
        connect_error(b, ConnectionRefusedError(111, "refused")))
    assert str(connect_error(BrokerUrl("far", 1), TimeoutError("timed out"))) == (
        "cannot connect to the MQTT broker at mqtt://far:1: timed out")


@given(st.text(min_size=1).filter(lambda s: not any(c in s for c in "/+#\x00")))
def test_topics_and_sources_are_inverse(source: str) -> None:
    assert source_of(topic_of(source)) == source


@pytest.mark.parametrize("source", ["", "a/b", "a+", "#", "x\x00"])
def test_names_a_topic_cannot_carry(source: str) -> None:
    with pytest.raises(MqttError):
        topic_of(source)
    with pytest.raises(MqttError):
        source_of("sensors/" + source)


def test_a_message_is_the_generated_event_as_the_replay_serialises_it() -> None:
    ev = source_event("S1", "opmw-source", 7, 1000, 10.0)
    # reuse.runtime.dataplane.sources' replay writes json.dumps(ev, separators=(",", ":"))
    assert encode_message(ev) == json.dumps(ev, separators=(",", ":")).encode()
    got = decode_message("sensors/S1", encode_message(ev))
    assert isinstance(got, Message)
    assert (got.source, got.seq, dict(got.event)) == ("S1", 7, ev)
    assert bus_topic(got.source) == "src:S1"


GOOD = {"src": "S", "seq": 1, "ts": 5, "payload": "p"}


@pytest.mark.parametrize(("topic", "payload", "reason"), [
    ("other/S", GOOD, "topic 'other/S' is not sensors/<source>"),
    ("sensors/S/x", GOOD, "source name 'S/x' must not contain '/'"),
    ("sensors/S", b"\xff\xfe", "not UTF-8"),
    ("sensors/S", b"{nope", "not JSON: '{nope'"),
    ("sensors/S", b"[1, 2]", "not a JSON object"),
    ("sensors/S", {**GOOD, "seq": None}, "'seq' is NoneType, not int"),
    ("sensors/S", {**GOOD, "seq": True}, "'seq' is bool, not int"),
    ("sensors/S", {**GOOD, "seq": 1.5}, "'seq' is float, not int"),
    ("sensors/S", {k: v for k, v in GOOD.items() if k != "ts"}, "no 'ts' field"),
    ("sensors/S", {k: v for k, v in GOOD.items() if k != "payload"}, "no 'payload' field"),
    ("sensors/S", {**GOOD, "src": "T"}, "src 'T' is not the topic's source 'S'"),
    ("sensors/S", {**GOOD, "seq": -1}, "seq -1 is negative"),
])
def test_malformed_messages_say_why(topic: str, payload: object, reason: str) -> None:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    got = decode_message(topic, raw)
    assert isinstance(got, Malformed) and not got.ok
    assert reason in got.reason
    assert "\n" not in str(got) and str(got).startswith(f"topic '{topic}': malformed message: ")


def msg(src: str, seq: int) -> bytes:
    return encode_message(source_event(src, "synthetic", seq, 0, 10.0))


def events(bus: FileBus, topic: str) -> list[tuple[str, int, list[str]]]:
    """(key, hw, events) of every message of a bus topic, in key order."""
    out = []
    for key, frame in bus.read(topic, "", "\uffff"):
        f = decode_frame(frame, topic=topic, key=key)
        out.append((key, f.hw, list(f.values)))
    return out


def test_ingest_appends_each_topic_in_arrival_order_as_frames(tmp_path: Path) -> None:
    bus = FileBus(tmp_path)
    ing = Ingest(bus, "mqtt://127.0.0.1", launch=3)
    for seq in range(3):
        ing.receive("sensors/A", msg("A", seq))
        ing.receive("sensors/B", msg("B", seq))
    assert ing.counts()["sensors/A"].pending == 3 and bus.size("src:A") == 0
    assert ing.flush() == 6
    ing.receive("sensors/A", msg("A", 3))
    assert ing.flush() == 1 and ing.flush() == 0
    assert events(bus, "src:A") == [
        ("000003-000000001", 2, [msg("A", s).decode() for s in range(3)]),
        ("000003-000000002", 3, [msg("A", 3).decode()])]
    assert events(bus, "src:B") == [("000003-000000001", 2, [msg("B", s).decode()
                                                              for s in range(3)])]
    c = ing.counts()["sensors/A"]
    assert (c.received, c.appended, c.pending, c.last_seq, c.malformed) == (4, 4, 0, 3, 0)


def test_malformed_stale_and_missed_are_counted_not_appended(tmp_path: Path) -> None:
    bus = FileBus(tmp_path)
    ing = Ingest(bus, "mqtt://127.0.0.1")
    ing.receive("sensors/A", msg("A", 0))
    ing.receive("sensors/A", b"garbage")
    ing.receive("sensors/A", msg("A", 0))  # a redelivery
    ing.receive("sensors/A", msg("A", 4))  # 1..3 never came
    ing.receive("sensors/zz/top", msg("A", 5))  # not a source topic
    assert ing.flush() == 1  # 0; 4 waits for the hole before it to be filled
    assert ing.flush(final=True) == 1  # given up: 4 is written, 1..3 are missed
    assert [e for _, _, evs in events(bus, "src:A") for e in evs] == [
        msg("A", 0).decode(), msg("A", 4).decode()]
    counts = ing.counts()
    a = counts["sensors/A"]
    assert (a.received, a.appended, a.malformed, a.stale, a.missed) == (4, 2, 1, 1, 3)
    assert a.last_error == "not JSON: 'garbage'"
    assert counts["sensors/zz/top"].malformed == 1
    assert counts["sensors/zz/top"].to_dict()["appended"] == 0


class FailingBus(FileBus):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.fail = True

    def publish(self, topic: str, key: str, frame: bytes) -> None:
        if self.fail:
            raise OSError("disk full")
        super().publish(topic, key, frame)


def test_a_failed_append_keeps_the_messages_for_the_next_flush(tmp_path: Path) -> None:
    bus = FailingBus(tmp_path)
    ing = Ingest(bus, "mqtt://127.0.0.1")
    ing.receive("sensors/A", msg("A", 0))
    with pytest.raises(OSError):
        ing.flush()
    ing.receive("sensors/A", msg("A", 1))
    assert ing.counts()["sensors/A"].pending == 2
    bus.fail = False
    assert ing.flush() == 2
    assert [e for _, _, evs in events(bus, "src:A") for e in evs] == [
        msg("A", 0).decode(), msg("A", 1).decode()]
    with pytest.raises(MqttError, match="1 messages were not written"):
        bus.fail = True
        ing.receive("sensors/A", msg("A", 2))
        ing.stop()


@pytest.mark.parametrize(("kw", "why"), [({"launch": -1}, "launch"), ({"flush_s": 0}, "flush_s")])
def test_ingest_parameters_are_checked(tmp_path: Path, kw: dict, why: str) -> None:
    with pytest.raises(MqttError, match=why):
        Ingest(FileBus(tmp_path), "mqtt://127.0.0.1", **kw)


def test_an_ingest_told_where_streams_begin_holds_what_precedes_the_first_arrival(
        tmp_path: Path) -> None:
    """Started before its publisher (``first_seq=0``), an ingest whose first message is seq 2
    waits for 0 and 1 as for any hole, and counts them missed when it gives them up; without
    ``first_seq`` the stream begins at 2 (a live stream joined)."""
    m = lambda q: f'{{"src":"S1","seq":{q},"ts":0,"payload":""}}'.encode()  # noqa: E731
    told = Ingest(FileBus(tmp_path / "a"), "mqtt://127.0.0.1:1883", first_seq=0)
    joined = Ingest(FileBus(tmp_path / "b"), "mqtt://127.0.0.1:1883")
    for ing in (told, joined):
        ing.receive("sensors/S1", m(2))
    assert told.flush() == 0 and joined.flush() == 1  # 2 waits for 0 and 1
    told.receive("sensors/S1", m(0))
    assert told.flush() == 1  # 0 written; 2 still waits for 1
    assert told.flush(final=True) == 1 and told.counts()["sensors/S1"].missed == 1
    assert joined.counts()["sensors/S1"].missed == 0

"""The MQTT path as plain data: broker URLs, topic names and one message's decoding."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reuse.runtime.common.execution import source_event
from reuse.runtime.dataplane.mqtt import (
    BrokerUrl,
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

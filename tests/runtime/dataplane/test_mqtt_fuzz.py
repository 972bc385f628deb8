"""Fuzzing the MQTT ingest's message parsing (issue 34, item 3), without a broker.

:func:`decode_message` is the ingest's pure parsing function and :meth:`Ingest.receive` the MQTT
callback's body. Generated messages (random bytes, truncated and huge ones, wrong types, NaN,
deep nesting, repeated and rewound ``seq``, unknown sources and topics, binary and lone
surrogates in JSON fields) must each be counted once (appended, malformed or stale), never
raise, and only well-formed messages with a new ``seq`` reach the bus, in ``seq`` order.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reuse.runtime.dataplane.frames import decode_frame
from reuse.runtime.dataplane.ingest import Ingest
from reuse.runtime.dataplane.mqtt import Malformed, Message, decode_message

FUZZ = settings(settings.get_profile("fuzz"))
SOURCES = ("S1", "S2")

TOPICS = (st.sampled_from([f"sensors/{s}" for s in SOURCES] * 4
                          + ["sensors/S3", "sensors/", "sensors/a/b", "sensors/+", "other/S1",
                             "sensors/S1\x00", "", "sensors/é"])
          | st.text(max_size=12))
LEAVES = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
          | st.binary(max_size=8).map(lambda b: b.decode("latin-1"))
          | st.sampled_from([math.nan, math.inf, "\ud800", "\x00\x01\xff", 2 ** 70]))
JSON = st.recursive(LEAVES, lambda c: st.lists(c, max_size=3)
                    | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=10)


@st.composite
def payloads(draw: st.DrawFn, topic: str) -> bytes:
    """An event for ``topic``'s source (its ``seq`` anywhere: repeated, rewound, skipped),
    with a field changed, or a garbage message."""
    src = topic.removeprefix("sensors/")
    event: dict[str, Any] = {"src": src, "seq": draw(st.integers(-2, 12)),
                             "ts": draw(st.integers(0, 10 ** 13)),
                             "payload": draw(st.text(max_size=30))}
    kind = draw(st.sampled_from(["ok"] * 8 + ["field", "drop", "extra", "cut", "bytes", "deep",
                                              "huge", "nan", "bigint", "notobject"]))
    if kind == "field":
        event[draw(st.sampled_from(sorted(event)))] = draw(JSON)
    elif kind == "drop":
        event.pop(draw(st.sampled_from(sorted(event))))
    elif kind == "extra":
        event[draw(st.text(max_size=5))] = draw(JSON)
    elif kind == "bytes":
        return draw(st.binary(max_size=120))
    elif kind == "deep":
        n = draw(st.sampled_from([50, 101, 3000, 10 ** 5]))
        return b'{"src":"S1","seq":1,"ts":0,"payload":' + b"[" * n + b"]" * n + b"}"
    elif kind == "huge":
        event["payload"] = "x" * draw(st.sampled_from([10 ** 4, 10 ** 6]))
    elif kind == "nan":
        return (b'{"src":"S1","seq":' + draw(st.sampled_from([b"NaN", b"1e999", b"-Infinity"]))
                + b',"ts":0,"payload":""}')
    elif kind == "bigint":
        return b'{"src":"S1","seq":' + b"9" * 5000 + b',"ts":0,"payload":""}'
    elif kind == "notobject":
        return json.dumps(draw(JSON)).encode("utf-8", "surrogatepass")
    raw = json.dumps(event, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    if kind == "cut":
        raw = raw[:draw(st.integers(0, max(0, len(raw) - 1)))]
    return raw


@st.composite
def messages(draw: st.DrawFn) -> list[tuple[str, bytes]]:
    out = []
    for _ in range(draw(st.integers(1, 12))):
        topic = draw(TOPICS)
        out.append((topic, draw(payloads(topic))))
    if out and draw(st.booleans()):  # redelivered: the same message again
        out.append(out[draw(st.integers(0, len(out) - 1))])
    return out


class Recorder:
    """A bus that keeps what is published (the ingest only publishes)."""

    def __init__(self) -> None:
        self.frames: list[tuple[str, str, bytes]] = []

    def publish(self, topic: str, key: str, frame: bytes) -> None:
        self.frames.append((topic, key, frame))


@FUZZ
@given(topic=TOPICS, data=st.data())
def test_decode_message_never_raises(topic: str, data: st.DataObject, fuzz_count: Any) -> None:
    payload = data.draw(payloads(topic))
    fuzz_count("MQTT decode_message")
    got = decode_message(topic, payload, SOURCES)
    assert isinstance(got, (Message, Malformed))
    if isinstance(got, Malformed):
        assert "\n" not in str(got) and len(str(got)) < 500
    else:
        assert got.source in SOURCES and got.seq >= 0
        got.text.encode("utf-8")  # what reaches the bus is text


@FUZZ
@given(msgs=messages())
def test_ingest_counts_every_message_and_appends_only_good_ones(
        msgs: list[tuple[str, bytes]], fuzz_count: Any) -> None:
    bus = Recorder()
    ing = Ingest(bus, "mqtt://127.0.0.1:1883", sources=SOURCES)  # type: ignore[arg-type]
    good: dict[str, list[int]] = {}
    for topic, payload in msgs:
        fuzz_count("MQTT Ingest.receive")
        before = ing.counts().get(topic)
        got = ing.receive(topic, payload)
        c = ing.counts()[topic]
        assert c.received == c.appended + c.malformed + c.stale
        assert c.received == (before.received if before else 0) + 1
        if isinstance(got, Message):
            # nothing is written before the flush below, so every seq is taken once, in
            # any order, and written sorted
            good.setdefault(got.source, [])
            good[got.source] = sorted({*good[got.source], got.seq})
        else:
            assert c.malformed == (before.malformed if before else 0) + 1
    ing.flush(final=True)
    appended: dict[str, list[int]] = {}
    for bus_topic, key, frame in bus.frames:
        f = decode_frame(frame, topic=bus_topic, key=key)
        for text in f.values:
            event = json.loads(text)
            appended.setdefault(event["src"], []).append(event["seq"])
    assert appended == {s: v for s, v in good.items() if v}
    assert all(v == sorted(set(v)) for v in appended.values())  # increasing: no stale append


REQUEST_TOPICS = (st.sampled_from(["reuse/resend/S1", "reuse/resend/", "reuse/resend/a/b",
                                   "reuse/resend/+", "sensors/S1", ""]) | st.text(max_size=20))


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    """A resend request with its ends anywhere (reversed, negative, huge, bool, float), or
    garbage."""
    kind = draw(st.sampled_from(["ok", "ok", "field", "drop", "bytes", "deep", "notobject"]))
    body: dict[str, Any] = {"from": draw(st.integers(-3, 2 ** 64)),
                            "to": draw(st.integers(-3, 2 ** 64))}
    if kind == "field":
        body[draw(st.sampled_from(["from", "to"]))] = draw(JSON)
    elif kind == "drop":
        body.pop(draw(st.sampled_from(["from", "to"])))
    elif kind == "bytes":
        return draw(st.binary(max_size=60))
    elif kind == "deep":
        return b'{"from":' + b"[" * 10 ** 4 + b"]" * 10 ** 4 + b',"to":1}'
    elif kind == "notobject":
        return json.dumps(draw(JSON)).encode("utf-8", "surrogatepass")
    return json.dumps(body).encode()


@FUZZ
@given(topic=REQUEST_TOPICS, payload=requests())
def test_decode_request_never_raises(topic: str, payload: bytes, fuzz_count: Any) -> None:
    from reuse.runtime.dataplane.resend import MAX_RANGE, Request, decode_request

    fuzz_count("MQTT decode_request (resend)")
    got = decode_request(topic, payload)
    if isinstance(got, Request):
        assert 0 <= got.lo <= got.hi < got.lo + MAX_RANGE and got.source
        assert "/" not in got.source and topic.endswith(got.source)
    else:
        assert isinstance(got, str) and "\n" not in got and len(got) < 200

"""The publisher without a broker: which streams, what each message is, and the pacing (a fake
clock and a stand-in client; the broker-fed run is tested in tests/cli/test_broker.py)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from reuse.core.errors import ReuseError
from reuse.core.paths import riotbench_dir
from reuse.runtime.common.execution import source_event
from reuse.runtime.dataplane.mqtt import MqttError
from reuse.runtime.dataplane.publish import (
    Publisher,
    PublishReport,
    Stream,
    message,
    select_streams,
    workload_streams,
)
from reuse.testing import missing


class Info:
    def is_published(self) -> bool:
        return True


class FakeClient:
    """paho's ``publish`` and ``disconnect``, recording (clock, topic, payload)."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.sent: list[tuple[float, str, bytes]] = []

    def publish(self, topic: str, payload: bytes, qos: int = 0) -> Info:
        self.sent.append((self.clock.now, topic, payload))
        return Info()

    def disconnect(self) -> None:
        pass


class FakeClock:
    """A monotonic clock that moves only when slept on, or when a stall is injected."""

    def __init__(self) -> None:
        self.now = 100.0
        self.stalls: dict[int, float] = {}  # after this many sleeps, jump this far
        self.sleeps = 0

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        assert s > 0
        self.now += s
        self.sleeps += 1
        self.now += self.stalls.pop(self.sleeps, 0.0)


def publisher(clock: FakeClock, **kw: Any) -> tuple[Publisher, FakeClient]:
    streams = (Stream("A", "synthetic"), Stream("B", "synthetic"))
    pub = Publisher("mqtt://127.0.0.1:1", streams, clock=clock, sleep=clock.sleep, **kw)
    client = FakeClient(clock)
    pub.connect(client)
    return pub, client


def test_each_seq_is_sent_on_every_stream_at_its_due_time() -> None:
    clock = FakeClock()
    pub, client = publisher(clock, rate=4.0)
    pub.run(2.0)
    rep = pub.close()
    assert [(t, topic) for t, topic, _ in client.sent] == [
        (100.0 + k / 4.0, f"sensors/{s}") for k in range(8) for s in "AB"]
    for k, (_, topic, payload) in enumerate(client.sent):
        src = topic.split("/")[1]
        assert json.loads(payload) == source_event(src, "synthetic", k // 2, pub.t0_ms, 4.0)
    assert rep.sent == {"sensors/A": 8, "sensors/B": 8}
    assert rep.elapsed_s == 7 / 4.0 and rep.achieved == 4.0 and rep.max_late_ms == 0.0


def test_a_stall_is_caught_up_and_the_schedule_does_not_drift() -> None:
    clock = FakeClock()
    clock.stalls = {2: 0.55}  # the second sleep overshoots by 0.55 s (a busy machine)
    pub, client = publisher(clock, rate=10.0)
    pub.run(2.0)
    times = [t for t, topic, _ in client.sent if topic == "sensors/A"]
    assert len(times) == 20
    # seq 2 is 0.55 s late; seq 3..7 were due by then and go at once; seq 8 on is on time
    assert times[2] == pytest.approx(100.75) and times[3:8] == [times[2]] * 5
    assert times[8:] == pytest.approx([100.0 + k / 10 for k in range(8, 20)])
    assert pub.close().max_late_ms == pytest.approx(550.0)


def test_on_send_sees_each_seq_with_its_due_time_and_when_it_went() -> None:
    clock = FakeClock()
    clock.stalls = {2: 0.55}
    seen: list[tuple[int, float, float]] = []
    pub, client = publisher(clock, rate=10.0, on_send=lambda *a: seen.append(a))
    pub.run(1.0)
    assert [s for s, _, _ in seen] == list(range(10))
    assert [d for _, d, _ in seen] == pytest.approx([100.0 + k / 10 for k in range(10)])
    # when a seq's sending began: its first message's time
    assert [t for _, _, t in seen] == [t for t, topic, _ in client.sent if topic == "sensors/A"]
    assert max(t - d for _, d, t in seen) * 1000 == pytest.approx(pub.close().max_late_ms)


def test_a_continued_run_keeps_seq_and_t0() -> None:
    clock = FakeClock()
    pub, client = publisher(clock, rate=10.0, start=5)
    before = time.time() * 1000
    pub.run(0.3)
    assert before - 1 <= pub.t0_ms + 500 <= time.time() * 1000 + 1  # seq 5 is due at the start
    pub.run(0.2)
    seqs = [json.loads(p)["seq"] for _, topic, p in client.sent if topic == "sensors/A"]
    assert seqs == [5, 6, 7, 8, 9]
    ts = [json.loads(p)["ts"] for _, topic, p in client.sent if topic == "sensors/A"]
    assert ts == [pub.t0_ms + 100 * s for s in seqs]


@pytest.mark.parametrize(("kw", "why"), [({"rate": 0}, "rate must be positive"),
                                         ({"start": -1}, "first seq must be >= 0")])
def test_parameters_are_checked(kw: dict, why: str) -> None:
    with pytest.raises(MqttError, match=why):
        Publisher("mqtt://h", [Stream("A", "x")], **kw)


def test_a_report_is_one_line() -> None:
    rep = PublishReport({"sensors/A": 3, "sensors/B": 3}, 10.0, 0.2, 1.0, 7, unacked=2)
    line = rep.summary()
    assert "\n" not in line and "sensors/A 3, sensors/B 3" in line and "10.00 msg/s" in line
    assert line.endswith("2 not acknowledged by the broker")


def test_streams_are_selected_by_name() -> None:
    s = (Stream("A", "x"), Stream("B", "x"))
    assert select_streams(s, None) == s and select_streams(s, ["B", "A"]) == s[::-1]
    with pytest.raises(MqttError, match="unknown source 'C'"):
        select_streams(s, ["C"])
    with pytest.raises(MqttError, match="named twice"):
        select_streams(s, ["A", "A"])
    with pytest.raises(MqttError, match="no source stream"):
        select_streams((), None)


def test_an_unknown_workload_is_a_one_line_error() -> None:
    with pytest.raises(ReuseError, match="unknown workload 'nope'"):
        workload_streams("nope")


@pytest.mark.skipif(not (riotbench_dir() / "SYS_sample_data_senml.csv").is_file(),
                    reason=missing("data", "data/riotbench is not set up"))
def test_riot_streams_replay_the_senml_lines() -> None:
    streams = workload_streams("riot")
    assert [(s.name, s.type, s.topic) for s in streams] == [
        ("FIT", "FIT", "sensors/FIT"), ("SYS", "SYS", "sensors/SYS"),
        ("TAXI", "TAXI", "sensors/TAXI")]
    ev = json.loads(message(streams[1], 1000, 0, 10.0))  # SYS has 1000 lines: seq 1000 loops
    assert ev == source_event("SYS", "SYS", 1000, 0, 10.0)
    assert ev["payload"].startswith('{"e":[') and ev["ts"] == 100_000


def test_a_rate_change_restarts_the_schedule_and_the_stamps_at_the_next_seq() -> None:
    clock = FakeClock()
    pub, client = publisher(clock, rate=10.0)
    pub.run(0.5)  # seq 0..4 at 10/s
    t_change = clock.now
    pub.run(0.1, rate=100.0)  # seq 5..14 at 100/s, the first due at once
    times = [t for t, topic, _ in client.sent if topic == "sensors/A"]
    seqs = [json.loads(p) for _, topic, p in client.sent if topic == "sensors/A"]
    assert [e["seq"] for e in seqs] == list(range(15))
    assert times[5:] == pytest.approx([t_change + k / 100 for k in range(10)])
    # every event's ts is its own send time on the new schedule: 10 ms apart, never back
    ts = [e["ts"] for e in seqs]
    assert ts == sorted(ts) and [b - a for a, b in zip(ts[5:], ts[6:], strict=False)] == [10] * 9
    assert seqs[5] == source_event("A", "synthetic", 5, pub.t0_ms, 100.0)
    with pytest.raises(MqttError, match="positive"):
        pub.run(1.0, rate=0.0)


def test_a_schedule_is_rates_and_seconds() -> None:
    from reuse.runtime.dataplane.publish import parse_schedule

    assert parse_schedule("10:60,200:60,10:60") == [(10.0, 60.0), (200.0, 60.0), (10.0, 60.0)]
    for bad in ("10", "0:5", "-1:5", "10:-1", "a:b", "10:inf", ""):
        with pytest.raises(MqttError, match="--schedule"):
            parse_schedule(bad)

"""A publisher's pacing statistics (benchmarks/broker_rate.py's ``publish`` figures): windows,
deviation and late sends, on made-up send logs and on the publisher with a fake clock."""

from __future__ import annotations

import math

import pytest

from reuse.runtime.dataplane.mqtt import MqttError
from reuse.runtime.dataplane.pacing import SendLog, deviation_pct, percentile, window_counts
from reuse.runtime.dataplane.publish import Publisher, Stream


class Info:
    def is_published(self) -> bool:
        return True


class Client:
    def publish(self, topic: str, payload: bytes, qos: int = 0) -> Info:
        return Info()

    def disconnect(self) -> None:
        pass


def test_a_punctual_run_is_on_target_in_every_window() -> None:
    log = SendLog(100.0, window_s=2.0)
    for s in range(1000):  # 10 s at 100/s
        log(s, 50.0 + s / 100, 50.0 + s / 100 + 0.0002)
    st = log.stats(10.0)
    assert st.seqs == 1000 and st.achieved == pytest.approx(100.0)
    assert st.windows == pytest.approx((100.0,) * 5)
    assert abs(st.window_min_pct) < 1e-6 and abs(st.window_max_pct) < 1e-6
    assert st.late_ms["p50"] == pytest.approx(0.2) and st.late_ms["max"] == pytest.approx(0.2)
    assert st.late_over == {">1ms": 0, ">10ms": 0, ">100ms": 0}
    assert st.within(2.0)


def test_a_window_that_ends_after_the_planned_run_is_left_out() -> None:
    log = SendLog(10.0, window_s=4.0)
    for s in range(100):  # 10 s: windows [0, 4) and [4, 8) are full, [8, 12) is not
        log(s, s / 10, s / 10)
    st = log.stats(10.0)
    assert st.windows == (10.0, 10.0)


def test_a_stall_shows_in_the_windows_and_the_late_sends_not_in_the_run() -> None:
    # 1,000/s for 30 s; seq 10,000-10,499 (due 10.0-10.499 s) all go at 10.5 s: the first
    # window ends 500 short, the second gets them, and the run as a whole stays on rate
    log = SendLog(1000.0, window_s=10.0)
    for s in range(30_000):
        due = s / 1000
        log(s, due, 10.5 if 10_000 <= s < 10_500 else due)
    st = log.stats(30.0)
    assert st.windows == (1000.0, 1000.0, 1000.0)  # 10.0 s is the second window's start
    log2 = SendLog(1000.0, window_s=10.0)
    for s in range(30_000):
        due = s / 1000
        log2(s, due, 10.2 if 9_800 <= s < 10_200 else due)
    st2 = log2.stats(30.0)
    assert st2.windows == (980.0, 1020.0, 1000.0)
    assert st2.window_min_pct == pytest.approx(-2.0) and st2.window_max_pct == pytest.approx(2.0)
    assert st2.within(2.0) and not st2.within(1.9)
    assert abs(st2.deviation_pct) < 1e-6
    assert st2.late_ms["max"] == pytest.approx(400.0)
    assert st2.late_over == {">1ms": 399, ">10ms": 390, ">100ms": 300}


def test_a_slow_publisher_misses_the_target() -> None:
    log = SendLog(1000.0, window_s=1.0)
    for s in range(970):  # it only manages 970/s: every send later than the one before
        log(s, s / 1000, s / 970)
    st = log.stats(1.0)
    assert st.achieved == pytest.approx(970.0)
    assert st.deviation_pct == pytest.approx(-3.0)
    assert not st.within(2.0)
    assert st.late_over[">10ms"] > 0


def test_nothing_sent_gives_no_window_and_no_verdict() -> None:
    st = SendLog(10.0).stats(5.0)  # shorter than a window
    assert st.seqs == 0 and st.windows == () and st.achieved == 0.0
    assert math.isnan(st.window_min_pct) and math.isnan(st.late_ms["max"])
    assert not st.within(2.0)
    assert st.to_dict()["within_2pct"] is False


def test_the_publisher_feeds_the_log() -> None:
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s + (0.3 if 1.0 < now[0] < 1.1 else 0.0)  # one 0.3 s stall near 1 s

    log = SendLog(20.0, window_s=1.0)
    pub = Publisher("mqtt://127.0.0.1:1", [Stream("A", "synthetic"), Stream("B", "synthetic")],
                    rate=20.0, clock=lambda: now[0], sleep=sleep, on_send=log)
    pub.connect(Client())
    pub.run(3.0)
    rep = pub.close()
    st = log.stats(3.0)
    assert st.seqs == 60 and rep.sent == {"sensors/A": 60, "sensors/B": 60}
    assert st.late_ms["max"] == pytest.approx(rep.max_late_ms)
    assert st.achieved == pytest.approx(rep.achieved)
    assert sum(st.windows) == pytest.approx(60.0)
    assert st.late_ms["max"] == pytest.approx(300.0, abs=50.0)


def test_helpers_check_their_input() -> None:
    assert window_counts([-0.5, 0.5, 5.0], 1.0, 2) == [2, 0]
    assert percentile([], 50) != percentile([], 50)  # nan
    assert percentile([1.0, 2.0, 3.0, 4.0], 99) == 4.0
    with pytest.raises(MqttError, match="window must be positive"):
        window_counts([1.0], 0.0, 1)
    with pytest.raises(MqttError, match="target rate must be positive"):
        deviation_pct(1.0, 0.0)
    with pytest.raises(MqttError, match="rate must be positive"):
        SendLog(0.0)

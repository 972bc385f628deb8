"""Backpressure and retention through the real bus and ``reusebus`` reader, without Spark.

The reader's methods are called as Spark calls them (``latestOffset`` with the previous end,
``partitions``, ``read``, then ``commit``), so a slow consumer, a fast one and a late joiner
share a topic on each bus while :class:`~reuse.runtime.dataplane.retention.BusUpkeep` truncates it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from reuse.runtime.common.files import read_json, write_json
from reuse.runtime.common.states import BatchStates
from reuse.runtime.dataplane.bus import Bus, BusError, FileBus
from reuse.runtime.dataplane.flow_control import Limits
from reuse.runtime.dataplane.frames import FrameError, decode_frame, encode_frame, peek_frame
from reuse.runtime.dataplane.retention import BusUpkeep
from reuse.runtime.dataplane.sources import BusDataSource
from reuse.runtime.engines.partial.dag import PartialHandler

TOPIC = "src:SYS"


def _publish(bus: Bus, batch: int, n: int, seq0: int) -> int:
    """One producer batch of ``n`` events from ``seq0``; the next seq."""
    events = [json.dumps({"seq": s}) for s in range(seq0, seq0 + n)]
    bus.publish(TOPIC, f"000001-{batch:09d}", encode_frame(seq0 + n - 1, events))
    return seq0 + n


class Reader:
    """A ``reusebus`` reader driven the way Spark drives it (offsets, partitions, read, commit)."""

    def __init__(self, bus: Bus, root: Path, name: str, limits: Limits, start: str = "") -> None:
        opts = {"topics": json.dumps([TOPIC]), "start": json.dumps({TOPIC: start}),
                "bus_spec": json.dumps(bus.spec()), "query": name, "state_root": str(root),
                **limits.options()}
        self.name = name
        self.start = {TOPIC: start}
        self.src: Any = BusDataSource(opts).streamReader(None)
        self.offset = self.src.initialOffset()
        self.seqs: list[int] = []
        self.batches: list[int] = []

    def batch(self) -> int:
        """Run one micro-batch; the number of events read."""
        end = self.src.latestOffset(self.offset, None)
        if end == self.offset:
            return 0
        rows = [r for p in self.src.partitions(self.offset, end) for r in self.src.read(p)]
        got = [json.loads(v)["seq"] for _, k, f in rows
               for v in decode_frame(f, topic=TOPIC, key=k).values]
        self.seqs.extend(got)
        self.batches.append(len(got))
        self.src.commit(end)
        self.offset = end
        return len(got)


def test_header_peek_index_and_truncate(bus: Bus) -> None:
    seq = 0
    for b in range(5):
        seq = _publish(bus, b, 3 + b, seq)
    idx = bus.index(TOPIC, "")
    assert [n for _, n in idx] == [3, 4, 5, 6, 7] and [k for k, _ in idx] == sorted(k for k, _ in idx)
    assert bus.index(TOPIC, idx[1][0]) == idx[2:]
    assert bus.truncate(TOPIC, idx[3][0]) == 3
    assert bus.index(TOPIC, "") == idx[3:] and bus.size(TOPIC) == 2
    assert bus.truncate(TOPIC, idx[3][0]) == 0  # idempotent
    assert bus.truncate("never-written", idx[4][0]) == 0
    assert bus.latest(TOPIC) == idx[4][0]


def test_peek_names_a_message_that_is_no_frame() -> None:
    with pytest.raises(FrameError, match="topic 't': message k: bad magic"):
        peek_frame(b"x" * 30, topic="t", key="k")


def test_file_bus_truncate_removes_a_dead_producers_temporary_files(tmp_path: Path) -> None:
    bus = FileBus(tmp_path)
    _publish(bus, 0, 2, 0)
    _publish(bus, 1, 2, 2)
    (bus.topic_dir(TOPIC) / ".000001-000000000.tmp").write_bytes(b"half")
    assert bus.truncate(TOPIC, "000001-000000001") == 1
    assert sorted(p.name for p in bus.topic_dir(TOPIC).iterdir()) == ["000001-000000001.frame"]
    assert bus.stored_bytes() > 0


def test_reader_takes_bites_reports_lag_and_commits(tmp_path: Path) -> None:
    bus = FileBus(tmp_path)
    seq = 0
    for b in range(10):
        seq = _publish(bus, b, 10, seq)
    r = Reader(bus, tmp_path, "q7-slow", Limits(25, lag_high=50, lag_low=15))
    assert r.batch() == 20  # lag 100 > 50: throttled, two 10-event messages fit in 25
    lag = read_json(tmp_path / "lag" / "q7-slow.json")
    assert (lag["lag"], lag["throttled"]) == (100, True)
    assert lag["topics"][TOPIC] == {"lag": 100, "admitted": 20, "messages": 2, "throttled": True}
    assert read_json(tmp_path / "committed" / "q7-slow.json") == {TOPIC: "000001-000000001"}
    while r.batch():
        pass
    assert r.seqs == list(range(100))  # every event once, in order
    # throttled from lag 100 down to lag 20 (not under the low watermark 15): bites of 20
    # throughout; released once nothing is pending
    assert r.batches == [20, 20, 20, 20, 20]
    assert read_json(tmp_path / "lag" / "q7-slow.json")["throttled"] is False


def test_reader_without_limits_takes_everything(tmp_path: Path) -> None:
    bus = FileBus(tmp_path)
    seq = 0
    for b in range(4):
        seq = _publish(bus, b, 50, seq)
    r = Reader(bus, tmp_path, "q1", Limits(None))
    assert r.batch() == 200 and r.batch() == 0


def test_a_message_deleted_under_a_batch_fails_it_naming_topic_query_offset(
        tmp_path: Path) -> None:
    bus = FileBus(tmp_path)
    seq = 0
    for b in range(3):
        seq = _publish(bus, b, 5, seq)
    r = Reader(bus, tmp_path, "q2", Limits(100), start="000001-000000000")
    end = r.src.latestOffset(r.offset, None)
    parts = r.src.partitions(r.offset, end)
    bus.truncate(TOPIC, "000001-000000002")  # a retention bug would do this
    with pytest.raises(BusError, match=r"topic 'src:SYS': query 'q2': offset 000001-000000000: "
                                       r"1 of 2 messages up to 000001-000000002 are missing"):
        list(r.src.read(parts[0]))


def test_a_restarted_reader_keeps_its_throttle_state(tmp_path: Path) -> None:
    bus = FileBus(tmp_path)
    seq = 0
    for b in range(10):
        seq = _publish(bus, b, 10, seq)
    lim = Limits(10, lag_high=50, lag_low=5)
    r = Reader(bus, tmp_path, "q3", lim)
    r.batch()
    again = Reader(bus, tmp_path, "q3", lim)  # a new reader process for the same query
    again.offset = r.offset
    assert again.batch() == 10  # lag 90 - still throttled: one bite, not everything


def test_slow_consumer_falls_behind_alone_and_retention_keeps_what_it_needs(
        bus: Bus, tmp_path: Path) -> None:
    """A producer at 10 events per step; a fast consumer reads every step; a slow one reads
    one step in five for a while (its lag rises past the high watermark: throttled bites), then
    every step again and catches up; a late joiner starts at the latest key and never commits
    before the next retention pass. Retention runs every step. Nobody loses or repeats an
    event, the topic never grows past the slow consumer's backlog, and the producer never
    waits."""
    lim = Limits(25, lag_high=40, lag_low=15)  # low above one step's 10 arrivals
    fast = Reader(bus, tmp_path, "fast", lim)
    slow = Reader(bus, tmp_path, "slow", lim)
    keeper = BusUpkeep(bus, tmp_path, retention_s=0)
    readers = [fast, slow]
    seq, late, sizes, lags, throttled = 0, None, [], [], []
    for step in range(60):
        seq = _publish(bus, step, 10, seq)  # the producer never waits for anyone
        fast.batch()
        if step >= 30 or step % 5 == 0:
            slow.batch()
        if step == 20:
            start = bus.latest(TOPIC)
            late = Reader(bus, tmp_path, "late", lim, start=start)
            readers.append(late)
            late_first = seq
        elif late is not None and step > 22:
            late.batch()
        keeper.retain([keeper.consumer(r.name, [TOPIC], r.start) for r in readers], [TOPIC])
        sizes.append(bus.size(TOPIC))
        rep = read_json(tmp_path / "lag" / "slow.json")
        lags.append(rep["lag"])
        throttled.append(rep["throttled"])
    for r in readers:
        while r.batch():
            pass
    assert fast.seqs == slow.seqs == list(range(seq))
    assert late is not None and late.seqs == list(range(late_first, seq))
    assert max(fast.batches) == 10  # the fast one is never throttled
    # the slow one's lag rose past the high watermark, it was throttled, then released
    assert max(lags) > lim.lag_high and any(throttled) and not throttled[-1]  # type: ignore[operator]
    assert max(slow.batches) <= lim.max_events  # type: ignore[operator]
    # retention deleted messages, but never one a consumer still needed (or its batch would
    # have failed with BusError): the topic holds the slowest consumer's backlog, plus the
    # message at its committed offset
    assert keeper.deleted > 0
    assert max(sizes) <= max(lags) // 10 + 1 and sizes[-1] == 1


def test_batch_states_stay_bounded_across_gaps(tmp_path: Path) -> None:
    st = BatchStates(tmp_path / "tstate", keep=3)
    for b in (0, 1, 2, 7, 8, 9, 10, 30):
        st.save(b, {"b": b})
    assert sorted(p.name for p in (tmp_path / "tstate").iterdir()) == ["000000030.json"]
    assert st.before(31) == {"b": 30} and st.before(30) is None


def test_slowed_handler_sleeps_per_source_seq_and_wakes_when_the_slowdown_ends(
        tmp_path: Path) -> None:
    spec = {"name": "q9", "launch": 9, "tasks": [], "topics": {}, "name_of": {}, "start": {},
            "opts": {}}
    h = PartialHandler(spec, str(tmp_path), FileBus(tmp_path).spec())
    write_json(h.control_path, {"slow_s": 0.05})
    t = time.time()
    h._slow_down({"slow_s": 0.05}, 10, 14)  # 4 seq advanced: 0.2 s
    # upper bounds with room for a loaded machine, each still below what a wrong count sleeps
    assert 0.2 <= time.time() - t < 2.0
    t = time.time()
    h._slow_down({"slow_s": 0.05}, -1, 14)  # first batch: nothing to compare with
    h._slow_down({"slow_s": 0.05}, 14, 14)  # no progress, no sleep
    assert time.time() - t < 0.5  # a wrong count would sleep 0.7 s or more
    write_json(h.control_path, {})  # the slowdown has ended: a long sleep is cut short
    t = time.time()
    h._slow_down({"slow_s": 100.0}, 0, 10)
    assert time.time() - t < 30.0  # not the 1,000 s asked for

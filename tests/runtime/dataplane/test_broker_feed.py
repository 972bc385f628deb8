"""Reading a broker-fed shared query's source events from the bus by ``seq`` (both buses)."""

from __future__ import annotations

import json
from pathlib import Path

from reuse.runtime.dataplane.broker_feed import (
    dump_recorded,
    last_seq,
    load_recorded,
    read_events,
    ready_seq,
)
from reuse.runtime.dataplane.bus import Bus
from reuse.runtime.dataplane.frames import encode_frame


def _fill(bus: Bus, frames: list[list[int]], missing: frozenset[int] = frozenset()) -> None:
    """Frames of source S as an ingest appends them (``seq`` increasing, ``hw`` the last)."""
    for n, seqs in enumerate(frames, start=1):
        evs = [json.dumps({"src": "S", "seq": q, "ts": q, "payload": f"p{q}"})
               for q in seqs if q not in missing]
        bus.publish("src:S", f"000001-{n:09d}", encode_frame(seqs[-1], evs))


def test_ranges_read_every_event_once_whatever_the_frames(bus: Bus) -> None:
    _fill(bus, [[0, 1, 2], [3], [4, 5, 6, 7], [8, 9]])
    assert last_seq(bus, "S") == 9 and last_seq(bus, "T") == -1
    cursor, got = "", []
    for lo, hi in [(0, 2), (2, 3), (3, 7), (7, 7), (7, 10)]:
        evs, cursor = read_events(bus, "S", cursor, lo, hi)
        assert all(lo <= e["seq"] < hi for e in evs)
        got += [e["seq"] for e in evs]
    assert got == list(range(10))
    # a re-run of a batch from its saved cursor reads the same events
    evs1, cur1 = read_events(bus, "S", "", 0, 4)
    evs2, cur2 = read_events(bus, "S", "", 0, 4)
    assert evs1 == evs2 and cur1 == cur2
    assert [e["seq"] for e in read_events(bus, "S", cur1, 4, 10)[0]] == list(range(4, 10))


def test_a_seq_never_delivered_is_absent_not_fatal(bus: Bus, tmp_path: Path) -> None:
    _fill(bus, [[0, 1], [2, 3, 4]], missing=frozenset({3}))
    assert [e["seq"] for e in read_events(bus, "S", "", 0, 5)[0]] == [0, 1, 2, 4]
    assert dump_recorded(bus, ["S"], tmp_path / "rec", 4) == {"S": 3}
    assert sorted(load_recorded(tmp_path / "rec")["S"]) == [0, 1, 2]


def test_ready_waits_for_the_slowest_needed_source() -> None:
    assert ready_seq({"A": 0, "B": 0}, {"A": 9, "B": -1}, floor=10) == 0
    assert ready_seq({"A": 0, "B": 5}, {"A": 9, "B": -1}, floor=10) == 5
    assert ready_seq({"A": 0}, {"A": 9, "B": -1}, floor=10) == 10

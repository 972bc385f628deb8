"""Retention as the runtime runs it: which queries count as consumers, what their files say,
and that a topic is never cut under a live, draining or just-launched consumer (no Spark: the
runtime's queries are stand-ins with the state a real one would have)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from reuse.runtime.common.files import read_json, write_json
from reuse.runtime.dataplane.bus import FileBus
from reuse.runtime.dataplane.frames import encode_frame
from reuse.runtime.dataplane.retention import BusUpkeep
from reuse.runtime.engines.partial.engine import Runtime
from reuse.runtime.engines.partial.queries import QueryInfo
from reuse.runtime.spec import RunSpec

SRC = "src:SYS"


class _Handle:
    """What ``poll`` asks of a running query."""

    def exception(self) -> None:
        return None

    def stop(self) -> None:
        pass


def _keys(bus: FileBus, n: int, topic: str = SRC) -> list[str]:
    keys = [f"000001-{b:09d}" for b in range(n)]
    for b, k in enumerate(keys):
        bus.publish(topic, k, encode_frame(b, [json.dumps({"seq": b})]))
    return keys


def _query(rt: Runtime, name: str, start: dict[str, str], status: str = "running",
           committed: dict[str, str] | None = None) -> QueryInfo:
    qi = QueryInfo(name, "partial", len(rt.queries) + 1, [], _Handle(), None, 0.0,
                   status=status, inputs=(sorted(start), dict(start)))
    rt.queries[name] = qi
    if committed is not None:
        write_json(rt.root / "committed" / f"{name}.json", committed)
    return qi


def _runtime(tmp_path: Path, **kw: Any) -> Runtime:
    bus_max = kw.pop("max_events_per_trigger", None)
    spec = RunSpec.of(merge="partial", root=tmp_path, rate=10.0, trigger_s=1.0,
                      bus_max_events=bus_max)
    return Runtime(None, spec, **kw)  # type: ignore[arg-type]


def test_retention_respects_running_draining_and_new_consumers(tmp_path: Path) -> None:
    rt = _runtime(tmp_path)
    keys = _keys(rt.bus, 10)  # type: ignore[arg-type]
    _query(rt, "q1-fast", {SRC: ""}, committed={SRC: keys[8]})
    _query(rt, "q2-pred", {SRC: ""}, status="draining", committed={SRC: keys[5]})
    _query(rt, "q3-gone", {SRC: ""}, status="stopped", committed={SRC: keys[0]})
    assert [c.name for c in rt.consumers()] == ["q1-fast", "q2-pred"]
    assert rt.retain() == 5  # behind the draining hand-over predecessor, not the stopped one
    assert rt.bus.index(SRC, "")[0][0] == keys[5]
    # a consumer launched at keys[7] that has not committed yet: its join point is kept
    _query(rt, "q4-new", {SRC: keys[7]})
    write_json(rt.root / "committed" / "q2-pred.json", {SRC: keys[9]})
    assert rt.retain() == 2 and rt.bus.index(SRC, "")[0][0] == keys[7]
    assert rt.ledger()["bus"]["deleted"] == 7


def test_topics_nobody_reads_keep_their_latest_message(tmp_path: Path) -> None:
    rt = _runtime(tmp_path)
    keys = _keys(rt.bus, 4, "q1.parse")  # type: ignore[arg-type]
    _query(rt, "q1", {"q1.parse": ""}, status="stopped")
    assert rt.retain() == 3 and rt.bus.latest("q1.parse") == keys[-1]


def test_poll_runs_retention_when_due_and_stopping_forgets_the_files(tmp_path: Path) -> None:
    rt = _runtime(tmp_path, retention_s=0.01)
    keys = _keys(rt.bus, 5)  # type: ignore[arg-type]
    qi = _query(rt, "q1", {SRC: ""}, status="draining", committed={SRC: keys[3]})
    write_json(rt.root / "lag" / "q1.json", {"lag": 42, "throttled": True, "topics": {}})
    time.sleep(0.02)
    rt.poll()
    assert rt.bus.size(SRC) == 2
    assert rt.take_lag() == (42, 1) and rt.take_lag() == (42, 1)  # resampled, still there
    write_json(rt.root / "final" / "q1.json", {"final": True})
    rt.poll()  # drained: stopped, its lag and committed files go with it
    assert qi.status == "stopped"
    assert not (rt.root / "lag" / "q1.json").exists()
    assert not (rt.root / "committed" / "q1.json").exists()
    assert rt.take_lag() == (0, 0)


def test_limits_reach_every_reader_and_slow_down_reaches_the_handler(tmp_path: Path) -> None:
    rt = _runtime(tmp_path)
    # default: ten triggers of a 10 events/s source, times the fan-out allowance (25)
    assert rt.limits.options() == {"max_events": "2500", "lag_high": "5000", "lag_low": "1250"}
    assert _runtime(tmp_path, max_events_per_trigger=0).limits.options() == {}
    assert _runtime(tmp_path, max_events_per_trigger=30, lag_high=45,
                    lag_low=5).limits.options() == {"max_events": "30", "lag_high": "45",
                                                    "lag_low": "5"}
    _query(rt, "q1", {SRC: ""})
    rt.slow_down("q1", 10)  # ten times slower than the 10 events/s source: 1 s per source seq
    assert read_json(rt.root / "control" / "q1.json")["slow_s"] == 1.0
    rt.slow_down("q1", 0)
    assert "slow_s" not in read_json(rt.root / "control" / "q1.json")


def test_upkeep_tick_samples_the_peak_until_taken(tmp_path: Path) -> None:
    up = BusUpkeep(FileBus(tmp_path), tmp_path, retention_s=0)
    for lag in (5, 70, 12):
        write_json(tmp_path / "lag" / "q.json", {"lag": lag, "throttled": lag > 50})
        up.sample(["q", "never-reported"])
    assert up.take() == (70, 1) and up.take() == (0, 0)
    up.tick(list, list, list)  # retention off: no pass
    assert up.stats() == {"retention_s": 0.0, "passes": 0, "deleted": 0}

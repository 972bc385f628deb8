"""Instances register, beat on Redis's clock, and are told live or dead by its age."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import pytest

from reuse.runtime.control import Registry

pytestmark = pytest.mark.realtime  # waits on its own server, thread or process


def test_register_beat_and_the_lowest_frontier(redis_url: str, run: str) -> None:
    reg = Registry(redis_url, run)
    reg.register("i0", driver_pid=111, executors=["0@501", "1@502"], frontier=10)
    reg.register("i1", executors=[], host="h1", frontier=4, note="spare")
    reg.beat("i0", 30)
    reg.beat("i1", 2)  # a frontier never goes back
    got = {i.id: i for i in reg.instances()}
    assert got["i0"].driver_pid == 111 and got["i0"].executors == ("0@501", "1@502")
    assert got["i1"].driver_pid == os.getpid() and got["i1"].host == "h1"
    assert got["i1"].extra == {"note": "spare"}
    assert (got["i0"].frontier, got["i1"].frontier) == (30, 4)
    assert got["i0"].as_app() == {"id": "i0", "driver_pid": 111,
                                  "executors": ["0@501", "1@502"], "host": got["i0"].host}
    assert reg.lowest_frontier(10.0) == 4
    assert abs(got["i0"].beat_ms - reg.server_ms()) < 5000


#: the age past which an instance is dead here, and how long "b" stays silent: seconds, not
#: tenths, so that a test process starved of CPU for a moment cannot age a fresh beat past it
#: (0.3 s once did, in a suite layout of 2026-11-29 that ran these tests at nice 19 beside two
#: Spark lanes)
AGE_S, SILENT_S = 2.0, 2.5


def _after(reg: Registry, beats: dict[str, int], look: Callable[[], Any], tries: int = 5) -> Any:
    """``look()`` right after ``beats``; again (beating again first) while what it sees has
    an instance that just beat as dead: a process starved for ``AGE_S`` between a beat and
    the look (the README command runs these tests at nice 19 beside two Spark lanes) is not
    a registry that forgot the beat, and one that forgets fails every try."""
    for _ in range(tries):
        for iid, frontier in beats.items():
            reg.beat(iid, frontier)
        got = look()
        if set(beats) <= {i.id for i in reg.live_instances(AGE_S)}:
            return got
    return got


def _live_after(reg: Registry, beats: dict[str, int]) -> list[str]:
    return _after(reg, beats, lambda: [i.id for i in reg.live_instances(AGE_S)])


def test_a_silent_instance_is_dead_and_a_beat_revives_it(redis_url: str, run: str) -> None:
    reg = Registry(redis_url, run)
    reg.register("a", frontier=50)
    reg.register("b", frontier=20)
    time.sleep(SILENT_S)
    assert _live_after(reg, {"a": 60}) == ["a"]
    assert [i.id for i in reg.dead_instances(AGE_S)] == ["b"]  # silent, and it stays dead
    assert _after(reg, {"a": 60}, lambda: reg.lowest_frontier(AGE_S)) == 60  # b holds it no more
    assert _live_after(reg, {"a": 60, "b": 25}) == ["a", "b"]
    reg.leave("b")
    assert [i.id for i in reg.instances()] == ["a"]
    assert Registry(redis_url, run + "x").lowest_frontier(1.0) is None

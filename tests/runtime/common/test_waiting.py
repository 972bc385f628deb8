"""The wait on processing fails only when nothing moves (issue 36: overload is not an error)."""

from __future__ import annotations

import pytest

from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.waiting import wait_progress


class Clock:
    """Time that moves only when slept on."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


def test_a_slow_steady_engine_is_waited_for_far_past_the_stall_timeout() -> None:
    clock = Clock()
    marks = iter(range(0, 10_000))  # one seq per look: 100 s to reach 999
    waited = wait_progress(999, lambda: next(marks), stall_s=1.0, clock=clock,
                           sleep=clock.sleep, sleep_s=0.1)
    assert waited == pytest.approx(99.9)


def test_a_stopped_engine_fails_after_the_stall_timeout_and_names_it() -> None:
    clock = Clock()
    seen = [0, 5, 9] + [9] * 1000  # moves twice, then stops at 9
    it = iter(seen)
    with pytest.raises(SparkRuntimeError) as err:
        wait_progress(50, lambda: next(it), stall_s=3.0, clock=clock, sleep=clock.sleep,
                      sleep_s=0.5, what="the shared query", task="shared")
    msg = str(err.value)
    assert "the shared query did not reach seq 50" in msg and "at 9" in msg
    assert "\n" not in msg and "--stall-timeout" in msg
    assert clock.now == pytest.approx(1.0 + 3.0)  # it stopped at t = 1.0; 3 s later, out


def test_the_engine_is_polled_before_each_look_and_its_failure_surfaces() -> None:
    clock = Clock()
    polls = []

    def poll() -> None:
        polls.append(clock.now)
        if len(polls) == 3:
            raise SparkRuntimeError("the query failed", task="shared")

    with pytest.raises(SparkRuntimeError, match="the query failed"):
        wait_progress(10, lambda: 0, stall_s=100.0, poll=poll, clock=clock,
                      sleep=clock.sleep)
    assert len(polls) == 3


def test_an_engine_already_there_returns_at_once() -> None:
    assert wait_progress(5, lambda: 7, stall_s=0.001) < 0.1

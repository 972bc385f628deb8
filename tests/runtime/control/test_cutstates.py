"""Task states at the journal's cuts on a real redis-server (issue 24)."""

from __future__ import annotations

import threading
import time

import pytest

from reuse.runtime.control import ControlError
from reuse.runtime.control.cutstates import CutStates

pytestmark = pytest.mark.realtime  # waits on its own server, thread or process


def test_the_first_copy_of_a_state_is_kept_and_a_reader_waits_for_it(redis_url: str,
                                                                      run: str) -> None:
    fast, slow = CutStates(redis_url, run), CutStates(redis_url, run)
    assert fast.put(40, {"kalman": {"x": 1.0}, "bloom": [1, 2]}) == 2
    assert slow.put(40, {"kalman": {"x": 9.0}}) == 0  # the same task at the same cut: kept
    later = threading.Timer(0.3, lambda: slow.put(40, {"avg": {"n": 3}}))
    later.start()
    t0 = time.time()
    got = CutStates(redis_url, run).take(40, ["kalman", "avg"], timeout_s=5)
    assert got == {"kalman": {"x": 1.0}, "avg": {"n": 3}} and time.time() - t0 >= 0.25


def test_a_state_nobody_puts_is_a_one_line_error_naming_task_and_cut(redis_url: str,
                                                                      run: str) -> None:
    with pytest.raises(ControlError, match="state of ghost at cut 7") as exc:
        CutStates(redis_url, run).take(7, ["ghost"], timeout_s=0.3)
    assert "\n" not in str(exc.value)

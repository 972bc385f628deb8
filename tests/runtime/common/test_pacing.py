"""The paced source (issue 35, item 5): a batch when it is worth one, never past the budget."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reuse.runtime.common.pacing import PACED_BATCH, paced_offset


@given(rate=st.floats(0.5, 5000), start=st.integers(0, 10_000), more=st.integers(0, 3000),
       budget=st.floats(0.5, 30), trigger=st.floats(0.1, 5), late_ms=st.floats(-5000, 60_000))
def test_all_or_nothing_and_never_held_past_the_budget(rate: float, start: int, more: int,
                                                        budget: float, trigger: float,
                                                        late_ms: float) -> None:
    t0 = 1_000_000
    now = t0 + start * 1000.0 / rate + late_ms  # late_ms after the oldest seq was emitted
    got = paced_offset(t0, rate, start, start + more, budget_s=budget, trigger_s=trigger,
                       now_ms=now)
    assert got in (start, start + more)
    if more >= PACED_BATCH:  # under load: at once
        assert got == start + more
    if got == start and more:  # held back: the next trigger still takes it within the budget
        assert late_ms + trigger * 1000 < budget * 1000 + 1e-6


def test_few_events_wait_for_the_budget_many_go_at_once() -> None:
    # 10 events/s, budget 10 s, trigger 1 s: a batch every 9 s or so
    assert paced_offset(0, 10.0, 0, 50, budget_s=10, trigger_s=1, now_ms=5000) == 0
    assert paced_offset(0, 10.0, 0, 90, budget_s=10, trigger_s=1, now_ms=9000) == 90
    # 1,000 events/s: a full batch after a second
    assert paced_offset(0, 1000.0, 0, 1000, budget_s=10, trigger_s=1, now_ms=1000) == 1000

"""The run's measuring instruments, without Spark: percentiles, the CPU meter, the sink tail.

The CPU meter is checked against real processes that burn a known amount of CPU and report it
themselves (``time.process_time``, the same user + system counters the meter reads), so the
bounds fail if the meter sees nothing, loses an exited process or counts one twice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reuse.runtime.measure import CpuMeter, SinkTail, hold_step, percentile

pytestmark = pytest.mark.realtime  # waits on its own server, thread or process

# --- percentile ------------------------------------------------------------------------------


def by_definition(values: list[int], q: int) -> int:
    """Nearest rank, literally: the smallest value with at least q % of the values at or below
    it (integer arithmetic, so no rounding question arises)."""
    return min(x for x in values if 100 * sum(v <= x for v in values) >= q * len(values))


def test_percentile_hand_computed():
    four = [4, 1, 3, 2]  # unsorted on purpose
    assert [percentile(four, q) for q in (0, 1, 25, 26, 50, 51, 75, 76, 100)] == [
        1, 1, 1, 2, 2, 3, 3, 4, 4]
    assert percentile([10, 20], 50) == 10  # no interpolation: 15 is not a measured value
    hundred = list(range(1, 101))
    assert percentile(hundred, 99) == 99  # the 99th smallest, not the maximum
    assert percentile(hundred, 99.5) == 100 and percentile(hundred, 7) == 7
    assert percentile([5, 5, 1], 50) == 5
    assert percentile([2.5, 0.5], 50) == 0.5


def test_percentile_edge_cases():
    assert percentile([], 50) is None and percentile([], 0) is None
    assert {percentile([7.0], q) for q in (0, 1, 50, 99, 100)} == {7.0}
    assert percentile(list(range(1000)), 99.9) == 998  # a fractional q: rank 999
    assert percentile(list(range(1500)), 2.2) == 32  # rank 33, though 2.2 * 1500 / 100 > 33


@given(st.lists(st.integers(-50, 50), min_size=1, max_size=40), st.integers(0, 100))
def test_percentile_is_the_nearest_rank(values, q):
    assert percentile(values, q) == by_definition(values, q)


# --- CpuMeter ---------------------------------------------------------------------------------

BURN = """
import subprocess, sys, time
script, seconds, depth = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
kid = (subprocess.Popen([sys.executable, "-c", script, script, str(seconds), str(depth - 1)])
       if depth > 1 else None)
t = time.process_time()
while time.process_time() - t < seconds:
    pass
if kid is not None:
    kid.wait()
print(time.process_time(), flush=True)   # this process's whole CPU, user + system
time.sleep(0.3)                          # idle: the meter's next scans see the final figure
"""


def test_cpu_meter_counts_a_process_tree_once_and_keeps_exited_processes():
    """A chain of three python processes (child, grandchild, great-grandchild) burn 0.2 s of
    CPU each and exit. The meter (sampling every 50 ms) must count all three, under their
    category, after they are gone, once each although the child is also an extra root (so the
    great-grandchild is found only by walking the tree)."""
    meter = CpuMeter(interval=0.05).start()
    try:
        before = meter.total(by_category=True)
        child = subprocess.Popen([sys.executable, "-c", BURN, BURN, "0.2", "3"],
                                 stdout=subprocess.PIPE, text=True)
        meter.add_roots([child.pid])  # also a descendant of the driver: still counted once
        out, _ = child.communicate(timeout=30)
        after = meter.total(by_category=True)
    finally:
        meter.stop()
    reported = sum(float(x) for x in out.split())  # the three processes, by themselves
    assert len(out.split()) == 3 and reported >= 0.6
    assert not psutil.pid_exists(child.pid)  # reaped: only the meter's record of it is left
    worker = after.get("python-worker", 0.0) - before.get("python-worker", 0.0)
    # the figure each process printed is within a few ms of its final CPU (it then sleeps):
    # nothing seen would be 0, the tree counted twice ~2x, a lost process ~2/3
    assert 0.8 * reported <= worker <= reported + 0.15, (worker, reported, after)
    driver = after["driver"] - before["driver"]
    assert 0 <= driver < 0.5 * reported, (driver, after)  # the driver only waited and sampled


def test_cpu_meter_on_an_idle_tree_measures_little():
    meter = CpuMeter(interval=0.05)
    first = meter.total()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    meter.add_roots([child.pid])
    meter.sample()
    child.wait(timeout=30)
    assert 0 <= meter.total() - first < 0.3  # a sleeping python costs its start-up, no more


# --- SinkTail ---------------------------------------------------------------------------------


def write(path, records) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_sink_tail_returns_only_new_records(tmp_path):
    tail = SinkTail(tmp_path)
    assert tail.new_records() == []  # no sinks directory yet
    sinks = tmp_path / "sinks"
    write(sinks / "A.out" / "b1.jsonl", [{"seq": 1}, {"seq": 2}])
    write(sinks / "B.out" / "b1.jsonl", [{"seq": 3}])
    assert sorted(r["seq"] for r in tail.new_records()) == [1, 2, 3]
    assert tail.new_records() == []  # each file is read once

    # a batch being written: the temporary file is ignored until it is renamed into place
    write(sinks / "A.out" / ".b2.tmp", [{"seq": 4}])
    write(sinks / "A.out" / ".hidden.jsonl", [{"seq": 99}])
    write(sinks / "A.out" / "b1.json", [{"seq": 98}])  # not a record file
    (sinks / "A.out" / "b3.jsonl").write_text('{"seq": 5}\n\n', encoding="utf-8")  # blank line
    assert [r["seq"] for r in tail.new_records()] == [5]
    os.replace(sinks / "A.out" / ".b2.tmp", sinks / "A.out" / "b2.jsonl")
    write(sinks / "C.out" / "b1.jsonl", [{"seq": 6}])  # same file name, another sink
    assert sorted(r["seq"] for r in tail.new_records()) == [4, 6]
    assert tail.new_records() == []



def _busy(cpu_seconds: float) -> float:
    """Spin for ``cpu_seconds`` of this process's CPU (however long that takes on a loaded
    machine); the wall seconds it took."""
    t, w = time.process_time(), time.time()
    while time.process_time() - t < cpu_seconds:
        pass
    return time.time() - w


def test_hold_step_ticks_to_the_steps_end_and_charges_it_the_operation():
    """Every driver's one step measurement: the window runs from before the operation to the
    step's end, ticking throughout and once at the end, and its CPU includes the operation's
    (a busy 0.3 s of CPU, before ``hold_step`` is called). Load-proof: what depends on how
    long the operation took is asserted against that."""
    meter = CpuMeter(interval=0.05).start()
    try:
        t0, cpu0 = time.time(), meter.total(by_category=True)
        op_s = _busy(0.3)  # the step's operation
        ticks: list[float] = []
        w = hold_step(meter, t0, cpu0, 1.2, op_s, lambda: ticks.append(time.time()))
    finally:
        meter.stop()
    assert w.t1 - t0 >= 1.2
    assert ticks[-1] >= t0 + 1.2  # it ticks once more at the end
    if op_s < 1.0:  # the step had time left after its operation: ticked in it, and at its end
        assert len(ticks) >= 2
    assert sum(w.cpu.values()) >= 0.29  # the operation's CPU is the step's
    assert w.cores == round(sum(w.cpu.values()) / (w.t1 - t0), 4)
    # the steady half after the operation, idle; none when a starved loop first looked past
    # the step's middle too late to leave a quarter of the step (a loaded suite, 2026-11-29)
    assert w.cores_steady is None or w.cores_steady < w.cores
    assert set(w.cpu_columns()) == {"cpu_driver", "cpu_jvm", "cpu_python_workers", "cpu_other"}


def test_hold_step_after_an_operation_longer_than_the_step_ends_at_once_with_no_steady_half():
    meter = CpuMeter(interval=0.05).start()
    try:
        t0, cpu0 = time.time(), meter.total(by_category=True)
        op_s = _busy(0.5)
        ticks: list[float] = []
        w = hold_step(meter, t0, cpu0, 0.2, op_s, lambda: ticks.append(time.time()))
    finally:
        meter.stop()
    assert len(ticks) == 1  # one look, then the step is over: it lasted as long as its operation
    assert w.t1 - t0 >= op_s
    assert w.cores_steady is None
    assert sum(w.cpu.values()) >= 0.49

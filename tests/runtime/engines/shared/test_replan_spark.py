"""A semantic run where the wide dataflow leaves first (issue 36, item 3), live on Spark.

Four SYS tenants with ``--match semantic``: ``wide`` (a wide RangeFilter with a Kalman filter
below it, and a 2-value BlockWindowAverage), ``t1`` and ``t2`` (narrower ranges: residuals
reading wide's filter) and ``n1`` (a 4-value window: a residual reading wide's panes). Then
``wide`` leaves, at a cut the engine picks (so often inside a batch), and ``t1``, promoted in
its place, leaves at a cut of our choosing. Checked: the re-plan hands over at the cut (the
ledger names who continues whom and whose state is absorbed), the engine then runs no more
tasks than exact matching runs for the same dataflows, and every dataflow's outputs equal the
reference execution's across the hand-over (lost = duplicated = 0, nothing written outside a
task's own window).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from reuse.runtime.accounting import account, leaked_records
from reuse.runtime.common.planners import make_planner
from reuse.runtime.engines.shared.engine import InplaceRuntime
from reuse.runtime.spec import RunSpec
from reuse.testing import ranged_tenant, window_tenant

pytestmark = pytest.mark.spark

RATE = 20.0
LIMIT = 240  # the scenario holds the sources at each step and needs about 130 seqs


def _exact_tasks(flows: list[Any]) -> int:
    """Tasks exact matching runs for ``flows`` (the manager's count, sources included)."""
    planner = make_planner(True, "exact")
    for f in flows:
        planner.submit(f)
    return planner.manager.task_count


def _advance(rt: InplaceRuntime, n: int, timeout_s: float = 90.0) -> int:
    """Let the sources emit ``n`` more seqs, held there, and wait until the query has
    processed them: the operations then happen while nothing more is emitted, so a loaded
    machine (a slow start, a slow batch) cannot let the replay run to its end first."""
    target = rt.bound() + n
    rt.hold(target + 1)
    deadline = time.time() + timeout_s
    while rt.qhw() < target:
        assert time.time() < deadline, f"the query never processed seq {target}"
        rt.poll()
        time.sleep(0.05)
    return target


def test_a_wide_dataflow_leaving_first_is_replanned_exactly(spark: Any, tmp_path: Path) -> None:
    flows = {"wide": ranged_tenant("wide", 0.0, "w", window=2),
             "t1": ranged_tenant("t1", 0.1, "a"), "t2": ranged_tenant("t2", 0.2, "b"),
             "n1": window_tenant("n1", 4, "c")}
    root = tmp_path / "run"
    rt = InplaceRuntime(spark, RunSpec.of(root=root, match="semantic", shards=2, rate=RATE,
                                          trigger_s=1.0, limit=LIMIT),
                        t0_ms=int(time.time() * 1000) + 500)
    try:
        rt.hold(10)  # however slow the query's start, it starts at seq 10 at most
        rt.start_sources(["SYS"])
        for name in ("wide", "t1", "n1", "t2"):
            rt.submit(flows[name])  # each at the engine's next cut
            _advance(rt, 5)  # in its own batch, warm behind the wide tasks
        _advance(rt, 20)
        gone = rt.remove("wide")
        r = gone["R"]
        assert gone["started"] and set(gone["replanned"]) == {"t1", "t2", "n1"}, gone
        live = [f for name, f in flows.items() if name != "wide"]
        assert rt.planner.manager.task_count <= _exact_tasks(live)
        tasks, dags = rt.tasks, {d["dag"]: d for d in rt.dags.values()}
        n1 = dags["n1"]["sink_history"]["out"][-1]
        assert n1[0] == r and tasks[n1[1]]["start"] == r
        # the window that read wide's panes now reads the parsed stream, with wide's partial
        # block absorbed; the Kalman filters continue their predecessors' state
        bwa = next(t for t, i in tasks.items() if i["start"] == r and i["type"] ==
                   "BlockWindowAverage" and i.get("absorbs"))
        assert tasks[bwa]["takes_over"] == "n1.bwa" and "wide.bwa" in tasks[bwa]["absorbs"]
        kalman = [t for t, i in tasks.items() if i["start"] == r and i["type"] == "KalmanFilter"]
        assert kalman and all(tasks[t]["takes_over"] for t in kalman)
        assert rt.deployment.tasks["wide.range"].end == r
        # t1 (promoted) leaves on a cut of our choosing; t2 is re-planned again if it read t1
        _advance(rt, 40)
        at = rt.bound() + 30
        rt.remove("t1", at=at)
        assert rt.planner.manager.task_count <= _exact_tasks([flows["t2"], flows["n1"]])
        assert at < LIMIT - 20, "the held scenario outgrew its limit"
        rt.hold(None)
        rt.wait_processed(LIMIT - 1, timeout_s=60)
        ledger = rt.ledger()
    finally:
        rt.close()
    acc = account(root, ledger, LIMIT)
    assert set(acc) == set(flows)
    for dag, a in acc.items():
        assert a["expected"] > 0 and (a["lost"], a["duplicated"]) == (0, 0), (dag, a)
    assert leaked_records(root, ledger, LIMIT) == {}

"""The split engine's driver-side decisions, without Spark: the layout a batch pins, the
measured loads a rebalance reads, and the refusals of ``reuse run --split``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reuse.core.paths import riotbench_dir
from reuse.runtime.engines.shared.split import KeyRanges
from reuse.runtime.engines.shared.split_batch import (
    LayoutLog,
    SplitBatches,
    SplitLayout,
    range_loads,
    rebalanced,
)
from reuse.runtime.engines.shared.split_moves import rebalance
from reuse.runtime.engines.shared.stages import run_split
from reuse.testing import deployed_at_zero, missing, riot_flows

DATA = riotbench_dir(None)
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=missing("data", "no data/riotbench"))
OPTS = {"data_dir": str(DATA), "pi_iterations": 10, "record": "digest", "limit": None}


def _tasks() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    dep, _ = deployed_at_zero(riot_flows("stats-sys", "clean-kalman-sys").values(), 1, OPTS)
    return list(dep.claim(0, 1).shards[0]), OPTS


def test_a_layout_round_trips_and_plans_its_groups_in_place() -> None:
    tasks, _ = _tasks()
    layout = SplitLayout.even(2)
    plan = layout.plan(tasks)
    placed = SplitLayout.of(plan)
    assert SplitLayout.from_dict(json.loads(json.dumps(placed.as_dict()))) == placed
    assert placed.groups and placed.partitions == 2
    moved = SplitLayout(placed.ranges, tuple((g, 1 - p) for g, p in placed.groups))
    assert dict(moved.plan(tasks).groups) == {g: 1 - p for g, p in placed.groups}


def test_a_batch_keeps_the_layout_it_first_ran_with(tmp_path: Path) -> None:
    log = LayoutLog(tmp_path)
    a, b = SplitLayout.even(2), SplitLayout.even(3)
    assert log.latest() is None
    assert log.pinned(7, a) == a
    assert log.pinned(7, b) == a  # a re-run of batch 7 routes as its first run did
    assert log.pinned(8, b) == b and log.latest() == b


def test_measured_loads_drive_the_rebalance() -> None:
    tasks, opts = _tasks()
    plan = SplitLayout(KeyRanges.even(2, 8)).plan(tasks)
    batch = run_split(plan, tasks, 0, 60, [{}, {}], opts)
    stats = [{"cpu": batch.cpu, "ranges": dict(batch.ranges)}]
    by_range, by_group = range_loads(plan, stats)
    keyed = sum(c for t, c in batch.cpu.items() if plan.step(t).role == "keyed")
    assert by_range and sum(by_range.values()) == pytest.approx(keyed)
    assert set(by_group) == {g for g, _ in plan.groups}
    # all the load in partition 0's ranges: the rebalance moves some to partition 1
    skewed = {r: (1.0 if plan.ranges.owner[r] == 0 else 0.0) for r in range(8)}
    new = rebalanced(SplitLayout.of(plan), tasks, skewed, {})
    assert new is not None and new.ranges.owner.count(1) > plan.ranges.owner.count(1)
    assert new.ranges == rebalance(plan, skewed)[0].ranges
    assert rebalanced(SplitLayout.of(plan), tasks, {r: 1.0 for r in range(8)}, {}) is None


def test_a_k_safe_split_is_not_resplit_below_k_plus_1_partitions(tmp_path: Path) -> None:
    import re

    from reuse.runtime import SparkRuntimeError

    batches = SplitBatches(tmp_path, 3, copies=3)
    before = batches.layout
    with pytest.raises(SparkRuntimeError, match=re.escape(
            "--k-safe 2 needs at least 3 partitions (a key's copies sit apart), not 2")):
        batches.resplit(2)
    assert batches.layout == before
    assert batches.resplit(4) >= 0 and batches.layout.partitions == 4


@pytest.mark.parametrize("extra, message", [
    (["--split", "--merge", "partial"], "--split needs the shared query"),
    (["--split", "--k-safe", "2", "--shards", "2"], "K=2 needs K+1=3 distinct executors"),
])
def test_reuse_run_refuses_a_split_it_cannot_run_before_spark_starts(
        refused_run: Any, extra: list[str], message: str) -> None:
    code, err = refused_run(extra)
    assert code == 1 and len(err.splitlines()) == 1 and message in err, err

"""Many-seed random-walk statistics, checked against counts derived from the traces by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reuse.analysis.walks import (
    WalkStats,
    median_walk_seed,
    paper_position,
    percentile_of,
    walk_stats,
)
from reuse.core.dataflow import Dataflow, parse_dataflow
from reuse.core.paths import data_dir
from reuse.testing import missing
from reuse.workloads.registry import load_workload
from reuse.workloads.trace_registry import build_trace


def _flows(sizes: list[int], shared: bool) -> list[Dataflow]:
    """DAG i is a chain of sizes[i] tasks; ``shared``: all DAGs are the same chain type-wise
    (everything reused), else every task is private (nothing reused)."""
    out = []
    for i, n in enumerate(sizes):
        cfg = (lambda k: k) if shared else (lambda k, i=i: f"{i}-{k}")
        tasks = [{"id": f"t{k}", "type": "T", "config": cfg(k)} for k in range(n)]
        streams = [[f"t{k}", f"t{k + 1}"] for k in range(n - 1)]
        out.append(parse_dataflow({"id": f"d{i:02d}", "tasks": tasks, "streams": streams}))
    return out


def _present_by_hand(workload: str | None, flows: list[Dataflow], seed: int) -> list[list[str]]:
    t = build_trace(workload, "rw", flows, seed=seed)
    present: list[str] = []
    states = []
    for op in t.ops:
        present = present + [op.dag] if op.op == "submit" else [d for d in present if d != op.dag]
        states.append(present)
    assert t.spec.populate is not None and t.spec.walk is not None
    return states[t.spec.populate:t.spec.populate + t.spec.walk]


def test_private_tasks_save_nothing() -> None:
    sizes = [1, 2, 3, 4, 5, 6, 7, 8, 9]
    flows = _flows(sizes, shared=False)
    stats = walk_stats("riot", flows, seeds=[3, 4])  # riot's populate fraction: 6 of 9
    assert stats.populate == 6 and stats.walk == 100 and len(stats.band) == 106
    for _, row in stats.per_seed.iterrows():
        states = _present_by_hand("riot", flows, int(row["seed"]))
        size = {f.id: len(f) for f in flows}
        assert row["mean_present"] == pytest.approx(np.mean([len(s) for s in states]))
        assert row["mean_default"] == pytest.approx(
            np.mean([sum(size[d] for d in s) for s in states]))
        assert row["mean_reuse"] == row["mean_default"] and row["saving"] == 0
        assert row["int_2plus"] == 0 and row["avg_gt1"] == 0


def test_identical_dags_run_one_copy() -> None:
    flows = _flows([3] * 6, shared=True)
    stats = walk_stats("riot", flows, seeds=[1, 2, 5])
    for _, row in stats.per_seed.iterrows():
        states = _present_by_hand("riot", flows, int(row["seed"]))
        assert row["mean_default"] == pytest.approx(np.mean([3 * len(s) for s in states]))
        assert row["mean_reuse"] == pytest.approx(np.mean([3 * (len(s) > 0) for s in states]))
    b = stats.band
    assert (b["default_p10"] <= b["default_median"]).all()
    assert (b["default_median"] <= b["default_p90"]).all()
    assert (b["reuse_p90"] <= b["default_p90"]).all()
    assert list(b["present_median"][:stats.populate]) == list(range(1, stats.populate + 1))


def _stats(values: dict[int, float]) -> WalkStats:
    per_seed = pd.DataFrame({"seed": list(values), "mean_default": list(values.values())})
    for m in ("mean_present", "median_present", "mean_reuse", "saving"):
        per_seed[m] = 0.0
    return WalkStats("riot", 4, 1, 2, per_seed, pd.DataFrame({"step": [1, 2, 3]}), 1.0)


def test_median_walk_seed_takes_the_middle() -> None:
    assert median_walk_seed(_stats({1: 5.0, 2: 1.0, 3: 3.0})) == 3
    assert median_walk_seed(_stats({1: 5.0, 2: 1.0, 3: 3.0, 4: 4.0})) == 3  # lower middle
    assert median_walk_seed(_stats({7: 2.0, 4: 2.0, 9: 2.0})) == 7          # ties: by seed
    with pytest.raises(ValueError, match="unknown metric"):
        median_walk_seed(_stats({1: 1.0}), "peak")


@given(st.lists(st.floats(-100, 100), min_size=1, max_size=30), st.floats(-120, 120),
       st.floats(0, 50))
def test_percentile_is_monotone(values: list[float], x: float, dx: float) -> None:
    p = percentile_of(x, values)
    assert 0 <= p <= 100 and percentile_of(x + dx, values) >= p
    if x > max(values):
        assert p == 100


@pytest.mark.skipif(not (data_dir() / "riotbench").is_dir(), reason=missing("data", "data/ not set up"))
def test_paper_and_our_walks_are_placed_in_the_distribution() -> None:
    flows = load_workload("riot")
    stats = walk_stats("riot", flows, seeds=range(1, 51))
    pos = paper_position(stats).set_index("walk")
    paper = pos.loc["paper RW1"]
    assert paper["mean_present"] == pytest.approx(125 / (138 / 21))  # 125 tasks, 6.57 a DAG
    below = (stats.per_seed["mean_default"] < 125).mean() * 100
    assert paper["mean_default_pct"] == pytest.approx(below)
    ours = pos.loc["ours RW1 (seed 1)"]
    row = stats.per_seed.set_index("seed").loc[1]
    assert ours["mean_present"] == row["mean_present"]
    assert ours["mean_present_pct"] == percentile_of(row["mean_present"],
                                                     stats.per_seed["mean_present"])

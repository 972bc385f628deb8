"""The billing notebook's helpers: a workload's traces priced, plotted and summed up."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from reuse.analysis.billing import TaskCosts  # noqa: E402
from reuse.core.paths import data_dir
from reuse.core.planner import replay  # noqa: E402
from reuse.figures.billing import billing_figures, billing_run, summary_rows  # noqa: E402
from reuse.testing import missing  # noqa: E402
from reuse.workloads.registry import load_workload  # noqa: E402
from reuse.workloads.trace_registry import build_trace  # noqa: E402


def test_summary_of_figure1_seq(figure1) -> None:
    flows = list(figure1.values())
    run = billing_run("figure1", "seq", flows)
    ops = list(build_trace("figure1", "seq", flows).ops)
    records = replay(figure1, ops)
    rows = {r["rule"]: r for r in summary_rows(run)}
    for r in rows.values():  # both rules bill what the planner ran, task-steps
        assert r["cost_reuse"] == sum(rec.reuse_tasks for rec in records)
        assert r["cost_alone"] == sum(rec.default_tasks for rec in records)
        assert r["billed"] == pytest.approx(r["cost_reuse"])
        assert r["saving_pct_min"] == 0  # D shares nothing
        assert r["stays"] == r["dataflows"] == 4
    frame = run.frame()
    assert list(frame["dag"]) == [op.dag for op in ops][:4]
    assert (frame["bill_shapley"] <= frame["standalone"]).all()
    priced = billing_run("figure1", "seq", flows, TaskCosts({"SYS": 2.0}, unit="CPU-s"))
    assert priced.unit == "CPU-s" and summary_rows(priced)[0]["cost_alone"] > rows["shapley"][
        "cost_alone"]


@pytest.mark.skipif(not (data_dir() / "riotbench").is_dir(), reason=missing("data", "data/ not set up"))
def test_billing_figures_write_panels_and_summary(tmp_path) -> None:
    runs, summary = billing_figures("riot", load_workload("riot"), tmp_path, walk=5)
    assert [r.trace for r in runs] == ["seq", "rw1", "rw2"]
    for t in ("seq", "rw1", "rw2"):
        assert (tmp_path / f"bills_riot_{t}.png").stat().st_size > 5000
        bills = pd.read_csv(tmp_path / f"bills_riot_{t}.csv")
        assert (bills["bill_shapley"] <= bills["standalone"] + 1e-9).all()
    assert (tmp_path / "arrivals_riot.png").stat().st_size > 5000
    saved = pd.read_csv(tmp_path / "summary_billing_riot.csv")
    assert list(saved["rule"]) == ["shapley", "lifetime"] * 3
    assert saved["billed"].to_numpy() == pytest.approx(saved["cost_reuse"].to_numpy())
    assert len(summary) == len(saved) == 6 and list(summary.columns) == list(saved.columns)

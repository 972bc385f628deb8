"""The tenant workload's Figures 2 and 4, exact against semantic, on a few real tenants.

The table is read back against the per-step CSVs the same call writes, the figures against the
runs they draw, and the policies against each other where the workload says how they must
compare (the same Default; semantic never above exact until a DAG leaves; equal when nobody
respells).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import nbformat  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from reuse.core.dataflow import parse_dataflow  # noqa: E402
from reuse.core.errors import ReuseError  # noqa: E402
from reuse.core.paths import riotbench_dir  # noqa: E402
from reuse.figures.batch import load_param_set, write_summary  # noqa: E402
from reuse.figures.tenants import MATCHES, peak_row, tenant_figures, tenant_runs  # noqa: E402
from reuse.figures.traces import plot_reuse_histogram, plot_running_tasks  # noqa: E402
from reuse.testing import ROOT, missing  # noqa: E402
from reuse.workloads.registry import load_workload  # noqa: E402
from reuse.workloads.tenants import build_tenants  # noqa: E402

pytestmark = pytest.mark.skipif(not riotbench_dir().is_dir(),
                                reason=missing("data", "no data/riotbench"))

TENANTS = 14


@pytest.fixture(scope="module")
def flows():
    return load_workload("riot-tenants", tenants=TENANTS, seed=2)


def test_table_is_the_peak_of_the_runs_it_wrote(flows, tmp_path):
    runs, table = tenant_figures(flows, tmp_path, traces=("seq", "rw1"), walk=6)
    assert list(table["trace"]) == ["seq", "rw1"] and (table["tenants"] == TENANTS).all()
    for row in table.to_dict("records"):
        exact = pd.read_csv(tmp_path / f"plan_riot-tenants_{row['trace']}_exact.csv")
        semantic = pd.read_csv(tmp_path / f"plan_riot-tenants_{row['trace']}_semantic.csv")
        # one trace, two policies: the same operations, so the same Default at every step
        assert (exact[["step", "op", "dag", "default_tasks"]]
                == semantic[["step", "op", "dag", "default_tasks"]]).all().all()
        # until a DAG leaves, semantic finds all exact finds (the workload reorders only a sink's
        # inputs, which commute; a containment rewrite swaps tasks one for one); after removals a
        # residual can keep a wider filter running, so it may run more (BENCHMARKS.md)
        first_remove = int((exact["op"] == "remove").idxmax())
        assert first_remove > 0
        assert (semantic["reuse_tasks"][:first_remove] <= exact["reuse_tasks"][:first_remove]).all()
        peak = exact.loc[exact["default_tasks"].idxmax()]
        assert row["step"] == peak["step"] and row["default"] == peak["default_tasks"]
        assert row["exact"] == peak["reuse_tasks"]
        assert row["semantic"] == semantic.loc[peak.name, "reuse_tasks"]
        assert row["saved_exact"] == row["default"] - row["exact"] > 0
        assert row["saved_semantic"] == row["default"] - row["semantic"]
        assert row["ratio"] == round(row["saved_semantic"] / row["saved_exact"], 2)
        # rewrites are counted per submit: never more rewritten submits than submits
        submits = int((semantic["op"] == "submit").sum())
        assert 0 <= row["rewritten_submits"] <= min(row["rewrites"], submits)
        assert runs[row["trace"]]["exact"].rewrites == ()  # exact has no containment rule
    for fig in ("fig2", "fig4"):
        for trace in ("seq", "rw1"):
            assert (tmp_path / f"{fig}_riot-tenants_{trace}.png").stat().st_size > 5000
    summary = write_summary(tmp_path, tmp_path / "summary.md").read_text()
    seq = table.iloc[0]
    assert "\n## tenants\n" in summary
    assert (f"| {TENANTS} | seq | {seq['step']} | {seq['default']} | {seq['exact']} | "
            f"{seq['semantic']} |") in summary


def test_policies_agree_when_nobody_respells():
    """With every tenant spelling as the builder does, semantic's only extra is containment,
    which swaps a task for a residual one for one while no DAG leaves: up to SEQ's peak the
    running tasks are exact's, step by step (in the drain a residual may keep a wider filter)."""
    dicts = build_tenants(riotbench_dir(), tenants=TENANTS, seed=2, respell_p=0.0)
    same = [parse_dataflow(d) for d in sorted(dicts, key=lambda d: d["id"])]
    runs = tenant_runs(same, "seq")
    row = peak_row(runs)
    assert row["step"] == TENANTS  # SEQ peaks when the last tenant is in
    assert ([r.reuse_tasks for r in runs["exact"].records[:TENANTS]]
            == [r.reuse_tasks for r in runs["semantic"].records[:TENANTS]])
    assert row["exact"] == row["semantic"] < row["default"] and row["ratio"] == 1.0
    assert row["rewrites"] >= 1  # containment did rewrite, and still moved no count


def test_figure_2_has_one_default_and_a_reuse_line_per_policy(flows):
    runs = tenant_runs(flows, "seq")
    ax = Figure().subplots()
    plot_running_tasks(list(runs.values()), ax)
    lines = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    assert list(lines) == ["Default", "Reuse-exact", "Reuse-semantic"]
    assert lines["Default"] == [r.default_tasks for r in runs["exact"].records]
    for m in MATCHES:
        assert lines[f"Reuse-{m}"] == [r.reuse_tasks for r in runs[m].records]
    # Figure 4: each panel names its policy and the share of task-time reused by 2+ DAGs
    for m in MATCHES:
        ax = Figure().subplots()
        plot_reuse_histogram(runs[m], ax)
        share = 1 - runs[m].histogram["1"]
        assert ax.get_title() == f"RIOT-TENANTS SEQ {m}: reused by 2+ = {share:.0%}"


def test_runs_of_different_traces_are_refused(flows):
    seq, rw1 = tenant_runs(flows, "seq"), tenant_runs(flows, "rw1", walk=4)
    with pytest.raises(ReuseError, match="riot-tenants rw1 \\(semantic\\): not the same trace"):
        plot_running_tasks([seq["exact"], rw1["semantic"]], Figure().subplots())
    with pytest.raises(ReuseError, match="exact and semantic runs are not the same trace"):
        peak_row({"exact": seq["exact"], "semantic": rw1["semantic"]})


def test_the_notebook_is_in_every_batch_set_with_its_parameters():
    nb = nbformat.read(ROOT / "notebooks" / "tenants.ipynb", as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    declared = {line.split("=")[0].strip() for line in cell.source.splitlines() if "=" in line}
    assert declared == {"TENANTS", "SEED", "TRACES", "RW_WALK", "OUT_DIR"}
    for name in ("default", "full", "tiny"):
        _, items = load_param_set(name)
        ours = [i for i in items if i["path"] == "notebooks/tenants.ipynb"]
        assert len(ours) == 1 and set(ours[0]["parameters"]) <= declared, name

"""The blast-radius notebook's helpers: a trace measured, plotted and summed up."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from reuse.analysis.blast import BLAST_COLUMNS  # noqa: E402
from reuse.core.paths import data_dir
from reuse.figures.blast import blast_figures, blast_frame, blast_run, summary_row  # noqa: E402
from reuse.testing import missing  # noqa: E402
from reuse.workloads.registry import load_workload  # noqa: E402


def test_summary_of_figure1_seq(figure1) -> None:
    # SEQ submits D, A, C, B: at step 4 A, B, C share one running DAG and D has its own. E = 2:
    # Default spreads the four dataflows 2 + 2; Reuse keeps A, B, C together (3), and their own
    # sinks keep k-safety at 3 too.
    run = blast_run("figure1", "seq", list(figure1.values()), executors=2)
    df = blast_frame(run)
    assert list(df.columns) == BLAST_COLUMNS and len(df) == 8
    row = summary_row(run)
    assert (row["default_peak"], row["reuse_peak"], row["ksafe_peak"]) == (2, 3, 3)
    assert row["peak_submitted"] == 4 and row["executors"] == 2 and row["k"] == 1
    assert row["replicas_extra_peak"] == df["replicas_extra"].max() > 0


@pytest.mark.skipif(not (data_dir() / "riotbench").is_dir(),
                    reason=missing("data", "data/ not set up (run scripts/setup.sh)"))
def test_blast_figures_write_the_panel_and_summary(tmp_path) -> None:
    run, summary = blast_figures("riot", load_workload("riot"), tmp_path, trace="seq",
                                 executors=4, k=1, min_users=2)
    assert (tmp_path / "fig_blast_riot_seq.png").stat().st_size > 5000
    saved = pd.read_csv(tmp_path / "summary_blast_riot.csv")
    assert saved.to_dict("records") == summary.to_dict("records")
    steps = pd.read_csv(tmp_path / "blast_riot_seq.csv")
    assert len(steps) == len(run.steps) == 42
    assert saved.loc[0, "reuse_peak"] == steps["reuse_worst"].max()
    assert saved.loc[0, "ksafe_peak"] <= saved.loc[0, "reuse_peak"]


@pytest.mark.skipif(not (data_dir() / "riotbench").is_dir(),
                    reason=missing("data", "data/ not set up (run scripts/setup.sh)"))
def test_blast_figures_across_applications_sit_beside_the_shards(tmp_path) -> None:
    """``replicas="apps"`` writes its own files (the batch runs both), and its summary says
    which placement it is."""
    blast_figures("riot", load_workload("riot"), tmp_path, executors=4, k=1, min_users=2)
    _, apps = blast_figures("riot", load_workload("riot"), tmp_path, executors=4, k=1,
                            min_users=2, replicas="apps")
    shards = pd.read_csv(tmp_path / "summary_blast_riot.csv")
    saved = pd.read_csv(tmp_path / "summary_blast_riot_apps.csv")
    assert (tmp_path / "fig_blast_riot_seq_apps.png").stat().st_size > 5000
    assert list(shards["replicas"]) == ["shards"] and list(saved["replicas"]) == ["apps"]
    assert saved.loc[0, "replicas_extra_peak"] == shards.loc[0, "replicas_extra_peak"]

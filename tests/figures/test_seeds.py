"""The seeds notebook's figures and tables, on the four Figure 1 DAGs (no data needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402

from reuse.analysis.walks import walk_stats  # noqa: E402
from reuse.figures.seeds import figure4_figures, seeds_figures  # noqa: E402
from reuse.workloads.registry import load_workload  # noqa: E402


def test_seeds_and_figure4_files(tmp_path: Path) -> None:
    flows = load_workload("figure1")
    stats = walk_stats("figure1", flows, seeds=range(1, 21))
    tables = seeds_figures(stats, flows, tmp_path)
    for name in ("seeds_fig2_figure1.png", "seeds_fig2_dist_figure1.png",
                 "seeds_fig4_dist_figure1.png"):
        assert (tmp_path / name).stat().st_size > 10_000, name
    summary = pd.read_csv(tmp_path / "summary_seeds_figure1.csv")
    assert summary.loc[0, "seeds"] == 20 and summary.loc[0, "walk"] == 10
    assert summary.loc[0, "median_seed_mean_default"] in range(1, 21)
    assert list(tables["position"]["walk"]) == ["ours RW1 (seed 1)", "ours RW2 (seed 2)"]
    table = figure4_figures("figure1", flows, tmp_path)
    assert list(table["trace"]) == ["seq", "rw1", "rw2"]
    assert (table["avg_gt1"] >= table["int_2plus"]).all()
    assert (tmp_path / "fig4both_figure1_rw2.png").stat().st_size > 10_000

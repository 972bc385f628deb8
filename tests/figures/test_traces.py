"""Figure helpers on small hand-made live-run tables (what the live notebook plots and sums up)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from reuse.figures.traces import live_summary_row, plot_cores  # noqa: E402


def _run(tasks: list[int], cores: list[float], lost: int = 0) -> pd.DataFrame:
    n = len(tasks)
    return pd.DataFrame({"step": range(1, n + 1), "running_tasks": tasks, "cores": cores,
                         "lost": [lost] + [0] * (n - 1), "duplicated": [0] * n})


def test_live_summary_row_compares_at_the_default_peak() -> None:
    default = _run([4, 10, 2], [0.5, 1.0, 0.4])
    reuse = _run([4, 6, 2], [0.6, 0.7, 0.3], lost=2)
    # three runs per mode (the same each time) decide the cost, so the savings are printed
    row = live_summary_row([default] * 3, [reuse] * 3, "riot", "seq", "reuse-relaunch")
    assert row["mode"] == "reuse-relaunch" and row["peak_step"] == 2
    assert row["peak_tasks"] == "10 -> 6" and row["peak_cores"] == "1.00 -> 0.70"
    assert (row["task_saving"], row["core_saving"]) == ("0.400", "0.300")
    assert row["core_over_task_saving"] == "0.750"
    assert row["steps_reuse_above_default"] == "1 of 3"  # step 1: 0.6 > 0.5
    assert row["lost"] == 6 and row["duplicated"] == 0  # summed over the runs


def test_plot_cores_draws_one_line_per_mode() -> None:
    fig, ax = plt.subplots()
    runs = {"default": _run([1, 2], [0.2, 0.4]), "reuse": _run([1, 2], [0.2, 0.3]),
            "reuse-relaunch": _run([1, 2], [0.1, 0.2])}
    plot_cores(runs, ax, "riot", "seq")
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[0].startswith("Default (own sources") and len(labels) == 3 and "relaunch" in labels[2]
    plt.close(fig)

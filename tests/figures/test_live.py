"""The live tables of the summary on tiny synthetic runs (no Spark): real CSVs with the run
CSV's columns (:data:`reuse.runtime.run.CSV_COLUMNS`), written and read back as the live
notebook does, then summed up by :mod:`reuse.figures.live` and gathered by the batch.

What the summary must not print (issue 33, item 0): a step's cores measured over almost none
of it, a saving over a near-zero Default, a cost one short run cannot decide.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from reuse.figures.batch import write_summary  # noqa: E402
from reuse.figures.live import (  # noqa: E402
    MIN_DEFAULT_CORES,
    decided_figures,
    excluded_steps,
    live_summary_row,
    live_summary_table,
    measured_fraction,
)
from reuse.figures.traces import plot_cores  # noqa: E402
from reuse.runtime.run import CSV_COLUMNS, write_rows  # noqa: E402
from reuse.testing import ROOT  # noqa: E402

STEP = 4.0  # the default set's step length (s)
OLD = [c for c in CSV_COLUMNS if c != "measured_s"]  # a run CSV from before measured_s


def _rows(tasks: Sequence[int], cores: Sequence[float], op_s: Sequence[float], *,
          measured: Sequence[float] | None = None, lost: int = 0,
          times: bool = False) -> list[dict[str, object]]:
    """One row per step, every CSV column filled as a run fills it."""
    rows, t = [], 1_000_000
    for i, (n, c, o) in enumerate(zip(tasks, cores, op_s, strict=True)):
        length = max(STEP, o)
        row: dict[str, object] = {c_: "" for c_ in CSV_COLUMNS}
        row.update(step=i + 1, op="submit", dag=f"d{i + 1}", running_tasks=n, paused_tasks=0,
                   replica_tasks=0, queries=1, cores=c, cores_steady=c, p50_latency_ms=900.0,
                   p99_latency_ms=2000.0, events_in=40, events_out=80,
                   lost=lost if i == 0 else 0, duplicated=0, cut=10 * i, op_seconds=o,
                   measured_s=length if measured is None else measured[i], cpu_driver=0.1,
                   cpu_jvm=0.5, cpu_python_workers=0.8, cpu_other=0.0, failures=0)
        if times:
            row.update(t_start_ms=t, t_end_ms=t + round(1000 * length))
        t += round(1000 * length)
        rows.append(row)
    return rows


def _csv(tmp_path: Path, name: str, rows: list[dict[str, object]],
         columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Written as the run writes it (``write_rows``), or with ``columns`` (an older CSV, or one
    with the step times), and read back as the notebook reads it."""
    path = tmp_path / f"live_{name}.csv"
    if columns is None:
        write_rows(rows, path)
    else:
        pd.DataFrame(rows)[list(columns)].to_csv(path, index=False)
    return pd.read_csv(path)


@pytest.fixture
def old_runs(tmp_path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The fresh-clone symptom, in an old CSV: step 3 (the peak) starts queries for 6 s on a
    4 s step, so its cores were measured over no time at all (0.002 and 0.004)."""
    d = _csv(tmp_path, "d", _rows([4, 8, 12, 6], [0.50, 0.70, 0.002, 0.60],
                                  [0.3, 0.5, 6.2, 0.4]), OLD)
    r = _csv(tmp_path, "r", _rows([4, 6, 9, 5], [0.45, 0.50, 0.004, 0.50],
                                  [0.3, 0.5, 6.0, 0.4]), OLD)
    return d, r


def test_a_step_shorter_than_its_operation_is_flagged_and_excluded(old_runs) -> None:
    d, r = old_runs
    assert "measured_s" not in d.columns  # inferred from op_seconds and the step length
    assert measured_fraction(d, STEP).round(3).tolist() == [0.925, 0.875, 0.0, 0.9]
    assert list(excluded_steps(d, STEP)) == [3]
    row = live_summary_row(d, r, "riot", "rw2", "reuse", "default", step_seconds=STEP)
    assert row["peak_step"] == 3 and row["peak_tasks"] == "12 -> 9"  # tasks are counted: kept
    # the peak's cores are left out: the next step by Default tasks is compared, and named
    assert row["peak_cores"] == "0.70 -> 0.50 (step 2; peak step 3 excluded)"
    # one run per mode decides no cost: no saving is printed over it
    assert row["core_saving"] == "n/a (cost not decided at this length)"
    assert row["core_over_task_saving"] == "n/a (core saving not printable)"
    assert row["mean_cores"] == f"{(0.5 + 0.7 + 0.6) / 3:.2f} -> {(0.45 + 0.5 + 0.5) / 3:.2f} over 3 of 4 steps"
    assert row["steps_reuse_above_default"] == "0 of 3"
    assert row["excluded_steps"] == ("step 3: default cores over 0.0 of 6.2 s (op 6.2 s); "
                                     "reuse cores over 0.0 of 6.0 s (op 6.0 s)")
    # without the step length an old CSV cannot tell: nothing is excluded on a guess
    assert excluded_steps(d) == {}


def test_measured_s_and_step_times_decide_the_share(tmp_path: Path) -> None:
    # a new CSV: the window covers the operation, so a 6.2 s op on a 4 s step is measured
    ok = _csv(tmp_path, "new", _rows([4, 8], [0.5, 0.7], [0.3, 6.2]))
    assert "measured_s" in ok.columns and excluded_steps(ok, STEP) == {}
    # with the step times: a step measured over 2 of its 4 s (a resumed driver) is excluded
    rows = _rows([4, 8, 6], [0.5, 0.7, 0.6], [0.3, 0.5, 0.4], measured=[4.0, 2.0, 3.3],
                 times=True)
    df = _csv(tmp_path, "times", rows, [*CSV_COLUMNS, "t_start_ms", "t_end_ms"])
    assert measured_fraction(df).round(3).tolist() == [1.0, 0.5, 0.825]
    assert excluded_steps(df) == {2: "cores over 2.0 of 4.0 s (op 0.5 s)"}


def test_a_default_under_005_cores_prints_no_ratio(tmp_path: Path) -> None:
    d = _csv(tmp_path, "d", _rows([2, 5, 3], [0.03, 0.04, 0.02], [0.1, 0.1, 0.1]))
    r = _csv(tmp_path, "r", _rows([2, 3, 2], [0.20, 0.40, 0.30], [0.1, 0.1, 0.1]))
    row = live_summary_row(d, r, "opmw", "seq", "reuse", "default", step_seconds=STEP)
    assert d["cores"].max() < MIN_DEFAULT_CORES
    assert row["peak_cores"] == "0.04 -> 0.40"  # the values themselves are printed
    assert row["task_saving"] == "0.400"
    assert row["core_saving"] == "n/a (Default < 0.05 cores)"
    assert row["core_over_task_saving"] == "n/a (core saving not printable)"


def test_a_single_short_run_is_not_decided_and_exact_is_reported(old_runs, tmp_path) -> None:
    d, r = old_runs
    row = live_summary_row(d, r, "riot", "seq", "reuse", "default", step_seconds=STEP)
    assert row["verdict"].startswith("exact: yes; cores: not decided at this length")
    assert "1 and 1 runs" in row["verdict"] and row["runs"] == "1 / 1"
    lossy = _csv(tmp_path, "lossy", _rows([4, 6, 9, 5], [0.45, 0.5, 0.4, 0.5],
                                          [0.3, 0.5, 0.5, 0.4], lost=3))
    row = live_summary_row(d, lossy, "riot", "seq", "reuse", "default", step_seconds=STEP)
    assert row["verdict"].startswith("exact: no (3 lost, 0 duplicated); cores: not decided")


def test_three_runs_per_mode_decide_by_the_spread_rule(tmp_path: Path) -> None:
    def runs(name: str, levels: Sequence[float]) -> list[pd.DataFrame]:
        return [_csv(tmp_path, f"{name}{i}", _rows([4, 8, 6], [x, x + 0.1, x], [0.3] * 3))
                for i, x in enumerate(levels)]
    d = runs("d", [0.60, 0.62, 0.65])
    apart = live_summary_row(d, runs("r", [0.40, 0.42, 0.45]), "riot", "seq",
                             step_seconds=STEP)
    assert apart["runs"] == "3 / 3"
    assert apart["verdict"].startswith("exact: yes; cores: reuse lower by 0.200")
    # a decided difference: the first runs' saving at the peak is printed
    assert apart["core_saving"] == f"{1 - 0.50 / 0.70:.3f}"
    assert apart["core_over_task_saving"] == "n/a (no task saved)"  # the same tasks here
    close = live_summary_row(d, runs("r", [0.55, 0.61, 0.70]), "riot", "seq",
                             step_seconds=STEP)
    assert "cores: no difference" in close["verdict"]
    assert close["core_saving"] == "n/a (cost no difference)"


def _bench(root: Path, n: int) -> None:
    (root / "docs" / "bench").mkdir(parents=True)
    verdict = {"a": "reuse-inplace", "b": "default-inplace", "outcome": "lower",
               "lower": "reuse-inplace", "diff": -0.05, "gap": 0.02,
               "a_spread": {"n": n, "median": 0.35, "min": 0.35, "max": 0.38},
               "b_spread": {"n": n, "median": 0.41, "min": 0.40, "max": 0.42}}
    (root / "docs" / "bench" / "rates_x.json").write_text(json.dumps(
        {"args": {"workload": "riot", "repeat": n}, "spread": {"100": {"verdicts": [verdict]}}}))
    (root / "BENCHMARKS.md").write_text("# Benchmarks\n\n## Cost at the peak\n\n"
                                        "`--json docs/bench/rates_x.json` ...\n")


def test_a_decided_committed_figure_is_pointed_to(tmp_path: Path, old_runs) -> None:
    d, r = old_runs
    _bench(tmp_path / "decided", 3)
    row = live_summary_row(d, r, "riot", "rw1", "reuse-inplace", "default-inplace",
                           step_seconds=STEP, root=tmp_path / "decided")
    assert row["decided_figure"] == ("decided figure: see docs/bench/rates_x.json (BENCHMARKS.md: "
                                     "Cost at the peak): reuse-inplace lower, 3 and 3 runs")
    assert "not decided at this length" in row["verdict"]  # this table still decides nothing
    # another comparison, another workload, or a verdict of one run: no pointer
    assert live_summary_row(d, r, "riot", "rw1", step_seconds=STEP,
                            root=tmp_path / "decided")["decided_figure"] == ""
    assert live_summary_row(d, r, "opmw", "rw1", "reuse-inplace", "default-inplace",
                            step_seconds=STEP, root=tmp_path / "decided")["decided_figure"] == ""
    _bench(tmp_path / "one", 1)
    assert decided_figures(tmp_path / "one") == {}


def test_a_decide_file_is_pointed_to_for_its_trace_by_its_headline(tmp_path: Path,
                                                                  old_runs) -> None:
    """A ``benchmarks/decide.py`` file names its workload and trace in ``comparison``; its
    answer is the first window's verdict (``peak``), not a step's; a row of that trace points
    to it before a file of the whole workload."""
    d, r = old_runs
    root = tmp_path / "decided"
    _bench(root, 3)

    def verdict(label: str, outcome: str) -> dict:
        return {"label": label, "a": "reuse-inplace", "b": "default-inplace",
                "outcome": outcome, "lower": "reuse-inplace" if outcome == "lower" else None,
                "a_spread": {"n": 3}, "b_spread": {"n": 3}}
    (root / "docs" / "bench" / "decide_x.json").write_text(json.dumps({
        "comparison": {"workload": "riot", "trace": "seq", "windows": ["peak", "mean"]},
        "results": {"runs": [], "decisions": [verdict("submit a", "lower"),
                                              verdict("peak", "no difference"),
                                              verdict("mean", "lower")]}}))
    with (root / "BENCHMARKS.md").open("a") as f:
        f.write("\n## Figure 3, decided\n\nGenerated from `docs/bench/decide_x.json` ...\n")
    decided_figures.cache_clear()
    seq = live_summary_row(d, r, "riot", "seq", "reuse-inplace", "default-inplace",
                           step_seconds=STEP, root=root)
    assert seq["decided_figure"] == ("decided figure: see docs/bench/decide_x.json (BENCHMARKS.md: "
                                     "Figure 3, decided): no difference, 3 and 3 runs")
    rw1 = live_summary_row(d, r, "riot", "rw1", "reuse-inplace", "default-inplace",
                           step_seconds=STEP, root=root)
    assert "rates_x.json" in rw1["decided_figure"]


def test_the_repo_pointers_name_committed_files() -> None:
    for ptr in decided_figures(ROOT).values():
        assert (ROOT / ptr.split()[1]).is_file(), ptr


def test_summary_md_prints_the_live_table_with_its_rule(tmp_path: Path) -> None:
    """The notebook's table (``live_summary_table``) gathered by the batch into summary.md."""
    d = _csv(tmp_path, "d", _rows([4, 8, 12], [0.03, 0.04, 0.001], [0.3, 0.5, 6.2]), OLD)
    r = _csv(tmp_path, "r", _rows([4, 6, 9], [0.3, 0.4, 0.4], [0.3, 0.5, 6.0]), OLD)
    shared_d = _csv(tmp_path, "sd", _rows([4, 8, 12], [0.5, 0.6, 0.7], [0.0, 0.0, 0.0]))
    shared_r = _csv(tmp_path, "sr", _rows([4, 6, 9], [0.6, 0.5, 0.8], [0.0, 0.0, 0.0]))
    results = {("rw2", "default"): d, ("rw2", "reuse"): r,
               ("rw2", "default-inplace"): shared_d, ("rw2", "reuse-inplace"): shared_r}
    table = live_summary_table(results, "riot", ["rw2"],
                               ["default", "reuse", "default-inplace", "reuse-inplace"],
                               step_seconds=STEP, root=tmp_path)
    assert table[["mode", "baseline"]].values.tolist() == [["reuse", "default"],
                                                           ["reuse-inplace", "default-inplace"]]
    table.to_csv(tmp_path / "summary_live_riot.csv", index=False)
    md = write_summary(tmp_path, tmp_path / "summary.md").read_text()
    lines = [x for x in md.splitlines() if x.startswith("| riot | rw2 |")]
    assert len(lines) == 2
    reuse, shared = lines
    assert "n/a (Default < 0.05 cores)" in reuse and "step 3: default cores over 0.0" in reuse
    assert "-198" not in reuse and "0.00 -> " not in reuse
    assert "| 2 of 3 |" in shared  # Reuse above Default on 2 of 3 steps: counted, not decided
    assert all("exact: yes; cores: not decided at this length" in x for x in lines)
    assert "one run per mode decides no cost" in md


def test_plot_cores_leaves_excluded_steps_off_the_line(old_runs) -> None:
    d, r = old_runs
    fig, ax = plt.subplots()
    plot_cores({"default": d, "reuse": r}, ax, "riot", "rw2", STEP)
    lines = ax.get_lines()
    shown = [ln for ln in lines if not ln.get_label().startswith("_")]
    assert len(shown) == 2 and np.isnan(shown[0].get_ydata()[2])  # step 3 off the line
    hollow = [ln for ln in lines if ln.get_label() == "_excluded"]
    assert len(hollow) == 2 and list(hollow[0].get_xdata()) == [3]
    plt.close(fig)

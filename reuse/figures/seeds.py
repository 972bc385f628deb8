"""Figures over many random-walk seeds, and Figure 4 both ways (the seeds notebook and
``experiments/committed_figures.py`` call these; logic in :mod:`reuse.analysis.walks` and
:mod:`reuse.analysis.figure4`).

- :func:`plot_walk_band`: Figure 2 over seeds: median and 10-90% band of running tasks per step,
  Default and Reuse, with our RW1/RW2 walks drawn over it;
- :func:`plot_walk_distribution`: one per-seed measure (present DAGs, mean Default tasks, the
  saving, the Figure 4 shares) as a histogram, with the 10th/90th percentiles and where the
  paper's walk and ours sit;
- :func:`plot_figure4_both`: one trace's Figure 4 in both readings side by side;
- :func:`seeds_figures` and :func:`figure4_figures`: compute, save the PNGs and CSV tables into a
  folder and return the tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from reuse.analysis.figure4 import (
    PANELS,
    figure4_row,
    integer_histogram,
    replay_users,
    shares,
    time_averaged_histogram,
)
from reuse.analysis.paper import PAPER
from reuse.analysis.walks import WalkStats, median_walk_seed, paper_position
from reuse.core.dataflow import Dataflow
from reuse.workloads.trace_registry import build_trace

__all__ = ["LABELS", "plot_walk_band", "plot_walk_distribution", "plot_figure4_both",
           "seeds_figures", "figure4_figures"]

LABELS = {"mean_present": "mean submitted DAGs over the walk",
          "median_present": "median submitted DAGs over the walk",
          "mean_default": "mean Default running tasks over the walk",
          "mean_reuse": "mean Reuse running tasks over the walk",
          "saving": "task saving 1 - mean Reuse / mean Default",
          "int_2plus": "task-time reused by 2+ (ours: per-step counts)",
          "avg_gt1": "task-time reused, paper's reading (time-averaged count > 1)"}


def _plt() -> Any:
    import matplotlib.pyplot as plt
    return plt


def plot_walk_band(stats: WalkStats, ax: Any,
                   overlay: Mapping[str, Sequence[tuple[int, int]]] | None = None) -> None:
    """Median and 10-90% band over seeds of Default and Reuse running tasks per step.

    ``overlay``: label -> (Default, Reuse) per step of single walks (our RW1/RW2), cut to the
    band's steps.
    """
    b = stats.band
    for name, color in (("default", "tab:red"), ("reuse", "tab:blue")):
        ax.fill_between(b["step"], b[f"{name}_p10"], b[f"{name}_p90"], color=color, alpha=0.18,
                        lw=0, label=f"{name.capitalize()} 10-90%")
        ax.plot(b["step"], b[f"{name}_median"], color=color, lw=2,
                label=f"{name.capitalize()} median")
    for (label, steps), style in zip((overlay or {}).items(), (":", "--", "-."), strict=False):
        steps = list(steps)[:len(b)]
        xs = range(1, len(steps) + 1)
        ax.plot(xs, [d for d, _ in steps], color="tab:red", ls=style, lw=1, label=f"{label} Default")
        ax.plot(xs, [r for _, r in steps], color="tab:blue", ls=style, lw=1, label=f"{label} Reuse")
    ax.axvline(stats.populate, color="grey", lw=0.8)
    ax.set_title(f"{stats.workload.upper()} random walks over {len(stats.per_seed)} seeds: "
                 f"running tasks", fontsize="medium")
    ax.set_xlabel(f"step (populate {stats.populate}, then {stats.walk} random steps)")
    ax.set_ylabel("running tasks")
    ax.legend(loc="lower right", fontsize="x-small", ncol=2)


def plot_walk_distribution(stats: WalkStats, ax: Any, metric: str,
                           marks: Mapping[str, float] | None = None) -> None:
    """Histogram of a per-seed measure, dashed lines at its 10th and 90th percentiles, and a
    vertical line per ``marks`` entry (label -> value; the label should say its percentile)."""
    values = stats.per_seed[metric]
    ax.hist(values, bins=25, color="lightgrey", edgecolor="grey")
    for q in (10, 90):
        ax.axvline(values.quantile(q / 100), color="grey", ls="--", lw=1)
    for label, value in (marks or {}).items():
        ax.axvline(value, color=_mark_color(label), lw=2, label=label)
    ax.set_title(f"{stats.workload.upper()}: {LABELS.get(metric, metric)}", fontsize="small")
    ax.set_xlabel(metric)
    ax.set_ylabel(f"seeds (of {len(values)})")
    if marks:
        ax.legend(fontsize="x-small")


def _mark_color(label: str) -> str:
    """One colour per walk across panels: the paper's black/grey, our RW1 orange, RW2 green."""
    for key, color in (("paper RW2", "dimgrey"), ("paper", "black"), ("RW1", "tab:orange"),
                       ("RW2", "tab:green")):
        if key in label:
            return color
    return "tab:purple"


def plot_figure4_both(series: Sequence[Mapping[str, int]], ax: Any, workload: str, trace: str,
                      max_bin: int = 6) -> None:
    """Figure 4, both readings: bars for bins 2.. (the paper omits the first), shares in the
    title beside the paper's."""
    ours, avg = integer_histogram(series, max_bin), time_averaged_histogram(series, max_bin)
    keys = [k for k in ours if k != "1"]
    xs = range(len(keys))
    ax.bar([x - 0.2 for x in xs], [ours[k] for k in keys], 0.4, color="tab:blue",
           label="ours: count at each step, bin k")
    ax.bar([x + 0.2 for x in xs], [avg[k] for k in keys], 0.4, color="tab:orange",
           label="paper's reading: time-averaged, [k, k+1)")
    ax.set_xticks(list(xs), keys)
    s = shares(series)
    paper = PAPER.get((workload, trace), {}).get("reused_2plus")
    title = (f"{workload.upper()} {trace.upper()} (Fig. {PANELS.get((workload, trace), '?')}): "
             f"reused {s['int_2plus']:.0%} ours, {s['avg_gt1']:.0%} time-averaged")
    if paper is not None:
        title += f", paper {paper:.0%}"
    ax.set_title(title, fontsize="small")
    ax.set_xlabel("DAGs served")
    ax.set_ylabel("fraction of running task-time")
    ax.legend(fontsize="x-small")


def _save(fig: Any, path: Path, dpi: int = 110) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    _plt().close(fig)


def seeds_figures(stats: WalkStats, flows: Sequence[Dataflow], out_dir: str | Path,
                  dpi: int = 110) -> dict[str, pd.DataFrame]:
    """Save one workload's many-seed figures and tables into ``out_dir``; return the tables.

    Files: ``seeds_fig2_<w>.png`` (band), ``seeds_fig2_dist_<w>.png`` (present DAGs, Default
    tasks, saving), ``seeds_fig4_dist_<w>.png`` (the Figure 4 shares, both readings),
    ``seeds_<w>.csv`` (per seed), ``summary_seeds_<w>.csv``
    (percentiles), ``summary_seeds_position_<w>.csv`` (paper's and our walks).
    """
    plt = _plt()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    w = stats.workload
    position = paper_position(stats)
    med = {m: median_walk_seed(stats, m) for m in ("mean_default", "mean_present")}
    overlay = {}
    for trace in ("rw1", "rw2"):
        t = build_trace(w, trace, flows)
        records, _ = replay_users(t.flows, t.ops)
        overlay[f"ours {trace.upper()}"] = [(r.default_tasks, r.reuse_tasks) for r in records]
    fig, ax = plt.subplots(figsize=(7, 4))
    plot_walk_band(stats, ax, overlay)
    _save(fig, out / f"seeds_fig2_{w}.png", dpi)

    paper_reused = PAPER.get((w, "rw1"), {}).get("reused_2plus")
    figs = {"fig2": plt.subplots(1, 3, figsize=(16, 3.8)),
            "fig4": plt.subplots(1, 2, figsize=(11, 3.8))}
    panels = [("fig2", 0, "mean_present"), ("fig2", 1, "mean_default"), ("fig2", 2, "saving"),
              ("fig4", 0, "int_2plus"), ("fig4", 1, "avg_gt1")]
    for fig_no, i, metric in panels:
        marks: dict[str, float] = {}
        for _, row in position.iterrows():
            value, pct = row.get(metric), row.get(f"{metric}_pct")
            if metric == "mean_present" and pd.isna(value) and pd.notna(row["median_present"]):
                # OPMW: the paper gives the median number of active DAGs, not the mean
                value, pct = row["median_present"], row["median_present_pct"]
            if pd.notna(value):
                marks[f"{row['walk']}: {value:.3g} ({pct:.0f}th pct)"] = float(value)
        if metric in ("int_2plus", "avg_gt1") and paper_reused is not None:
            marks[f"paper RW1/RW2: {paper_reused:.0%} reused"] = paper_reused
        plot_walk_distribution(stats, figs[fig_no][1][i], metric, marks)
    for fig_no, (fig, _) in figs.items():
        _save(fig, out / f"seeds_{fig_no}_dist_{w}.png", dpi)

    stats.per_seed.to_csv(out / f"seeds_{w}.csv", index=False)
    summary = pd.DataFrame([stats.summary() | {f"median_seed_{m}": s for m, s in med.items()}])
    summary.to_csv(out / f"summary_seeds_{w}.csv", index=False)
    position.insert(0, "workload", w)
    position.to_csv(out / f"summary_seeds_position_{w}.csv", index=False)
    return {"summary": summary, "position": position}


def figure4_figures(workload: str, flows: Sequence[Dataflow], out_dir: str | Path,
                    traces: Sequence[str] = ("seq", "rw1", "rw2")) -> pd.DataFrame:
    """Figure 4 both ways for each trace: ``fig4both_<w>_<trace>.png`` and
    ``summary_figure4_<w>.csv`` (the shares beside the paper's); returns the table."""
    plt = _plt()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for trace in traces:
        t = build_trace(workload, trace, flows)
        _, series = replay_users(t.flows, t.ops)
        rows.append(figure4_row(workload, trace, series))
        fig, ax = plt.subplots(figsize=(6.5, 3.6))
        plot_figure4_both(series, ax, workload, trace)
        _save(fig, out / f"fig4both_{workload}_{trace}.png")
    table = pd.DataFrame(rows)
    table.to_csv(out / f"summary_figure4_{workload}.csv", index=False)
    return table

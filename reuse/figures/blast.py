"""The blast radius of a workload's trace, as data and plots for the blast-radius notebook.

:func:`blast_run` measures a trace of a workload (SEQ, RW1, RW2 from
:func:`reuse.workloads.trace_registry.build_trace`) with :mod:`reuse.analysis.blast`; :func:`blast_frame` turns it
into plain per-step data; the ``plot_*`` functions draw that on a matplotlib axis and
:func:`draw_blast` lays them out as one panel; :func:`blast_figures` saves the CSV, the panel
as a PNG and a one-row summary (``summary_blast_<workload>.csv``, which the batch gathers). The
library draws on a :class:`matplotlib.figure.Figure`, not through pyplot, so it leaves the
caller's backend alone (a notebook keeps showing its figures inline).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from reuse.analysis.blast import MODES, BlastStep, blast_trace, peaks, write_blast
from reuse.core.dataflow import Dataflow
from reuse.workloads.trace_registry import build_trace

__all__ = ["BlastRun", "blast_run", "blast_frame", "summary_row", "plot_blast", "plot_replicas",
           "draw_blast", "blast_figures", "FIGSIZE"]

#: the panel's size in inches (:func:`draw_blast`)
FIGSIZE = (8.0, 5.0)

#: mode -> (legend label, colour, line width): Reuse drawn wider, so that it shows where
#: k-safety does not lower it
MODE_STYLE = {"default": ("Default", "0.35", 1.5), "reuse": ("Reuse", "tab:blue", 3.5),
              "ksafe": ("Reuse + k-safety", "tab:orange", 1.5)}


@dataclass(frozen=True)
class BlastRun:
    """One workload/trace pair measured step by step, with the model's parameters."""

    workload: str
    trace: str
    executors: int
    k: int
    min_users: int
    steps: list[BlastStep]
    replicas: str = "shards"

    @property
    def label(self) -> str:
        where = ", across applications" if self.replicas == "apps" else ""
        return f"E={self.executors}, K={self.k}, U={self.min_users}{where}"


def blast_run(workload: str, trace: str, flows: Sequence[Dataflow], executors: int = 4,
              k: int = 1, min_users: int = 2, walk: int | None = None,
              replicas: str = "shards") -> BlastRun:
    """Measure the trace ``trace`` of a workload (``walk`` shortens random walks; ``replicas``:
    k-safety's copies in shards of one query or in other applications)."""
    built = build_trace(workload, trace, flows, walk=walk)
    steps = blast_trace(built.flows, list(built.ops), executors, k, min_users,
                        replicas=replicas)
    return BlastRun(workload, trace, executors, k, min_users, steps, replicas)


def blast_frame(run: BlastRun) -> pd.DataFrame:
    """One row per step: the CSV's columns (what the plots draw).

    Examples
    --------
    >>> from reuse.workloads.registry import load_workload
    >>> df = blast_frame(blast_run("figure1", "seq", load_workload("figure1"), executors=2))
    >>> df[["step", "submitted", "default_worst", "reuse_worst", "ksafe_worst"]].iloc[3].tolist()
    [4, 4, 2, 3, 3]
    """
    return pd.DataFrame([s.row() for s in run.steps])


def summary_row(run: BlastRun) -> dict[str, Any]:
    """The trace at a glance (:func:`reuse.analysis.blast.peaks`) with its workload and parameters."""
    return {"workload": run.workload, "trace": run.trace, "executors": run.executors,
            "k": run.k, "min_users": run.min_users, "replicas": run.replicas,
            **peaks(run.steps)}


def plot_blast(run: BlastRun, ax: Any) -> None:
    """Worst-case lost dataflows per step for the three modes, beside the submitted count."""
    df = blast_frame(run)
    ax.step(df["step"], df["submitted"], where="post", color="0.8", linestyle="--",
            label="submitted dataflows")
    for mode in MODES:
        label, color, width = MODE_STYLE[mode]
        ax.step(df["step"], df[f"{mode}_worst"], where="post", color=color, linewidth=width,
                label=f"{label} (peak {df[f'{mode}_worst'].max()})")
    ax.set_title(f"{run.workload.upper()} {run.trace.upper()}: dataflows cut off by one "
                 f"executor failure, worst case ({run.label})", fontsize="medium")
    ax.set_ylabel("dataflows losing output")
    ax.set_ylim(bottom=0)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend(loc="upper right", fontsize="x-small")


def plot_replicas(run: BlastRun, ax: Any) -> None:
    """What k-safety costs per step: the task instances beyond one per running task."""
    df = blast_frame(run)
    ax.step(df["step"], df["replicas_extra"], where="post", color=MODE_STYLE["ksafe"][1])
    ax.set_xlabel("step")
    ax.set_ylabel("extra replicas")
    ax.set_ylim(bottom=0)


def draw_blast(run: BlastRun, fig: Any) -> None:
    """The saved panel on a matplotlib figure: :func:`plot_blast` above :func:`plot_replicas`."""
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    plot_blast(run, top)
    plot_replicas(run, bottom)


def blast_figures(workload: str, flows: Sequence[Dataflow], out_dir: str | Path,
                  trace: str = "seq", executors: int = 4, k: int = 1, min_users: int = 2,
                  walk: int | None = None, replicas: str = "shards",
                  ) -> tuple[BlastRun, pd.DataFrame]:
    """Measure a workload's trace; save ``blast_<w>_<trace>.csv``, ``fig_blast_<w>_<trace>.png``
    and ``summary_blast_<w>.csv`` (each with ``_apps`` before the suffix for copies across
    applications); return the run and the summary."""
    from matplotlib.figure import Figure  # no pyplot: the caller's backend stays as it was

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    run = blast_run(workload, trace, flows, executors, k, min_users, walk, replicas)
    tag = "_apps" if replicas == "apps" else ""  # beside the shards' files, not over them
    write_blast(run.steps, out / f"blast_{workload}_{trace}{tag}.csv")
    fig = Figure(figsize=FIGSIZE, layout="tight")
    draw_blast(run, fig)
    fig.savefig(out / f"fig_blast_{workload}_{trace}{tag}.png", dpi=110)
    summary = pd.DataFrame([summary_row(run)])
    summary.to_csv(out / f"summary_blast_{workload}{tag}.csv", index=False)
    return run, summary

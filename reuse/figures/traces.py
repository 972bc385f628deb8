"""Planner-level figures: running tasks per step (Figure 2) and reuse histograms (Figure 4).

Computation and drawing are separate: :func:`planner_run` and :func:`summary_row` return plain
data (pandas), the ``plot_*`` functions draw it on a matplotlib axis. Notebooks call these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from reuse.analysis.paper import PAPER
from reuse.core.dataflow import Dataflow
from reuse.core.errors import ReuseError
from reuse.core.manager import Manager
from reuse.core.matching import MatchPolicy
from reuse.core.plan import PlanDelta
from reuse.core.planner import StepRecord, replay, reuse_histogram
from reuse.core.traces import Op
from reuse.figures.live import excluded_steps, live_summary_row
from reuse.workloads.trace_registry import TRACE_SEEDS, build_trace

__all__ = ["TRACE_SEEDS", "PlannerRun", "planner_run", "planner_figures", "summary_row",
           "MATCH_COLORS", "plot_running_tasks", "plot_reuse_histogram", "LIVE_STYLE", "plot_cores",
           "live_summary_row"]


@dataclass(frozen=True)
class PlannerRun:
    """One replay's records. ``match`` names the match policy when the run is one of several
    compared (the figures then label it); ``None`` is the paper's exact matching, unlabelled.
    ``rewrites`` holds the containment rewrites each submit made, in trace order (empty when the
    policy has no containment rule)."""

    workload: str
    trace: str
    records: list[StepRecord]
    match: str | None = None
    rewrites: tuple[int, ...] = ()

    @property
    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([r.row() for r in self.records])

    @property
    def histogram(self) -> dict[str, float]:
        return reuse_histogram(self.records)


def planner_run(workload: str, trace: str, flows: Sequence[Dataflow],
                ops: Sequence[Op] | None = None, *, seed: int | None = None,
                subset: int | None = None, match: MatchPolicy | None = None,
                check: bool = True) -> PlannerRun:
    """Replay one workload/trace pair through the manager (invariants checked at every step
    unless ``check`` is false).

    Without ``ops``, the trace is :func:`reuse.workloads.trace_registry.build_trace`'s ``trace`` over
    ``flows`` with ``seed`` (default: the name's) and ``subset`` (default: every DAG). ``match``
    is the manager's policy (:func:`reuse.tasks.matching.match_policy`; ``None``: exact,
    unlabelled); the run keeps its name and the containment rewrites of each submit.
    """
    if ops is None:
        built = build_trace(workload, trace, flows, seed=seed, subset=subset)
        flows, ops = list(built.flows.values()), built.ops
    manager = Manager() if match is None else Manager(match=match)
    rewrites: list[int] = []

    def count(rec: StepRecord, delta: PlanDelta) -> None:
        if rec.op == "submit":
            rewrites.append(len(manager.rewrites(rec.dag)))

    records = replay({f.id: f for f in flows}, ops, check=check, manager=manager, on_step=count)
    return PlannerRun(workload, trace, records, None if match is None else match.name,
                      tuple(rewrites) if manager.match.containment else ())


def summary_row(run: PlannerRun) -> dict[str, Any]:
    """Peak and mean running tasks, Default vs Reuse, with the paper's figures beside them."""
    df = run.frame
    peak = df.loc[df["default_tasks"].idxmax()]
    active = df[df["submitted_dags"] > 0]
    mean_d, mean_r = active["default_tasks"].mean(), active["reuse_tasks"].mean()
    paper = PAPER.get((run.workload, run.trace), {})
    return {
        "workload": run.workload, "trace": run.trace, "steps": len(df),
        "peak_default": int(peak["default_tasks"]), "peak_reuse": int(peak["reuse_tasks"]),
        "peak_reduction": 1 - peak["reuse_tasks"] / peak["default_tasks"],
        "mean_default": mean_d, "mean_reuse": mean_r, "mean_reduction": 1 - mean_r / mean_d,
        "reused_2plus": 1 - run.histogram["1"],
        "paper_peak": (f"{paper['peak_default_tasks']} -> {paper['peak_reuse_tasks']}"
                       if "peak_default_tasks" in paper else ""),
        "paper_mean": (f"{paper['mean_default_tasks']} -> {paper['mean_reuse_tasks']}"
                       if "mean_default_tasks" in paper else
                       (f"-{paper['mean_task_reduction']:.0%}" if "mean_task_reduction" in paper
                        else "")),
        "paper_reused_2plus": paper.get("reused_2plus"),
    }


#: Reuse line colours by match policy (``None``: the paper's, unlabelled).
MATCH_COLORS = {None: "tab:blue", "exact": "tab:blue", "semantic": "tab:green"}


def plot_running_tasks(run: PlannerRun | Sequence[PlannerRun], ax: Any) -> None:
    """Figure 2 panel: running tasks per step, Default vs Reuse (paper's peak as a marker).

    Several runs of one trace (one per match policy) share the Default line and get a Reuse line
    each, labelled ``Reuse-<policy>``; runs of different traces are refused, as their Default
    lines would differ.
    """
    runs = [run] if isinstance(run, PlannerRun) else list(run)
    first = runs[0]
    df = first.frame
    for other in runs[1:]:
        if (other.workload, other.trace) != (first.workload, first.trace) or \
                [r.default_tasks for r in other.records] != df["default_tasks"].tolist():
            raise ReuseError(f"{other.workload} {other.trace} ({other.match}): not the same "
                             f"trace as {first.workload} {first.trace} ({first.match})")
    ax.plot(df["step"], df["default_tasks"], label="Default", color="tab:red")
    for r in runs:
        ax.plot(df["step"], r.frame["reuse_tasks"], color=MATCH_COLORS.get(r.match),
                label="Reuse" if r.match is None else f"Reuse-{r.match}")
    paper = PAPER.get((first.workload, first.trace), {})
    if "peak_default_tasks" in paper:
        peak_step = int(df.loc[df["default_tasks"].idxmax(), "step"])
        ax.scatter([peak_step] * 2, [paper["peak_default_tasks"], paper["peak_reuse_tasks"]],
                   marker="x", color="black", zorder=3, label="paper's peak")
    ax.set_title(f"{first.workload.upper()} {first.trace.upper()}: running tasks")
    ax.set_xlabel("step")
    ax.set_ylabel("running tasks")
    ax.legend(loc="upper left", fontsize="small")


def plot_reuse_histogram(run: PlannerRun, ax: Any) -> None:
    """Figure 4 panel: fraction of running task-time by number of DAGs served (bins >= 2)."""
    hist = run.histogram
    bins = [k for k in hist if k != "1"]
    ax.bar(bins, [hist[k] for k in bins], color=MATCH_COLORS.get(run.match), label="ours")
    paper = PAPER.get((run.workload, run.trace), {}).get("reused_2plus")
    policy = "" if run.match is None else f" {run.match}"
    title = (f"{run.workload.upper()} {run.trace.upper()}{policy}: reused by 2+ = "
             f"{1 - hist['1']:.0%}")
    if paper is not None:
        title += f" (paper {paper:.0%})"
    ax.set_title(title, fontsize="medium")
    ax.set_xlabel("DAGs served [k, k+1)")
    ax.set_ylabel("fraction of task-time")


def planner_figures(workload: str, flows: Sequence[Dataflow], out_dir: Any,
                    traces: Sequence[str] = ("seq", "rw1", "rw2"), walk: int | None = None,
                    ) -> tuple[list[PlannerRun], pd.DataFrame]:
    """Run every trace of a workload, save the Figure 2 and Figure 4 panels as PNGs, and return
    the runs and the summary table (ours beside the paper's). ``walk`` shortens RW traces."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    for trace in traces:
        ops = build_trace(workload, trace, flows, walk=walk).ops
        run = planner_run(workload, trace, flows, ops)
        runs.append(run)
        run.frame.to_csv(out / f"plan_{workload}_{trace}.csv", index=False)
        for fig_no, plot in ((2, plot_running_tasks), (4, plot_reuse_histogram)):
            fig, ax = plt.subplots(figsize=(6, 3.6))
            plot(run, ax)
            fig.tight_layout()
            fig.savefig(out / f"fig{fig_no}_{workload}_{trace}.png", dpi=110)
            plt.close(fig)
    summary = pd.DataFrame([summary_row(r) for r in runs])
    summary.to_csv(out / f"summary_planner_{workload}.csv", index=False)
    return runs, summary


# --- Figure 3: cores from live runs (the CSV of ``reuse run``) -------------------------------------

LIVE_STYLE = {"default": ("Default (own sources, paper's baseline)", "tab:red"),
              "default-shared": ("Default (shared sources)", "tab:pink"), "reuse": ("Reuse (paper: partial DAGs, pause)",
                                                         "tab:blue"),
              "reuse-stop": ("Reuse (partial DAGs, stop)", "tab:cyan"),
              "reuse-relaunch": ("Reuse (relaunch, stop)", "tab:green"),
              "reuse-relaunch-lazy": ("Reuse (relaunch, lazy stop)", "tab:olive"),
              "default-inplace": ("Default (shared query, own sources)", "tab:orange"),
              "reuse-inplace": ("Reuse (shared query)", "tab:purple")}


def plot_cores(runs: Mapping[str, pd.DataFrame], ax: Any, workload: str, trace: str,
               step_seconds: float | None = None) -> None:
    """Figure 3 panel: cumulative cores per step, one line per live mode (``LIVE_MODES`` name ->
    its live-run CSV), with the paper's peak figures where it reports them.

    A step whose cores were measured over too little of it
    (:func:`~reuse.figures.live.excluded_steps`; ``step_seconds`` for CSVs without step times)
    is left out of the line and drawn as a hollow marker at its value."""
    for name, df in runs.items():
        label, color = LIVE_STYLE.get(name, (name, None))
        out = df["step"].isin(list(excluded_steps(df, step_seconds)))
        line = ax.plot(df["step"], df["cores"].where(~out), label=label, color=color)
        if out.any():
            ax.plot(df.loc[out, "step"], df.loc[out, "cores"], linestyle="none", marker="o",
                    markerfacecolor="none", color=line[0].get_color(), label="_excluded")
    paper = PAPER.get((workload, trace), {})
    if "peak_default_cores" in paper:
        ax.text(0.99, 0.97, f"paper peak: {paper['peak_default_cores']} vs "
                f"{paper['peak_reuse_cores']} cores", transform=ax.transAxes, ha="right",
                va="top", fontsize="small")
    ax.set_title(f"{workload.upper()} {trace.upper()}: cores (live)")
    ax.set_xlabel("step")
    ax.set_ylabel("cores (1.0 = one core busy)")
    ax.legend(loc="upper left", fontsize="small")

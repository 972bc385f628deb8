"""Bills per dataflow and who gets the saving, as data and plots for the billing notebook.

:func:`billing_run` prices a workload's trace (the notebooks' SEQ, RW1 and RW2, from
:func:`reuse.workloads.trace_registry.build_trace`) with :mod:`reuse.analysis.billing`; the ``plot_*`` functions draw it on
a matplotlib axis; :func:`billing_figures` does every trace of a workload and saves the PNGs and
a summary table (``summary_billing_<workload>.csv``, which the batch gathers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from reuse.analysis.billing import (
    RULES,
    UNIT_COSTS,
    Bill,
    StepCosts,
    TaskCosts,
    Tenancy,
    arrival_groups,
    bills,
    planner_steps,
    tenancies,
)
from reuse.core.dataflow import Dataflow
from reuse.workloads.trace_registry import build_trace

__all__ = ["BillingRun", "billing_run", "summary_rows", "plot_bills", "plot_arrivals",
           "billing_figures"]

RULE_STYLE = {"shapley": ("Shapley per step", "tab:blue"),
              "lifetime": ("lifetime average", "tab:orange")}


@dataclass(frozen=True)
class BillingRun:
    """One workload/trace pair priced step by step (``steps``), in ``unit``."""

    workload: str
    trace: str
    steps: list[StepCosts]
    unit: str

    def bills(self, rule: str = "shapley") -> list[Bill]:
        return bills(self.steps, rule)

    def tenancies(self, rule: str = "shapley") -> list[Tenancy]:
        return tenancies(self.steps, rule)

    def frame(self) -> pd.DataFrame:
        """One row per dataflow (order of first arrival): standalone, and the bill and saving
        under every rule."""
        out = pd.DataFrame([{"dag": b.dag, "steps_present": b.steps_present,
                             "standalone": b.standalone} for b in self.bills()])
        for rule in RULES:
            rows = self.bills(rule)
            out[f"bill_{rule}"] = [b.bill for b in rows]
            out[f"saving_pct_{rule}"] = [b.saving_pct for b in rows]
        return out


def billing_run(workload: str, trace: str, flows: Sequence[Dataflow],
                costs: TaskCosts = UNIT_COSTS, walk: int | None = None) -> BillingRun:
    """Price the trace ``trace`` of a workload (``walk`` shortens random walks)."""
    ops = list(build_trace(workload, trace, flows, walk=walk).ops)
    steps, _ = planner_steps({f.id: f for f in flows}, ops, costs, check=False)
    return BillingRun(workload, trace, steps, costs.unit)


def summary_rows(run: BillingRun) -> list[dict[str, Any]]:
    """Per rule: total cost with reuse and alone, the spread of savings per dataflow, and the
    share of the saving that goes to the early half of the arrivals."""
    out = []
    total = sum(s.total for s in run.steps)
    for rule in RULES:
        rows = run.bills(rule)
        alone = sum(b.standalone for b in rows)
        early, late = arrival_groups(run.tenancies(rule), 2)
        savings = [b.saving_pct for b in rows]
        out.append({
            "workload": run.workload, "trace": run.trace, "rule": rule, "dataflows": len(rows),
            "stays": early["stays"] + late["stays"], "cost_alone": alone, "cost_reuse": total,
            "billed": sum(b.bill for b in rows), "saving_pct": 100 * (1 - total / alone),
            "saving_pct_min": min(savings), "saving_pct_median": float(pd.Series(savings).median()),
            "saving_pct_max": max(savings),
            "early_standalone_share": early["standalone_share"],
            "early_saving_share": early["saving_share"],
            "early_saving_pct": early["saving_pct"], "late_saving_pct": late["saving_pct"]})
    return out


def plot_bills(run: BillingRun, ax: Any) -> None:
    """Standalone cost against bill, one pair of bars per dataflow in order of first arrival;
    the lifetime rule's bill as a tick."""
    df = run.frame()
    x = range(len(df))
    ax.bar([i - 0.2 for i in x], df["standalone"], width=0.4, color="0.75", label="standalone")
    ax.bar([i + 0.2 for i in x], df["bill_shapley"], width=0.4, color="tab:blue",
           label="bill (Shapley per step)")
    ax.scatter([i + 0.2 for i in x], df["bill_lifetime"], marker="_", s=60, color="tab:orange",
               zorder=3, label="bill (lifetime average)")
    ax.set_xticks(list(x))
    ax.set_xticklabels(df["dag"], rotation=90, fontsize="x-small")
    saved = 1 - df["bill_shapley"].sum() / df["standalone"].sum()
    ax.set_title(f"{run.workload.upper()} {run.trace.upper()}: bills per dataflow "
                 f"({saved:.0%} saved in all)", fontsize="medium")
    ax.set_xlabel("dataflow, in order of first arrival")
    ax.set_ylabel(run.unit)
    ax.legend(loc="upper right", fontsize="x-small")


def plot_arrivals(run: BillingRun, ax: Any) -> None:
    """Saving of each stay against its arrival rank, for both rules: early arrivals pay alone
    until others join (Shapley per step); the lifetime rule evens that out."""
    for rule in RULES:
        label, color = RULE_STYLE[rule]
        stays = run.tenancies(rule)
        early = arrival_groups(stays, 2)[0]
        ax.scatter([t.arrival for t in stays], [t.saving_pct for t in stays], s=12, color=color,
                   alpha=0.8, label=f"{label}: early half gets {early['saving_share']:.0%} of the "
                   f"saving ({early['standalone_share']:.0%} of the cost alone)")
    ax.set_title(f"{run.workload.upper()} {run.trace.upper()}: saving by arrival",
                 fontsize="medium")
    ax.set_xlabel("arrival (rank of the submission in the trace)")
    ax.set_ylabel("saving of the stay (%)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize="x-small")


def billing_figures(workload: str, flows: Sequence[Dataflow], out_dir: str | Path,
                    traces: Sequence[str] = ("seq", "rw1", "rw2"), walk: int | None = None,
                    costs: TaskCosts = UNIT_COSTS) -> tuple[list[BillingRun], pd.DataFrame]:
    """Bill every trace of a workload; save ``bills_<w>_<trace>.csv`` and ``.png``,
    ``arrivals_<w>.png`` and ``summary_billing_<w>.csv``; return the runs and the summary."""
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = [billing_run(workload, t, flows, costs, walk) for t in traces]
    for run in runs:
        run.frame().to_csv(out / f"bills_{workload}_{run.trace}.csv", index=False)
        fig, ax = plt.subplots(figsize=(max(6.0, 0.28 * len(flows) + 2), 3.8))
        plot_bills(run, ax)
        fig.tight_layout()
        fig.savefig(out / f"bills_{workload}_{run.trace}.png", dpi=110)
        plt.close(fig)
    fig, axes = plt.subplots(1, len(runs), figsize=(5.5 * len(runs), 4.6), squeeze=False)
    for run, ax in zip(runs, axes[0], strict=True):
        plot_arrivals(run, ax)
    fig.tight_layout()
    fig.savefig(out / f"arrivals_{workload}.png", dpi=110)
    plt.close(fig)
    summary = pd.DataFrame([row for run in runs for row in summary_rows(run)])
    summary.to_csv(out / f"summary_billing_{workload}.csv", index=False)
    return runs, summary

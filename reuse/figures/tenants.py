"""Figures 2 and 4 of the many-tenants workload, exact against semantic matching (issue 25).

Each trace of ``riot-tenants`` is replayed twice over the same operations, once per match
policy (:data:`MATCHES`); Default is the same in both (every tenant's tasks, no sharing), so
Figure 2 draws one Default line and one Reuse line per policy, and Figure 4 one reuse histogram
per policy, side by side. :func:`peak_row` is the table of ``BENCHMARKS.md`` ("Semantic reuse
on many tenants"): ``benchmarks/tenants.py`` prints its rows from it, so the notebook's table
and the benchmark's are one computation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from reuse.core.dataflow import Dataflow
from reuse.core.errors import ReuseError
from reuse.figures.traces import PlannerRun, planner_run, plot_reuse_histogram, plot_running_tasks
from reuse.tasks.matching import match_policy
from reuse.workloads.trace_registry import build_trace

__all__ = ["WORKLOAD", "MATCHES", "TRACES", "TARGET_RATIO", "tenant_runs", "peak_row", "verdict",
           "tenant_figures"]

WORKLOAD = "riot-tenants"
#: The two policies compared, in the order the figures draw them.
MATCHES = ("exact", "semantic")
TRACES = ("seq", "rw1", "rw2")
#: Issue 25's target: at the SEQ peak semantic saves at least this many times exact's saving.
TARGET_RATIO = 2.0


def tenant_runs(flows: Sequence[Dataflow], trace: str, *, walk: int | None = None,
                check: bool = True) -> dict[str, PlannerRun]:
    """One trace of the tenants' dataflows replayed under each of :data:`MATCHES`, by name.

    Both replays get the very same operations (one :func:`build_trace`), so their Default
    counts agree step by step and any difference is the policy's.
    """
    ops = build_trace(WORKLOAD, trace, flows, walk=walk).ops
    return {m: planner_run(WORKLOAD, trace, flows, ops, match=match_policy(m), check=check)
            for m in MATCHES}


def peak_row(runs: Mapping[str, PlannerRun]) -> dict[str, Any]:
    """Default / exact / semantic running tasks at the step where Default peaks (the first such
    step), the running tasks each policy saves there, their ratio (semantic's saving over
    exact's, 2 decimals; ``None`` when exact saves nothing) and the containment rewrites of the
    whole replay (and in how many submits).

    Raises
    ------
    ReuseError
        The two runs are not one trace (their Default counts differ at some step).
    """
    exact, semantic = runs["exact"], runs["semantic"]
    if [r.default_tasks for r in exact.records] != [r.default_tasks for r in semantic.records]:
        raise ReuseError(f"{exact.workload} {exact.trace}: the exact and semantic runs are not "
                         "the same trace (their Default counts differ)")
    recs = exact.records
    i = max(range(len(recs)), key=lambda k: recs[k].default_tasks)
    d, e, s = recs[i].default_tasks, recs[i].reuse_tasks, semantic.records[i].reuse_tasks
    return {"trace": exact.trace, "step": recs[i].step, "default": d, "exact": e,
            "semantic": s, "rewrites": sum(semantic.rewrites),
            "rewritten_submits": sum(map(bool, semantic.rewrites)),
            "saved_exact": d - e, "saved_semantic": d - s,
            "ratio": round((d - s) / (d - e), 2) if d > e else None}


def verdict(row: Mapping[str, Any], target: float = TARGET_RATIO) -> str:
    """One :func:`peak_row` row in a sentence; the SEQ row also says whether the target is met,
    or missed by how much (the issue sets it at the SEQ peak only).

    >>> verdict({"trace": "seq", "saved_exact": 235, "saved_semantic": 420, "ratio": 1.79})
    'SEQ peak: semantic saves 420 running tasks, exact 235: 1.79x (target 2x: missed by 0.21x)'
    >>> verdict({"trace": "rw1", "saved_exact": 10, "saved_semantic": 25, "ratio": 2.5})
    'RW1 peak: semantic saves 25 running tasks, exact 10: 2.50x'
    >>> verdict({"trace": "seq", "saved_exact": 0, "saved_semantic": 0, "ratio": None})
    'SEQ peak: semantic saves 0 running tasks, exact 0: no ratio, exact saves nothing'
    """
    head = (f"{str(row['trace']).upper()} peak: semantic saves {row['saved_semantic']} running "
            f"tasks, exact {row['saved_exact']}")
    ratio = row["ratio"]
    if ratio is None or pd.isna(ratio):
        return f"{head}: no ratio, exact saves nothing"
    if row["trace"] != "seq":
        return f"{head}: {ratio:.2f}x"
    outcome = "met" if ratio >= target else f"missed by {target - ratio:.2f}x"
    return f"{head}: {ratio:.2f}x (target {target:g}x: {outcome})"


def tenant_figures(flows: Sequence[Dataflow], out_dir: str | Path,
                   traces: Sequence[str] = TRACES, walk: int | None = None,
                   ) -> tuple[dict[str, dict[str, PlannerRun]], pd.DataFrame]:
    """Replay every trace under both policies; save per trace Figure 2 (three lines) as
    ``fig2_riot-tenants_<trace>.png``, Figure 4 (two histograms, one y scale) as
    ``fig4_riot-tenants_<trace>.png`` and each run's steps as
    ``plan_riot-tenants_<trace>_<policy>.csv``; write the table of :func:`peak_row` (a
    ``tenants`` column first) to ``summary_tenants.csv``, which the batch's summary gathers.
    Returns the runs (trace -> policy -> run) and the table.

    The PNGs are drawn on bare :class:`matplotlib.figure.Figure` objects, not through pyplot, so
    the backend is left alone and a notebook's inline figures still show after this call."""
    from matplotlib.figure import Figure

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, dict[str, PlannerRun]] = {}
    for trace in traces:
        runs[trace] = by_match = tenant_runs(flows, trace, walk=walk)
        for m, run in by_match.items():
            run.frame.to_csv(out / f"plan_{WORKLOAD}_{trace}_{m}.csv", index=False)
        fig = Figure(figsize=(6, 3.6), layout="tight")
        plot_running_tasks(list(by_match.values()), fig.subplots())
        fig.savefig(out / f"fig2_{WORKLOAD}_{trace}.png", dpi=110)
        fig = Figure(figsize=(5 * len(by_match), 3.6), layout="tight")
        for ax, run in zip(fig.subplots(1, len(by_match), sharey=True), by_match.values(),
                           strict=True):
            plot_reuse_histogram(run, ax)
        fig.savefig(out / f"fig4_{WORKLOAD}_{trace}.png", dpi=110)
    table = pd.DataFrame([{"tenants": len(flows)} | peak_row(r) for r in runs.values()])
    table.to_csv(out / "summary_tenants.csv", index=False)
    return runs, table

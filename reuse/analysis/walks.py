"""Random walks over many seeds: how representative one walk is, and which walk is the median.

One seed per trace says little: under the paper's protocol (RIoT: 21 DAGs, populate 15, 100
steps) the mean number of present DAGs ranges from about 8 to 18 between the 10th and 90th
percentile of seeds. :func:`walk_stats` replays ``rw`` traces of
:func:`reuse.workloads.trace_registry.build_trace` for many seeds through the planner and returns

- ``per_seed``: one row per seed, measured over the walk's steps (the states after each of the
  ``walk`` random steps; the populate and drain phases are the same for every seed):
  ``mean_present`` (submitted DAGs), ``median_present``, ``mean_default`` and ``mean_reuse``
  (running tasks, Figure 2), ``saving`` (``1 - mean_reuse / mean_default``, the paper's "on
  average 38% fewer running tasks"), ``peak_default``/``peak_reuse``, and the Figure 4 shares
  of :func:`reuse.analysis.figure4.shares` over the whole trace;
- ``band``: per step of the populate and walk phases (aligned across seeds), the 10th, 50th and
  90th percentiles of Default and Reuse running tasks and of present DAGs.

:func:`paper_position` says where the paper's reported walks sit in that distribution
(:func:`percentile_of`), and :func:`median_walk_seed` picks the seed whose walk is the median
one, for the live runs.

Examples
--------
>>> from reuse.workloads.registry import load_workload
>>> stats = walk_stats("figure1", load_workload("figure1"), seeds=range(1, 12))
>>> len(stats.per_seed), list(stats.band.columns[:4])
(11, ['step', 'default_p10', 'default_median', 'default_p90'])
>>> median_walk_seed(stats) in range(1, 12)
True
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from reuse.analysis.figure4 import replay_users, shares
from reuse.analysis.paper import PAPER
from reuse.core.dataflow import Dataflow
from reuse.workloads.registry import load_workload
from reuse.workloads.trace_registry import TRACE_SEEDS, build_trace

__all__ = ["DEFAULT_SEEDS", "WalkStats", "walk_stats", "percentile_of", "median_walk_seed",
           "paper_position"]

#: seeds used by default: 200 walks (the issue asks for at least 50)
DEFAULT_SEEDS = range(1, 201)
METRICS = ("mean_present", "median_present", "mean_default", "mean_reuse", "saving")


@dataclass(frozen=True)
class WalkStats:
    """Many-seed statistics of one workload's random walks (see the module docstring)."""

    workload: str
    n_dags: int
    populate: int
    walk: int
    per_seed: pd.DataFrame
    band: pd.DataFrame
    mean_tasks_per_dag: float

    def __post_init__(self) -> None:
        if self.per_seed.empty:
            raise ValueError("walk statistics need at least one seed")
        if len(self.band) != self.populate + self.walk:
            raise ValueError(f"band has {len(self.band)} steps, expected populate + walk = "
                             f"{self.populate + self.walk}")

    def summary(self) -> dict[str, Any]:
        """Median and 10-90% range over seeds of the per-seed measures, one flat row."""
        row: dict[str, Any] = {"workload": self.workload, "seeds": len(self.per_seed),
                               "dags": self.n_dags, "populate": self.populate, "walk": self.walk}
        for col in (*METRICS, "int_2plus", "avg_gt1"):
            p10, p50, p90 = np.percentile(self.per_seed[col], [10, 50, 90])
            row[f"{col}_p10"], row[f"{col}_median"], row[f"{col}_p90"] = p10, p50, p90
        return row


def walk_stats(workload: str, flows: Iterable[Dataflow] | None = None,
               seeds: Iterable[int] = DEFAULT_SEEDS, *, subset: int | None = None,
               subset_seed: int = 1, walk: int | None = None) -> WalkStats:
    """Replay the ``rw`` trace of every seed (no invariant checks: the tests do those)."""
    flows = list(flows) if flows is not None else load_workload(workload)
    rows, default, reuse, present = [], [], [], []
    populate = n_walk = n_dags = 0
    mean_size = 0.0
    for seed in seeds:
        trace = build_trace(workload, "rw", flows, seed=seed, subset=subset,
                            subset_seed=subset_seed, walk=walk)
        assert trace.spec.populate is not None and trace.spec.walk is not None
        populate, n_walk, n_dags = trace.spec.populate, trace.spec.walk, trace.spec.n_dags
        mean_size = sum(len(f) for f in trace.flows.values()) / max(1, n_dags)
        records, series = replay_users(trace.flows, trace.ops)
        head = records[:populate + n_walk]
        default.append([r.default_tasks for r in head])
        reuse.append([r.reuse_tasks for r in head])
        present.append([r.submitted_dags for r in head])
        w = head[populate:] or head[-1:]  # a walk of 0 steps: the populated state
        d = np.array([r.default_tasks for r in w], dtype=float)
        u = np.array([r.reuse_tasks for r in w], dtype=float)
        p = np.array([r.submitted_dags for r in w], dtype=float)
        rows.append({"seed": seed, "mean_present": p.mean(), "median_present": np.median(p),
                     "mean_default": d.mean(), "mean_reuse": u.mean(),
                     "saving": 1 - u.mean() / d.mean() if d.mean() else 0.0,
                     "peak_default": int(d.max()), "peak_reuse": int(u.max()),
                     **shares(series)})
    if not rows:
        raise ValueError("walk statistics need at least one seed")
    band = {"step": np.arange(1, populate + n_walk + 1)}
    for name, data in (("default", default), ("reuse", reuse), ("present", present)):
        p10, p50, p90 = np.percentile(np.array(data, dtype=float), [10, 50, 90], axis=0)
        band |= {f"{name}_p10": p10, f"{name}_median": p50, f"{name}_p90": p90}
    return WalkStats(workload, n_dags, populate, n_walk, pd.DataFrame(rows), pd.DataFrame(band),
                     mean_size)


def percentile_of(value: float, values: Sequence[float] | pd.Series) -> float:
    """Where ``value`` sits among ``values``, in percent (ties count half).

    >>> percentile_of(3, [1, 2, 3, 4]), percentile_of(0, [1, 2]), percentile_of(9, [1, 2])
    (62.5, 0.0, 100.0)
    """
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        raise ValueError("no values to place a value among")
    return float(100 * ((arr < value).sum() + 0.5 * (arr == value).sum()) / arr.size)


def median_walk_seed(stats: WalkStats, metric: str = "mean_default") -> int:
    """The seed whose walk is the median one by ``metric`` (default: mean Default tasks).

    Seeds are ordered by the metric (then by seed) and the middle one is taken (the lower
    middle for an even count). Mean Default running tasks is the load a live run sees; use
    ``metric="mean_present"`` for the walk alone, independent of the DAGs' sizes. For live runs
    on a subset with short walks, compute ``stats`` with that subset and walk.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r} (choose from {', '.join(METRICS)})")
    df = stats.per_seed.sort_values([metric, "seed"], kind="stable")
    return int(df["seed"].iloc[(len(df) - 1) // 2])


def paper_position(stats: WalkStats, ours: dict[str, int] | None = None) -> pd.DataFrame:
    """Where the paper's walks and ours (``rw1``/``rw2`` seeds) sit among ``stats``' seeds.

    The paper reports RIoT RW1's mean Default tasks (125 of 138: about
    ``125 / mean tasks per DAG`` = 19 DAGs present, derived) and the OPMW walks' median number
    of active dataflows (about 20). Our walks are the named seeds of
    :data:`reuse.workloads.trace_registry.TRACE_SEEDS` (or ``ours``). Percentiles from
    :func:`percentile_of`. Our seeds must be among ``stats``' seeds.
    """
    ours = dict(ours) if ours is not None else {k: TRACE_SEEDS[k] for k in ("rw1", "rw2")}
    rows: list[dict[str, Any]] = []
    df = stats.per_seed
    for trace in ("rw1", "rw2"):
        paper = PAPER.get((stats.workload, trace), {})
        if "mean_default_tasks" in paper:
            mean_d = float(paper["mean_default_tasks"])
            present = mean_d / stats.mean_tasks_per_dag
            rows.append({"walk": f"paper {trace.upper()}", "source": "paper (5.4)",
                         "mean_present": present, "mean_default": mean_d,
                         "saving": 1 - paper["mean_reuse_tasks"] / mean_d})
        elif "median_active_dags" in paper:
            rows.append({"walk": f"paper {trace.upper()}", "source": "paper (5.3)",
                         "median_present": float(paper["median_active_dags"]),
                         "saving": paper.get("mean_task_reduction")})
    for trace, seed in ours.items():
        hit = df[df["seed"] == seed]
        if hit.empty:
            raise ValueError(f"seed {seed} ({trace}) is not among the statistics' seeds")
        r = hit.iloc[0]
        rows.append({"walk": f"ours {trace.upper()} (seed {seed})", "source": "planner",
                     **{m: float(r[m]) for m in METRICS}})
    out = pd.DataFrame(rows)
    for m in METRICS:
        if m in out:
            out[f"{m}_pct"] = [percentile_of(v, df[m]) if pd.notna(v) else np.nan
                               for v in out[m]]
    return out.reindex(columns=["walk", "source", *[c for m in METRICS for c in
                                                    (m, f"{m}_pct") if c in out]])

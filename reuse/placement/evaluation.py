"""The section 5 evaluation grid, and the Tables 5-7 / Figures 5-10 data as DataFrames.

A *run* is one (topology, application graph, configuration, strategy). Its status is ``ok``,
``time_limit`` (over the resolution-time limit: the paper's "execution time violation") or
``infeasible`` (the strategy reports a constraint, named in ``constraint``). Resolution time is
wall time of the strategy alone; generating the infrastructure and application is not counted.

Our strategies are vectorised numpy, so wall times are far below the paper's OMNeT++-era ones
and the 600 s limit is rarely reached. ``evaluations`` (operator x resource pairs examined) is
the machine-independent search size that explains the paper's violations and is reported too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reuse.placement.errors import PlacementError
from reuse.placement.generators import (
    APP_GRAPHS,
    TOPOLOGIES,
    Topology,
    app_class,
    make_application,
    make_infrastructure,
)
from reuse.placement.paper import PAPER_CLAIMS, PAPER_TIME_LIMIT, PAPER_VIOLATIONS
from reuse.placement.registry import STRATEGIES, get_strategy
from reuse.placement.result import Placement, PlacementFailure

__all__ = ["Scale", "SCALES", "run_grid", "violation_table", "failure_table", "figure_data",
           "margins", "format_report", "APP_CLASSES", "TOPO_CLASSES"]

APP_CLASSES = ("medium", "large", "extra-large")
TOPO_CLASSES = ("regular", "large", "extra-large")


def _topos(*spec: tuple[int, int, int]) -> tuple[Topology, ...]:
    return tuple(Topology(*s) for s in spec)


@dataclass(frozen=True)
class Scale:
    """Which part of the grid to run."""

    topologies: tuple[Topology, ...]
    graphs: tuple[int, ...] = APP_GRAPHS
    configs: int = 10
    strategies: tuple[str, ...] = tuple(STRATEGIES)
    time_limit: float = PAPER_TIME_LIMIT
    note: str = field(default="")


SCALES: dict[str, Scale] = {
    "tiny": Scale(_topos((10, 10, 10), (10, 100, 100)), graphs=(5, 9, 25, 50), configs=1,
                  note="2 topologies, 4 graphs, 1 configuration (tests)"),
    "small": Scale(_topos((10, 10, 10), (10, 10, 100), (100, 100, 10), (10, 500, 10),
                          (10, 100, 100), (10, 500, 100), (500, 500, 500)),
                   configs=2, note="7 of the 27 topologies (3 classes), all 13 graphs, 2 configs"),
    "paper": Scale(TOPOLOGIES, configs=10, note="Table 3 x 13 graphs x 10 configs (17,550 runs)"),
}


def run_grid(scale: Scale | str, *, seed: int = 0,
             progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Run every strategy on every (topology, graph, config) of ``scale``; one row per run."""
    if isinstance(scale, str):
        if scale not in SCALES:
            raise PlacementError(f"unknown scale '{scale}' (known: {', '.join(SCALES)})")
        scale = SCALES[scale]
    rows = []
    for t_i, topo in enumerate(scale.topologies):
        infra = make_infrastructure(topo.clouds, topo.sites, topo.per_site, seed=seed + t_i)
        for g, n_ops in enumerate(scale.graphs):
            for c in range(scale.configs):
                app = make_application(n_ops, infra, graph_seed=seed * 1000 + g, config_seed=c)
                for name in scale.strategies:
                    out = get_strategy(name)(app, infra, time_limit=scale.time_limit)
                    placed = out if isinstance(out, Placement) else None
                    failed = out if isinstance(out, PlacementFailure) else None
                    status = "ok" if failed is None else (
                        "time_limit" if failed.constraint == "time_limit" else "infeasible")
                    rows.append(dict(
                        topology=str(topo), topo_class=topo.klass, resources=topo.total,
                        graph=g, operators=n_ops, app_class=app_class(n_ops), config=c,
                        strategy=name, status=status,
                        constraint="" if failed is None else failed.constraint,
                        resolution_time=out.resolution_time,
                        latency=placed.latency if placed is not None else np.nan,
                        evaluations=out.evaluations))
        if progress is not None:
            progress(f"{topo} ({topo.total} resources) done")
    return pd.DataFrame(rows)


def _share(df: pd.DataFrame, status: str) -> pd.DataFrame:
    d = df.assign(hit=(df.status == status) * 100.0)
    tab = d.pivot_table(index=["topo_class", "strategy"], columns="app_class", values="hit",
                        aggfunc="mean")
    return tab.reindex(columns=[c for c in APP_CLASSES if c in tab.columns])


def violation_table(df: pd.DataFrame) -> pd.DataFrame:
    """Tables 5-7: % of runs over the time limit, ours beside the paper's (``paper_*``)."""
    ours = _share(df, "time_limit")
    paper = pd.DataFrame(
        [dict(topo_class=tc, strategy=s, **{f"paper_{a}": v[i] for i, a in enumerate(APP_CLASSES)})
         for tc, d in PAPER_VIOLATIONS.items() for s, v in d.items()]
    ).set_index(["topo_class", "strategy"])
    return ours.join(paper, how="left")


def failure_table(df: pd.DataFrame) -> pd.DataFrame:
    """% of runs where a strategy reported a violated constraint (no paper counterpart)."""
    return _share(df, "infeasible")


def figure_data(df: pd.DataFrame) -> pd.DataFrame:
    """Figures 5-10: resolution time and AL per (topology class, app class, strategy).

    Resolution time over all runs (as the paper's figures); AL over ``ok`` runs only.
    """
    ok = df[df.status == "ok"]
    t = df.groupby(["topo_class", "app_class", "strategy"]).agg(
        runs=("status", "size"), time_mean=("resolution_time", "mean"),
        time_median=("resolution_time", "median"), time_max=("resolution_time", "max"),
        evaluations=("evaluations", "mean"))
    a = ok.groupby(["topo_class", "app_class", "strategy"]).agg(
        placed=("latency", "size"), al_mean=("latency", "mean"), al_median=("latency", "median"))
    return t.join(a, how="left")


def margins(df: pd.DataFrame, reference: str = "aels+rp+la") -> pd.DataFrame:
    """AL of each strategy against ``reference`` on runs where both placed the application.

    ``ratio`` is the mean of ``AL_other / AL_ref``; ``ref_better_pct`` is the mean of
    ``1 - AL_ref / AL_other`` in %, the paper's "outperforms X by Y%".
    """
    key = ["topology", "graph", "config"]
    ok = df[df.status == "ok"]
    ref = ok[ok.strategy == reference].set_index(key).latency
    rows = []
    for (tc, s), d in ok[ok.strategy != reference].groupby(["topo_class", "strategy"]):
        j = d.set_index(key).latency.to_frame("other").join(ref.rename("ref"), how="inner")
        if not len(j):
            continue
        rows.append(dict(topo_class=tc, strategy=s, pairs=len(j),
                         ratio=float((j.other / j.ref).mean()),
                         ref_better_pct=float((1 - j.ref / j.other).mean() * 100)))
    return pd.DataFrame(rows).set_index(["topo_class", "strategy"]) if rows else pd.DataFrame()


def _order(tab: pd.DataFrame, levels: Iterable[str] = TOPO_CLASSES) -> pd.DataFrame:
    if tab.empty:
        return tab
    idx = [t for t in levels if t in tab.index.get_level_values(0)]
    return tab.reindex(idx, level=0)


def format_report(df: pd.DataFrame) -> str:
    """Text report: Tables 5-7 with the paper's numbers, failures, figure data, AL margins."""
    pd_opts = dict(float_format=lambda x: f"{x:.4g}")
    parts = ["== Tables 5-7: % runs over the resolution-time limit (ours | paper_*) ==",
             _order(violation_table(df)).to_string(**pd_opts),
             "", "== % runs where the strategy reported a violated constraint ==",
             _order(failure_table(df)).to_string(**pd_opts)]
    cons = df[df.status == "infeasible"].groupby(["strategy", "constraint"]).size()
    if len(cons):
        parts += ["constraints named:", cons.to_string()]
    parts += ["", "== Figures 5, 7, 9 (resolution time, s) and 6, 8, 10 (AL, s) ==",
              _order(figure_data(df)).to_string(**pd_opts),
              "", "== AL margins against AELS+RP+LA (pairs where both placed) ==",
              _order(margins(df)).to_string(**pd_opts),
              "", "paper (quoted, for comparison):"]
    parts += [f"  {k}: {v}" for k, v in PAPER_CLAIMS.items()]
    return "\n".join(parts)


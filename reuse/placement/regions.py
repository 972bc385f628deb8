"""Region patterns and AELS+RP (section 4.3.2, Figures 3-4).

Readings:

* A sink is a *cloud sink* when it is pinned on a cloud resource, an *edge sink* otherwise
  (unpinned sinks count as edge: the edge region has priority).
* An operator is in the **cloud region** when it is "immediately upstream to sinks placed on the
  cloud" (one of its output streams goes to a cloud sink) and shares no path with an edge sink.
  Every other operator is in the **edge region**: the ones that share paths with edge sinks, and,
  taking the paper's two rules literally, those further upstream on cloud-only paths, which
  are therefore tried on the edge first (an edge region "has a higher priority").
* Splitters (out-degree > 1), mergers (in-degree > 1) and parallel regions (operators between a
  splitter and a merger that both reach them) are what create the multiple paths whose sinks
  decide the region; :func:`patterns` labels them for reports.
* Edge-region operators are evaluated (Algorithm 2) on edge resources only, and on cloud
  resources only if no edge resource is feasible. Cloud-region operators go to the feasible
  cloud resource closest (summed latency) to their cloud sinks; ties by AL increment.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reuse.placement.aels import Choice, best_of, greedy
from reuse.placement.engine import Engine
from reuse.placement.model import SINK, Application, Infrastructure
from reuse.placement.result import Outcome

__all__ = ["Regions", "regions", "patterns", "place_aels_rp", "cloud_region_choice"]


@dataclass(frozen=True)
class Regions:
    """Region of each operator and the sinks it reaches."""

    edge: tuple[bool, ...]
    sinks: tuple[frozenset[int], ...]
    cloud_sinks: frozenset[int]


def regions(app: Application, infra: Infrastructure) -> Regions:
    """Classify operators into edge/cloud regions from the sinks' pinned locations."""
    pins = app.pinned_map
    cloud_sinks = frozenset(s for s in app.sinks if s in pins and infra.is_cloud[pins[s]])
    reach: list[frozenset[int]] = [frozenset()] * app.n
    for i in reversed(app.topological_order):
        if app.operators[i].kind == SINK:
            reach[i] = frozenset([i])
        else:
            acc: set[int] = set()
            for e in app.downstream[i]:
                acc |= reach[app.streams[e].dst]
            reach[i] = frozenset(acc)
    feeds_cloud = [any(app.streams[e].dst in cloud_sinks for e in app.downstream[i])
                   for i in range(app.n)]
    edge = tuple(i not in cloud_sinks if app.operators[i].kind == SINK
                 else bool(reach[i] - cloud_sinks) or not feeds_cloud[i] for i in range(app.n))
    return Regions(edge, tuple(reach), cloud_sinks)


def patterns(app: Application) -> dict[str, list[str]]:
    """Splitters, mergers and parallel-region operators (Figure 3), by operator name."""
    split = [i for i in range(app.n) if len(app.downstream[i]) > 1]
    merge = [i for i in range(app.n) if len(app.upstream[i]) > 1]
    desc: list[set[int]] = [set() for _ in range(app.n)]
    for i in reversed(app.topological_order):
        for e in app.downstream[i]:
            j = app.streams[e].dst
            desc[i] |= {j} | desc[j]
    par = {v for s in split for m in merge if m in desc[s]
           for v in desc[s] if m in desc[v]}
    name = [o.name for o in app.operators]
    return {"splitters": [name[i] for i in split], "mergers": [name[i] for i in merge],
            "parallel": [name[i] for i in sorted(par)]}


def cloud_region_choice(eng: Engine, op: int, reg: Regions) -> Choice:
    """Feasible cloud resource closest to the operator's cloud sinks (ties: AL increment)."""
    infra = eng.infra
    clouds = infra.cloud_ids
    pins = eng.app.pinned_map
    dist = np.zeros(len(clouds))
    for s in reg.sinks[op] & reg.cloud_sinks:
        dist += infra.latency_from(pins[s], clouds)
    ev = eng.evaluate(op, clouds)
    if not ev.feasible.any():
        return (ev.failed or "eq14", ev.detail or "no feasible cloud resource")
    key = np.where(ev.feasible, dist, np.inf)
    ties = np.flatnonzero(key == key.min())
    return int(clouds[ties[np.argmin(ev.cost[ties])]])


def _rp_choice(eng: Engine, op: int, reg: Regions) -> Choice:
    if not reg.edge[op]:
        return cloud_region_choice(eng, op, reg)
    got = best_of(eng, op, eng.infra.edge_ids)
    if isinstance(got, int):
        return got
    return best_of(eng, op, eng.infra.cloud_ids)


def place_aels_rp(app: Application, infra: Infrastructure, *,
                  time_limit: float | None = None) -> Outcome:
    """AELS+RP: edge-region operators searched on edge resources, cloud region near its sinks."""
    reg = regions(app, infra)
    return greedy(app, infra, "aels+rp", lambda eng, op: _rp_choice(eng, op, reg),
                  time_limit=time_limit)

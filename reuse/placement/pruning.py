"""Latency-aware candidate pruning and AELS+RP+LA (section 4.3.3).

Each operator is evaluated on a short candidate list instead of all resources. Only resources
that meet the operator's CPU, memory and bandwidth needs count (the paper's footnote 1), so each
scheme walks its preference order and keeps the first feasible ones:

* **in-situ**: for every placed upstream operator on an edge device, its host and the
  ``k_situ`` feasible devices of the same site with the smallest LAN latency;
* **in-transit**: for every placed upstream operator, the nearest feasible device in a
  *different* edge site (sites by WAN latency, devices by LAN latency) and the nearest feasible
  cloud resource;
* **data-sink locations**: for every distinct location of a sink the operator reaches, the
  feasible resource with the smallest latency to it (the sink's host first).

Each scheme examines at most :data:`SCHEME_BUDGET` resources per upstream operator. The list
then goes through AELS+RP's rules (edge region: edge candidates first, cloud candidates
next, then the full cloud search; cloud region: the cloud closest to its sinks). Preference orders
come from an index built once per placement (a sort of devices by site and LAN latency, and
per-site orders of sites and clouds by WAN latency, computed when first needed); building it is
part of the resolution time.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from reuse.placement.aels import Choice, greedy
from reuse.placement.engine import Engine
from reuse.placement.model import Application, Infrastructure
from reuse.placement.regions import Regions, cloud_region_choice, regions
from reuse.placement.result import Outcome

__all__ = ["LatencyIndex", "candidates", "place_aels_rp_la"]


class LatencyIndex:
    """Preference orders over resources by network latency, for one infrastructure."""

    def __init__(self, infra: Infrastructure) -> None:
        self.infra = infra
        edge = infra.edge_ids
        order = edge[np.lexsort((infra.access[edge], infra.site[edge]))]
        sites, start = np.unique(infra.site[order], return_index=True)
        bounds = np.append(start, len(order))
        self.devices = {int(s): order[bounds[i]:bounds[i + 1]] for i, s in enumerate(sites)}
        self.edge_sites = sites
        self.cloud_sites = infra.site[infra.cloud_ids]
        self._near_sites: dict[int, np.ndarray] = {}
        self._near_clouds: dict[int, np.ndarray] = {}

    def site_devices(self, site: int) -> np.ndarray:
        """Devices of an edge site by increasing LAN latency."""
        return self.devices.get(site, np.empty(0, dtype=np.int64))

    def near_sites(self, site: int) -> np.ndarray:
        """Edge sites other than ``site`` by increasing WAN latency from it."""
        got = self._near_sites.get(site)
        if got is None:
            others = self.edge_sites[self.edge_sites != site]
            got = others[np.argsort(self.infra.site_latency[site][others], kind="stable")]
            self._near_sites[site] = got
        return got

    def near_clouds(self, site: int) -> np.ndarray:
        """Cloud resources by increasing latency from ``site``."""
        got = self._near_clouds.get(site)
        if got is None:
            ids = self.infra.cloud_ids
            got = ids[np.argsort(self.infra.site_latency[site][self.cloud_sites], kind="stable")]
            self._near_clouds[site] = got
        return got


#: resources one scheme may examine for one upstream operator before giving up. Without a bound,
#: an operator whose input streams cannot leave their host together (eq 13) makes the in-transit
#: scheme walk every device of every site, all infeasible for the same reason.
SCHEME_BUDGET = 128


def _first_feasible(eng: Engine, op: int, chunks: Iterator[np.ndarray], k: int,
                    budget: int = SCHEME_BUDGET) -> list[int]:
    got: list[int] = []
    seen = 0
    for arr in chunks:
        if not len(arr):
            continue
        arr = arr[: max(budget - seen, 1)]
        seen += len(arr)
        ev = eng.evaluate(op, arr)
        for r in arr[ev.feasible][: k - len(got)]:
            got.append(int(r))
        if len(got) >= k or seen >= budget:
            break
    return got


def _chunks(arr: np.ndarray, first: int = 8) -> Iterator[np.ndarray]:
    lo, size = 0, first
    while lo < len(arr):
        yield arr[lo:lo + size]
        lo += size
        size *= 4


def _other_sites(idx: LatencyIndex, site: int) -> Iterator[np.ndarray]:
    for s in idx.near_sites(site):
        yield from _chunks(idx.site_devices(int(s)))


def candidates(eng: Engine, op: int, idx: LatencyIndex, reg: Regions,
               k_situ: int = 2) -> np.ndarray:
    """The pruned candidate list of ``op`` (in-situ, in-transit, data-sink locations)."""
    infra, app = eng.infra, eng.app
    out: list[int] = []
    for e in app.upstream[op]:
        h = int(eng.hosts[app.streams[e].src])
        if h < 0:
            continue
        site = int(infra.site[h])
        if not infra.is_cloud[h]:  # in-situ
            out += _first_feasible(eng, op, iter([np.array([h])]), 1)
            out += _first_feasible(eng, op, _chunks(idx.site_devices(site)), k_situ)
        out += _first_feasible(eng, op, _other_sites(idx, site), 1)  # in-transit: edge
        out += _first_feasible(eng, op, _chunks(idx.near_clouds(site)), 1)  # and cloud
    pins = app.pinned_map
    for loc in sorted({pins[s] for s in reg.sinks[op] if s in pins}):  # data-sink locations
        site = int(infra.site[loc])
        near = idx.near_clouds(site) if infra.is_cloud[loc] else idx.site_devices(site)
        pref = np.concatenate(([loc], near[near != loc]))
        out += _first_feasible(eng, op, _chunks(pref, 1), 1)
    return np.unique(np.array(out, dtype=np.int64))


def _la_choice(eng: Engine, op: int, idx: LatencyIndex, reg: Regions) -> Choice:
    if not reg.edge[op]:
        return cloud_region_choice(eng, op, reg)
    cand = candidates(eng, op, idx, reg)
    if len(cand):
        ev = eng.evaluate(op, cand)
        edge = ~eng.infra.is_cloud[cand]
        for mask in (edge, ~edge):
            if (ev.feasible & mask).any():
                c = np.where(ev.feasible & mask, ev.cost, np.inf)
                return int(cand[int(np.argmin(c))])
    eng.notes.append(f"{eng.app.operators[op].name}: no pruned candidate, full cloud search")
    ev = eng.evaluate(op, eng.infra.cloud_ids)
    best = ev.best()
    return best if best is not None else (ev.failed or "eq14", ev.detail or "no candidate")


def place_aels_rp_la(app: Application, infra: Infrastructure, *,
                     time_limit: float | None = None) -> Outcome:
    """AELS+RP+LA: AELS+RP evaluated only on the latency-aware candidate list."""
    reg = regions(app, infra)
    state: dict[str, LatencyIndex] = {}

    def setup(eng: Engine) -> None:
        state["idx"] = LatencyIndex(infra)

    return greedy(app, infra, "aels+rp+la", lambda eng, op: _la_choice(eng, op, state["idx"], reg),
                  time_limit=time_limit, setup=setup)

"""Seeded infrastructures (Table 3, section 5.1) and applications (Table 4, section 5.1).

Infrastructure readings:

* Device speeds: the paper prints "4.74 MIPS" (RPi2), "5.02 MIPS" (RPi3) and "304.51 MIPS" (Ryzen 7
  1800X). Those are the Dhrystone figures 4,744 / 5,020(approx.) / 304,510 MIPS with the
  thousands separator lost; with the literal values no Table 4 operator (>= 10^7 instructions/s)
  would fit on any device. We use 4,744, 5,020 and 304,510 MIPS; memory 1 GB and 1 TB.
* Each cloud is one resource in its own site; each edge site is a LAN of ``per_site`` devices
  behind a gateway, half RPi2 and half RPi3 overall (a seeded shuffle).
* A device's LAN link to its gateway has latency U(0.015, 0.8) ms at 100 Mbps; every pair of
  sites (clouds included) is joined over the WAN by U(65, 85) ms at 1 Gbps.

Application readings:

* Sizes after RIoTBench: medium graphs of 5-9 operators (5 graphs), large of 25 (7), extra-large of
  50 (1); ``max(1, n // 8)`` sources, ``max(2, n // 8)`` sinks, the rest transformations wired as a
  random DAG with splitters (out-degree > 1) and mergers (in-degree > 1). The structure depends on
  the graph id only; each of the 10 *configurations* redraws parameters and locations.
* Parameters uniform in Table 4's ranges; ``cpu`` is instructions per *event* (Table 4 says per
  second, but the model's ``mu = cpu_r / cpu_o`` needs per-event). 20% of transformations are
  stateful with ws U{1..100}; the others ws = 0.
* A splitter replicates (all rho = 1) or partitions (rho = 1/out-degree), each with probability 1/2.
* Sources and sinks are pinned on uniformly drawn edge devices, except the sink of the critical
  path (the longest source-to-sink path in operators), pinned on a uniformly drawn cloud.
* Bandwidth feasibility: Table 4 allows a source of 10,000 ev/s x 2,500 B = 200 Mbit/s, which no
  100 Mbps LAN link can carry under our bytes-to-bits reading of eq 8, making apps unplaceable by
  *any* strategy when such a stream must leave a device. Sources' (rate, size) pairs are redrawn
  (other parameters kept) until every stream fits in ``max_stream_share`` of the LAN bandwidth;
  ``Application.name`` records how many redraws that took. This biases sources toward lower
  bit rates than the paper's ranges; it is a reading forced by units the paper leaves open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from reuse.placement.errors import PlacementError
from reuse.placement.latency import BITS_PER_BYTE, propagate
from reuse.placement.model import (
    SINK,
    SOURCE,
    TRANSFORM,
    Application,
    Infrastructure,
    Operator,
    Stream,
)

__all__ = [
    "RPI2_MIPS", "RPI3_MIPS", "CLOUD_MIPS", "TOPOLOGIES", "APP_GRAPHS", "Topology",
    "make_infrastructure", "make_application", "topology_class", "app_class",
]

RPI2_MIPS, RPI3_MIPS, CLOUD_MIPS = 4744.0, 5020.0, 304510.0
EDGE_MEM, CLOUD_MEM = 1e9, 1e12
LAN_MS = (0.015, 0.8)
WAN_MS = (65.0, 85.0)
LAN_BPS, WAN_BPS = 100e6, 1e9


@dataclass(frozen=True)
class Topology:
    """A Table 3 row: cloud resources, edge sites, devices per site."""

    clouds: int
    sites: int
    per_site: int

    @property
    def total(self) -> int:
        return self.clouds + self.sites * self.per_site

    @property
    def klass(self) -> str:
        return topology_class(self.total)

    def __str__(self) -> str:
        return f"{self.clouds}c-{self.sites}s-{self.per_site}d"


def topology_class(total: int) -> str:
    """Regular (< 10,000 resources), large (< 100,000) or extra-large (section 5.1)."""
    return "regular" if total < 10_000 else "large" if total < 100_000 else "extra-large"


#: the 27 configurations of Table 3 (every combination of 10, 100, 500)
TOPOLOGIES: tuple[Topology, ...] = tuple(sorted(
    (Topology(c, s, d) for c in (10, 100, 500) for s in (10, 100, 500) for d in (10, 100, 500)),
    key=lambda t: (t.total, t.clouds, t.sites)))

#: operators per application graph: 5 medium, 7 large, 1 extra-large (section 5.1)
APP_GRAPHS: tuple[int, ...] = (5, 6, 7, 8, 9) + (25,) * 7 + (50,)


def app_class(n_ops: int) -> str:
    """Medium (< 25 operators), large (25-49) or extra-large (>= 50)."""
    return "medium" if n_ops < 25 else "large" if n_ops < 50 else "extra-large"


def make_infrastructure(clouds: int, sites: int, per_site: int, seed: int = 0) -> Infrastructure:
    """A seeded cloud-edge infrastructure with the paper's devices and link distributions.

    Examples
    --------
    >>> inf = make_infrastructure(2, 3, 4, seed=1)
    >>> inf.n, int(inf.is_cloud.sum())
    (14, 2)
    """
    if min(clouds, sites, per_site) < 0 or clouds < 1:
        raise PlacementError("need at least one cloud and non-negative sizes")
    rng = np.random.default_rng(seed)
    n_edge = sites * per_site
    n_sites = clouds + sites
    cpu_edge = np.where(rng.permutation(n_edge) < n_edge // 2, RPI2_MIPS, RPI3_MIPS)
    cpu = np.concatenate([np.full(clouds, CLOUD_MIPS), cpu_edge])
    mem = np.concatenate([np.full(clouds, CLOUD_MEM), np.full(n_edge, EDGE_MEM)])
    site = np.concatenate([np.arange(clouds), clouds + np.repeat(np.arange(sites), per_site)])
    access = np.concatenate([np.zeros(clouds), rng.uniform(*LAN_MS, n_edge) / 1e3])
    wan = rng.uniform(*WAN_MS, (n_sites, n_sites)) / 1e3
    wan = np.triu(wan, 1)
    wan = wan + wan.T
    is_cloud = np.arange(len(cpu)) < clouds
    kind = ("cloud",) * clouds + tuple("rpi2" if c == RPI2_MIPS else "rpi3" for c in cpu_edge)
    return Infrastructure(cpu, mem, site.astype(np.int64), access, is_cloud, wan, LAN_BPS,
                          WAN_BPS, kind, name=f"{clouds}c-{sites}s-{per_site}d-seed{seed}")


def _structure(n: int, rng: np.random.Generator) -> tuple[list[str], list[tuple[int, int]]]:
    n_src, n_snk = max(1, n // 8), max(2, n // 8)
    n_tr = n - n_src - n_snk
    if n_tr < 1:
        raise PlacementError(f"an application needs at least 4 operators, got {n}")
    kinds = [SOURCE] * n_src + [TRANSFORM] * n_tr + [SINK] * n_snk
    tr = list(range(n_src, n_src + n_tr))
    sk = list(range(n_src + n_tr, n))
    edges: set[tuple[int, int]] = set()
    for t_pos, t in enumerate(tr):
        if t_pos < n_src:  # every source feeds at least one transformation
            edges.add((t_pos, t))
            continue
        pool = list(range(n_src)) + tr[:t_pos]
        k = 2 if rng.random() < 0.25 and len(pool) > 1 else 1
        for u in rng.choice(pool, size=k, replace=False):
            edges.add((int(u), t))
    dangling = [t for t in tr if not any(u == t for u, _ in edges)]
    rng.shuffle(dangling)
    for i, t in enumerate(dangling):
        edges.add((t, sk[i % n_snk]))
    for s in sk[len(dangling):]:  # sinks left without input hang off a random transformation
        edges.add((int(rng.choice(tr)), s))
    return kinds, sorted(edges)


def _critical_sink(n: int, edges: list[tuple[int, int]], kinds: list[str]) -> int:
    depth = [0] * n
    for u, v in sorted(edges, key=lambda e: e[0]):  # node ids are already topological
        depth[v] = max(depth[v], depth[u] + 1)
    sinks = [i for i in range(n) if kinds[i] == SINK]
    return max(sinks, key=lambda s: (depth[s], -s))


def make_application(n_ops: int, infra: Infrastructure, *, graph_seed: int = 0,
                     config_seed: int = 0, max_stream_share: float = 0.9,
                     name: str | None = None) -> Application:
    """A seeded application of ``n_ops`` operators pinned onto ``infra`` (Table 4 ranges).

    ``graph_seed`` fixes the DAG (the paper's 13 graphs), ``config_seed`` the parameters and the
    pinned locations (its 10 configurations per graph).
    """
    kinds, edges = _structure(n_ops, np.random.default_rng([graph_seed, n_ops]))
    rng = np.random.default_rng([graph_seed, n_ops, config_seed, 7])
    outdeg = np.bincount([u for u, _ in edges], minlength=n_ops)
    replicate = rng.random(n_ops) < 0.5
    streams = tuple(Stream(u, v, 1.0 if replicate[u] or outdeg[u] == 1 else 1.0 / outdeg[u])
                    for u, v in edges)
    trans = [i for i in range(n_ops) if kinds[i] == TRANSFORM]
    stateful = set(rng.choice(trans, size=max(1, round(0.2 * len(trans))), replace=False).tolist())
    params: list[dict[str, Any]] = []
    for i in range(n_ops):
        params.append(dict(cpu=rng.uniform(1000, 10000), mem=rng.uniform(100, 7500),
                           selectivity=rng.uniform(0.1, 1.0), compression=rng.uniform(0.1, 1.0),
                           window=int(rng.integers(1, 101)) if i in stateful else 0))
    crit = _critical_sink(n_ops, edges, kinds)
    pinned = []
    for i in range(n_ops):
        if kinds[i] == SOURCE or (kinds[i] == SINK and i != crit):
            pinned.append((i, int(rng.choice(infra.edge_ids)) if len(infra.edge_ids)
                           else int(rng.choice(infra.cloud_ids))))
        elif i == crit:
            pinned.append((i, int(rng.choice(infra.cloud_ids))))
    cap = max_stream_share * infra.lan_bandwidth
    redraws = 0
    while True:
        ops = []
        for i in range(n_ops):
            p = dict(params[i])
            if kinds[i] == SOURCE:
                p.update(rate=rng.uniform(1000, 10000), size=rng.uniform(100, 2500),
                         selectivity=1.0, compression=1.0)
            ops.append(Operator(f"o{i}", kinds[i], **p))
        app = Application(tuple(ops), streams, tuple(pinned),
                          name or f"g{graph_seed}-n{n_ops}-c{config_seed}")
        fl = propagate(app)
        if (fl.stream_rate * fl.stream_size * BITS_PER_BYTE).max() < cap:
            break
        redraws += 1
        if redraws > 10_000:
            raise PlacementError("cannot draw sources that fit the LAN bandwidth")
    if redraws:
        app = Application(app.operators, app.streams, app.pinned, f"{app.name}-r{redraws}")
    return app

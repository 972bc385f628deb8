"""Infrastructure and application model of section 3 (Veith et al., Table 2).

Units, fixed once here so every equation reads the same way:

* CPU capacity of a resource ``cpu_r`` in MIPS (10**6 instructions/s); CPU demand of an operator
  ``cpu_o`` in instructions per event, so ``mu = cpu_r * 1e6 / cpu_o`` events/s (section 3.2).
* memory in bytes; event sizes in bytes; bandwidth in bits/s; latency in seconds; rates in
  events/s.

The infrastructure is not stored as a |R| x |R| link table (250,500 resources would need 6e10
entries). It is hierarchical, as in the paper's topologies (section 5.1, after Hu et al.): every
resource belongs to a *site* (each cloud resource is its own site; an edge site is a LAN of
devices behind a gateway). A logical link ``k <-> l`` (Table 2) then has

* latency ``access[k] + site_latency[site[k], site[l]] + access[l]`` and 0 when ``k == l``
  (``access`` is a device's LAN latency to its gateway, 0 for clouds; the diagonal of
  ``site_latency`` is 0, so two devices of one site talk through their gateway);
* bandwidth ``wan_bandwidth`` between two cloud resources, ``lan_bandwidth`` whenever an edge
  device is an endpoint (its LAN is the bottleneck) and infinite from a resource to itself.

Links are computed on demand as numpy vectors "from one resource to many", which is what the
strategies need and keeps every hot loop free of per-resource Python objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from reuse.placement.errors import PlacementError

__all__ = ["Infrastructure", "Operator", "Stream", "Application", "SOURCE", "TRANSFORM", "SINK"]

SOURCE, TRANSFORM, SINK = "source", "transform", "sink"


@dataclass(frozen=True, eq=False)
class Infrastructure:
    """Clouds and edge sites of heterogeneous resources (the network graph ``N = (R, L)``).

    Parameters
    ----------
    cpu, mem
        Capacity per resource: MIPS and bytes.
    site
        Site index per resource; ``site_latency`` is indexed by it.
    access
        Latency (s) from a resource to its site gateway; 0 for cloud resources.
    is_cloud
        True for cloud resources.
    site_latency
        Symmetric WAN latency (s) between sites, zero diagonal.
    lan_bandwidth, wan_bandwidth
        bits/s of LAN links (any link with an edge endpoint) and of cloud-to-cloud links.
    kind
        A label per resource (``"cloud"``, ``"rpi2"``, ...), informative only.
    """

    cpu: np.ndarray
    mem: np.ndarray
    site: np.ndarray
    access: np.ndarray
    is_cloud: np.ndarray
    site_latency: np.ndarray
    lan_bandwidth: float = 100e6
    wan_bandwidth: float = 1e9
    kind: tuple[str, ...] = field(default=())
    name: str = "infra"

    def __post_init__(self) -> None:
        n = len(self.cpu)
        for arr in (self.mem, self.site, self.access, self.is_cloud):
            if len(arr) != n:
                raise PlacementError("infrastructure arrays differ in length")
        s = self.site_latency
        if s.ndim != 2 or s.shape[0] != s.shape[1] or (n and self.site.max() >= s.shape[0]):
            raise PlacementError("site_latency must be square and cover every site index")

    @property
    def n(self) -> int:
        """Number of resources ``|R|``."""
        return len(self.cpu)

    @cached_property
    def cloud_ids(self) -> np.ndarray:
        """Indices of cloud resources."""
        return np.flatnonzero(self.is_cloud)

    @cached_property
    def edge_ids(self) -> np.ndarray:
        """Indices of edge resources."""
        return np.flatnonzero(~self.is_cloud)

    def latency_from(self, k: int, to: np.ndarray | None = None) -> np.ndarray:
        """Latency (s) of the logical links ``k <-> l`` for every ``l`` in ``to`` (all if None)."""
        to_site = self.site if to is None else self.site[to]
        to_acc = self.access if to is None else self.access[to]
        lat = self.access[k] + self.site_latency[self.site[k]][to_site] + to_acc
        same = (np.arange(self.n) == k) if to is None else (to == k)
        lat[same] = 0.0
        return lat

    def bandwidth_from(self, k: int, to: np.ndarray | None = None) -> np.ndarray:
        """Bandwidth (bits/s) of the logical links ``k <-> l``; ``inf`` where ``l == k``."""
        cloud = self.is_cloud if to is None else self.is_cloud[to]
        if self.is_cloud[k]:
            bw = np.where(cloud, self.wan_bandwidth, self.lan_bandwidth)
        else:
            bw = np.full(len(cloud), self.lan_bandwidth)
        same = (np.arange(self.n) == k) if to is None else (to == k)
        bw[same] = np.inf
        return bw

    def latency(self, k: int, m: int) -> float:
        """Latency (s) of the logical link ``k <-> m`` (0 when ``k == m``)."""
        return float(self.latency_from(k, np.array([m]))[0])

    def bandwidth(self, k: int, m: int) -> float:
        """Bandwidth (bits/s) of the logical link ``k <-> m`` (inf when ``k == m``)."""
        return float(self.bandwidth_from(k, np.array([m]))[0])

    def describe(self) -> str:
        """One line: resource counts by location."""
        return (f"{self.name}: {self.n} resources, {int(self.is_cloud.sum())} cloud, "
                f"{int((~self.is_cloud).sum())} edge in "
                f"{len(np.unique(self.site[~self.is_cloud]))} sites")


@dataclass(frozen=True)
class Operator:
    """An operator ``o_i = <cpu, mem, psi, omega, ws>`` (section 3.2).

    Parameters
    ----------
    name
        Unique within the application.
    kind
        ``"source"``, ``"transform"`` or ``"sink"``.
    cpu
        Instructions per event.
    mem
        Bytes to load the operator.
    selectivity
        ``psi``: output events per input event, ``lambda_out = lambda_in * psi`` (eq 3). The paper
        words it "input to output", but eq 3 multiplies, and Table 4's 10-100% only makes sense
        as out/in; we read it as out/in.
    compression
        ``omega``: output size per input size, ``size_out = size_in * omega`` (eq 6), same reading.
    window
        ``ws`` in events; 0 for a stateless operator (no window wait in eq 7).
    rate, size
        For sources only: emitted events/s and bytes per event (eqs 1 and 4).
    """

    name: str
    kind: str = TRANSFORM
    cpu: float = 1000.0
    mem: float = 1000.0
    selectivity: float = 1.0
    compression: float = 1.0
    window: int = 0
    rate: float = 0.0
    size: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in (SOURCE, TRANSFORM, SINK):
            raise PlacementError(f"operator '{self.name}': unknown kind '{self.kind}'")
        if self.kind == SOURCE and (self.rate <= 0 or self.size <= 0):
            raise PlacementError(f"source '{self.name}' needs a positive rate and size")
        if self.cpu <= 0 or self.mem < 0 or self.window < 0:
            raise PlacementError(f"operator '{self.name}': cpu > 0, mem >= 0, ws >= 0")


@dataclass(frozen=True)
class Stream:
    """An event stream ``e^rho_{i->j}`` between operator indices ``src`` and ``dst``.

    ``probability`` is the chance that an event emitted by ``src`` flows to ``dst``; each out
    stream draws independently (a replicating splitter has all 1, a partitioning one sums to 1).
    """

    src: int
    dst: int
    probability: float = 1.0


@dataclass(frozen=True)
class Application:
    """A DSP application ``G = (O, E)`` with its pinned operators.

    Parameters
    ----------
    operators, streams
        The graph; it must be acyclic, sources have no input and sinks no output.
    pinned
        ``(operator index, resource index)`` pairs fixed before placement: the paper places
        sources and sinks at given locations (section 5.1); strategies place the rest.
    """

    operators: tuple[Operator, ...]
    streams: tuple[Stream, ...]
    pinned: tuple[tuple[int, int], ...] = ()
    name: str = "app"

    def __post_init__(self) -> None:
        n = len(self.operators)
        names = [o.name for o in self.operators]
        if len(set(names)) != n:
            raise PlacementError(f"application '{self.name}': duplicate operator names")
        for s in self.streams:
            if not (0 <= s.src < n and 0 <= s.dst < n) or s.src == s.dst:
                raise PlacementError(f"application '{self.name}': bad stream {s}")
            if not 0 < s.probability <= 1:
                raise PlacementError(f"application '{self.name}': probability in (0, 1]")
        for i, o in enumerate(self.operators):
            has_in, has_out = bool(self.upstream[i]), bool(self.downstream[i])
            if o.kind == SOURCE and has_in:
                raise PlacementError(f"source '{o.name}' has an input stream")
            if o.kind == SINK and has_out:
                raise PlacementError(f"sink '{o.name}' has an output stream")
            if o.kind != SOURCE and not has_in:
                raise PlacementError(f"operator '{o.name}' has no input and is not a source")
            if o.kind != SINK and not has_out:
                raise PlacementError(f"operator '{o.name}' has no output and is not a sink")
        _ = self.topological_order  # raises on cycles

    @property
    def n(self) -> int:
        """Number of operators."""
        return len(self.operators)

    @cached_property
    def upstream(self) -> tuple[tuple[int, ...], ...]:
        """Stream indices entering each operator."""
        ins: list[list[int]] = [[] for _ in self.operators]
        for e, s in enumerate(self.streams):
            ins[s.dst].append(e)
        return tuple(tuple(x) for x in ins)

    @cached_property
    def downstream(self) -> tuple[tuple[int, ...], ...]:
        """Stream indices leaving each operator."""
        outs: list[list[int]] = [[] for _ in self.operators]
        for e, s in enumerate(self.streams):
            outs[s.src].append(e)
        return tuple(tuple(x) for x in outs)

    @cached_property
    def topological_order(self) -> tuple[int, ...]:
        """Kahn order (raises :class:`PlacementError` on a cycle)."""
        indeg = [len(u) for u in self.upstream]
        ready = [i for i in range(self.n) if indeg[i] == 0]
        order: list[int] = []
        while ready:
            i = ready.pop()
            order.append(i)
            for e in self.downstream[i]:
                j = self.streams[e].dst
                indeg[j] -= 1
                if indeg[j] == 0:
                    ready.append(j)
        if len(order) != self.n:
            raise PlacementError(f"application '{self.name}' has a cycle")
        return tuple(order)

    @cached_property
    def sources(self) -> tuple[int, ...]:
        """Indices of source operators ``O_src``."""
        return tuple(i for i, o in enumerate(self.operators) if o.kind == SOURCE)

    @cached_property
    def sinks(self) -> tuple[int, ...]:
        """Indices of sink operators ``O_out``."""
        return tuple(i for i, o in enumerate(self.operators) if o.kind == SINK)

    @property
    def pinned_map(self) -> Mapping[int, int]:
        """``{operator: resource}`` of pinned operators."""
        return dict(self.pinned)

    def index(self, name: str) -> int:
        """Operator index by name."""
        for i, o in enumerate(self.operators):
            if o.name == name:
                return i
        raise PlacementError(f"application '{self.name}' has no operator '{name}'")

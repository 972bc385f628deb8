"""Constraints 9-15 (section 3.3): the incremental check strategies use, and a full audit.

Readings (the paper is loose about units here):

* **eq 9** ``lambda_in_i < mu_<i,k>`` (stable operator queue), ``mu`` in events/s.
* **eq 10** every stream ``i -> j`` that crosses a logical link ``k <-> l`` (``k != l``) must be a
  stable M/M/1 queue: ``lambda_ij < bdw_kl / (8 * size_out_i)``. The paper writes
  ``lambda_out_i`` on the left; with one output stream and ``rho = 1`` that is the same number,
  and our eq 8 uses ``lambda_ij``, so stability of eq 8 is what eq 10 must guarantee.
* **eq 11** ``sum_i lambda_in_i * cpu_o_i <= cpu_r_k * 1e6`` (instructions/s on each resource).
* **eq 12** ``sum_i (mem_i + ws_i * size_in_i) <= mem_k``.
* **eq 13** compares a sum of event *sizes* with a bandwidth; we read it as bit *rates*:
  ``sum over streams on k <-> l of lambda_ij * 8 * size_out_i <= bdw_kl``. Links are the logical
  pairs ``k <-> l`` of Table 2 (both directions share one budget); a self link has no budget.
* **eq 14, 15** each operator on exactly one resource, each stream on exactly one logical link
  (implied by a host array; the audit checks the array is complete and in range).

Every failure is named by its equation (``"eq9"`` ... ``"eq15"``) so strategies can report which
constraint made a placement fail.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from reuse.placement.latency import BITS_PER_BYTE, Flows, propagate
from reuse.placement.model import SOURCE, Application, Infrastructure

__all__ = ["Violation", "Residuals", "audit", "CONSTRAINT_ORDER"]

#: the order in which the incremental check eliminates candidates (first to empty the set wins)
CONSTRAINT_ORDER = ("eq9", "eq11", "eq12", "eq10", "eq13")

_EPS = 1e-9


@dataclass(frozen=True)
class Violation:
    """One violated constraint: its equation name and what it is about."""

    constraint: str
    detail: str


class Residuals:
    """Residual CPU (instructions/s), memory (bytes) and link bit rate while placing.

    Updated after each choice (Algorithm 2: "the resource's residual CPU and memory capabilities
    are updated"). Link usage is kept per resource pair, only for pairs in use, so the state is
    O(|R|) arrays plus O(|E|) dict entries.
    """

    def __init__(self, infra: Infrastructure) -> None:
        self.infra = infra
        self.cpu = infra.cpu * 1e6
        self.mem = infra.mem.astype(float).copy()
        self.link: dict[int, dict[int, float]] = defaultdict(dict)

    def link_used(self, k: int, to: np.ndarray | None) -> np.ndarray:
        """Bits/s already used on links ``k <-> l`` for ``l`` in ``to`` (all if None)."""
        n = self.infra.n if to is None else len(to)
        used = np.zeros(n)
        row = self.link.get(k)
        if not row:
            return used
        if to is None:
            for dst, b in row.items():
                used[dst] = b
        else:
            pos = {int(r): p for p, r in enumerate(to)} if len(row) < n else None
            for dst, b in row.items():
                if pos is not None:
                    p = pos.get(dst)
                    if p is not None:
                        used[p] = b
                else:
                    used[to == dst] = b
        return used

    def take(self, app: Application, flows: Flows, op: int, k: int, hosts: np.ndarray) -> None:
        """Charge operator ``op`` on resource ``k`` and its streams to already placed neighbours."""
        o = app.operators[op]
        if o.kind != SOURCE:
            self.cpu[k] -= flows.rate_in[op] * o.cpu
        self.mem[k] -= o.mem + o.window * flows.size_in[op]
        for e in app.upstream[op] + app.downstream[op]:
            s = app.streams[e]
            other = s.src if s.dst == op else s.dst
            h = int(hosts[other])
            if h < 0 or h == k:
                continue
            bits = flows.stream_rate[e] * flows.stream_size[e] * BITS_PER_BYTE
            self.link[k][h] = self.link[k].get(h, 0.0) + bits
            self.link[h][k] = self.link[h].get(k, 0.0) + bits


def audit(app: Application, infra: Infrastructure, hosts: np.ndarray,
          flows: Flows | None = None) -> list[Violation]:
    """Every violated constraint of a complete placement (empty list: feasible)."""
    flows = propagate(app) if flows is None else flows
    hosts = np.asarray(hosts)
    out: list[Violation] = []
    if hosts.shape != (app.n,) or (hosts < 0).any() or (hosts >= infra.n).any():
        return [Violation("eq14", "every operator must be on exactly one resource")]
    for op, r in app.pinned:
        if hosts[op] != r:
            out.append(Violation("pinned", f"{app.operators[op].name} not on resource {r}"))
    cpu = np.zeros(infra.n)
    mem = np.zeros(infra.n)
    for i, o in enumerate(app.operators):
        k = int(hosts[i])
        if o.kind != SOURCE:
            mu = infra.cpu[k] * 1e6 / o.cpu
            if not flows.rate_in[i] < mu:
                out.append(Violation("eq9", f"{o.name} on {k}: rate {flows.rate_in[i]:g} >= "
                                            f"mu {mu:g}"))
            cpu[k] += flows.rate_in[i] * o.cpu
        mem[k] += o.mem + o.window * flows.size_in[i]
    for k in np.flatnonzero(cpu > infra.cpu * 1e6 * (1 + _EPS)).tolist():
        out.append(Violation("eq11", f"resource {k}: cpu {cpu[k]:g} > {infra.cpu[k] * 1e6:g}"))
    for k in np.flatnonzero(mem > infra.mem * (1 + _EPS)).tolist():
        out.append(Violation("eq12", f"resource {k}: mem {mem[k]:g} > {infra.mem[k]:g}"))
    use: dict[tuple[int, int], float] = defaultdict(float)
    for e, s in enumerate(app.streams):
        k, m = int(hosts[s.src]), int(hosts[s.dst])
        if k == m:
            continue
        bw = infra.bandwidth(k, m)
        if not flows.stream_rate[e] < bw / (BITS_PER_BYTE * flows.stream_size[e]):
            out.append(Violation("eq10", f"stream {e} on {k}<->{m} unstable"))
        use[(min(k, m), max(k, m))] += flows.stream_bits[e]
    for (k, m), b in use.items():
        bw = infra.bandwidth(k, m)
        if b > bw * (1 + _EPS):
            out.append(Violation("eq13", f"link {k}<->{m}: {b:g} bit/s > {bw:g}"))
    return out

"""The incremental placer shared by every strategy: Algorithm 2's evaluation, vectorised.

A strategy walks the deployment sequence (Algorithm 1) and, per operator, hands this engine a
vector of candidate resources. The engine returns which candidates meet constraints 9-13 given
the residual capacities, and the *AL increment* of placing the operator on each one:

``w_o * stime<o,r> + sum over placed neighbours u of w_(u,o) * ctime<u,o>``

where ``w`` counts the source-to-sink paths through the operator or stream (see
:mod:`reuse.placement.latency`). Algorithm 2 as printed adds unweighted upstream ctimes; weighting
by path counts makes the greedy step minimise exactly its contribution to eq 18. Pinned sinks
are already placed when their upstream operator is evaluated, so the stream to them counts too
(Algorithm 2 sums over "placements of operators" adjacent to ``o`` that exist).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from reuse.placement.constraints import Residuals, audit
from reuse.placement.latency import (
    BITS_PER_BYTE,
    Flows,
    aggregate_latency,
    communication_time,
    propagate,
    service_time,
)
from reuse.placement.model import SOURCE, Application, Infrastructure
from reuse.placement.result import Placement, PlacementFailure
from reuse.placement.sequence import deployment_sequence

__all__ = ["Engine", "Evaluation", "TimeLimit"]


class TimeLimit(Exception):
    """Raised inside a strategy when the resolution-time limit is exceeded."""


@dataclass(frozen=True, eq=False)
class Evaluation:
    """Candidates, their feasibility, AL increments, and the constraint that emptied the set."""

    candidates: np.ndarray
    feasible: np.ndarray
    cost: np.ndarray
    failed: str | None
    detail: str = ""

    def best(self) -> int | None:
        """Feasible candidate with the smallest AL increment (ties: lowest position)."""
        if not self.feasible.any():
            return None
        c = np.where(self.feasible, self.cost, np.inf)
        return int(self.candidates[int(np.argmin(c))])


class Engine:
    """Placement state for one (application, infrastructure) pair."""

    def __init__(self, app: Application, infra: Infrastructure, strategy: str,
                 time_limit: float | None = None) -> None:
        self.t0 = time.perf_counter()
        self.app = app
        self.infra = infra
        self.strategy = strategy
        self.time_limit = time_limit
        self.flows: Flows = propagate(app)
        self.res = Residuals(infra)
        self.hosts = np.full(app.n, -1, dtype=np.int64)
        self.evaluations = 0
        self.sequence = deployment_sequence(app)
        self.notes: list[str] = []

    # -- bookkeeping ---------------------------------------------------------------------------
    def check_time(self) -> None:
        if self.time_limit is not None and time.perf_counter() - self.t0 > self.time_limit:
            raise TimeLimit

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def neighbours(self, op: int) -> list[tuple[int, int]]:
        """``(stream index, host)`` of every placed neighbour of ``op``."""
        out = []
        for e in self.app.upstream[op] + self.app.downstream[op]:
            s = self.app.streams[e]
            other = s.src if s.dst == op else s.dst
            if self.hosts[other] >= 0:
                out.append((e, int(self.hosts[other])))
        return out

    # -- Algorithm 2 ---------------------------------------------------------------------------
    def evaluate(self, op: int, candidates: np.ndarray) -> Evaluation:
        """Feasibility (eqs 9-13) and AL increment of ``op`` on each candidate resource."""
        cand = np.asarray(candidates, dtype=np.int64)
        self.evaluations += len(cand)
        app, infra, fl, res = self.app, self.infra, self.flows, self.res
        o = app.operators[op]
        is_src = o.kind == SOURCE
        lam = fl.rate_in[op]
        cpu = infra.cpu[cand]
        feas = np.ones(len(cand), dtype=bool)
        failed: str | None = None
        detail = ""

        def apply(mask: np.ndarray, name: str, why: str) -> None:
            nonlocal feas, failed, detail
            before = feas.any()
            feas &= mask
            if before and not feas.any() and failed is None:
                failed, detail = name, why

        if not is_src:
            apply(cpu * 1e6 / o.cpu > lam, "eq9", f"rate {lam:g} ev/s exceeds every mu")
            apply(res.cpu[cand] + 1e-6 >= lam * o.cpu, "eq11", "no residual CPU")
        need_mem = o.mem + o.window * fl.size_in[op]
        apply(res.mem[cand] + 1e-9 >= need_mem, "eq12", f"no residual memory for {need_mem:g} B")
        cost = fl.op_weight[op] * service_time(cpu, o.cpu, lam, o.window, is_src)
        pending: dict[int, float] = {}  # this operator's own streams sharing a link (eq 13)
        for e, h in self.neighbours(op):
            bw = infra.bandwidth_from(h, cand)
            rate, size = fl.stream_rate[e], fl.stream_size[e]
            apply((np.isinf(bw)) | (rate < bw / (BITS_PER_BYTE * size)), "eq10",
                  f"stream {e} too fast for links from resource {h}")
            pending[h] = pending.get(h, 0.0) + rate * size * BITS_PER_BYTE
            used = res.link_used(h, cand)
            apply(np.isinf(bw) | (used + pending[h] <= bw * (1 + 1e-9)), "eq13",
                  f"no residual bandwidth from resource {h}")
            lat = infra.latency_from(h, cand)
            cost = cost + fl.stream_weight[e] * communication_time(bw, lat, size, rate)
        if not len(cand):
            failed, detail = "eq14", "no candidate resource"
        return Evaluation(cand, feas, cost, failed, detail)

    def commit(self, op: int, k: int) -> None:
        """Place ``op`` on ``k`` and update the residual capacities (Algorithm 2, last step)."""
        self.res.take(self.app, self.flows, op, k, self.hosts)
        self.hosts[op] = k

    # -- start and finish ----------------------------------------------------------------------
    def place_pinned(self) -> PlacementFailure | None:
        """Commit the pinned operators (sources, sinks) after checking they fit."""
        for op, k in self.app.pinned:
            ev = self.evaluate(op, np.array([k]))
            if not ev.feasible[0]:
                return self.failure(op, ev.failed or "pinned", ev.detail or "pinned resource")
            self.commit(op, k)
        return None

    def failure(self, op: int, constraint: str, detail: str) -> PlacementFailure:
        return PlacementFailure(self.strategy, constraint, self.app.operators[op].name, detail,
                                self.elapsed(), self.evaluations)

    def finish(self) -> Placement | PlacementFailure:
        """Audit the complete placement and compute its AL (eq 18)."""
        bad = audit(self.app, self.infra, self.hosts, self.flows)
        if bad:  # a strategy bug, never an expected outcome; reported rather than hidden
            v = bad[0]
            return PlacementFailure(self.strategy, v.constraint, "-", "audit: " + v.detail,
                                    self.elapsed(), self.evaluations)
        al = aggregate_latency(self.app, self.infra, self.hosts, self.flows)
        return Placement(self.strategy, self.hosts.copy(), al, self.elapsed(), self.evaluations,
                         tuple(self.notes))

    def unplaced(self) -> list[int]:
        """Deployment-sequence operators not yet placed."""
        return [i for i in self.sequence if self.hosts[i] < 0]

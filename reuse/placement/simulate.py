"""A small discrete-event simulation of a placed application, to cross-check the analytic AL.

It simulates the system the model describes (section 3.2), not the model's formulas:

* each source emits a Poisson stream at its rate;
* each operator is a FCFS single server with exponential service of rate ``mu = cpu_r*1e6/cpu``
  (eq 7's M/M/1); a stateful operator holds each arriving event until ``ws`` further events have
  arrived (a count window), then queues it for service;
* a processed event yields an output with probability ``psi`` (selectivity), and each output is
  copied to every out stream independently with that stream's probability ``rho``;
* a stream between two resources is a FCFS link queue with exponential transmission of mean
  ``8 * size / bdw`` followed by the link latency (eq 8's M/M/1 plus propagation); between
  operators on the same resource the hand-over is instantaneous.

Every event carries its birth time and the operators it visited; a sink records, per path, the
time from birth to the end of its service. ``AL_sim`` is the sum over paths of the mean (eq 18).
Pure Python with :mod:`heapq`; meant for applications of a few operators at modest rates.
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from dataclasses import dataclass

import numpy as np

from reuse.placement.latency import BITS_PER_BYTE, Flows, propagate
from reuse.placement.model import SOURCE, Application, Infrastructure

__all__ = ["SimResult", "simulate"]


@dataclass(frozen=True)
class SimResult:
    """Mean latency and sample count per path, and their sum ``AL_sim``."""

    path_latency: dict[tuple[int, ...], float]
    samples: dict[tuple[int, ...], int]

    @property
    def aggregate(self) -> float:
        return float(sum(self.path_latency.values()))


class _Server:
    """FCFS single server with exponential service."""

    __slots__ = ("rate", "queue", "busy")

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.queue: deque = deque()
        self.busy = False


def simulate(app: Application, infra: Infrastructure, hosts: np.ndarray, *,
             duration: float = 200.0, warmup: float = 20.0, seed: int = 0,
             flows: Flows | None = None) -> SimResult:
    """Simulate ``duration`` seconds of the placed application; ignore events born in warm-up."""
    fl = propagate(app) if flows is None else flows
    rng = np.random.default_rng(seed)
    hosts = np.asarray(hosts)
    ops = app.operators
    op_srv = [None if o.kind == SOURCE else _Server(infra.cpu[hosts[i]] * 1e6 / o.cpu)
              for i, o in enumerate(ops)]
    link_srv: list[_Server | None] = []
    link_lat: list[float] = []
    for e, s in enumerate(app.streams):
        k, m = int(hosts[s.src]), int(hosts[s.dst])
        if k == m:
            link_srv.append(None)
            link_lat.append(0.0)
        else:
            link_srv.append(_Server(infra.bandwidth(k, m) / (BITS_PER_BYTE * fl.stream_size[e])))
            link_lat.append(infra.latency(k, m))
    window: list[deque] = [deque() for _ in ops]
    sums: dict[tuple[int, ...], float] = defaultdict(float)
    counts: dict[tuple[int, ...], int] = defaultdict(int)
    heap: list = []
    seq = 0

    def push(t: float, kind: int, who: int, ev: tuple) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (t, seq, kind, who, ev))

    # kinds: 0 source emit, 1 op service done, 2 link transmit done, 3 arrive at op
    for i in app.sources:
        push(rng.exponential(1.0 / ops[i].rate), 0, i, ())

    def start(srv: _Server, t: float, kind: int, who: int) -> None:
        if not srv.busy and srv.queue:
            srv.busy = True
            push(t + rng.exponential(1.0 / srv.rate), kind, who, srv.queue.popleft())

    def emit(t: float, i: int, ev: tuple) -> None:
        for e in app.downstream[i]:
            s = app.streams[e]
            if s.probability < 1.0 and rng.random() >= s.probability:
                continue
            nev = (ev[0], ev[1] + (s.dst,))
            srv = link_srv[e]
            if srv is None:
                arrive(t, s.dst, nev)
            else:
                srv.queue.append(nev)
                start(srv, t, 2, e)

    def arrive(t: float, j: int, ev: tuple) -> None:
        o = ops[j]
        srv = op_srv[j]
        assert srv is not None
        if o.window:
            w = window[j]
            w.append(ev)
            if len(w) <= o.window:
                return
            ev = w.popleft()
        srv.queue.append(ev)
        start(srv, t, 1, j)

    while heap:
        t, _, kind, who, ev = heapq.heappop(heap)
        if t > duration:
            break
        if kind == 0:
            push(t + rng.exponential(1.0 / ops[who].rate), 0, who, ())
            emit(t, who, (t, (who,)))
        elif kind == 1:
            srv = op_srv[who]
            srv.busy = False
            start(srv, t, 1, who)
            if not app.downstream[who]:
                if ev[0] >= warmup:
                    sums[ev[1]] += t - ev[0]
                    counts[ev[1]] += 1
            elif rng.random() < ops[who].selectivity:
                emit(t, who, ev)
        elif kind == 2:
            srv = link_srv[who]
            srv.busy = False
            start(srv, t, 2, who)
            push(t + link_lat[who], 3, app.streams[who].dst, ev)
        else:
            arrive(t, who, ev)
    means = {p: sums[p] / counts[p] for p in counts}
    return SimResult(means, dict(counts))

"""Rates, sizes, service and communication times, and the aggregate end-to-end latency.

Readings of the paper's ambiguous equations (section 3), chosen once and used everywhere:

* **Selectivity / compression direction (eqs 3, 6).** ``lambda_out = lambda_in * psi`` and
  ``size_out = size_in * omega`` as the equations write them (psi, omega in (0, 1] per Table 4).
* **Rates (eq 2).** ``lambda_in_j = sum_i lambda_out_i * rho_ij``. (The paper writes
  ``lambda_in_i * psi_i`` which is ``lambda_out_i`` by eq 3; for a source it is its own rate.)
* **Sizes (eq 5).** The paper sums upstream sizes, but calls ``size_in`` the *average* size of
  arriving events and a literal sum would shrink an event by ``rho`` on a partitioned stream or
  double it at a merge. We take the rate-weighted mean:
  ``size_in_j = sum_i lambda_ij * size_out_i / sum_i lambda_ij`` with
  ``lambda_ij = lambda_out_i * rho_ij``. For a single input stream it is ``size_out_i``.
* **Service time (eq 7).** ``stime = 1 / (mu - lambda_in) + ws / lambda_in`` with
  ``mu = cpu_r * 1e6 / cpu_o`` (MIPS to instructions/s). A source emits and is not served:
  stime = 0. A sink is served like any operator.
* **Communication time (eq 8), bits vs bytes.** Sizes are bytes, bandwidth bits/s, so the link
  serves ``bdw / (8 * size_out_i)`` events/s. The arrival rate of that M/M/1 queue is the
  *stream's* rate ``lambda_ij = lambda_out_i * rho_ij``; the paper writes ``lambda_in_j``, which is
  the same number whenever ``j`` has one input stream and over-counts at a merge (the other
  inputs do not cross this link). ``ctime = 1/(bdw/(8 size) - lambda_ij) + lat`` and 0 when both
  operators share a resource (Algorithm 2, line 7).
* **Path latency and AL (eqs 16-18).** ``AL = sum over source-to-sink paths of the stimes of
  its operators and the ctimes of its streams``. We never enumerate paths: an operator ``v``
  lies on ``n_in(v) * n_out(v)`` paths (paths from a source to ``v`` times paths from ``v`` to a
  sink) and a stream ``u -> v`` on ``n_in(u) * n_out(v)``, so AL is a weighted sum computable in
  O(|O| + |E|) even when a 50-operator DAG has thousands of paths.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reuse.placement.model import SOURCE, Application, Infrastructure

__all__ = [
    "BITS_PER_BYTE",
    "Flows",
    "propagate",
    "path_weights",
    "service_time",
    "communication_time",
    "aggregate_latency",
    "path_latencies",
]

BITS_PER_BYTE = 8.0


@dataclass(frozen=True, eq=False)
class Flows:
    """Per-operator and per-stream rates and sizes of an application (eqs 1-6).

    ``rate_in``/``rate_out``/``size_in``/``size_out`` are indexed by operator; ``stream_rate``
    and ``stream_size`` by stream (``lambda_ij`` and ``size_out_i``).
    """

    rate_in: np.ndarray
    rate_out: np.ndarray
    size_in: np.ndarray
    size_out: np.ndarray
    stream_rate: np.ndarray
    stream_size: np.ndarray
    op_weight: np.ndarray
    stream_weight: np.ndarray

    @property
    def stream_bits(self) -> np.ndarray:
        """Bit rate each stream puts on a link (constraint 13 reading): ``lambda_ij*8*size``."""
        return self.stream_rate * self.stream_size * BITS_PER_BYTE


def propagate(app: Application) -> Flows:
    """Propagate rates and sizes in topological order (eqs 1-6, readings in the module doc).

    Examples
    --------
    >>> from reuse.placement.model import Operator, Stream, Application
    >>> ops = (Operator("s", "source", rate=100, size=1000), Operator("f", selectivity=0.5,
    ...        compression=0.2), Operator("k", "sink"))
    >>> fl = propagate(Application(ops, (Stream(0, 1), Stream(1, 2, 1.0))))
    >>> fl.rate_in.tolist(), fl.rate_out.tolist(), fl.size_out.tolist()
    ([100.0, 100.0, 50.0], [100.0, 50.0, 50.0], [1000.0, 200.0, 200.0])
    """
    n = app.n
    rin = np.zeros(n)
    rout = np.zeros(n)
    sin = np.zeros(n)
    sout = np.zeros(n)
    srate = np.zeros(len(app.streams))
    ssize = np.zeros(len(app.streams))
    for i in app.topological_order:
        o = app.operators[i]
        if o.kind == SOURCE:
            rin[i] = rout[i] = o.rate  # eq 1: what downstream sees is the source's own rate
            sin[i] = sout[i] = o.size  # eq 4
        else:
            tot = 0.0
            acc = 0.0
            for e in app.upstream[i]:
                tot += srate[e]
                acc += srate[e] * ssize[e]
            rin[i] = tot  # eq 2
            sin[i] = acc / tot if tot > 0 else 0.0  # eq 5, rate-weighted mean
            rout[i] = rin[i] * o.selectivity  # eq 3
            sout[i] = sin[i] * o.compression  # eq 6
        for e in app.downstream[i]:
            srate[e] = rout[i] * app.streams[e].probability
            ssize[e] = sout[i]
    w_op, w_st = path_weights(app)
    return Flows(rin, rout, sin, sout, srate, ssize, w_op, w_st)


def path_weights(app: Application) -> tuple[np.ndarray, np.ndarray]:
    """Number of source-to-sink paths through each operator and each stream (eq 18 weights)."""
    n_in = np.zeros(app.n)
    n_out = np.zeros(app.n)
    order = app.topological_order
    for i in order:
        n_in[i] = 1.0 if not app.upstream[i] else sum(n_in[app.streams[e].src]
                                                      for e in app.upstream[i])
    for i in reversed(order):
        n_out[i] = 1.0 if not app.downstream[i] else sum(n_out[app.streams[e].dst]
                                                         for e in app.downstream[i])
    w_st = np.array([n_in[s.src] * n_out[s.dst] for s in app.streams], dtype=float)
    return n_in * n_out, w_st


def service_time(cpu_r: np.ndarray | float, cpu_o: float, rate_in: float, window: int,
                 is_source: bool = False) -> np.ndarray:
    """Eq 7: ``1/(mu - lambda_in) + ws/lambda_in``, ``mu = cpu_r*1e6/cpu_o``; inf if unstable.

    Examples
    --------
    >>> float(service_time(1.0, 1e4, 50.0, 10))  # mu = 100 ev/s: 1/50 + 10/50
    0.22
    """
    cpu_r = np.asarray(cpu_r, dtype=float)
    if is_source:
        return np.zeros(cpu_r.shape)
    mu = cpu_r * 1e6 / cpu_o
    with np.errstate(divide="ignore"):
        wait = np.where(mu > rate_in, 1.0 / np.maximum(mu - rate_in, 1e-300), np.inf)
    return wait + (window / rate_in if window and rate_in > 0 else 0.0)


def communication_time(bandwidth: np.ndarray | float, latency: np.ndarray | float,
                       size: float, rate: float) -> np.ndarray:
    """Eq 8: ``1/(bdw/(8 size) - lambda_ij) + lat``; 0 on a self link (inf bandwidth).

    Examples
    --------
    >>> float(communication_time(8e5, 0.01, 1000.0, 50.0))  # link serves 100 ev/s
    0.03
    """
    bw = np.asarray(bandwidth, dtype=float)
    lat = np.asarray(latency, dtype=float)
    mu = bw / (BITS_PER_BYTE * size) if size > 0 else np.full(bw.shape, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(mu > rate, 1.0 / np.maximum(mu - rate, 1e-300), np.inf)
    q = np.where(np.isinf(bw), 0.0, q)
    return q + np.where(np.isinf(bw), 0.0, lat)


def _hop_times(app: Application, infra: Infrastructure, hosts: np.ndarray,
               flows: Flows) -> tuple[np.ndarray, np.ndarray]:
    st = np.array([
        float(service_time(infra.cpu[hosts[i]], o.cpu, flows.rate_in[i], o.window,
                           o.kind == SOURCE))
        for i, o in enumerate(app.operators)])
    ct = np.array([
        float(communication_time(infra.bandwidth(int(hosts[s.src]), int(hosts[s.dst])),
                                 infra.latency(int(hosts[s.src]), int(hosts[s.dst])),
                                 flows.stream_size[e], flows.stream_rate[e]))
        for e, s in enumerate(app.streams)])
    return st, ct


def aggregate_latency(app: Application, infra: Infrastructure, hosts: np.ndarray,
                      flows: Flows | None = None) -> float:
    """AL of a complete placement (eq 18) as the path-weighted sum of hop times."""
    flows = propagate(app) if flows is None else flows
    st, ct = _hop_times(app, infra, np.asarray(hosts), flows)
    return float(flows.op_weight @ st + flows.stream_weight @ ct)


def path_latencies(app: Application, infra: Infrastructure, hosts: np.ndarray,
                   flows: Flows | None = None) -> dict[tuple[int, ...], float]:
    """``L_p`` (eq 17) of every source-to-sink path, enumerated (small applications only)."""
    flows = propagate(app) if flows is None else flows
    st, ct = _hop_times(app, infra, np.asarray(hosts), flows)
    out: dict[tuple[int, ...], float] = {}

    def walk(i: int, path: tuple[int, ...], acc: float) -> None:
        if not app.downstream[i]:
            out[path] = acc
            return
        for e in app.downstream[i]:
            j = app.streams[e].dst
            walk(j, path + (j,), acc + ct[e] + st[j])

    for s in app.sources:
        walk(s, (s,), st[s])
    return out

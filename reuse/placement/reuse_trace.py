"""Reuse meets placement: place the running (merged) DAGs of a reuse trace step by step.

Three ways to deploy what the :class:`reuse.core.manager.Manager` decides to run, compared per step:

* **incremental**: after each merge only the newly started tasks (``PlanDelta.start``) are placed;
  every running task keeps its resource. The new tasks form a *partial DAG*; a stream from one
  partial DAG into another crosses the *bus* (the runtime's pub/sub between separately deployed
  pieces), modelled as a broker operator on the producer's side, so the hop costs an extra M/M/1
  service (eq 7) and an extra link (eq 8). Removals stop tasks and move nothing.
* **full**: the whole merged state is re-placed from scratch at every step (one deployment, no bus).
* **default**: no reuse; each submitted dataflow runs its own copy of every task, placed when it is
  submitted (earlier copies stay where they are), and its copy is stopped when it is removed.

Model of a workbench task (the reuse dataflows carry no CPU or rate figures): parameters are drawn
from Table 4's ranges by a generator seeded with the task's *signature*, so equivalent tasks (one
running task, or the default mode's copies) have the same cost. A source is pinned on an edge
device drawn from its signature (the sensor is where it is). Every submitted dataflow's sink feeds a
*consumer* (a sink operator of the placement model) for that dataflow; as in section 5.1, the
consumer of the sink on the dataflow's longest path is in the cloud and the others are on edge
devices, drawn from the dataflow's id. AL per dataflow is the eq 18 sum over the paths that end at
its consumers.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from reuse.core.manager import Manager
from reuse.placement.errors import PlacementError
from reuse.placement.latency import (
    BITS_PER_BYTE,
    communication_time,
    propagate,
    service_time,
)
from reuse.placement.model import SINK, SOURCE, TRANSFORM, Application, Infrastructure, Operator
from reuse.placement.model import Stream as PStream
from reuse.placement.registry import get_strategy
from reuse.placement.result import Placement

if TYPE_CHECKING:
    from reuse.core.dataflow import Dataflow
    from reuse.core.traces import Op

__all__ = ["TraceSettings", "place_trace", "latency_by_group", "summarize", "MODES"]

MODES = ("incremental", "full", "default")


@dataclass(frozen=True)
class TraceSettings:
    """Knobs of the reuse-trace placement.

    ``bus`` is where the broker of a partial-DAG boundary runs: ``"cloud"`` (the cloud resource
    nearest the producer, a hosted pub/sub) or ``"local"`` (on the producer's resource).
    """

    strategy: str = "aels+rp+la"
    seed: int = 0
    bus: str = "cloud"
    bus_cpu: float = 1000.0
    bus_mem: float = 1e5
    stateful_share: float = 0.2
    max_stream_share: float = 0.9
    time_limit: float | None = None
    modes: tuple[str, ...] = field(default=MODES)


def _rng(*parts: object) -> np.random.Generator:
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def _task_params(signature: str, is_source: bool, s: TraceSettings, lan: float) -> dict[str, Any]:
    rng = _rng("task", s.seed, signature)
    p: dict[str, Any] = dict(cpu=rng.uniform(1000, 10000), mem=rng.uniform(100, 7500),
             selectivity=rng.uniform(0.1, 1.0), compression=rng.uniform(0.1, 1.0),
             window=int(rng.integers(1, 101)) if rng.random() < s.stateful_share else 0)
    if is_source:
        while True:
            rate, size = rng.uniform(1000, 10000), rng.uniform(100, 2500)
            if rate * size * BITS_PER_BYTE < s.max_stream_share * lan:
                break
        p.update(kind=SOURCE, rate=rate, size=size, selectivity=1.0, compression=1.0, window=0)
    return p


@dataclass
class _Graph:
    """A deployable state: operator keys, their parents, params and pins; consumers per dataflow."""

    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    parents: dict[str, list[str]] = field(default_factory=dict)
    pins: dict[str, int] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)  # dataflow -> consumer keys

    def application(self, name: str) -> tuple[Application, list[str]]:
        keys = sorted(self.params)
        idx = {k: i for i, k in enumerate(keys)}
        ops = []
        for k in keys:
            p = dict(self.params[k])
            kind = p.pop("kind", TRANSFORM)
            ops.append(Operator(k, kind, **p))
        streams = tuple(PStream(idx[p], idx[k]) for k in keys for p in self.parents.get(k, ()))
        has_out = {p for k in keys for p in self.parents.get(k, ())}
        for i, k in enumerate(keys):  # a dangling transform (a removed consumer) becomes a sink
            if ops[i].kind == TRANSFORM and k not in has_out:
                ops[i] = Operator(k, SINK, **{f: getattr(ops[i], f) for f in
                                              ("cpu", "mem", "selectivity", "compression",
                                               "window")})
        pinned = tuple((idx[k], r) for k, r in sorted(self.pins.items()) if k in idx)
        return Application(tuple(ops), streams, pinned, name=name), keys


def latency_by_group(app: Application, infra: Infrastructure, hosts: np.ndarray,
                     groups: Mapping[str, Sequence[int]]) -> dict[str, float]:
    """Eq 18 restricted to the paths ending at each group's sinks (AL per dataflow)."""
    fl = propagate(app)
    st = np.array([float(service_time(infra.cpu[hosts[i]], o.cpu, fl.rate_in[i], o.window,
                                      o.kind == SOURCE)) for i, o in enumerate(app.operators)])
    ct = np.array([float(communication_time(infra.bandwidth(int(hosts[s.src]), int(hosts[s.dst])),
                                            infra.latency(int(hosts[s.src]), int(hosts[s.dst])),
                                            fl.stream_size[e], fl.stream_rate[e]))
                   for e, s in enumerate(app.streams)])
    n_in = np.zeros(app.n)
    for i in app.topological_order:
        n_in[i] = 1.0 if not app.upstream[i] else sum(n_in[app.streams[e].src]
                                                      for e in app.upstream[i])
    out: dict[str, float] = {}
    for g, sinks in groups.items():
        n_out = np.zeros(app.n)
        n_out[list(sinks)] = 1.0
        for i in reversed(app.topological_order):
            if app.downstream[i]:
                n_out[i] = sum(n_out[app.streams[e].dst] for e in app.downstream[i])
        w_st = np.array([n_in[s.src] * n_out[s.dst] for s in app.streams])
        out[g] = float((n_in * n_out) @ st + (w_st @ ct if len(ct) else 0.0))
    return out


def _consumers(flow: Dataflow, infra: Infrastructure, s: TraceSettings) -> list[tuple[str, int]]:
    """(sink task id, resource) of each consumer of a dataflow: longest-path sink in the cloud."""
    depth: dict[str, int] = {}
    for t in flow.order:
        depth[t] = 1 + max((depth[p] for p in flow.parents[t]), default=0)
    sinks = sorted(flow.sinks, key=lambda t: (-depth[t], t))
    rng = _rng("consumer", s.seed, flow.id)
    out = [(sinks[0], int(rng.choice(infra.cloud_ids)))]
    pool = infra.edge_ids if len(infra.edge_ids) else infra.cloud_ids
    out += [(t, int(rng.choice(pool))) for t in sinks[1:]]
    return out


def _source_pin(signature: str, infra: Infrastructure, s: TraceSettings) -> int:
    pool = infra.edge_ids if len(infra.edge_ids) else infra.cloud_ids
    return int(_rng("source", s.seed, signature).choice(pool))


def place_trace(flows: Mapping[str, Dataflow], trace: Sequence[Op], infra: Infrastructure,
                settings: TraceSettings | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run a submit/remove trace through the manager and place every step in every mode.

    Parameters
    ----------
    flows
        Dataflow id -> :class:`reuse.core.dataflow.Dataflow`.
    trace
        :class:`reuse.core.traces.Op` items (``op`` "submit"/"remove", ``dag``).

    Returns
    -------
    steps, per_dataflow
        ``steps``: one row per (step, mode): status, failed constraint, placed tasks, running
        tasks, bus operators, total CPU demand (MIPS), resolution time, total AL.
        ``per_dataflow``: one row per (step, mode, dataflow) with its AL.
    """
    s = settings or TraceSettings()
    strategy = get_strategy(s.strategy)
    for m in s.modes:
        if m not in MODES:
            raise PlacementError(f"unknown mode '{m}' (known: {', '.join(MODES)})")
    if s.bus not in ("cloud", "local"):
        raise PlacementError(f"bus must be 'cloud' or 'local', not '{s.bus}'")
    mgr = Manager()
    hosts: dict[str, dict[str, int]] = {m: {} for m in s.modes}  # mode -> key -> resource
    part: dict[str, int] = {}  # running task -> partial DAG (step it started)
    steps, per_flow = [], []
    lan = infra.lan_bandwidth
    for step, op in enumerate(trace, start=1):
        flow = flows[op.dag]
        if op.op == "submit":
            delta = mgr.submit(flow)
            for started in delta.start:
                part[started.id] = step
        else:
            delta = mgr.remove(op.dag)
            for stopped in delta.stop:
                part.pop(stopped, None)
        for mode in s.modes:
            g = _Graph()
            if mode == "default":
                for fid, f in mgr.submitted.items():
                    sigs = {t: mgr.running_task(mgr.running_id(fid, t)).signature
                            for t in f.order}
                    for t in f.order:
                        key = f"{fid}/{t}"
                        g.params[key] = _task_params(sigs[t], not f.parents[t], s, lan)
                        g.parents[key] = [f"{fid}/{p}" for p in f.parents[t]]
                        if not f.parents[t]:
                            g.pins[key] = _source_pin(sigs[t], infra, s)
                    _add_consumers(g, fid, f, _copy_key(fid), infra, s)
            else:
                for rt in mgr.running_tasks():
                    g.params[rt.id] = _task_params(rt.signature, not rt.parents, s, lan)
                    g.parents[rt.id] = list(rt.parents)
                    if not rt.parents:
                        g.pins[rt.id] = _source_pin(rt.signature, infra, s)
                for fid, f in mgr.submitted.items():
                    _add_consumers(g, fid, f, _running_key(mgr, fid), infra, s)
            if mode != "full":
                for k, r in hosts[mode].items():
                    if k in g.params:
                        g.pins[k] = r
            if mode == "incremental":
                _add_buses(g, part, hosts[mode], infra, s)
            app, keys = g.application(f"step{step}-{mode}")
            t0 = time.perf_counter()
            free = sum(1 for k in keys if k not in g.pins)
            out = strategy(app, infra, time_limit=s.time_limit)
            elapsed = time.perf_counter() - t0
            fl = propagate(app)
            cpu = float(sum(fl.rate_in[i] * o.cpu for i, o in enumerate(app.operators)
                            if o.kind != SOURCE) / 1e6)
            ok = isinstance(out, Placement)
            row = dict(step=step, op=op.op, dag=op.dag, mode=mode,
                       status="ok" if ok else "failed",
                       constraint="" if isinstance(out, Placement) else out.constraint,
                       failed_at="" if isinstance(out, Placement) else
                       f"{out.operator}: {out.detail}", placed=free,
                       tasks=sum(1 for k in keys if not k.startswith(("out:", "bus:"))),
                       buses=sum(1 for k in keys if k.startswith("bus:")),
                       cpu_mips=cpu, resolution_time=elapsed,
                       latency=out.latency if isinstance(out, Placement) else np.nan)
            steps.append(row)
            if isinstance(out, Placement):
                hosts[mode] = {k: int(out.hosts[i]) for i, k in enumerate(keys)}
                idx = {k: i for i, k in enumerate(keys)}
                groups = {fid: [idx[c] for c in cs] for fid, cs in g.groups.items()}
                for fid, al in latency_by_group(app, infra, out.hosts, groups).items():
                    per_flow.append(dict(step=step, mode=mode, dataflow=fid, latency=al))
            else:
                hosts[mode] = {k: r for k, r in hosts[mode].items() if k in g.params}
    return pd.DataFrame(steps), pd.DataFrame(per_flow)


def _copy_key(fid: str) -> Callable[[str], str]:
    """Operator key of a task in the default mode's own copy of dataflow ``fid``."""
    return lambda t: f"{fid}/{t}"


def _running_key(mgr: Any, fid: str) -> Callable[[str], str]:
    """Operator key of a submitted task under reuse: the running task computing it."""
    return lambda t: str(mgr.running_id(fid, t))


def _add_consumers(g: _Graph, fid: str, flow: Dataflow, key_of: Callable[[str], str],
                   infra: Infrastructure,
                   s: TraceSettings) -> None:
    for sink, r in _consumers(flow, infra, s):
        ck = f"out:{fid}/{sink}"
        g.params[ck] = dict(kind=SINK, cpu=1000.0, mem=100.0)
        g.parents[ck] = [key_of(sink)]
        g.pins[ck] = r
        g.groups.setdefault(fid, []).append(ck)


def _add_buses(g: _Graph, part: Mapping[str, int], hosts: Mapping[str, int],
               infra: Infrastructure, s: TraceSettings) -> None:
    """Route every stream between two partial DAGs through a broker on the producer's side."""
    for k in [k for k in g.params if k in part]:
        for i, p in enumerate(g.parents.get(k, [])):
            if p in part and part[p] != part[k]:
                bk = f"bus:{p}"
                if bk not in g.params:
                    g.params[bk] = dict(cpu=s.bus_cpu, mem=s.bus_mem, selectivity=1.0,
                                        compression=1.0, window=0)
                    g.parents[bk] = [p]
                    h = hosts.get(p)
                    if h is not None:
                        if s.bus == "local":
                            g.pins[bk] = h
                        else:
                            lat = infra.latency_from(h, infra.cloud_ids)
                            g.pins[bk] = int(infra.cloud_ids[int(np.argmin(lat))])
                g.parents[k][i] = bk


def summarize(steps: pd.DataFrame, per_flow: pd.DataFrame) -> pd.DataFrame:
    """Per mode: steps, failures, mean CPU demand (MIPS), resolution time, AL total and per flow."""
    g = steps.groupby("mode").agg(
        steps=("step", "size"), failed=("status", lambda x: int((x != "ok").sum())),
        cpu_mips=("cpu_mips", "mean"), resolution_time=("resolution_time", "mean"),
        al_total=("latency", "mean"), buses=("buses", "mean"))
    if len(per_flow):
        g["al_per_dataflow"] = per_flow.groupby("mode").latency.mean()
    return g.reindex([m for m in MODES if m in g.index])

"""The discrete-event simulation agrees with the analytic AL within 10% on small cases."""

from __future__ import annotations

import numpy as np
import pytest

from reuse.placement.generators import make_infrastructure
from reuse.placement.latency import aggregate_latency, path_latencies
from reuse.placement.model import Application, Operator, Stream
from reuse.placement.registry import place
from reuse.placement.simulate import simulate

INFRA = make_infrastructure(2, 2, 3, seed=3)  # RPi: 4744 / 5020 MIPS


def busy_app() -> Application:
    """Queues at ~50% utilisation so eq 7 and eq 8's waiting terms matter, plus a window."""
    mu_target = 4744e6 / 200  # ~200 ev/s on an RPi2, ~212 on an RPi3
    ops = (Operator("s", "source", rate=100, size=50_000),  # link: 100e6/(8*5e4) = 250 ev/s
           Operator("f", cpu=mu_target, window=5, selectivity=0.9),
           Operator("g", cpu=mu_target / 2, compression=0.5),
           Operator("k1", "sink", cpu=mu_target / 4), Operator("k2", "sink", cpu=mu_target))
    streams = (Stream(0, 1), Stream(1, 2), Stream(2, 3), Stream(2, 4, 0.5))
    return Application(ops, streams, pinned=((0, 2), (3, 0), (4, 5)), name="busy")


@pytest.mark.parametrize("hosts", [[2, 3, 3, 0, 5], [2, 2, 7, 0, 5], [2, 4, 6, 0, 6]])
def test_des_matches_analytic_within_10_percent(hosts):
    app = busy_app()
    hosts = np.array(hosts)
    analytic = aggregate_latency(app, INFRA, hosts)
    sim = simulate(app, INFRA, hosts, duration=150, warmup=15, seed=1)
    assert sim.aggregate == pytest.approx(analytic, rel=0.10)
    per_path = path_latencies(app, INFRA, hosts)
    assert set(sim.path_latency) == set(per_path)
    for p, v in per_path.items():
        assert sim.path_latency[p] == pytest.approx(v, rel=0.15)


def test_des_on_a_strategy_placement():
    app = busy_app()
    out = place(app, INFRA, "aels+rp+la")
    assert out.ok
    sim = simulate(app, INFRA, out.hosts, duration=150, warmup=15, seed=2)
    assert sim.aggregate == pytest.approx(out.latency, rel=0.10)

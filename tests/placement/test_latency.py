"""Hand-computed checks of each equation reading (eqs 1-8, 16-18)."""

from __future__ import annotations

import numpy as np
import pytest

from reuse.placement.latency import (
    aggregate_latency,
    communication_time,
    path_latencies,
    path_weights,
    propagate,
    service_time,
)
from reuse.placement.model import Application, Operator, Stream


def test_eqs_1_to_6_chain(app):
    fl = propagate(app)
    assert fl.rate_in.tolist() == [100, 100, 50]  # eq 1, eq 2
    assert fl.rate_out.tolist() == [100, 50, 50]  # eq 3: out = in * psi
    assert fl.size_in.tolist() == [1000, 1000, 200]  # eq 4, eq 5
    assert fl.size_out.tolist() == [1000, 200, 200]  # eq 6: out = in * omega
    assert fl.stream_bits.tolist() == [100 * 1000 * 8, 50 * 200 * 8]


def test_eq2_sums_rates_eq5_is_rate_weighted_mean_at_a_merge():
    ops = (Operator("a", "source", rate=300, size=100), Operator("b", "source", rate=100, size=500),
           Operator("m"), Operator("k", "sink"))
    fl = propagate(Application(ops, (Stream(0, 2, 0.5), Stream(1, 2), Stream(2, 3))))
    assert fl.rate_in[2] == pytest.approx(150 + 100)  # 300 * 0.5 + 100
    assert fl.size_in[2] == pytest.approx((150 * 100 + 100 * 500) / 250)  # 260 B, not 600 B


def test_eq7_service_time_mips_and_window():
    # mu = 100 MIPS * 1e6 / 5e5 = 200 ev/s; 1/(200-100) + 10/100
    assert float(service_time(100.0, 5e5, 100.0, 10)) == pytest.approx(0.11)
    assert float(service_time(100.0, 5e5, 100.0, 0)) == pytest.approx(0.01)
    assert np.isinf(service_time(100.0, 1e6, 100.0, 0))  # mu == lambda: unstable
    assert float(service_time(100.0, 5e5, 100.0, 3, is_source=True)) == 0.0


def test_eq8_communication_time_in_bits():
    # 1 Mbit/s / (8 * 200 B) = 625 ev/s; lambda_ij = 50
    assert float(communication_time(1e6, 0.051, 200.0, 50.0)) == pytest.approx(1 / 575 + 0.051)
    assert float(communication_time(np.inf, 0.0, 200.0, 50.0)) == 0.0
    assert np.isinf(communication_time(1e6, 0.0, 1250.0, 100.0))  # link serves exactly 100


def test_al_hand_computed(app, infra):
    hosts = np.array([1, 1, 0])
    expected = 0.0 + 0.11 + (1 / 575 + 0.051) + 1 / (1e4 - 50)
    assert aggregate_latency(app, infra, hosts) == pytest.approx(expected)
    hosts = np.array([1, 0, 0])  # f on the cloud: 1/(2000-100) + 0.1, s->f 1/(125-100) + 0.051
    expected = (1 / 1900 + 0.1) + (1 / 25 + 0.051) + 1 / (1e4 - 50)
    assert aggregate_latency(app, infra, hosts) == pytest.approx(expected)


def test_al_equals_sum_of_enumerated_paths(infra):
    ops = (Operator("a", "source", rate=50, size=100), Operator("b", "source", rate=30, size=100),
           Operator("x", cpu=1e5), Operator("y", cpu=1e5, window=3), Operator("z", cpu=1e5),
           Operator("k1", "sink"), Operator("k2", "sink"))
    streams = (Stream(0, 2), Stream(1, 2), Stream(2, 3), Stream(2, 4, 0.5), Stream(3, 4),
               Stream(4, 5), Stream(3, 6))
    app = Application(ops, streams)
    w_op, w_st = path_weights(app)
    paths = path_latencies(app, infra, np.array([1, 2, 1, 3, 0, 0, 2]))
    assert len(paths) == 6 == w_op[[5, 6]].sum()
    assert sum(paths.values()) == pytest.approx(
        aggregate_latency(app, infra, np.array([1, 2, 1, 3, 0, 0, 2])))

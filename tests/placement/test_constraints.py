"""The audit names each violated constraint (eqs 9-14) on hand-made placements."""

from __future__ import annotations

import numpy as np

from reuse.placement.constraints import Residuals, audit
from reuse.placement.latency import propagate
from reuse.placement.model import Application, Operator, Stream


def names(app, infra, hosts):
    return {v.constraint for v in audit(app, infra, np.array(hosts))}


def test_feasible_hand_placement(app, infra):
    assert audit(app, infra, np.array([1, 1, 0])) == []


def test_eq9_operator_slower_than_its_input(make_app, infra):
    assert "eq9" in names(make_app(cpu=1e6), infra, [1, 1, 0])  # mu = 100 = lambda


def test_eq11_cpu_sum_and_eq12_memory_sum(infra):
    ops = (Operator("s", "source", rate=100, size=10), Operator("a", cpu=6e5),
           Operator("b", cpu=6e5, mem=6e5), Operator("k", "sink", mem=6e5))
    app = Application(ops, (Stream(0, 1), Stream(1, 2), Stream(2, 3)), pinned=((0, 1), (3, 2)))
    assert names(app, infra, [1, 2, 2, 2]) == {"eq11", "eq12"}  # 1.2e8 > 1e8 instr/s, 1.2 MB
    assert names(app, infra, [1, 2, 1, 2]) == set()


def test_eq10_and_eq13_links(make_infra):
    infra = make_infra()
    ops = (Operator("s", "source", rate=100, size=1000), Operator("t", "source", rate=50,
           size=1000), Operator("m", cpu=1e5), Operator("k", "sink"))
    app = Application(ops, (Stream(0, 2), Stream(1, 2), Stream(2, 3)))
    # s: 0.8 Mbit/s and t: 0.4 Mbit/s from device 1 to device 2: each stable, 1.2 > 1 Mbit/s
    assert names(app, infra, [1, 1, 2, 2]) == {"eq13"}
    fat = Application((Operator("s", "source", rate=200, size=1000), Operator("k", "sink")),
                      (Stream(0, 1),))
    assert names(fat, infra, [1, 2]) >= {"eq10", "eq13"}  # 1.6 Mbit/s on a 1 Mbit/s LAN
    assert names(fat, infra, [1, 1]) == set()


def test_eq14_incomplete_and_pinned(app, infra):
    assert names(app, infra, [1, -1, 0]) == {"eq14"}
    assert names(app, infra, [2, 2, 0]) == {"pinned"}


def test_residuals_update_cpu_memory_and_links(app, infra):
    fl = propagate(app)
    res = Residuals(infra)
    hosts = np.array([1, -1, 0])
    res.take(app, fl, 1, 2, hosts)  # f on device 2, next to the source on device 1
    assert res.cpu[2] == 100e6 - 100 * 5e5
    assert res.mem[2] == 1e6 - (1000 + 10 * 1000)
    assert res.link[1][2] == res.link[2][1] == 100 * 1000 * 8
    assert res.link_used(2, np.array([0, 1, 3])).tolist() == [50 * 200 * 8, 800000, 0]  # f->k too

"""Strategies on the hand-made case (known optimum), failure reports, and a property test."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reuse.placement.constraints import audit
from reuse.placement.errors import PlacementError
from reuse.placement.generators import make_application, make_infrastructure
from reuse.placement.latency import aggregate_latency
from reuse.placement.model import Application, Operator, Stream
from reuse.placement.regions import patterns, regions
from reuse.placement.registry import STRATEGIES, get_strategy, place

CONSTRAINTS = {"eq9", "eq10", "eq11", "eq12", "eq13", "eq14", "time_limit"}


def brute_force(app, infra):
    free = [i for i in range(app.n) if i not in app.pinned_map]
    best = (np.inf, None)
    for combo in itertools.product(range(infra.n), repeat=len(free)):
        hosts = np.array([app.pinned_map.get(i, -1) for i in range(app.n)])
        hosts[free] = combo
        if not audit(app, infra, hosts):
            best = min(best, (aggregate_latency(app, infra, hosts), tuple(hosts)))
    return best


def test_hand_case_known_optimum(app, infra):
    # f next to its source (device 1): 0.11 + (1/575 + 0.051) + 1/9950 s; the cloud: 0.1916 s
    al, hosts = brute_force(app, infra)
    assert hosts == (1, 1, 0) and al == pytest.approx(0.1628396, abs=1e-6)
    out = place(app, infra, "aels")
    assert out.ok and out.hosts.tolist() == [1, 1, 0] and out.latency == pytest.approx(al)
    # f feeds the cloud sink only: RP's cloud region sends it to the cloud nearest that sink
    assert regions(app, infra).edge == (True, False, False)
    for name in ("aels+rp", "aels+rp+la", "cloud-only"):
        assert place(app, infra, name).hosts.tolist() == [1, 0, 0]
    cloud = place(app, infra, "cloud-only")
    assert cloud.hosts.tolist() == [1, 0, 0]
    assert cloud.latency == pytest.approx((1 / 1900 + 0.1) + (1 / 25 + 0.051) + 1 / 9950)
    assert place(app, infra, "tcep").ok


def test_edge_region_falls_back_to_nearest_device_then_cloud(make_app, make_infra):
    # device 1 lacks memory for f (its source is there) -> best is device 2 (3 ms, LAN) ...
    infra = make_infra()
    app = make_app(mem=9.9e5)
    app = Application(app.operators, app.streams, pinned=((0, 1), (2, 1)))  # edge sink
    mem = infra.mem.copy()
    mem[1] = 5e5
    infra2 = type(infra)(infra.cpu, mem, infra.site, infra.access, infra.is_cloud,
                         infra.site_latency, infra.lan_bandwidth, infra.wan_bandwidth)
    al, hosts = brute_force(app, infra2)
    for name in ("aels", "aels+rp", "aels+rp+la"):
        out = place(app, infra2, name)
        assert out.ok and tuple(out.hosts) == hosts, name
    assert regions(app, infra2).edge == (True, True, True)


def test_regions_and_patterns():
    ops = (Operator("s", "source", rate=1, size=1), Operator("split"), Operator("a"),
           Operator("b"), Operator("merge"), Operator("k1", "sink"), Operator("k2", "sink"))
    app = Application(ops, (Stream(0, 1), Stream(1, 2), Stream(1, 3), Stream(2, 4),
                            Stream(3, 4), Stream(4, 5), Stream(3, 6)), pinned=((5, 0), (6, 1)))
    infra = make_infrastructure(1, 1, 2, seed=0)
    reg = regions(app, infra)  # k1 on the cloud (resource 0), k2 on a device
    assert reg.edge == (True, True, True, True, False, False, True)  # a: 2 hops from k1
    p = patterns(app)
    assert p["splitters"] == ["split", "b"] and p["mergers"] == ["merge"]
    assert p["parallel"] == ["a", "b"]


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_failure_names_the_constraint(name, make_app, infra):
    out = place(make_app(cpu=1e7), infra, name)  # mu <= lambda everywhere
    assert not out.ok and out.constraint == "eq9" and out.operator == "f"
    out = place(make_app(mem=2e9), infra, name)
    assert not out.ok and out.constraint == "eq12"
    assert place(make_app(), infra, name, time_limit=0.0).constraint == "time_limit"


def test_failure_eq10_fat_stream_cannot_leave_the_device(make_app, infra):
    fat = make_app(mem=2e6)  # too big for devices; the 0.8 Mbit/s source... made fat below
    ops = list(fat.operators)
    ops[0] = Operator("s", "source", cpu=1.0, mem=100.0, rate=100.0, size=2000.0)  # 1.6 Mbit/s
    app = Application(tuple(ops), fat.streams, fat.pinned)
    for name in ("aels", "aels+rp", "aels+rp+la", "cloud-only"):
        out = place(app, infra, name)
        assert not out.ok and out.constraint == "eq10", (name, out)


def test_pinned_operator_that_does_not_fit(infra):
    app = Application((Operator("s", "source", mem=2e6, rate=1, size=1),
                       Operator("k", "sink")), (Stream(0, 1),), pinned=((0, 1),))
    out = place(app, infra, "aels")
    assert not out.ok and out.constraint == "eq12" and out.operator == "s"


def test_unknown_strategy_is_a_placement_error():
    with pytest.raises(PlacementError, match="unknown strategy"):
        get_strategy("nope")


SMALL = make_infrastructure(2, 2, 3, seed=5)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(4, 14), g=st.integers(0, 999), c=st.integers(0, 9))
def test_every_placement_satisfies_the_constraints(n, g, c):
    app = make_application(n, SMALL, graph_seed=g, config_seed=c)
    for name in STRATEGIES:
        out = place(app, SMALL, name)
        if out.ok:
            assert audit(app, SMALL, out.hosts) == []
            assert out.latency == pytest.approx(aggregate_latency(app, SMALL, out.hosts))
            assert all(out.hosts[o] == r for o, r in app.pinned)
        else:
            assert out.constraint in CONSTRAINTS and not out.detail.startswith("audit")


def test_la_matches_rp_and_beats_baselines_on_generated_apps():
    infra = make_infrastructure(10, 10, 10, seed=1)
    rows = []
    for g, n in enumerate((6, 9, 25)):
        app = make_application(n, infra, graph_seed=g, config_seed=0)
        got = {s: place(app, infra, s) for s in STRATEGIES}
        assert all(o.ok for o in got.values())
        rows.append({s: o.latency for s, o in got.items()})
    for r in rows:
        assert r["aels+rp+la"] <= r["aels+rp"] * 1.03
        assert r["aels+rp+la"] < r["cloud-only"] and r["aels+rp+la"] < r["tcep"]


def test_la_scan_is_bounded_when_inputs_cannot_leave_their_host():
    # o2 merges two streams (80 + 49 Mbit/s) from one device: together they exceed any 100 Mbps
    # link, so every other device fails eq 13; LA must not walk all 10,000 of them
    infra = make_infrastructure(10, 100, 100, seed=4)
    app = make_application(6, infra, graph_seed=1, config_seed=1)
    la, rp = place(app, infra, "aels+rp+la"), place(app, infra, "aels+rp")
    assert la.ok and rp.ok and la.latency == pytest.approx(rp.latency)
    assert la.evaluations < 2_000 < rp.evaluations

from __future__ import annotations

import numpy as np
import pytest

from reuse.placement.errors import PlacementError
from reuse.placement.generators import (
    APP_GRAPHS,
    CLOUD_MIPS,
    TOPOLOGIES,
    make_application,
    make_infrastructure,
)
from reuse.placement.latency import propagate
from reuse.placement.model import SINK, SOURCE, TRANSFORM


def test_table3_grid():
    assert len(TOPOLOGIES) == 27
    totals = sorted(t.total for t in TOPOLOGIES)
    assert totals[0] == 110 and totals[-1] == 250_500
    classes = [t.klass for t in TOPOLOGIES]
    assert (classes.count("regular"), classes.count("large"), classes.count("extra-large")) == (
        15, 9, 3)
    assert len(APP_GRAPHS) == 13 and APP_GRAPHS.count(25) == 7 and APP_GRAPHS.count(50) == 1


def test_infrastructure_is_deterministic_and_follows_section_5_1():
    a, b = make_infrastructure(3, 4, 10, seed=7), make_infrastructure(3, 4, 10, seed=7)
    assert np.array_equal(a.access, b.access) and np.array_equal(a.site_latency, b.site_latency)
    assert not np.array_equal(a.access, make_infrastructure(3, 4, 10, seed=8).access)
    edge = ~a.is_cloud
    assert a.n == 43 and (a.cpu[a.is_cloud] == CLOUD_MIPS).all()
    assert (a.cpu[edge] == 4744).sum() == 20 == (a.cpu[edge] == 5020).sum()
    assert 0.015e-3 <= a.access[edge].min() and a.access[edge].max() <= 0.8e-3
    off = a.site_latency[~np.eye(7, dtype=bool)]
    assert 0.065 <= off.min() and off.max() <= 0.085
    assert np.allclose(a.site_latency, a.site_latency.T)


@pytest.mark.parametrize("n", [5, 9, 25, 50])
def test_application_is_deterministic_and_shaped_like_section_5_1(n):
    infra = make_infrastructure(5, 5, 5, seed=1)
    a = make_application(n, infra, graph_seed=3, config_seed=2)
    assert a == make_application(n, infra, graph_seed=3, config_seed=2)
    assert a != make_application(n, infra, graph_seed=3, config_seed=3)
    assert a.n == n
    kinds = [o.kind for o in a.operators]
    trans = [o for o in a.operators if o.kind == TRANSFORM]
    assert sum(o.window > 0 for o in trans) == max(1, round(0.2 * len(trans)))
    pins = a.pinned_map
    assert set(pins) == {i for i, k in enumerate(kinds) if k in (SOURCE, SINK)}
    cloud_sinks = [s for s in a.sinks if infra.is_cloud[pins[s]]]
    assert len(cloud_sinks) == 1  # the critical path's sink
    assert all(not infra.is_cloud[pins[s]] for s in a.sources)
    fl = propagate(a)
    assert (fl.stream_bits < 0.9 * infra.lan_bandwidth).all()
    for o in a.operators:
        assert 1000 <= o.cpu <= 10000 and 100 <= o.mem <= 7500
        if o.kind == SOURCE:
            assert 1000 <= o.rate <= 10000 and 100 <= o.size <= 2500


def test_too_small_application_is_an_error():
    with pytest.raises(PlacementError):
        make_application(3, make_infrastructure(1, 1, 1))

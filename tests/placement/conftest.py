"""Hand-made infrastructure and application shared by the placement tests.

Resources: 0 is a cloud (1000 MIPS, 1 GB); 1, 2, 3 are devices of one edge site (100 MIPS, 1 MB)
with LAN latencies 1, 2, 3 ms to their gateway; the WAN between the site and the cloud is 50 ms.
LAN links carry 1 Mbit/s, cloud links 10 Mbit/s.
"""

from __future__ import annotations

import numpy as np
import pytest

from reuse.placement.model import Application, Infrastructure, Operator, Stream


def hand_infra(dev_mem: float = 1e6) -> Infrastructure:
    return Infrastructure(
        cpu=np.array([1000.0, 100.0, 100.0, 100.0]),
        mem=np.array([1e9, dev_mem, dev_mem, dev_mem]),
        site=np.array([0, 1, 1, 1]),
        access=np.array([0.0, 0.001, 0.002, 0.003]),
        is_cloud=np.array([True, False, False, False]),
        site_latency=np.array([[0.0, 0.05], [0.05, 0.0]]),
        lan_bandwidth=1e6, wan_bandwidth=1e7, name="hand")


def hand_app(**f_overrides: float) -> Application:
    """s (100 ev/s, 1000 B, on device 1) -> f -> k (sink on the cloud)."""
    f = dict(cpu=5e5, mem=1000.0, selectivity=0.5, compression=0.2, window=10)
    f.update(f_overrides)
    ops = (Operator("s", "source", cpu=1.0, mem=100.0, rate=100.0, size=1000.0),
           Operator("f", **f),
           Operator("k", "sink", cpu=1e5, mem=100.0))
    return Application(ops, (Stream(0, 1), Stream(1, 2)), pinned=((0, 1), (2, 0)), name="hand")


@pytest.fixture
def make_infra():
    """Factory: ``make_infra(dev_mem=...)``."""
    return hand_infra


@pytest.fixture
def make_app():
    """Factory: ``make_app(**overrides of f)``."""
    return hand_app


@pytest.fixture
def infra() -> Infrastructure:
    return hand_infra()


@pytest.fixture
def app() -> Application:
    return hand_app()

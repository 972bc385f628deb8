from __future__ import annotations

import numpy as np
import pytest

from reuse.placement.errors import PlacementError
from reuse.placement.model import Application, Operator, Stream


def test_link_latency_is_access_plus_wan_plus_access_and_zero_to_self(infra):
    inf = infra
    assert inf.latency(1, 1) == 0.0
    assert inf.latency(1, 2) == pytest.approx(0.003)  # via the gateway: 1 ms + 2 ms
    assert inf.latency(1, 0) == pytest.approx(0.051)  # 1 ms LAN + 50 ms WAN
    assert np.allclose(inf.latency_from(2), [0.052, 0.003, 0.0, 0.005])


def test_bandwidth_lan_bottleneck_wan_between_clouds_inf_to_self(infra):
    inf = infra
    assert inf.bandwidth(0, 0) == np.inf
    assert inf.bandwidth(0, 1) == 1e6 and inf.bandwidth(1, 2) == 1e6
    assert inf.bandwidth_from(0, np.array([0, 3])).tolist() == [np.inf, 1e6]


def test_application_validation_raises_one_line_errors():
    src = Operator("s", "source", rate=1, size=1)
    with pytest.raises(PlacementError, match="no input"):
        Application((src, Operator("f"), Operator("k", "sink")), (Stream(0, 2),))
    with pytest.raises(PlacementError, match="cycle"):
        Application((src, Operator("a"), Operator("b"), Operator("k", "sink")),
                    (Stream(0, 1), Stream(1, 2), Stream(2, 1), Stream(2, 3)))
    with pytest.raises(PlacementError, match="duplicate"):
        Application((src, Operator("s", "sink")), (Stream(0, 1),))
    with pytest.raises(PlacementError, match="rate and size"):
        Operator("x", "source")
    assert "\n" not in str(PlacementError("a\nb"))

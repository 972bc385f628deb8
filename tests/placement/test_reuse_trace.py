"""Reuse meets placement on a hand-made trace of three chained dataflows."""

from __future__ import annotations

import numpy as np
import pytest

from reuse.core.dataflow import parse_dataflow
from reuse.core.traces import Op
from reuse.placement.errors import PlacementError
from reuse.placement.generators import make_infrastructure
from reuse.placement.latency import aggregate_latency
from reuse.placement.reuse_trace import TraceSettings, latency_by_group, place_trace, summarize


def chain(name, *types):
    ids = [f"t{i}" for i in range(len(types))]
    return parse_dataflow({"id": name,
                           "tasks": [{"id": i, "type": t, "config": {}} for i, t in zip(ids, types, strict=True)],
                           "streams": [[a, b] for a, b in zip(ids, ids[1:], strict=False)]})


FLOWS = {f.id: f for f in (chain("A", "SYS", "Parse", "Kalman", "Out"),
                           chain("B", "SYS", "Parse", "Average", "Out"),
                           chain("C", "SYS", "Parse", "Kalman", "Plot"))}
TRACE = [Op("submit", "A"), Op("submit", "B"), Op("submit", "C"), Op("remove", "A"),
         Op("remove", "B"), Op("remove", "C")]
INFRA = make_infrastructure(3, 4, 5, seed=2)


@pytest.mark.parametrize("bus", ["cloud", "local"])
def test_three_modes_step_by_step(bus):
    steps, per = place_trace(FLOWS, TRACE, INFRA, TraceSettings(bus=bus))
    assert (steps.status == "ok").all() and len(steps) == 6 * 3
    by = steps.set_index(["step", "mode"])
    # step 2: reuse runs 6 tasks (SYS, Parse shared), the default runs 8 copies
    assert by.loc[(2, "full"), "tasks"] == 6 and by.loc[(2, "default"), "tasks"] == 8
    assert by.loc[(2, "incremental"), "placed"] == 2  # only Average and Out of B
    assert by.loc[(2, "incremental"), "buses"] == 1  # B's new tasks read Parse over the bus
    assert by.loc[(2, "full"), "placed"] == 6 - 1  # everything but the pinned source
    assert by.loc[(2, "full"), "cpu_mips"] < by.loc[(2, "default"), "cpu_mips"]
    assert set(per[per.step == 3].dataflow) == {"A", "B", "C"}
    s = summarize(steps, per)
    assert list(s.index) == ["incremental", "full", "default"]


def test_bus_in_the_cloud_costs_latency_a_local_bus_almost_none():
    cloud, per_c = place_trace(FLOWS, TRACE[:3], INFRA, TraceSettings(bus="cloud"))
    local, per_l = place_trace(FLOWS, TRACE[:3], INFRA, TraceSettings(bus="local"))
    inc_c = per_c[(per_c["mode"] == "incremental") & (per_c.step == 2)].set_index("dataflow").latency
    inc_l = per_l[(per_l["mode"] == "incremental") & (per_l.step == 2)].set_index("dataflow").latency
    full = per_l[(per_l["mode"] == "full") & (per_l.step == 2)].set_index("dataflow").latency
    assert inc_c["B"] > inc_l["B"] + 0.06  # two WAN hops through the cloud broker
    assert inc_l["B"] == pytest.approx(full["B"], rel=0.05)


def test_latency_by_group_sums_to_al():
    from reuse.placement.model import Application, Operator, Stream

    ops = (Operator("s", "source", rate=10, size=10), Operator("f", cpu=1e3),
           Operator("k1", "sink"), Operator("k2", "sink"))
    app = Application(ops, (Stream(0, 1), Stream(1, 2), Stream(1, 3)))
    hosts = np.array([3, 4, 0, 5])
    g = latency_by_group(app, INFRA, hosts, {"x": [2], "y": [3]})
    assert g["x"] + g["y"] == pytest.approx(aggregate_latency(app, INFRA, hosts))


def test_bad_settings():
    with pytest.raises(PlacementError, match="bus"):
        place_trace(FLOWS, TRACE, INFRA, TraceSettings(bus="moon"))

from __future__ import annotations

import math

import pytest

from reuse.tasks import TASK_TYPES, make_task
from reuse.tasks.base import TaskError


def test_mqtt_publish_records(taxi_obs):
    pub = make_task("MQTTPublish", "sink")
    assert pub.process(taxi_obs[0]) == []
    assert pub.count == 1 and pub.published[0]["seq"] == 0


def test_pi_task():
    out = make_task("PiTask", {"iterations": 1600}).process({"src": "A", "seq": 3, "ts": 9})
    assert out[0]["value"] == pytest.approx(math.pi, abs=1e-12)
    assert (out[0]["src"], out[0]["seq"], out[0]["ts"]) == ("A", 3, 9)


def test_registry_and_unknown_type():
    assert "SenMLParse" in TASK_TYPES and "PiTask" in TASK_TYPES
    with pytest.raises(TaskError, match="unknown task type 'Nope'"):
        make_task("Nope", {})
    with pytest.raises(TaskError, match="a source"):
        make_task("SYS", "source")
    with pytest.raises(TaskError, match="lacks 'valid_range'"):
        make_task("RangeFilter", {})


def test_every_workload_type_is_registered(data_dir):
    from reuse.workloads.riotbench import build_dataflows
    for dag in build_dataflows(data_dir):
        for t in dag["tasks"]:
            if t["config"] != "source":
                make_task(t["type"], t["config"], data_dir=data_dir)

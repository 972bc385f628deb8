"""A short seeded chaos schedule (issue 34, item 2): ``benchmarks/chaos.py`` itself, with four
faults, one of each process type a broker-fed run has beside the Python worker (whose death
the broker-fed engine test covers): the run's Redis, the MQTT broker, the publisher and the
driver (then ``--resume``). Every fault is survived and the run ends exact: lost =
duplicated = 0 against the reference on the recorded events, which hold every ``seq`` once.
The benchmark's own run is 30+ faults (``docs/bench/chaos.json``)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from reuse.testing import missing

pytestmark = [pytest.mark.spark, pytest.mark.many_jvms]

ROOT = Path(__file__).resolve().parents[2]


def test_a_short_seeded_schedule_is_survived_exactly(tmp_path: Path) -> None:
    from reuse.runtime.dataplane import mosquitto
    from reuse.runtime.dataplane.mqtt import MqttError

    if shutil.which("redis-server") is None:
        pytest.skip(missing("redis", "redis-server is not installed"))
    try:
        mosquitto.mosquitto_exe()
    except MqttError as exc:
        pytest.skip(missing("mqtt", str(exc)))
    spec = importlib.util.spec_from_file_location("bench_chaos", ROOT / "benchmarks" / "chaos.py")
    assert spec is not None and spec.loader is not None
    chaos = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = chaos
    spec.loader.exec_module(chaos)

    types = ("redis", "mqtt", "publisher", "driver")
    # seed 3 kills the driver first: the last fault came in step 5 of 14 (2026-11-28), so 10
    # steps leave the schedule room on a loaded machine too
    steps = 10
    res = chaos.run(3, 4, types, rate=20.0, step_s=5.0, wait=(2.0, 3.0), steps=steps,
                    work=tmp_path)
    faults = res["faults"]
    assert sorted(f["type"] for f in faults) == sorted(types), res
    assert all(f["killed"] and f["recover_s"] is not None for f in faults), faults
    assert res["rc"] == 0, (tmp_path / "run.log").read_text()[-2000:]
    assert res["rows"] == steps and res["lost"] == 0 and res["duplicated"] == 0, res
    assert res["recorded_contiguous"] and res["recorded_events"] > 0
    # each server was started again by its keeper, and the records say so
    assert [r["rc"] for r in res["mqtt_restarts"]] == [-9]
    assert len(res["redis_restarts"]) == 1 and res["redis_restarts"][0]["back_ms"]
    # the driver's death pauses the outputs for a new process and JVM at least (a trigger is
    # 1 s); the pause may end before the recovery does (the backlog's outputs come first)
    died = next(f for f in faults if f["type"] == "driver")
    assert died["pause_s"] >= 2.0 and died["recover_s"] >= 2.0, died

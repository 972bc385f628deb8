"""What the Spark tests of runs across applications share."""

from __future__ import annotations

import pytest

from reuse.core.dataflow import Dataflow, parse_dataflow
from reuse.testing import riot_flows


@pytest.fixture
def twin_flows() -> dict[str, Dataflow]:
    """Two identical dataflows over SYS (a stateful Kalman filter before the sink), which merge
    when the second arrives, and ``clean-sys`` (a stateful Bloom filter)."""
    base = riot_flows("stats-sys")["stats-sys"]
    keep = ["src", "parse", "kalman", "publish"]
    tasks = [{"id": t, "type": base.task(t).type, "config": base.task(t).config} for t in keep]
    streams = [["src", "parse"], ["parse", "kalman"], ["kalman", "publish"]]
    flows = {n: parse_dataflow({"id": n, "tasks": tasks, "streams": streams})
             for n in ("twin-a", "twin-b")}
    flows["clean-sys"] = riot_flows("clean-sys")["clean-sys"]
    return flows

"""Shared fixtures: the RIoTBench data folder and real parsed events from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from reuse.core.paths import riotbench_dir
from reuse.tasks import make_task
from reuse.tasks.sources import replay
from reuse.testing import missing
from reuse.workloads.riotbench import source_configs

DATA = riotbench_dir()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.skip(missing("data", "data/riotbench is not set up"))
    return DATA


@pytest.fixture(scope="session")
def configs(data_dir):
    return {s: source_configs(s, data_dir) for s in ("SYS", "TAXI", "FIT")}


def parsed(src: str, cfg: dict, data_dir: Path, n: int) -> list[dict]:
    """The SenMLParse outputs of the first n messages of a source."""
    parse = make_task("SenMLParse", cfg["SenMLParse"])
    return [o for ev in replay(src, data_dir, limit=n) for o in parse.process(ev)]


@pytest.fixture(scope="session")
def sys_obs(configs, data_dir):
    return parsed("SYS", configs["SYS"], data_dir, 200)


@pytest.fixture(scope="session")
def taxi_obs(configs, data_dir):
    return parsed("TAXI", configs["TAXI"], data_dir, 200)


@pytest.fixture(scope="session")
def real_events_of(configs, data_dir):
    """``n`` -> the first ``n`` messages of each source, parsed (one observation each) and
    joined (one message): the real inputs the containment rules are checked on."""
    made: dict[int, dict[str, list[dict]]] = {}

    def of(n: int) -> dict[str, list[dict]]:
        if n not in made:
            out = {}
            for src in ("SYS", "TAXI", "FIT"):
                obs = parsed(src, configs[src], data_dir, n)
                join = make_task("Join", configs[src]["Join"])
                out[src] = obs + [o for ev in obs for o in join.process(ev)]
            made[n] = out
        return made[n]

    return of

"""Fixtures for the runtime tests: one shared Spark session (see reuse.testing), and each bus."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from reuse.runtime.dataplane.bus import Bus, FileBus
from reuse.testing import (
    missing,
    mqtt_broker,  # noqa: F401 - re-exported fixture
    spark,  # noqa: F401 - re-exported fixture
)


@pytest.fixture(params=["file", "redis"])
def bus(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Bus]:
    """A :class:`FileBus` under ``tmp_path``, then a :class:`RedisBus` on a redis-server of its
    own (skipped when Debian's redis-server is not installed)."""
    if request.param == "file":
        yield FileBus(tmp_path)
        return
    yield from _redis_bus(tmp_path)


@pytest.fixture
def redis_bus(tmp_path: Path) -> Iterator[Bus]:
    """A :class:`RedisBus` on a redis-server of its own (skipped when it is not installed)."""
    yield from _redis_bus(tmp_path)


def _redis_bus(tmp_path: Path) -> Iterator[Bus]:
    if shutil.which("redis-server") is None:
        pytest.skip(missing("redis", "redis-server is not installed"))
    from reuse.runtime.dataplane.redis_bus import start_redis

    broker = start_redis(tmp_path / "redis")
    try:
        yield broker.bus()
    finally:
        broker.stop()


@pytest.fixture
def refused_run(tmp_path: Path, capsys: Any) -> Callable[[Sequence[str]], tuple[int, str]]:
    """``reuse run`` of the Figure 1 dataflows with extra options, for the options refused
    before any JVM starts: returns its exit code and stderr, after checking that it wrote
    nothing (no CSV, no run directory)."""
    from reuse.cli import main

    def run(extra: Sequence[str]) -> tuple[int, str]:
        trace = tmp_path / "t.json"
        trace.write_text(json.dumps({"ops": [{"op": "submit", "dag": "A"}]}))
        out = tmp_path / "out.csv"
        code = main(["run", "--dags", "tests/fixtures/figure1", "--trace", str(trace),
                     "--out", str(out), "--root", str(tmp_path / "run"), *extra])
        err = capsys.readouterr().err.strip()
        assert not out.exists() and not (tmp_path / "run").exists()
        return code, err

    return run

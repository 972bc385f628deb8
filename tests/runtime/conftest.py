"""Fixtures for the runtime tests: one shared Spark session (see reuse.testing), and each bus."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

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

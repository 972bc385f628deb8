"""One redis-server for the control-plane tests (each test names a run of its own)."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from reuse.testing import missing


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server of this module's own (skipped when it is not installed)."""
    if shutil.which("redis-server") is None:
        pytest.skip(missing("redis", "redis-server is not installed"))
    from reuse.runtime.dataplane.redis_bus import start_redis

    broker = start_redis(Path(tmp_path_factory.mktemp("redis")))
    try:
        yield broker.url
    finally:
        broker.stop()


@pytest.fixture
def run() -> str:
    """A fresh run name."""
    return uuid.uuid4().hex[:12]

"""Starting the run's Redis: a port taken between choosing it and binding it (issue 34)."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from reuse.runtime import SparkRuntimeError
from reuse.testing import missing

pytestmark = pytest.mark.realtime  # waits on its own server, thread or process


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port some other process listens on."""
    if shutil.which("redis-server") is None:
        pytest.skip(missing("redis", "redis-server is not installed"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def test_a_taken_port_that_was_asked_for_is_a_one_line_error(tmp_path: Path,
                                                             taken_port: int) -> None:
    from reuse.runtime.dataplane.redis_bus import start_redis

    with pytest.raises(SparkRuntimeError) as err:
        start_redis(tmp_path / "redis", port=taken_port)
    said = str(err.value)
    assert "\n" not in said
    assert f"port {taken_port}" in said and "aborting" in said


def test_a_chosen_port_taken_before_the_bind_is_chosen_again(
        tmp_path: Path, taken_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race the CI hit: the probe finds a port free, another process binds it first."""
    from reuse.runtime.dataplane import redis_bus

    real = redis_bus.free_port
    offered = iter([taken_port, taken_port])
    monkeypatch.setattr(redis_bus, "free_port", lambda: next(offered, None) or real())
    broker = redis_bus.start_redis(tmp_path / "redis")
    try:
        assert broker.port != taken_port
        assert broker.bus().client.ping()
    finally:
        broker.stop()
    assert "Address already in use" in (tmp_path / "redis" / "redis.log").read_text()

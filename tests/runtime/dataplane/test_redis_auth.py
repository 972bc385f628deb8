"""The run's Redis refuses a client without the run's secret (issue 34, item 4)."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from reuse.runtime.common.run_secrets import run_secret
from reuse.testing import missing

pytestmark = pytest.mark.realtime  # waits on its own server, thread or process


def test_a_client_without_the_secret_is_refused(tmp_path: Path) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip(missing("redis", "redis-server is not installed"))
    import redis

    from reuse.runtime.dataplane.redis_bus import start_redis

    secret = run_secret(tmp_path, "redis")
    broker = start_redis(tmp_path / "redis", durable=True, password=secret)
    try:
        assert broker.bus().client.ping()  # the run's own clients carry it in the URL
        anonymous = redis.Redis(host="127.0.0.1", port=broker.port)
        with pytest.raises(redis.AuthenticationError):
            anonymous.ping()
        wrong = redis.Redis(host="127.0.0.1", port=broker.port, password=secret + "x")
        with pytest.raises(redis.AuthenticationError):
            wrong.ping()
    finally:
        broker.stop()
    # the secret is the user's alone, and not on the server's command line
    mode = stat.S_IMODE((tmp_path / "secrets" / "redis").stat().st_mode)
    assert mode == 0o600
    assert stat.S_IMODE((tmp_path / "redis" / "auth.conf").stat().st_mode) == 0o600
    # a server started again on the same folder takes the same password and keeps the data
    again = start_redis(tmp_path / "redis", durable=True, password=run_secret(tmp_path, "redis"))
    try:
        assert again.bus().client.ping()
    finally:
        again.stop()


def test_a_server_without_a_password_takes_anyone(tmp_path: Path) -> None:
    """Loopback-only servers the tests and ``--bus redis`` start keep no password: the
    option is the run's, not the module's default."""
    if shutil.which("redis-server") is None:
        pytest.skip(missing("redis", "redis-server is not installed"))
    from reuse.runtime.dataplane.redis_bus import start_redis

    broker = start_redis(tmp_path / "redis")
    try:
        assert broker.password is None and "@" not in broker.url
        assert broker.bus().client.ping()
    finally:
        broker.stop()

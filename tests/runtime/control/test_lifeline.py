"""An instance's lifeline: a process whose run's Redis is gone past its patience ends itself,
with one line and exit code 3, even while its main thread is stuck (once, two instances whose
Redis had died stayed up 50 minutes). The process here is a real Python process whose main
thread sleeps, standing for a call that never returns."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reuse.testing import missing

pytestmark = pytest.mark.realtime  # waits on its own server, thread or process

PATIENCE_S = 1.5
EVERY_S = 0.2  # between pings: the last answered one can be this long before the stop
STUCK = """
import sys, time
from reuse.runtime.control.lifeline import Lifeline
Lifeline(sys.argv[1], {patience}, "instance i7", every_s={every}).start()
time.sleep(120)  # a call stuck for good
"""


def test_an_instance_whose_redis_is_gone_past_its_patience_exits(tmp_path: Path) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip(missing("redis", "redis-server is not installed"))
    from reuse.runtime.control.lifeline import EXIT_CODE
    from reuse.runtime.dataplane.redis_bus import start_redis

    broker = start_redis(tmp_path / "redis", password="s3cret")
    proc = subprocess.Popen([sys.executable, "-c", STUCK.format(patience=PATIENCE_S, every=EVERY_S),
                             broker.url], stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(PATIENCE_S * 2)  # a Redis that answers keeps it alive past its patience
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        broker.stop()
        gone = time.monotonic()
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - gone
    finally:
        proc.kill()
        broker.stop()
    assert proc.returncode == EXIT_CODE, err
    # not before its patience (counted from the last answered ping, up to a ping's interval
    # before the stop; one run measured 1.43 s against 1.5)
    assert took >= PATIENCE_S - 2 * EVERY_S, took
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("instance i7: the run's Redis at redis://"), err
    assert "s3cret" not in err and ":***@" in err

"""``--bus redis``: Debian's redis-server on 127.0.0.1, started and stopped by the project.

The server runs with no persistence (``--save ''``, ``--appendonly no``) on a free port, its
working directory inside the run directory; :class:`Broker` knows its PID so the CPU meter can
count it and ``stop`` ends exactly that process.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from reuse.runtime import SparkRuntimeError
from reuse.runtime.dataplane.bus import RedisBus

__all__ = ["Broker", "start_redis", "free_port"]


@dataclass
class Broker:
    """A running redis-server started by :func:`start_redis`."""

    pid: int
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def bus(self) -> RedisBus:
        return RedisBus(self.url)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a server of our own)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(workdir: str | os.PathLike[str], port: int | None = None) -> Broker:
    """Start redis-server (needs Debian's ``redis-server`` package) and wait until it answers."""
    exe = shutil.which("redis-server")
    if exe is None:
        raise SparkRuntimeError("redis-server is not installed (apt-get install redis-server)")
    d = Path(workdir)
    d.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    proc = subprocess.Popen([exe, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                             "--appendonly", "no", "--dir", str(d), "--protected-mode", "yes"],
                            stdout=open(d / "redis.log", "wb"), stderr=subprocess.STDOUT)
    broker = Broker(proc.pid, port, proc)
    deadline = time.time() + 20
    while True:
        try:
            if broker.bus().client.ping():
                return broker
        except Exception:  # noqa: BLE001 - not up yet
            pass
        if proc.poll() is not None or time.time() > deadline:
            broker.stop()
            raise SparkRuntimeError(f"redis-server did not start; see {d / 'redis.log'}")
        time.sleep(0.1)

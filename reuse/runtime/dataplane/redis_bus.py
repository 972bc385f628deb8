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
from reuse.runtime.common.files import write_text
from reuse.runtime.dataplane.bus import RedisBus

__all__ = ["Broker", "start_redis", "free_port", "shown_url"]


@dataclass
class Broker:
    """A running redis-server started by :func:`start_redis`."""

    pid: int
    port: int
    proc: subprocess.Popen[bytes]
    password: str | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

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


def shown_url(url: str) -> str:
    """A Redis URL fit for a file anyone may read: its password masked.

    >>> shown_url("redis://:s3cret@127.0.0.1:6379/0"), shown_url("redis://127.0.0.1:6379/0")
    ('redis://:***@127.0.0.1:6379/0', 'redis://127.0.0.1:6379/0')
    """
    import re

    return re.sub(r"//([^/@]*):[^/@]*@", r"//\1:***@", url)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a server of our own)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(workdir: str | os.PathLike[str], port: int | None = None, *,
                durable: bool = False, password: str | None = None) -> Broker:
    """Start redis-server (needs Debian's ``redis-server`` package) and wait until it answers.

    ``durable``: every write is in an append-only file under ``workdir`` (fsynced per write)
    before Redis answers it, and a server started again on the same ``workdir`` loads what the
    last one held: a broker-fed run's received events outlive its driver (issue 32). A server
    of an earlier process still running on ``workdir`` (a dead driver's child) is stopped
    first, so two never write the same file.

    ``password``: every client must authenticate with it (``requirepass``, in a config file
    of mode 0600 rather than on the command line, which any local user can list); the
    :attr:`Broker.url` carries it."""
    exe = shutil.which("redis-server")
    if exe is None:
        raise SparkRuntimeError("redis-server is not installed (apt-get install redis-server)")
    d = Path(workdir)
    d.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    keep = ["--appendonly", "no"]
    if durable:
        _stop_orphan(d / "redis.pid")
        keep = ["--appendonly", "yes", "--appendfsync", "always", "--pidfile",
                str(d / "redis.pid")]
    config: list[str] = []
    if password is not None:
        # in a config file of mode 0600, not on the command line (which ps shows to anyone)
        conf = d / "auth.conf"
        write_text(conf, f"requirepass {password}\n", private=True)
        config = [str(conf)]
    proc = subprocess.Popen([exe, *config, "--bind", "127.0.0.1", "--port", str(port), "--save",
                             "", *keep, "--dir", str(d), "--protected-mode", "yes"],
                            stdout=open(d / "redis.log", "ab"), stderr=subprocess.STDOUT)
    broker = Broker(proc.pid, port, proc, password)
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


def _stop_orphan(pidfile: Path) -> None:
    """Stop the redis-server whose pid ``pidfile`` holds, if it still runs (SIGTERM: it
    finishes its append-only file), and wait for it."""
    import psutil

    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return
    try:
        proc = psutil.Process(pid)
        if "redis" not in proc.name():
            return  # the pid was reused by something else
        proc.terminate()
        proc.wait(timeout=10)
    except psutil.NoSuchProcess:
        return
    except psutil.TimeoutExpired:
        proc.kill()

"""``--bus redis``: Debian's redis-server on 127.0.0.1, started and stopped by the project.

The server runs with no persistence (``--save ''``, ``--appendonly no``) on a free port, its
working directory inside the run directory; :class:`Broker` knows its PID so the CPU meter can
count it and ``stop`` ends exactly that process. A broker-fed run's server is durable instead
(an append-only file, fsynced per write), and :meth:`Broker.restart` starts it again as it was
when it dies (issue 34, :mod:`~reuse.runtime.dataplane.keeper`).
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
from typing import Any

from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.files import write_text
from reuse.runtime.common.redis_client import shown_url
from reuse.runtime.dataplane.bus import RedisBus

__all__ = ["Broker", "start_redis", "stop_orphan", "free_port", "shown_url"]


@dataclass
class Broker:
    """A running redis-server started by :func:`start_redis`."""

    pid: int
    port: int
    proc: subprocess.Popen[bytes] | Running
    password: str | None = None
    argv: tuple[str, ...] = ()  # how it was started: :meth:`restart` starts it so again
    workdir: Path | None = None
    durable: bool = False

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def bus(self, *, patience_s: float = 0.0) -> RedisBus:
        return RedisBus(self.url, patience_s=patience_s)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def restart(self, timeout_s: float = 20.0) -> None:
        """Start the server again as it was started, on the same port and folder, after it
        died (issue 34: :class:`~reuse.runtime.dataplane.keeper.Keeper`). A durable server
        loads its append-only file, so it holds everything it had answered; its clients
        reconnect by themselves (:class:`~reuse.runtime.dataplane.bus.RedisBus`
        ``patience_s``). A server that did not die is left as it is.

        Raises
        ------
        SparkRuntimeError
            It could not be started again (the port taken meanwhile, the file unreadable).
        """
        if self.alive():
            return
        if not self.argv or self.workdir is None:
            raise SparkRuntimeError("this redis-server was not started by start_redis")
        self.proc = _launch(list(self.argv), self.workdir)
        self.pid = self.proc.pid
        _wait_answers(self, self.workdir, timeout_s)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)


class Running:
    """A server this process did not start but took over (:func:`start_redis` ``adopt``): the
    calls of :class:`subprocess.Popen` that :class:`Broker` makes, through psutil."""

    def __init__(self, proc: Any) -> None:
        self._proc = proc
        self.pid = int(proc.pid)

    def poll(self) -> int | None:
        import psutil

        try:
            if self._proc.is_running() and self._proc.status() != psutil.STATUS_ZOMBIE:
                return None
        except psutil.NoSuchProcess:
            pass
        return -1  # not our child: its exit code is unknown

    def wait(self, timeout: float | None = None) -> int:
        import psutil

        try:
            self._proc.wait(timeout=timeout)
        except psutil.NoSuchProcess:
            pass
        except psutil.TimeoutExpired:
            raise subprocess.TimeoutExpired("redis-server", timeout or 0.0) from None
        return -1


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a server of our own)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(workdir: str | os.PathLike[str], port: int | None = None, *,
                durable: bool = False, password: str | None = None,
                adopt: bool = False) -> Broker:
    """Start redis-server (needs Debian's ``redis-server`` package) and wait until it answers.

    ``durable``: every write is in an append-only file under ``workdir`` (fsynced per write)
    before Redis answers it, and a server started again on the same ``workdir`` loads what the
    last one held: a broker-fed run's received events outlive its driver (issue 32). A server
    of an earlier process still running on ``workdir`` (a dead driver's child) is stopped
    first, so two never write the same file.

    ``password``: every client must authenticate with it (``requirepass``, in a config file
    of mode 0600 rather than on the command line, which any local user can list); the
    :attr:`Broker.url` carries it.

    ``adopt`` (durable only): a server an earlier process left running on ``workdir`` that
    answers on ``port`` with ``password`` is taken over instead of stopped and started again
    (a resumed apps coordinator, whose instances are still writing to it: no gap for them,
    and no reload of a file that grows with the run). It is still restarted as this call would
    start it when it dies, and stopped by :meth:`Broker.stop`."""
    exe = shutil.which("redis-server")
    if exe is None:
        raise SparkRuntimeError("redis-server is not installed (apt-get install redis-server)")
    d = Path(workdir)
    d.mkdir(parents=True, exist_ok=True)
    if port is None:
        # a port chosen here may be taken by another process between the probe and the
        # server's bind (two suites' servers starting at once): choose again, a few times
        for _ in range(_PORT_TRIES - 1):
            try:
                return _start(exe, d, free_port(), durable, password, adopt)
            except _PortTaken:
                continue
        port = free_port()
    try:
        return _start(exe, d, port, durable, password, adopt)
    except _PortTaken as taken:
        raise SparkRuntimeError(str(taken)) from None


_PORT_TRIES = 5


class _PortTaken(SparkRuntimeError):
    """The server exited because its port was in use (said in its log)."""


def _start(exe: str, d: Path, port: int, durable: bool, password: str | None,
           adopt: bool) -> Broker:
    keep = ["--appendonly", "no"]
    orphan = None
    if durable:
        orphan = _adoptable(d / "redis.pid", port, password) if adopt else None
        if orphan is None:
            stop_orphan(d / "redis.pid")
        keep = ["--appendonly", "yes", "--appendfsync", "always", "--pidfile",
                str(d / "redis.pid")]
    config: list[str] = []
    if password is not None:
        # in a config file of mode 0600, not on the command line (which ps shows to anyone)
        conf = d / "auth.conf"
        write_text(conf, f"requirepass {password}\n", private=True)
        config = [str(conf)]
    argv = [exe, *config, "--bind", "127.0.0.1", "--port", str(port), "--save", "", *keep,
            "--dir", str(d), "--protected-mode", "yes"]
    if orphan is not None:
        return Broker(orphan.pid, port, orphan, password, tuple(argv), d, durable)
    proc = _launch(argv, d)
    broker = Broker(proc.pid, port, proc, password, tuple(argv), d, durable)
    _wait_answers(broker, d, 20.0)
    return broker


def _launch(argv: list[str], d: Path) -> subprocess.Popen[bytes]:
    with open(d / "redis.log", "ab") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)


def _wait_answers(broker: Broker, d: Path, timeout_s: float) -> None:
    """Wait until the server answers a ping; stop it and raise if it dies or stays silent."""
    deadline = time.time() + timeout_s
    while True:
        try:
            if broker.bus().client.ping():
                return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        if broker.proc.poll() is not None or time.time() > deadline:
            broker.stop()
            log = _log_text(d / "redis.log")
            why = (f"redis-server did not start on port {broker.port}: {_last_line(log)} "
                   f"(see {d / 'redis.log'})")
            taken = f":{broker.port}: bind: Address already in use" in log
            raise (_PortTaken if taken else SparkRuntimeError)(why)
        time.sleep(0.1)


def _log_text(log: Path) -> str:
    try:
        return log.read_text(errors="replace")
    except OSError:
        return ""


def _last_line(log: str) -> str:
    """The log's last non-empty line: the server's reason for exiting."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    return lines[-1] if lines else "its log is empty"


def _adoptable(pidfile: Path, port: int, password: str | None) -> Running | None:
    """The redis-server ``pidfile`` names, if it still runs and answers on ``port`` with
    ``password`` (``None``: none such)."""
    import psutil

    try:
        proc = psutil.Process(int(pidfile.read_text().strip()))
        if "redis" not in proc.name():
            return None  # the pid was reused by something else
    except (OSError, ValueError, psutil.Error):
        return None
    auth = f":{password}@" if password else ""
    try:
        if not RedisBus(f"redis://{auth}127.0.0.1:{port}/0").client.ping():
            return None
    except Exception:  # noqa: BLE001 - not answering: start a new one
        return None
    return Running(proc)


def stop_orphan(pidfile: Path) -> None:
    """Stop the redis-server whose pid ``pidfile`` holds, if it still runs (SIGTERM: it
    finishes its append-only file), and wait for it. Public for what must clean up after a
    run whose driver died before stopping its durable Redis (a failed test's ``finally``)."""
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

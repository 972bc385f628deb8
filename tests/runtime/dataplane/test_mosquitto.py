"""``reuse broker``'s library: a real mosquitto started, found and stopped by PID, and the
one-line errors (not installed, port taken, did not start, nothing runs)."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from reuse.runtime.dataplane import mosquitto
from reuse.runtime.dataplane.mqtt import MqttError
from reuse.testing import missing

pytestmark = pytest.mark.realtime  # waits on its own server, thread or process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """A broker folder; whatever runs from it at the end is stopped by its PID."""
    try:
        mosquitto.mosquitto_exe()
    except MqttError as exc:
        pytest.skip(missing("mqtt", str(exc)))
    d = tmp_path / "broker"
    yield d
    if mosquitto.pid(d) is not None:
        mosquitto.stop(d)


def test_start_status_stop(folder: Path) -> None:
    port = free_port()
    got = mosquitto.start(folder, port=port)
    p = got["pids"]["mosquitto"]
    assert got == {"url": f"mqtt://127.0.0.1:{port}", "pids": {"mosquitto": p},
                   "dir": str(folder.resolve()), "started": True}
    assert (folder / "pids" / "mosquitto.pid").read_text().strip() == str(p)
    conf = (folder / "mosquitto.conf").read_text()
    assert f"listener {port} 127.0.0.1" in conf and "persistence false" in conf
    assert mosquitto.status(folder) == {"url": got["url"], "pids": {"mosquitto": p},
                                        "dir": got["dir"], "answers": True}
    again = mosquitto.start(folder, port=port)  # already running: left as it is
    assert again["pids"] == {"mosquitto": p} and again["started"] is False
    with pytest.raises(MqttError, match=f"already runs on port {port}"):
        mosquitto.start(folder, port=free_port())
    assert mosquitto.stop(folder) == {"stopped": {"mosquitto": p}, "left": {}}
    assert mosquitto.pid(folder) is None
    with pytest.raises(ProcessLookupError):
        os.kill(p, 0)
    assert not (folder / "pids" / "mosquitto.pid").exists()


def test_nothing_runs(folder: Path) -> None:
    for call in (mosquitto.status, mosquitto.stop):
        with pytest.raises(MqttError, match="no broker runs from"):
            call(folder)


def test_a_pid_that_is_not_this_folders_broker_is_ignored(folder: Path) -> None:
    (folder / "pids").mkdir(parents=True)
    (folder / "pids" / "mosquitto.pid").write_text(f"{os.getpid()}\n")  # alive, not mosquitto
    assert mosquitto.pid(folder) is None
    with pytest.raises(MqttError, match="no broker runs from"):
        mosquitto.stop(folder)


def test_a_taken_port_is_a_one_line_error(folder: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(MqttError, match=f"port {port} on 127.0.0.1 is taken"):
            mosquitto.start(folder, port=port)
        # a broker that fails on its own says why, from its log, and leaves nothing running
        mp = pytest.MonkeyPatch()
        mp.setattr(mosquitto, "_port_taken", lambda port: False)
        try:
            with pytest.raises(MqttError, match="mosquitto did not start") as e:
                mosquitto.start(folder, port=port)
        finally:
            mp.undo()
    assert "\n" not in str(e.value) and "log:" in str(e.value)
    assert mosquitto.pid(folder) is None


def test_not_installed_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    with pytest.raises(MqttError, match="mosquitto is not installed"):
        mosquitto.start(tmp_path, port=free_port())

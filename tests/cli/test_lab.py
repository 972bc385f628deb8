"""``reuse lab`` beyond loopback (issue 34, item 4): a real JupyterLab on every interface refuses
a client without its token, or with a wrong one, on every endpoint tried; the token is the
workbench's own (0600) and never on the server's command line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from reuse.cli.lab import lab_command

pytestmark = pytest.mark.realtime  # waits on its own server, thread or process


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:  # not listening yet
        return 0


def test_a_lab_beyond_loopback_refuses_whoever_lacks_its_token(tmp_path: Path) -> None:
    port = _free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_DATA_DIR=str(tmp_path / "data"),
               IPYTHONDIR=str(tmp_path / "ipython"), JUPYTER_PLATFORM_DIRS="1")
    log = tmp_path / "lab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "reuse", "lab", "--listen", "0.0.0.0",
                                 "--port", str(port), "--dir", str(tmp_path / "lab"),
                                 "--no-browser"], cwd=tmp_path, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        secret = tmp_path / "lab" / "secrets" / "jupyter"
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while not (secret.exists() and _status(f"{base}/api/status?token="
                                               f"{secret.read_text()}") == 200):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("reuse lab did not serve:\n" + log.read_text()[-3000:])
            time.sleep(0.3)
        token = secret.read_text()
        assert secret.stat().st_mode & 0o077 == 0  # only its user can read it
        for path in ("/api/status", "/api/contents", "/api/kernels", "/api/sessions"):
            assert _status(f"{base}{path}") == 403, path
            assert _status(f"{base}{path}?token=not-{token}") == 403, path
            assert _status(f"{base}{path}?token={token}") == 200, path
        # the server is this PID (exec), and its command line does not hold the token
        assert all(token not in a for a in psutil.Process(proc.pid).cmdline())
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def test_the_command_line_and_its_refusals() -> None:
    argv, env = lab_command("127.0.0.1", 8888, Path("t"), Path("r"), open_browser=True,
                            as_root=True)
    assert "--allow-root" in argv and "--no-browser" not in argv
    assert not any("allow_remote_access" in a for a in argv)  # loopback: the default check
    assert env == {"JUPYTER_TOKEN_FILE": "t"}
    with pytest.raises(Exception, match="--port must be 1-65535, got 0"):
        lab_command("127.0.0.1", 0, Path("t"), Path("r"), open_browser=False, as_root=False)

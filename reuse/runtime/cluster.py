"""A local Spark standalone cluster (one master, one worker) from the pip package's scripts.

The pip package has no ``start-master.sh``/``start-worker.sh``, but it ships
``sbin/spark-daemon.sh``, which starts any Spark class as a daemon with a PID file. We run it with
``SPARK_HOME`` = the installed ``pyspark`` directory and the PID and log folders under a
project-local directory (default ``results/spark-cluster``), so ``status`` and ``stop`` find
exactly the processes ``start`` launched. Everything binds 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from reuse.runtime import SparkRuntimeError

__all__ = ["MASTER", "WORKER", "spark_home", "start", "stop", "status", "pids",
           "DEFAULT_DIR"]

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"
DEFAULT_DIR = Path("results") / "spark-cluster"


def spark_home() -> Path:
    """The installed pyspark package directory (it has ``bin``, ``sbin`` and ``jars``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _env(d: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"SPARK_HOME": str(spark_home()), "SPARK_LOG_DIR": str(d / "logs"),
                "SPARK_PID_DIR": str(d / "pids"), "SPARK_LOCAL_IP": "127.0.0.1",
                "PYSPARK_PYTHON": sys.executable})
    return env


def _daemon(d: Path, action: str, cls: str, *args: str) -> subprocess.CompletedProcess[str]:
    script = spark_home() / "sbin" / "spark-daemon.sh"
    return subprocess.run(["bash", str(script), action, cls, "1", *args], env=_env(d),
                          capture_output=True, text=True, timeout=120)


def pids(d: str | os.PathLike[str] = DEFAULT_DIR) -> dict[str, int]:
    """Live daemon PIDs by role (``master``, ``worker``) from the PID files."""
    out = {}
    for role, cls in (("master", MASTER), ("worker", WORKER)):
        for f in (Path(d) / "pids").glob(f"*{cls}-1.pid"):
            try:
                pid = int(f.read_text().strip())
                os.kill(pid, 0)
                out[role] = pid
            except (ValueError, ProcessLookupError, PermissionError):
                pass
    return out


def _master_json(ui_port: int) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as r:
            return dict(json.loads(r.read()))
    except OSError:
        return None


def start(d: str | os.PathLike[str] = DEFAULT_DIR, *, port: int = 7077, ui_port: int = 8080,
          cores: int = 2, memory: str = "4g", timeout_s: float = 60.0) -> dict[str, Any]:
    """Start master and worker (if not running) and wait until the worker is registered."""
    d = Path(d).resolve()
    (d / "logs").mkdir(parents=True, exist_ok=True)
    (d / "pids").mkdir(parents=True, exist_ok=True)
    url = f"spark://127.0.0.1:{port}"
    running = pids(d)
    if "master" not in running:
        r = _daemon(d, "start", MASTER, "--host", "127.0.0.1", "--port", str(port),
                    "--webui-port", str(ui_port))
        if r.returncode != 0:
            raise SparkRuntimeError(f"master did not start: {r.stderr.strip()[:300]}")
    deadline = time.time() + timeout_s
    while not _port_open(port):
        if time.time() > deadline:
            raise SparkRuntimeError(f"master not listening on {port}; see {d / 'logs'}")
        time.sleep(0.3)
    if "worker" not in running:
        r = _daemon(d, "start", WORKER, "--host", "127.0.0.1", "--cores", str(cores),
                    "--memory", memory, url)
        if r.returncode != 0:
            raise SparkRuntimeError(f"worker did not start: {r.stderr.strip()[:300]}")
    while True:
        info = _master_json(ui_port)
        if info and any(w.get("state") == "ALIVE" for w in info.get("workers", [])):
            break
        if time.time() > deadline:
            raise SparkRuntimeError(f"worker did not register with {url}; see {d / 'logs'}")
        time.sleep(0.5)
    return {"url": url, "pids": pids(d), "dir": str(d)}


def stop(d: str | os.PathLike[str] = DEFAULT_DIR) -> dict[str, Any]:
    """Stop worker then master (by their PID files); returns what was stopped."""
    d = Path(d).resolve()
    before = pids(d)
    for cls in (WORKER, MASTER):
        _daemon(d, "stop", cls)
    return {"stopped": before, "left": pids(d)}


def status(d: str | os.PathLike[str] = DEFAULT_DIR, *, ui_port: int = 8080) -> dict[str, Any]:
    """Running daemons and, if the master answers, its workers and applications."""
    d = Path(d).resolve()
    info = _master_json(ui_port)
    out: dict[str, Any] = {"dir": str(d), "pids": pids(d)}
    if info:
        out["url"] = info.get("url")
        out["workers"] = [{"id": w["id"], "state": w["state"], "cores": w["cores"],
                           "coresused": w["coresused"]} for w in info.get("workers", [])]
        out["apps"] = [a.get("name") for a in info.get("activeapps", [])]
    return out


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0

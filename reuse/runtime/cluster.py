"""A local Spark standalone cluster (one master, one or more workers) from the pip package's
scripts.

The pip package has no ``start-master.sh``/``start-worker.sh``, but it ships
``sbin/spark-daemon.sh``, which starts any Spark class as a daemon with a PID file. We run it with
``SPARK_HOME`` = the installed ``pyspark`` directory and the PID and log folders under a
project-local directory (default ``results/spark-cluster``), so ``status`` and ``stop`` find
exactly the processes ``start`` launched. Worker ``i`` is the daemon's instance ``i`` (its own
PID file and work folder); k-safety's anti-affinity needs two or more workers, each of whose
executors then runs one shard of a batch at a time.

Everything binds 127.0.0.1 unless ``listen`` names another address (issue 34, item 4). Then any
host that routes to it could register a worker or submit an application, so the cluster turns
on ``spark.authenticate``: a secret made for this cluster directory, kept with mode 0600 in a
properties file under ``<dir>/secrets/`` that the master and workers read (``--properties-file``)
and that a driver of this cluster reads too (:func:`client`), so the secret is on no command
line and in no environment. Spark's standalone mode shares one secret between the daemons and
every application; a worker hands it to its executors itself. What the cluster was started with
is kept as plain data in ``<dir>/cluster.json``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.files import read_json, write_json
from reuse.runtime.common.run_secrets import beyond_loopback, keep_secret, run_secret, secret_file

__all__ = ["MASTER", "WORKER", "spark_home", "start", "stop", "status", "pids",
           "DEFAULT_DIR", "Client", "client"]

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"
DEFAULT_DIR = Path("results") / "spark-cluster"


def spark_home() -> Path:
    """The installed pyspark package directory (it has ``bin``, ``sbin`` and ``jars``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


#: The settings an authenticated cluster's daemons and drivers read from its properties file
#: (besides the secret). The web UIs take no login: they cannot kill applications. The
#: master's REST submission server would take an application from anyone: it is off.
AUTH_SETTINGS = {"spark.authenticate": "true", "spark.ui.killEnabled": "false",
                 "spark.master.rest.enabled": "false"}


@dataclass(frozen=True)
class Client:
    """How a driver joins a cluster: the address it binds and advertises to the executors,
    and the properties file holding the cluster's secret (``None``: no authentication)."""

    host: str = "127.0.0.1"
    properties: Path | None = None


def _settings(d: Path) -> dict[str, Any]:
    """What the cluster in ``d`` was started with (``cluster.json``; loopback if none)."""
    data = read_json(d / "cluster.json", {})
    return data if isinstance(data, dict) else {}


def client(master: str, d: str | os.PathLike[str] | None = None) -> Client:
    """How a driver of ``master`` joins it: authenticated when the cluster in ``d`` (default
    :data:`DEFAULT_DIR`) listens beyond loopback at that URL. A master this directory did not
    start is joined as before (loopback, no secret)."""
    cd = Path(d or DEFAULT_DIR).resolve()
    info = _settings(cd)
    if not master.startswith("spark://") or info.get("url") != master:
        return Client()
    props = secret_file(cd, "spark.properties")
    return Client(str(info.get("listen", "127.0.0.1")),
                  props if info.get("authenticate") else None)


def _env(d: Path, listen: str = "127.0.0.1") -> dict[str, str]:
    env = dict(os.environ)
    env.update({"SPARK_HOME": str(spark_home()), "SPARK_LOG_DIR": str(d / "logs"),
                "SPARK_PID_DIR": str(d / "pids"), "SPARK_LOCAL_IP": listen,
                "PYSPARK_PYTHON": sys.executable})
    return env


def _daemon(d: Path, action: str, cls: str, *args: str, instance: int = 1,
            hide: tuple[Path, ...] = ()) -> subprocess.CompletedProcess[str]:
    script = spark_home() / "sbin" / "spark-daemon.sh"
    info = _settings(d)
    if action == "start" and info.get("authenticate"):
        args = (*args, "--properties-file", str(secret_file(d, "spark.properties")))
    cmd = ["bash", str(script), action, cls, str(instance), *args]
    if hide:  # a mount namespace of its own, where each hidden directory is an empty tmpfs
        mounts = " && ".join(f"mount -t tmpfs -o mode=0755 none {shlex.quote(str(h))}"
                             for h in hide)
        cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
               f"{mounts} && exec {shlex.join(cmd)}"]
    return subprocess.run(cmd, env=_env(d, str(info.get("listen", "127.0.0.1"))),
                          capture_output=True, text=True, timeout=120)


def check_hide(hide: list[str | os.PathLike[str]]) -> tuple[Path, ...]:
    """The directories workers must not see, checked before anything starts: they exist, and
    this process may make mount namespaces (Linux, as root, ``unshare`` installed)."""
    out = tuple(Path(h).resolve() for h in hide)
    for h in out:
        if not h.is_dir():
            raise SparkRuntimeError(f"--hide {h}: not a directory")
    if out and (not sys.platform.startswith("linux") or os.geteuid() != 0
                or shutil.which("unshare") is None):
        raise SparkRuntimeError("--hide needs Linux, root and unshare (workers run in a mount "
                                "namespace of their own)")
    return out


def _role(cls: str, instance: int) -> str:
    name = "master" if cls == MASTER else "worker"
    return name if instance == 1 else f"{name}{instance}"


def pids(d: str | os.PathLike[str] = DEFAULT_DIR) -> dict[str, int]:
    """Live daemon PIDs by role (``master``, ``worker``, ``worker2``, ...) from the PID files."""
    out = {}
    for cls in (MASTER, WORKER):
        for f in sorted((Path(d) / "pids").glob(f"*{cls}-*.pid")):
            try:
                instance = int(f.stem.rsplit("-", 1)[1])
                pid = int(f.read_text().strip())
                os.kill(pid, 0)
                out[_role(cls, instance)] = pid
            except (ValueError, IndexError, ProcessLookupError, PermissionError):
                pass
    return out


def _master_json(ui_port: int, host: str = "127.0.0.1") -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"http://{host}:{ui_port}/json/", timeout=2) as r:
            return dict(json.loads(r.read()))
    except OSError:
        return None


def start(d: str | os.PathLike[str] = DEFAULT_DIR, *, port: int = 7077, ui_port: int = 8080,
          cores: int = 2, memory: str = "4g", timeout_s: float = 60.0,
          workers: int = 1, hide: list[str | os.PathLike[str]] | None = None,
          listen: str = "127.0.0.1") -> dict[str, Any]:
    """Start the master and ``workers`` workers (those not running) and wait until that many
    workers are registered.

    ``listen``: the address the master, the workers and their executors bind; beyond loopback
    the cluster authenticates every daemon and application (see the module's docstring). A
    cluster already running keeps what it was started with.

    ``hide``: directories the workers (and so their executors) see empty, each worker in a
    mount namespace of its own with a tmpfs over each. On one machine this is how a cluster
    whose workers share no disk with the driver is made: give the driver's run and data
    directories, and only what Spark and the network carry reaches the executors."""
    if workers < 1:
        raise SparkRuntimeError(f"workers must be at least 1, got {workers}")
    hidden = check_hide(list(hide or []))
    d = Path(d).resolve()
    (d / "logs").mkdir(parents=True, exist_ok=True)
    (d / "pids").mkdir(parents=True, exist_ok=True)
    running = pids(d)
    if "master" not in running:
        _configure(d, listen, port)
    info = _settings(d)
    listen = str(info.get("listen", listen))
    url = f"spark://{_host(listen)}:{port}"
    if "master" not in running:
        r = _daemon(d, "start", MASTER, "--host", listen, "--port", str(port),
                    "--webui-port", str(ui_port))
        if r.returncode != 0:
            raise SparkRuntimeError(f"master did not start: {r.stderr.strip()[:300]}")
    deadline = time.time() + timeout_s
    while not _port_open(port, listen):
        if time.time() > deadline:
            raise SparkRuntimeError(f"master not listening on {port}; see {d / 'logs'}")
        time.sleep(0.3)
    for i in range(1, workers + 1):
        if _role(WORKER, i) in running:
            continue
        (d / f"work-{i}").mkdir(exist_ok=True)
        r = _daemon(d, "start", WORKER, "--host", listen, "--cores", str(cores),
                    "--memory", memory, "--work-dir", str(d / f"work-{i}"), url, instance=i,
                    hide=hidden)
        if r.returncode != 0:
            raise SparkRuntimeError(f"worker {i} did not start: {r.stderr.strip()[:300]}")
    while True:
        state = _master_json(ui_port, listen)
        if state and sum(w.get("state") == "ALIVE" for w in state.get("workers", [])) >= workers:
            break
        if time.time() > deadline:
            raise SparkRuntimeError(f"worker did not register with {url}; see {d / 'logs'}")
        time.sleep(0.5)
    return {"url": url, "pids": pids(d), "dir": str(d), "hidden": [str(h) for h in hidden],
            "authenticate": bool(info.get("authenticate"))}


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def _configure(d: Path, listen: str, port: int) -> None:
    """Record what a new cluster listens on; beyond loopback, make its secret and the
    properties file (mode 0600) its daemons and drivers read."""
    auth = beyond_loopback(listen)
    if auth:
        secret = run_secret(d, "spark")
        keep_secret(d, "spark.properties", "".join(
            f"{k} {v}\n" for k, v in {**AUTH_SETTINGS, "spark.authenticate.secret": secret}.items()))
    write_json(d / "cluster.json", {"url": f"spark://{_host(listen)}:{port}", "listen": listen,
                                    "authenticate": auth})


def stop(d: str | os.PathLike[str] = DEFAULT_DIR) -> dict[str, Any]:
    """Stop the workers then the master (by their PID files); returns what was stopped."""
    d = Path(d).resolve()
    before = pids(d)
    for role in sorted(before, key=lambda r: r.startswith("master")):
        cls = MASTER if role.startswith("master") else WORKER
        _daemon(d, "stop", cls, instance=int(role[len("master" if cls == MASTER else "worker"):]
                                             or 1))
    return {"stopped": before, "left": pids(d)}


def status(d: str | os.PathLike[str] = DEFAULT_DIR, *, ui_port: int = 8080) -> dict[str, Any]:
    """Running daemons and, if the master answers, its workers and applications."""
    d = Path(d).resolve()
    info = _master_json(ui_port, str(_settings(d).get("listen", "127.0.0.1")))
    out: dict[str, Any] = {"dir": str(d), "pids": pids(d)}
    if info:
        out["url"] = info.get("url")
        out["workers"] = [{"id": w["id"], "state": w["state"], "cores": w["cores"],
                           "coresused": w["coresused"]} for w in info.get("workers", [])]
        out["apps"] = [a.get("name") for a in info.get("activeapps", [])]
    return out


def _port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False

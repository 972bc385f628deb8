"""``reuse broker``: Debian's mosquitto on 127.0.0.1, started, found and stopped by PID.

As ``reuse cluster`` does for Spark (:mod:`reuse.runtime.cluster`), everything lives in one
folder (default ``results/mqtt-broker``): the config :func:`start` writes
(``mosquitto.conf``: one listener on 127.0.0.1, anonymous clients, no persistence), the
broker's log (``mosquitto.log``), its PID (``pids/mosquitto.pid``) and its port
(``broker.json``).

**Nobody gets in beyond loopback (issue 34, item 4).** On 127.0.0.1 (the default) anonymous
clients are let in, as a local broker's are. Told to listen on another address
(``reuse broker start --listen 0.0.0.0``), the broker refuses anonymous clients: it takes one
user, ``reuse``, whose password is made for this folder and kept in ``secrets/mqtt`` (mode
0600, in a 0700 folder; the same on every start from the folder), and reaches mosquitto as a
hashed password file, ``passwd`` (``mosquitto_passwd -U``: the password never appears on a
command line; mode 0600). Such a broker runs as the user who started it, as the run's Redis
does (mosquitto started as root would otherwise drop to a user who cannot read that file).
Clients give it in the URL: ``mqtt://reuse:PASSWORD@host:port``.

The broker runs in the foreground of a new session, so it outlives the command that started it; :func:`status` and :func:`stop` find it by the recorded PID, and a PID
counts only while ``/proc`` shows a mosquitto running this folder's config (a PID the system
gave to another process since is not ours). Nothing else is ever signalled.

**It is started again when it dies (issue 34).** The broker runs under a keeper process
(:mod:`~reuse.runtime.dataplane.keep_alive`, its PID in ``pids/keeper.pid``) that starts it
again on the same port and config, records each death in ``restarts.jsonl``
(:func:`restarts`), and is stopped first by :func:`stop`. The broker keeps nothing on disk, so
what it held dies with it; its clients make up for that (the ingest's subscription is renewed
on reconnect, and the publisher sends its last seconds again:
:mod:`~reuse.runtime.dataplane.publish`), and a broker-fed run goes on with nothing lost.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import time
from pathlib import Path
from typing import Any

from reuse.runtime.common.files import read_jsonl, write_text
from reuse.runtime.common.run_secrets import beyond_loopback, run_secret, secret_file
from reuse.runtime.dataplane import keep_alive
from reuse.runtime.dataplane.mqtt import DEFAULT_PORT, BrokerUrl, MqttError

__all__ = ["DEFAULT_DIR", "mosquitto_exe", "config_text", "pid", "start", "stop", "status",
           "restarts"]

DEFAULT_DIR = Path("results") / "mqtt-broker"
#: Per subscriber, QoS 1 messages the broker queues beyond those in flight before it drops
#: (mosquitto's default, 1000, is 1 s of three sources at 333 messages/s: too few for a slow
#: ingest to catch up without loss).
MAX_QUEUED = 1_000_000

#: Per subscriber, QoS 1 messages sent and not yet acknowledged. The ingest acknowledges a
#: message only once it is on the bus (a flush every tick), so mosquitto's default, 20, would
#: cap a broker-fed run at 20 messages per tick; a broker of one's own needs the same setting.
MAX_INFLIGHT = 65_535  # the largest mosquitto takes (an MQTT receive maximum)


def mosquitto_exe() -> str:
    """The mosquitto executable (Debian installs it in ``/usr/sbin``, which a user's PATH may
    lack).

    Raises
    ------
    MqttError
        It is not installed.
    """
    exe = shutil.which("mosquitto") or shutil.which("mosquitto", path="/usr/sbin:/usr/local/sbin")
    if exe is None:
        raise MqttError("mosquitto is not installed (apt-get install mosquitto, or "
                        "./scripts/setup.sh as root)")
    return exe


#: The one user of a broker that refuses anonymous clients
USER = "reuse"


def config_text(port: int, listen: str = "127.0.0.1", password_file: Path | None = None) -> str:
    """The broker's config: one listener (on 127.0.0.1 unless told otherwise), no persistence,
    the log on stderr; with a ``password_file``, no anonymous client.

    Examples
    --------
    >>> print(config_text(1884).splitlines()[1])
    listener 1884 127.0.0.1
    >>> config_text(1884, "0.0.0.0", Path("/b/passwd")).splitlines()[1:4]
    ['listener 1884 0.0.0.0', 'allow_anonymous false', 'password_file /b/passwd']
    """
    import getpass

    # with a password file, the broker runs as whoever started it (mosquitto started as root
    # would drop to its own user, who cannot read a file of mode 0600), as the run's Redis does
    access = (["allow_anonymous true"] if password_file is None
              else ["allow_anonymous false", f"password_file {password_file}",
                    f"user {getpass.getuser()}"])
    return "\n".join([
        "# written by `reuse broker start`: nothing kept on disk",
        f"listener {port} {listen}",
        *access,
        "persistence false",
        f"max_queued_messages {MAX_QUEUED}",
        f"max_inflight_messages {MAX_INFLIGHT}",
        "set_tcp_nodelay true",
        "log_dest stderr",
        "log_type error",
        "log_type warning",
        "log_type notice",
        "log_timestamp_format %Y-%m-%dT%H:%M:%S",
        "",
    ])


def _paths(d: Path) -> dict[str, Path]:
    return {"conf": d / "mosquitto.conf", "log": d / "mosquitto.log",
            "pid": d / "pids" / "mosquitto.pid", "info": d / "broker.json",
            "keeper": d / "pids" / "keeper.pid", "restarts": d / "restarts.jsonl"}


def _keeper(d: Path) -> int | None:
    """The PID of the keeper of the broker started from ``d`` (it restarts the broker when it
    dies, :mod:`~reuse.runtime.dataplane.keep_alive`), if it still runs."""
    paths = _paths(d)
    try:
        k = int(paths["keeper"].read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    try:
        done, _ = os.waitpid(k, os.WNOHANG)  # our child (started by this process): running
        return None if done == k else k      # unless just reaped (its /proc may be empty yet)
    except ChildProcessError:
        pass
    try:
        argv = Path(f"/proc/{k}/cmdline").read_bytes().split(b"\x00")
    except OSError:
        return None
    return k if (b"reuse.runtime.dataplane.keep_alive" in argv
                 and str(paths["pid"]).encode() in argv) else None


def restarts(d: str | os.PathLike[str] = DEFAULT_DIR) -> list[dict[str, int]]:
    """The deaths of the broker started from ``d`` that its keeper restarted it after:
    ``died_ms``, ``back_ms``, ``rc`` each (the process's return code: ``-9`` for SIGKILL)."""
    return read_jsonl(_paths(Path(d).resolve())["restarts"])


def _alive(p: int, conf: Path) -> bool:
    """Whether ``p`` is a live mosquitto running ``conf``.

    Our own child (started by this process) is alive until it exits (and is reaped here); any
    other PID counts only while ``/proc`` shows mosquitto running ``conf`` (a zombie shows an
    empty command line, a PID the system reused shows another).
    """
    try:
        done, _ = os.waitpid(p, os.WNOHANG)
        return done != p  # our child: running unless it has just been reaped
    except ChildProcessError:
        pass  # not our child: the usual case (started by an earlier command)
    try:
        os.kill(p, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: /proc says what it is
    try:
        argv = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\x00")
    except FileNotFoundError:
        return False
    except OSError:
        return True  # no /proc to ask: trust the PID file
    return argv[0].endswith(b"mosquitto") and str(conf).encode() in argv


def pid(d: str | os.PathLike[str] = DEFAULT_DIR) -> int | None:
    """The PID of the broker started from folder ``d``, if it still runs."""
    d = Path(d).resolve()
    paths = _paths(d)
    try:
        p = int(paths["pid"].read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return p if _alive(p, paths["conf"]) else None


def _port_taken(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


#: An MQTT 3.1.1 CONNECT (clean session, keep-alive 60 s, empty client id), the CONNACK that
#: accepts it, and a DISCONNECT.
_CONNECT = bytes.fromhex("100c00044d5154540402003c0000")
_CONNACK = bytes.fromhex("20020000")
_DISCONNECT = bytes.fromhex("e000")


def _answers(port: int, timeout_s: float = 0.5, host: str = "127.0.0.1") -> bool:
    """Whether an MQTT broker answers on ``host:port`` (a CONNECT answered by a CONNACK, one
    that refuses an anonymous client too: a socket that merely listens there is not a
    broker)."""
    with socket.socket() as s:
        s.settimeout(timeout_s)
        try:
            s.connect((host, port))
            s.sendall(_CONNECT)
            got = b""
            while len(got) < len(_CONNACK):
                chunk = s.recv(len(_CONNACK) - len(got))
                if not chunk:
                    return False
                got += chunk
            s.sendall(_DISCONNECT)
        except OSError:
            return False
    return got[:2] == _CONNACK[:2]


def _last_line(log: Path) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except FileNotFoundError:
        return ""
    return lines[-1] if lines else ""


def start(d: str | os.PathLike[str] = DEFAULT_DIR, *, port: int = DEFAULT_PORT,
          listen: str = "127.0.0.1", timeout_s: float = 10.0) -> dict[str, Any]:
    """Start mosquitto on ``listen:port`` from folder ``d`` and wait until it accepts
    connections; a broker already running from ``d`` on that port is left as it is. Beyond
    loopback it refuses anonymous clients (see the module doc).

    Returns
    -------
    dict
        ``url`` (its password shown as ``***``), ``pids`` (``{"mosquitto": pid}``), ``dir``,
        ``started`` (``False``: it was already running), and with a password ``user`` and
        ``password_file`` (where the password is).

    Raises
    ------
    MqttError
        mosquitto is not installed, the port is taken, a broker from ``d`` runs on another
        port, or it did not start (the log's last line says why).
    """
    d = Path(d).resolve()
    paths = _paths(d)
    here = "127.0.0.1" if listen in ("0.0.0.0", "::") else listen  # where we reach it
    auth = beyond_loopback(listen)
    extra: dict[str, Any] = {}
    password_file = None
    secret = run_secret(d, "mqtt") if auth else None
    if secret is not None:
        extra = {"user": USER, "password_file": str(secret_file(d, "mqtt"))}
        url = str(BrokerUrl(here, port, USER, secret))
    else:
        url = str(BrokerUrl(here, port))
    running = pid(d)
    if running is not None:
        info = json.loads(paths["info"].read_text())
        if info["port"] != port or info.get("listen", "127.0.0.1") != listen:
            raise MqttError(f"a broker from {d} already runs on port {info['port']} of "
                            f"{info.get('listen', '127.0.0.1')} (PID {running}); "
                            f"reuse broker stop --dir {d} first")
        return {"url": url, "pids": {"mosquitto": running}, "dir": str(d), "started": False,
                **extra}
    exe = mosquitto_exe()
    if _port_taken(port):
        raise MqttError(f"port {port} on 127.0.0.1 is taken (another broker?); choose another "
                        "with --port")
    (d / "pids").mkdir(parents=True, exist_ok=True)
    if secret is not None:
        password_file = d / "passwd"
        _hashed_password_file(password_file, USER, secret)
    paths["conf"].write_text(config_text(port, listen, password_file))
    log = os.open(paths["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    paths["pid"].unlink(missing_ok=True)
    paths["restarts"].unlink(missing_ok=True)
    # the broker under a keeper that starts it again when it dies (issue 34)
    argv = keep_alive.command(paths["pid"], paths["restarts"], [exe, "-c", str(paths["conf"])])
    try:
        k = os.posix_spawn(argv[0], argv, dict(os.environ),
                           file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                                         (os.POSIX_SPAWN_DUP2, log, 1),
                                         (os.POSIX_SPAWN_DUP2, log, 2)],
                           setsid=True)
    finally:
        os.close(log)
    paths["keeper"].write_text(f"{k}\n")
    paths["info"].write_text(json.dumps({"port": port, "url": url, "listen": listen,
                                         "auth": auth}) + "\n")
    deadline = time.monotonic() + timeout_s
    p = None
    while p is None or not _answers(port, host=here):
        p = pid(d)
        if _keeper(d) is None or time.monotonic() > deadline:
            _stop_keeper(d)
            if p is not None:
                _end(p, paths["conf"])
            paths["pid"].unlink(missing_ok=True)
            why = _last_line(paths["log"]) or "no log output"
            raise MqttError(f"mosquitto did not start on port {port}: {why} "
                            f"(log: {paths['log']})")
        time.sleep(0.05)
    return {"url": url, "pids": {"mosquitto": p}, "dir": str(d), "started": True, **extra}


def _stop_keeper(d: Path, timeout_s: float = 15.0) -> None:
    """SIGTERM to the broker's keeper (it stops the broker and restarts nothing after), and
    wait for it to end."""
    k = _keeper(d)
    if k is None:
        return
    try:
        os.kill(k, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while _keeper(d) is not None and time.monotonic() < deadline:
        time.sleep(0.02)


def _hashed_password_file(path: Path, user: str, password: str) -> None:
    """mosquitto's password file for one user, hashed: written in plain text with mode 0600,
    then hashed in place by ``mosquitto_passwd -U`` (so the password is on no command line)."""
    import subprocess

    exe = (shutil.which("mosquitto_passwd")
           or shutil.which("mosquitto_passwd", path="/usr/bin:/usr/sbin:/usr/local/bin"))
    if exe is None:
        raise MqttError("mosquitto_passwd is not installed (it comes with mosquitto)")
    write_text(path, f"{user}:{password}\n", private=True)
    res = subprocess.run([exe, "-U", str(path)], capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        raise MqttError(f"mosquitto_passwd -U {path} failed: "
                        f"{(res.stderr or res.stdout).strip().splitlines()[-1:]}")


def _end(p: int, conf: Path, timeout_s: float = 10.0) -> None:
    """SIGTERM to ``p``, SIGKILL if it has not gone within ``timeout_s``."""
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        if not _alive(p, conf):
            return
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not _alive(p, conf):
                return
            time.sleep(0.02)


def stop(d: str | os.PathLike[str] = DEFAULT_DIR) -> dict[str, Any]:
    """Stop the broker started from folder ``d``, by its PID.

    Raises
    ------
    MqttError
        No broker runs from ``d``.
    """
    d = Path(d).resolve()
    paths = _paths(d)
    p = pid(d)
    if p is None:
        _stop_keeper(d)  # between a death and its restart
        paths["pid"].unlink(missing_ok=True)
        raise MqttError(f"no broker runs from {d} (nothing to stop)")
    _stop_keeper(d)  # first: it would take the stop for a death
    _end(p, paths["conf"])
    paths["keeper"].unlink(missing_ok=True)
    left = pid(d)
    if left is None:
        paths["pid"].unlink(missing_ok=True)
    return {"stopped": {"mosquitto": p}, "left": {} if left is None else {"mosquitto": left}}


def status(d: str | os.PathLike[str] = DEFAULT_DIR) -> dict[str, Any]:
    """The broker running from folder ``d``: its URL, PID and whether it accepts connections.

    Raises
    ------
    MqttError
        No broker runs from ``d``.
    """
    d = Path(d).resolve()
    p = pid(d)
    if p is None:
        raise MqttError(f"no broker runs from {d} (reuse broker start --dir {d})")
    info = json.loads(_paths(d)["info"].read_text())
    return {"url": info["url"], "pids": {"mosquitto": p}, "dir": str(d),
            "answers": _answers(int(info["port"]))}

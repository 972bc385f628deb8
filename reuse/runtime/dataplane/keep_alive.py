"""Keep one server process running: start it, and start it again whenever it dies.

``reuse broker start`` runs mosquitto under this (issue 34: the MQTT broker restarts when it
dies, as a service manager's ``Restart=always`` would), as a process of its own that outlives
the command::

    python -m reuse.runtime.dataplane.keep_alive PIDFILE RECORD -- mosquitto -c CONF

- ``PIDFILE`` always holds the live server's PID (rewritten at each start), so the broker's
  ``status``/``stop`` find the server as before.
- ``RECORD`` gets one JSON line per death: ``{"died_ms", "back_ms", "rc"}`` (``rc`` as
  :attr:`subprocess.Popen.returncode`: ``-9`` for a SIGKILL).
- SIGTERM (or SIGINT) to the keeper stops the server (SIGTERM, then SIGKILL after 10 s) and
  ends the keeper; nothing is restarted after that.
- A server that dies within :data:`EARLY_S` of its start is not started again: it cannot
  start (a taken port, a bad config), and retrying would only hide why. The keeper then exits
  with the server's code and the caller reads the server's log.

Only the server's own death is watched; the keeper's death (a SIGKILL to it) leaves the server
running, as an unsupervised one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

__all__ = ["EARLY_S", "main", "command"]

#: A server that dies sooner than this after its start is not restarted.
EARLY_S = 1.0
#: Seconds between a death and the next start.
PAUSE_S = 0.1


def command(pidfile: Path, record: Path, argv: list[str]) -> list[str]:
    """The command line that keeps ``argv`` running."""
    return [sys.executable, "-m", "reuse.runtime.dataplane.keep_alive", str(pidfile),
            str(record), "--", *argv]


def _write_pid(pidfile: Path, pid: int) -> None:
    tmp = pidfile.with_name(pidfile.name + ".tmp")
    tmp.write_text(f"{pid}\n", encoding="utf-8")
    os.replace(tmp, pidfile)


def main(args: list[str]) -> int:
    if len(args) < 4 or args[2] != "--":
        print("usage: keep_alive PIDFILE RECORD -- COMMAND...", file=sys.stderr)
        return 2
    pidfile, record, argv = Path(args[0]), Path(args[1]), args[3:]
    stopping = False
    child: subprocess.Popen[bytes] | None = None

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        if child is not None and child.poll() is None:
            child.terminate()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    died: dict[str, int] | None = None
    while True:
        started = time.monotonic()
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        _write_pid(pidfile, child.pid)
        if died is not None:
            with record.open("a", encoding="utf-8") as f:
                f.write(json.dumps({**died, "back_ms": int(time.time() * 1000)}) + "\n")
        while True:
            try:
                rc = child.wait(timeout=10 if stopping else None)
                break
            except subprocess.TimeoutExpired:
                child.kill()
        if stopping:
            return 0
        if time.monotonic() - started < EARLY_S:
            return rc if rc > 0 else 1
        died = {"died_ms": int(time.time() * 1000), "rc": rc}
        time.sleep(PAUSE_S)
        if stopping:
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

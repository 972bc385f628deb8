"""Restart a run's own servers when they die, and keep a record of it (issue 34, item 1).

A broker-fed run starts a Redis of its own (the ingest's bus, durable: every write is in its
append-only file before it is answered). Before this, that server's death ended the run: the
ingest's flushes failed and the shards' reads failed until the stall timeout. A
:class:`Keeper` watches such servers from a thread of the driver and starts a dead one again,
as it was started (same port, folder and password, so its clients need no new address, and
from its file, so it holds everything it had answered). The clients ride through the gap by
retrying (:class:`~reuse.runtime.dataplane.bus.RedisBus` ``patience_s``; the ingest keeps
unwritten messages unacknowledged and tries again).

What is *not* kept here, and why: the MQTT broker is not the run's own (``reuse broker start``
keeps it, :mod:`~reuse.runtime.dataplane.mosquitto`); a driver's death takes its keeper with it,
and ``reuse run --resume`` restarts the Redis from its file.

Every restart is an event (:class:`Restart`): when the server was found dead, when it
answered again, and the error if it could not be started (it is tried again each period).

Examples
--------
A service is anything with ``alive()`` and ``restart()``:

>>> class Flaky:
...     up, starts = False, 0
...     def alive(self): return self.up
...     def restart(self):
...         self.starts += 1
...         self.up = True
>>> k = Keeper({"flaky": (s := Flaky())})
>>> k.check(), s.starts, [e.service for e in k.events]
(1, 1, ['flaky'])
>>> k.check()  # alive now: nothing to do
0
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from reuse.runtime.common.files import read_jsonl

__all__ = ["Service", "Restart", "Keeper"]


class Service(Protocol):
    """A server a run started and can start again."""

    def alive(self) -> bool: ...

    def restart(self) -> None: ...


@dataclass
class Restart:
    """One death and what became of it: found dead at ``died_ms``, answering again at
    ``back_ms`` (``None``: not yet), ``error`` the last failed start's one line."""

    service: str
    died_ms: int
    back_ms: int | None = None
    error: str | None = None
    tries: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Keeper:
    """Watch ``services`` every ``period_s`` from a daemon thread (:meth:`start`) and restart
    the dead ones; :meth:`check` is one round (what the thread does, also callable directly)."""

    def __init__(self, services: Mapping[str, Service], *, period_s: float = 0.2,
                 log: str | os.PathLike[str] | None = None) -> None:
        self.services = dict(services)
        self.period_s = period_s
        # each restart done, as a JSON line: the record outlives this process (a resumed
        # run's keeper reads its predecessors' restarts too)
        self.log = None if log is None else Path(log)
        self.events: list[Restart] = []
        self._open: dict[str, Restart] = {}  # service -> its restart not yet done
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> int:
        """Restart every dead service once; returns how many were restarted now."""
        done = 0
        with self._lock:
            for name, svc in self.services.items():
                if svc.alive() and name not in self._open:
                    continue
                ev = self._open.get(name)
                if ev is None:
                    ev = self._open[name] = Restart(name, _now_ms())
                    self.events.append(ev)
                ev.tries += 1
                try:
                    svc.restart()
                except Exception as exc:  # noqa: BLE001 - recorded; tried again next round
                    ev.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    continue
                ev.back_ms, ev.error = _now_ms(), None
                del self._open[name]
                done += 1
                if self.log is not None:
                    with self.log.open("a", encoding="utf-8") as f:
                        f.write(json.dumps(ev.to_dict()) + "\n")
        return done

    def start(self) -> Keeper:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="keeper", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self.check()

    def stop(self) -> list[dict[str, Any]]:
        """Stop watching (before the services are stopped on purpose); the events."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        return self.record()

    def record(self) -> list[dict[str, Any]]:
        """The restarts: with a ``log``, every one it holds (this keeper's done ones are in
        it) and this keeper's open one; without, this keeper's."""
        with self._lock:
            mine = [e.to_dict() for e in self.events]
            if self.log is None:
                return mine
            return read_jsonl(self.log) + [e for e in mine if e["back_ms"] is None]


def _now_ms() -> int:
    return int(time.time() * 1000)

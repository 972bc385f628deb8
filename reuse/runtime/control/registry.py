"""The instances of a run: who they are, where they run, how far they have claimed, and whether
they are alive.

Redis keys (under ``reuse:ctl:<run>:``): ``inst``, a hash from instance id to its JSON
description (``driver_pid``, ``executors``, ``host``, written by :meth:`Registry.register`),
and ``beat``, a hash from instance id to ``"<ms>,<frontier>"``, written by every
:meth:`Registry.beat`.

Heartbeats are stamped with Redis's clock, inside the script, and ages are measured on it
too: instances may run on machines whose clocks differ (issue 24), and a coordinator must not
declare an instance dead because its own clock runs ahead. The frontier (the first ``seq`` the
instance has not claimed) never goes back in the registry, so the lowest live frontier is
what retention may trim the source topics behind, and where a replacement may join from.

A *dead* instance is one whose last heartbeat is older than the timeout the caller chooses
(a few claim intervals). Declaring it dead needs no fencing: a zombie that wakes up only reads
the journal and publishes records the output logs de-duplicate
(:mod:`~reuse.runtime.control.outputs`), and its next heartbeat makes it live again.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field

from reuse.runtime.control.common import LUA_NOW_MS, RedisPart

__all__ = ["Instance", "Registry"]


@dataclass(frozen=True)
class Instance:
    """One registered instance, as a coordinator sees it."""

    id: str
    driver_pid: int
    executors: tuple[str, ...] = ()
    host: str = ""
    frontier: int = -1  # first seq not claimed (-1: nothing reported)
    beat_ms: int = 0  # last heartbeat, Redis's clock
    age_s: float = 0.0  # since the last heartbeat, when listed
    extra: dict[str, object] = field(default_factory=dict, compare=False)

    def as_app(self) -> dict[str, object]:
        """The ``apps.json`` entry issue 24 asks for."""
        return {"id": self.id, "driver_pid": self.driver_pid, "executors": list(self.executors),
                "host": self.host}


#: KEYS: beat. ARGV: id, frontier. Keeps the larger frontier; stamps Redis's time.
_BEAT = LUA_NOW_MS + """
local f = tonumber(ARGV[2])
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  local was = tonumber(string.match(old, ',(-?%d+)$'))
  if was and was > f then f = was end
end
local ms = now_ms()
redis.call('HSET', KEYS[1], ARGV[1], string.format('%d,%d', ms, f))
return ms
"""


class Registry(RedisPart):
    """Registration and heartbeats of a run's instances (see the module docstring)."""

    def register(self, instance: str, *, driver_pid: int | None = None,
                 executors: Sequence[str] = (), host: str | None = None, frontier: int = -1,
                 **extra: object) -> None:
        """Describe ``instance`` (its driver's PID, default this process; its executors) and
        send its first heartbeat. Registering again updates the description."""
        desc = {"driver_pid": os.getpid() if driver_pid is None else int(driver_pid),
                "executors": list(executors), "host": host or socket.gethostname(), **extra}
        self.client.hset(self.key("inst"), instance, json.dumps(desc))
        self.beat(instance, frontier)

    def beat(self, instance: str, frontier: int) -> int:
        """A heartbeat with the instance's frontier (kept if lower than the one registered);
        returns its time on Redis's clock (ms)."""
        return int(self.script("beat", _BEAT)(keys=[self.key("beat")],
                                              args=[instance, int(frontier)]))

    def leave(self, instance: str) -> None:
        """Forget an instance (a clean exit, or one the coordinator has replaced)."""
        with self.client.pipeline(transaction=True) as p:
            p.hdel(self.key("inst"), instance)
            p.hdel(self.key("beat"), instance)
            p.execute()

    def instances(self) -> list[Instance]:
        """Every registered instance with its heartbeat's age, by id."""
        with self.client.pipeline(transaction=True) as p:
            p.time()
            p.hgetall(self.key("inst"))
            p.hgetall(self.key("beat"))
            (s, us), descs, beats = p.execute()
        now = int(s) * 1000 + int(us) // 1000
        out = []
        for raw_id, raw in descs.items():
            iid = raw_id.decode()
            d = json.loads(raw)
            ms, frontier = (int(x) for x in beats.get(raw_id, b"0,-1").decode().split(","))
            out.append(Instance(iid, int(d.pop("driver_pid")), tuple(d.pop("executors", ())),
                                str(d.pop("host", "")), frontier, ms,
                                round((now - ms) / 1000, 3), d))
        return sorted(out, key=lambda i: i.id)

    def live_instances(self, timeout_s: float) -> list[Instance]:
        """The instances whose last heartbeat is at most ``timeout_s`` old."""
        return [i for i in self.instances() if i.age_s <= timeout_s]

    def dead_instances(self, timeout_s: float) -> list[Instance]:
        """The instances whose last heartbeat is older than ``timeout_s``."""
        return [i for i in self.instances() if i.age_s > timeout_s]

    def lowest_frontier(self, timeout_s: float) -> int | None:
        """The lowest frontier of the live instances (``None``: none live): every live
        instance has claimed every ``seq`` below it."""
        live = [i.frontier for i in self.live_instances(timeout_s)]
        return min(live) if live else None

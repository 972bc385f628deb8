"""What the control plane's parts share: their error, and a lazily opened Redis client under
one run's key prefix (``reuse:ctl:<run>:``), which pickles to other processes like
:class:`~reuse.runtime.dataplane.bus.RedisBus`."""

from __future__ import annotations

from typing import Any

from reuse.runtime import SparkRuntimeError

__all__ = ["ControlError", "RedisPart", "START"]

#: The run's first source ``seq`` (written once by :meth:`OpLog.open`): the horizon's first
#: value and every sink's first output floor.
START = "start"


class ControlError(SparkRuntimeError):
    """The control plane refused an operation (a cut in the past, an unopened run, a record
    outside its range); names the run."""


class RedisPart:
    """A part of one run's control plane on the Redis at ``url``.

    Parameters
    ----------
    url
        ``redis://host:port/db``.
    run
        The run's name: every key starts with ``reuse:ctl:<run>:``, so runs share a server.
    patience_s
        Retry a refused or broken connection for this long
        (:func:`~reuse.runtime.common.redis_client.redis_client`): the instances and the
        coordinator of a run across applications ride through a restart of its Redis (issue
        34). 0: fail at once.
    """

    def __init__(self, url: str, run: str, *, patience_s: float = 0.0) -> None:
        if not run or ":" in run:
            raise ControlError(f"run name {run!r} must be non-empty and hold no ':'")
        self.url, self.run, self.patience_s = url, run, patience_s
        self._client: Any = None
        self._scripts: dict[str, Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "run": self.run, "patience_s": self.patience_s,
                "_client": None, "_scripts": {}}

    @property
    def client(self) -> Any:
        if self._client is None:
            from reuse.runtime.common.redis_client import redis_client

            self._client = redis_client(self.url, patience_s=self.patience_s)
        return self._client

    def key(self, name: str) -> str:
        """The Redis key of ``name`` in this run."""
        return f"reuse:ctl:{self.run}:{name}"

    def script(self, name: str, source: str) -> Any:
        """A registered Lua script (``EVALSHA``, loaded once per client)."""
        if name not in self._scripts:
            self._scripts[name] = self.client.register_script(source)
        return self._scripts[name]

    def server_ms(self) -> int:
        """Redis's clock in milliseconds: the one clock every instance shares (their own may
        differ, issue 24)."""
        s, us = self.client.time()
        return int(s) * 1000 + int(us) // 1000


#: Lua: Redis's clock in milliseconds (``TIME`` is allowed in scripts since Redis 5's effects
#: replication, the only mode of Redis 7).
LUA_NOW_MS = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""

"""The operation journal shared by a run's instances, and its control horizon ``H``.

Redis keys (under ``reuse:ctl:<run>:``): ``start`` (the first source ``seq``), ``H`` (the
horizon), ``ops`` (a list of JSON records ``{"index", "op", "dag", "cut", "key", "by",
"ms"}``, in the order they were decided) and ``keys`` (a hash from proposal key to index).

**Why the cuts agree.** The horizon only grows, and two scripts touch it:

- :meth:`OpLog.propose` reads ``H`` and appends the operation with cut ``max(H, at)`` (an
  ``at`` below ``H`` is refused: it is in the past), raising ``H`` to that cut. Atomic (one
  Lua script), so concurrent proposers get distinct indices and cuts that never decrease
  along the journal.
- :meth:`OpLog.sync` raises ``H`` to the caller's ``advance_to`` and returns ``H`` and the
  operations after the caller's last one, atomically.

An instance claims a ``seq`` range ``[lo, hi)`` only with ``hi <=`` the ``H`` its last sync
returned, after applying the operations that sync returned. An operation that sync did not
return was appended after it, with cut ``>=`` the ``H`` of that moment ``>= hi``: it lies
in no range the instance has claimed, so the instance can still apply it exactly at its cut
(the shared engine's :meth:`Deployment.deploy` takes changes at cuts at or above its
frontier). An operation that sync did return is applied before the claim that reaches its
cut. So every instance applies every operation at the journal's cut, however fast it runs
and whatever its clock says; only the order of Redis's scripts matters.

Idempotent proposals: a proposer that lost its connection (or a new coordinator taking over)
proposes again under the same ``key`` (e.g. ``"step-7"``) and gets the record already
decided, not a second operation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from reuse.runtime.control.common import LUA_NOW_MS, START, ControlError, RedisPart

__all__ = ["OpLog", "Operation"]


@dataclass(frozen=True)
class Operation:
    """One decided operation: its place in the journal and its cut.

    ``op`` is what the engine enacts (``"submit"`` or ``"remove"``; the journal does not
    interpret it, so a ``"join"`` of a new instance could be decided the same way), ``dag``
    what it is about, ``cut`` the first ``seq`` it affects, ``key`` the proposal key (``""``:
    none), ``by`` who proposed it, ``ms`` when it was decided (Redis's clock)."""

    index: int
    op: str
    dag: str
    cut: int
    key: str = ""
    by: str = ""
    ms: int = 0

    @classmethod
    def from_json(cls, raw: bytes | str) -> Operation:
        d = json.loads(raw)
        return cls(int(d["index"]), str(d["op"]), str(d["dag"]), int(d["cut"]),
                   str(d.get("key", "")), str(d.get("by", "")), int(d.get("ms", 0)))

    def as_dict(self) -> dict[str, Any]:
        """The file journal's ``op`` fields (:mod:`reuse.runtime.journal`)."""
        return {"op": self.op, "dag": self.dag, "cut": self.cut}


#: KEYS: start, H. ARGV: start seq. Returns the run's start (the first writer's).
_OPEN = """
redis.call('SETNX', KEYS[1], ARGV[1])
local start = redis.call('GET', KEYS[1])
redis.call('SETNX', KEYS[2], start)
return start
"""

#: KEYS: H, ops, keys. ARGV: op, dag, at ('' none), key ('' none), by.
#: Returns the operation's JSON record (the earlier one under the same key, if any).
_PROPOSE = LUA_NOW_MS + """
local h = redis.call('GET', KEYS[1])
if not h then return redis.error_reply('the run is not open (no horizon)') end
h = tonumber(h)
if ARGV[4] ~= '' then
  local i = redis.call('HGET', KEYS[3], ARGV[4])
  if i then return redis.call('LINDEX', KEYS[2], tonumber(i)) end
end
local cut = h
if ARGV[3] ~= '' then
  local at = tonumber(ARGV[3])
  if at < h then
    return redis.error_reply('cut ' .. ARGV[3] .. ' is not in the future: the horizon is ' ..
                             string.format('%d', h))
  end
  cut = at
end
if cut > h then redis.call('SET', KEYS[1], string.format('%d', cut)) end
local index = redis.call('LLEN', KEYS[2])
local rec = cjson.encode({index = index, op = ARGV[1], dag = ARGV[2], cut = cut,
                          key = ARGV[4], by = ARGV[5], ms = now_ms()})
redis.call('RPUSH', KEYS[2], rec)
if ARGV[4] ~= '' then redis.call('HSET', KEYS[3], ARGV[4], index) end
return rec
"""

#: KEYS: H, ops. ARGV: first index wanted, advance_to ('' none).
#: Returns {H, record, record...}.
_SYNC = """
local h = redis.call('GET', KEYS[1])
if not h then return redis.error_reply('the run is not open (no horizon)') end
if ARGV[2] ~= '' and tonumber(ARGV[2]) > tonumber(h) then
  h = ARGV[2]
  redis.call('SET', KEYS[1], h)
end
local out = {h}
for _, rec in ipairs(redis.call('LRANGE', KEYS[2], tonumber(ARGV[1]), -1)) do
  out[#out + 1] = rec
end
return out
"""


class OpLog(RedisPart):
    """One run's operation journal and control horizon (see the module docstring).

    Examples
    --------
    An instance syncs, a coordinator proposes, the instance learns the cut before it can
    claim past it (``url`` is a running Redis; not run here):

    >>> log = OpLog(url, "run1")                                  # doctest: +SKIP
    >>> log.open(100)                                             # doctest: +SKIP
    100
    >>> log.sync(0, advance_to=130)                               # doctest: +SKIP
    (130, [])
    >>> log.propose("submit", "A", key="step-1").cut              # doctest: +SKIP
    130
    >>> h, ops = log.sync(0, advance_to=125); h, [o.cut for o in ops]   # doctest: +SKIP
    (130, [130])
    """

    def open(self, start: int) -> int:
        """Create the run's journal with its first source ``seq`` (``H = start``), unless it
        exists; returns the run's start (the first opener's: instances racing to open agree)."""
        return int(self.script("open", _OPEN)(keys=[self.key(START), self.key("H")],
                                              args=[int(start)]))

    @property
    def start(self) -> int:
        raw = self.client.get(self.key(START))
        if raw is None:
            raise ControlError(f"run {self.run!r} is not open")
        return int(raw)

    def horizon(self) -> int:
        """The current ``H``: no instance has claimed a ``seq >= H``."""
        raw = self.client.get(self.key("H"))
        if raw is None:
            raise ControlError(f"run {self.run!r} is not open")
        return int(raw)

    def propose(self, op: str, dag: str, *, at: int | None = None, key: str = "",
                by: str = "") -> Operation:
        """Append ``op`` on ``dag`` with its cut decided now: the horizon, or ``at`` when given
        (which must not be below the horizon, and becomes it).

        Parameters
        ----------
        op, dag
            What to enact (``"submit"``/``"remove"``) and on which dataflow.
        at
            A cut asked for (a resumed trace's recorded cut, a test's); ``None``: the earliest
            cut every instance can still apply, the horizon.
        key
            Proposal key: proposing again under it returns the operation already decided.
        by
            Who proposes (for the record).

        Raises
        ------
        ControlError
            ``at`` is below the horizon, or the run is not open.
        """
        import redis

        try:
            raw = self.script("propose", _PROPOSE)(
                keys=[self.key("H"), self.key("ops"), self.key("keys")],
                args=[op, dag, "" if at is None else int(at), key, by])
        except redis.ResponseError as exc:
            raise ControlError(f"run {self.run!r}: {op} {dag}: {exc}") from None
        return Operation.from_json(raw)

    def sync(self, after: int, *, advance_to: int | None = None) -> tuple[int, list[Operation]]:
        """Raise the horizon to ``advance_to`` (never lower it) and return it with the
        operations of index ``>= after``, in one atomic step.

        An instance calls this before each claim with ``after`` = the operations it has
        applied and ``advance_to`` = its data-ready mark (plus a lead), applies what it gets,
        then claims up to ``min(ready, H)``."""
        import redis

        try:
            got = self.script("sync", _SYNC)(keys=[self.key("H"), self.key("ops")],
                                             args=[int(after),
                                                   "" if advance_to is None else int(advance_to)])
        except redis.ResponseError as exc:
            raise ControlError(f"run {self.run!r}: {exc}") from None
        return int(got[0]), [Operation.from_json(r) for r in got[1:]]

    def advance(self, to: int) -> int:
        """Raise the horizon to ``to`` (a coordinator moving it with the data); returns it."""
        return self.sync(self.size(), advance_to=to)[0]

    def size(self) -> int:
        """How many operations have been decided."""
        return int(self.client.llen(self.key("ops")))

    def ops(self, after: int = 0) -> list[Operation]:
        """The operations of index ``>= after``, in journal order."""
        return [Operation.from_json(r) for r in self.client.lrange(self.key("ops"), after, -1)]

    def __iter__(self) -> Iterator[Operation]:
        return iter(self.ops())

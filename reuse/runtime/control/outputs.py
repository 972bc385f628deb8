"""Sink outputs published by every instance, read once by consumers.

Every instance computes every replicated sink's records, deterministically: the same source
``seq``, the same operations at the same cuts (:mod:`~reuse.runtime.control.oplog`), so the
same ``(seq, digest)`` multiset (:func:`reuse.runtime.common.execution.digest`). Each instance
publishes them as it finishes a batch; consumers must see each record once, from whichever
copy came first, and must keep seeing records when an instance dies.

Redis keys per sink (under ``reuse:ctl:<run>:out:<sink>``): the stream itself (entries
``q`` seq, ``d`` digest, ``p`` payload, ``b`` the instance whose copy it was), ``#seen`` (a
sorted set of the record keys appended, scored by ``seq``) and ``#mark``, the sink's *output
mark* ``M``: every record with ``seq < M`` is in the stream.

**One Lua script per publish** (:meth:`OutputLog.publish`), which takes the records of a
``seq`` range ``[lo, hi)``: *all* of the sink's records with ``lo <= seq < hi``, as a batch
over that range computes them. For each record, in order:

- ``seq < M``: dropped (every record there is in already);
- its key ``seq:digest:n`` (``n``: how many earlier records of this publish had the same
  ``seq`` and digest, so a sink that emits the same record twice for one event keeps both,
  as the accounting's multisets count them) is in ``#seen``: dropped (another copy came first);
- otherwise appended and its key added to ``#seen``.

(When the range reaches the mark and ``#seen`` is empty, the common case, every record at or
above the mark is new and its key would leave the set at once: they are appended without
touching it.)

Then, if the range reaches the mark (``lo <= M < hi``), ``M`` becomes ``hi`` and the keys
below it leave ``#seen``: the set holds only keys above the mark, which is empty when every
publish is contiguous, as it is while each instance publishes its batches in order from the
run's start (the mark's first value, :data:`~reuse.runtime.control.common.START`), or from
the sink's own first cut (:meth:`OutputLog.open_sink`) and clipped to its window. A range
that starts above ``M`` (an instance that joined at a later cut while another lags) is
appended and de-duplicated but does not move the mark.

**Order.** While publishes are contiguous the stream is in ``seq`` order: a record appended at
``seq q`` came from an instance that had already published all of its records below ``q``,
and nothing below the mark is ever appended. Consumers read in stream order
(:meth:`OutputLog.read`) from a cursor of their own.

**Gaps.** A stream id is the Redis time of the append, i.e. when the first copy became
readable, so a consumer's longest pause is :func:`longest_gap` over the ids' milliseconds,
whichever instance published them and whatever their clocks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from reuse.runtime.control.common import START, ControlError, RedisPart

__all__ = ["Output", "OutputLog", "longest_gap"]

#: A record as published: ``(seq, digest, payload)``.
Record = tuple[int, str, str]


@dataclass(frozen=True)
class Output:
    """One record as consumers read it: the first copy published."""

    seq: int
    digest: str
    payload: str
    by: str  # the instance whose copy this is
    id: str  # stream id
    ms: int  # when it was appended (Redis's clock)


#: KEYS: stream, seen, mark, start. ARGV: lo, hi, by, then seq, digest, payload per record.
#: Returns {appended, mark}.
_PUBLISH = """
local m = redis.call('GET', KEYS[3])
if not m then m = redis.call('GET', KEYS[4]) end
if not m then return redis.error_reply('the run is not open (no start seq)') end
m = tonumber(m)
local lo, hi = tonumber(ARGV[1]), tonumber(ARGV[2])
local added = 0
if lo <= m and hi > m and redis.call('ZCARD', KEYS[2]) == 0 then
  -- the common case: this range reaches the mark and no copy above it is known, so every
  -- record at or above the mark is new, and the mark moves past them all
  for i = 4, #ARGV, 3 do
    if tonumber(ARGV[i]) >= m then
      redis.call('XADD', KEYS[1], '*', 'q', ARGV[i], 'd', ARGV[i + 1], 'p', ARGV[i + 2],
                 'b', ARGV[3])
      added = added + 1
    end
  end
else
  local seen_here = {}
  for i = 4, #ARGV, 3 do
    local q = tonumber(ARGV[i])
    local base = ARGV[i] .. ':' .. ARGV[i + 1]
    local n = seen_here[base] or 0
    seen_here[base] = n + 1
    if q >= m then
      local k = base .. ':' .. n
      if not redis.call('ZSCORE', KEYS[2], k) then
        redis.call('XADD', KEYS[1], '*', 'q', ARGV[i], 'd', ARGV[i + 1], 'p', ARGV[i + 2],
                   'b', ARGV[3])
        redis.call('ZADD', KEYS[2], q, k)
        added = added + 1
      end
    end
  end
end
if lo <= m and hi > m then
  m = hi
  redis.call('SET', KEYS[3], string.format('%d', m))
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%d', m))
end
return {added, string.format('%d', m)}
"""

#: KEYS: seen, mark, start. ARGV: below. Raises the mark; returns it.
_SETTLE = """
local m = redis.call('GET', KEYS[2])
if not m then m = redis.call('GET', KEYS[3]) end
if not m then return redis.error_reply('the run is not open (no start seq)') end
m = tonumber(m)
local b = tonumber(ARGV[1])
if b > m then
  m = b
  redis.call('SET', KEYS[2], string.format('%d', m))
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%d', m))
end
return string.format('%d', m)
"""


class OutputLog(RedisPart):
    """The de-duplicated output streams of a run's sinks (see the module docstring)."""

    def _keys(self, sink: str) -> list[str]:
        base = self.key(f"out:{sink}")
        return [base, base + "#seen", base + "#mark", self.key(START)]

    def publish(self, sink: str, lo: int, hi: int, records: Sequence[Record], *,
                by: str = "") -> tuple[int, int]:
        """Publish all of ``sink``'s records with ``lo <= seq < hi`` (in ``seq`` order);
        returns how many were appended (the others were there already) and the sink's mark.

        Raises
        ------
        ControlError
            A record outside ``[lo, hi)`` or out of ``seq`` order, or the run is not open.
        """
        import redis

        args: list[object] = [int(lo), int(hi), by]
        last = lo
        for seq, dig, payload in records:
            if not last <= seq < hi:
                raise ControlError(f"sink {sink!r}: record seq {seq} is outside [{lo}, {hi}) "
                                   f"or out of order (after {last})")
            last = seq
            args += [int(seq), dig, payload]
        try:
            added, mark = self.script("publish", _PUBLISH)(keys=self._keys(sink), args=args)
        except redis.ResponseError as exc:
            raise ControlError(f"run {self.run!r}: sink {sink!r}: {exc}") from None
        return int(added), int(mark)

    def open_sink(self, sink: str, since: int) -> int:
        """Give a sink that starts at a later cut (a dataflow submitted at ``J``) its first
        mark, ``since``, unless it has one; returns the sink's mark. Every instance calls it
        when it applies the submit, with the journal's cut, so they agree; its first publish
        ``[J, hi)`` then reaches the mark (without it the mark stays at the run's start and
        every publish of the sink is above it: de-duplicated, but out of the mark's order and
        kept in ``#seen``). A dataflow submitted again is a new sink (``<dag>@<J>``)."""
        keys = self._keys(sink)
        self.client.setnx(keys[2], int(since))
        return self.mark(sink)

    def settle(self, sink: str, below: int) -> int:
        """Raise ``sink``'s mark to ``below``: nothing below it will be appended any more
        (a coordinator's decision once every copy of a range is known lost, or published by
        every live instance); returns the mark."""
        keys = self._keys(sink)
        return int(self.script("settle", _SETTLE)(keys=keys[1:], args=[int(below)]))

    def mark(self, sink: str) -> int:
        """Every record of ``sink`` with ``seq`` below this is in its stream."""
        keys = self._keys(sink)
        raw = self.client.get(keys[2]) or self.client.get(keys[3])
        if raw is None:
            raise ControlError(f"run {self.run!r} is not open")
        return int(raw)

    def read(self, sink: str, after: str = "", count: int | None = None,
             ) -> tuple[list[Output], str]:
        """The records appended after stream id ``after`` (``""``: from the start), in stream
        order, and the cursor to read on from."""
        start = f"({after}" if after else "-"
        got = self.client.xrange(self._keys(sink)[0], start, "+", count=count)
        out = []
        for raw_id, f in got:
            sid = raw_id.decode()
            out.append(Output(int(f[b"q"]), f[b"d"].decode(), f[b"p"].decode(),
                              f[b"b"].decode(), sid, int(sid.split("-")[0])))
        return out, (out[-1].id if out else after)

    def size(self, sink: str) -> int:
        return int(self.client.xlen(self._keys(sink)[0]))


def longest_gap(times_ms: Iterable[float], *, start_ms: float | None = None,
                end_ms: float | None = None) -> float:
    """A consumer's longest pause: the largest difference between consecutive arrival times,
    counting from ``start_ms`` to the first and from the last to ``end_ms`` when given.

    Examples
    --------
    >>> longest_gap([100, 300, 350, 900])
    550
    >>> longest_gap([100, 300], start_ms=0, end_ms=1000)
    700
    >>> longest_gap([], start_ms=0, end_ms=40)
    40
    """
    ts = sorted(times_ms)
    if start_ms is not None:
        ts.insert(0, start_ms)
    if end_ms is not None:
        ts.append(end_ms)
    return max((b - a for a, b in zip(ts, ts[1:], strict=False)), default=0)

"""Backpressure and retention on the bus, decided on plain data (no Spark, no I/O).

Neptune (Section III.4 of the Neptune paper) keeps a high and a low watermark on each stream
processor's inbound buffer: once the buffer fills to the high watermark, nothing more is admitted
until the processor has drained it to the low one, and TCP flow control then slows the upstream
stages. The watermarks are "set sufficiently apart from each other to avoid the system
oscillating between the two states rapidly". Here a producer's topic is shared by tenants, and a
shared producer must never be slowed by one slow tenant (issue 12). So a consumer's inbound
buffer is its own backlog on the bus (durable: nothing is dropped), its *lag* is the number of
events in messages it has not consumed yet, and the watermarks throttle what the consumer admits
into one micro-batch, not what the producer emits:

- A consumer whose lag on a topic rose above ``lag_high`` is *throttled* on that topic until its
  lag falls below ``lag_low`` (hysteresis, as Neptune's). While throttled it admits at most
  ``max_events`` events of the topic per micro-batch: it catches up in bounded bites, so each of
  its batches holds a core and memory for at most ``max_events`` events' work and the other
  queries' batches interleave with its own.
- A consumer that is not throttled admits everything pending, which is at most ``lag_high``
  events (above it, it would be throttled): a consumer that keeps up is never delayed by an
  artificial split of what it has.

So one batch takes at most ``max(lag_high, max_events)`` events per topic. Messages are whole
batches of the producer and are admitted whole, in key order, so the bound is approximate: a
bite stops before the message that would cross ``max_events``, and a single message larger than
the bound is admitted alone (otherwise the consumer would never progress). ``lag_low`` must
exceed what arrives in one trigger (the lag a consumer that keeps up still sees), or a consumer
that has caught up is never released; ``max_events`` must exceed it too, or a throttled consumer
could never catch up. Topics are decided independently: a stateful task joining two topics
holds the faster one's events beyond the slower one's high-water mark
(:mod:`reuse.runtime.engines.partial.dag`), so while one of its topics is throttled that hold grows with
the lag, not with ``max_events``.

Retention. A message may be deleted once every consumer that will ever read it has done so. The
consumers that still need a topic are the live ones (running, or draining towards a hand-over),
each from its committed offset, or, before its first commit, from the offsets it was launched
with (a new consumer's join point, a hand-over successor's inputs). A consumer launched later
starts at the topic's latest key, so it needs nothing older. :func:`truncation_points` gives, per
topic, the key *before* which everything may go; the message at that key is kept (it is the last
one the slowest consumer committed, one message of slack that lets Redis trim by ``MINID``).

Examples
--------
A throttled consumer takes one bite of whole messages; the next call sees the rest:

>>> msgs = {"t": [("k1", 40), ("k2", 40), ("k3", 40)]}
>>> a = admit(msgs, {"t": ""}, Limits(max_events=50, lag_high=100, lag_low=20))
>>> a.end, a.lag, a.admitted, a.throttled
({'t': 'k1'}, {'t': 120}, {'t': 40}, {'t': True})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reuse.runtime import SparkRuntimeError

__all__ = ["Limits", "Admission", "Consumer", "throttle", "admit", "truncation_points",
           "default_max_events", "FANOUT_ALLOWANCE"]


@dataclass(frozen=True)
class Limits:
    """A consumer's per-topic read limit and lag watermarks (events).

    Parameters
    ----------
    max_events
        Events per topic a *throttled* consumer admits per micro-batch (``None``: no bound, no
        throttling at all).
    lag_high, lag_low
        Watermarks on the lag: throttled once the lag exceeds ``lag_high``, released once it is
        below ``lag_low``. Defaults: ``2 * max_events`` and ``max_events // 2``.

    Examples
    --------
    >>> Limits(200)
    Limits(max_events=200, lag_high=400, lag_low=100)
    >>> Limits(10, lag_high=5, lag_low=8)
    Traceback (most recent call last):
    ...
    reuse.runtime.SparkRuntimeError: lag watermarks need 0 <= lag_low <= lag_high, got low 8, high 5
    """

    max_events: int | None
    lag_high: int | None = None
    lag_low: int | None = None

    def __post_init__(self) -> None:
        if self.max_events is None:
            return
        if self.max_events < 1:
            raise SparkRuntimeError(f"max_events must be at least 1 (or None), got "
                                    f"{self.max_events}")
        hi = 2 * self.max_events if self.lag_high is None else int(self.lag_high)
        lo = min(self.max_events // 2, hi) if self.lag_low is None else int(self.lag_low)
        if not 0 <= lo <= hi:
            raise SparkRuntimeError(f"lag watermarks need 0 <= lag_low <= lag_high, got low "
                                    f"{lo}, high {hi}")
        object.__setattr__(self, "lag_high", hi)
        object.__setattr__(self, "lag_low", lo)

    @property
    def batch_bound(self) -> int | None:
        """Most events of one topic in one batch (bar a single oversized message)."""
        if self.max_events is None:
            return None
        return max(self.max_events, int(self.lag_high))  # type: ignore[arg-type]

    def options(self) -> dict[str, str]:
        """Reader options (``max_events``, ``lag_high``, ``lag_low``); :meth:`of_options` reads
        them back."""
        if self.max_events is None:
            return {}
        return {"max_events": str(self.max_events), "lag_high": str(self.lag_high),
                "lag_low": str(self.lag_low)}

    @classmethod
    def of_options(cls, options: Mapping[str, str]) -> Limits:
        """Limits from reader options (absent or ``0`` ``max_events``: no bound).

        Examples
        --------
        >>> Limits.of_options({"max_events": "30"}).lag_high
        60
        >>> Limits.of_options({}).max_events is None
        True
        """
        n = int(options.get("max_events", "0") or 0)
        if n <= 0:
            return cls(None)
        hi, lo = options.get("lag_high"), options.get("lag_low")
        return cls(n, None if hi is None else int(hi), None if lo is None else int(lo))


#: Events one source event may become on a topic: SenMLParse emits one event per observed field,
#: and RIoTBench's SenML messages carry 8 (SYS) to 23 (FIT) fields.
FANOUT_ALLOWANCE = 25


def default_max_events(rate: float, trigger_s: float, triggers: int = 10,
                       fanout: int = FANOUT_ALLOWANCE) -> int:
    """The default bite: ``triggers`` triggers' worth of one source, times ``fanout``.

    The limit counts events on the topic, and a topic after a 1:N parse carries up to
    :data:`FANOUT_ALLOWANCE` events per source event, so the default allows for that: with a
    bite of less than one trigger's arrivals a throttled consumer could never catch up. On a
    parse topic the default bite is then about ten triggers of source time; on a source topic
    (one event per source event) it is a memory bound more than a throttle (``lag_high`` is 500
    triggers behind). Set it lower (``reuse run --bus-max-events``) to throttle sooner.

    Examples
    --------
    >>> default_max_events(100.0, 2.0)
    50000
    >>> default_max_events(100.0, 2.0, fanout=1)
    2000
    """
    return max(1, round(rate * trigger_s * triggers * fanout))


def throttle(throttled: bool, lag: int, limits: Limits) -> bool:
    """The next throttle state from the current one and the lag (hysteresis).

    Examples
    --------
    >>> lim = Limits(10, lag_high=100, lag_low=20)
    >>> [throttle(False, 100, lim), throttle(False, 101, lim), throttle(True, 20, lim),
    ...  throttle(True, 19, lim)]
    [False, True, True, False]
    """
    if limits.max_events is None:
        return False
    if lag > limits.lag_high:  # type: ignore[operator]
        return True
    if lag < limits.lag_low:  # type: ignore[operator]
        return False
    return throttled


@dataclass(frozen=True)
class Admission:
    """What one consumer admits into its next micro-batch, per topic.

    ``end``: the last key admitted (the batch reads ``start < key <= end``; ``end == start``:
    nothing); ``lag``: events pending before the batch; ``admitted``: events admitted;
    ``throttled``: the throttle state after this decision.
    """

    end: dict[str, str]
    lag: dict[str, int]
    admitted: dict[str, int]
    throttled: dict[str, bool]
    messages: dict[str, int] = field(default_factory=dict)

    def remaining(self, topic: str) -> int:
        """Events still pending on ``topic`` after this batch."""
        return self.lag[topic] - self.admitted[topic]

    def report(self) -> dict[str, Any]:
        """The JSON the reader writes for the runtime (``<root>/lag/<query>.json``)."""
        return {"lag": max(self.lag.values(), default=0),
                "throttled": any(self.throttled.values()),
                "topics": {t: {"lag": self.lag[t], "admitted": self.admitted[t],
                               "messages": self.messages.get(t, 0),
                               "throttled": self.throttled[t]} for t in self.end}}


def admit(index: Mapping[str, Sequence[tuple[str, int]]], start: Mapping[str, str],
          limits: Limits, throttled: Mapping[str, bool] | None = None) -> Admission:
    """Decide the end offset of a consumer's next batch on each topic.

    Parameters
    ----------
    index
        Per topic, its messages ``(key, events)`` in key order (keys ``<= start`` are ignored).
    start
        Per topic, the last key the consumer has consumed (``""``: none).
    limits
        The read limit and watermarks.
    throttled
        The throttle state per topic before this decision (absent: not throttled).

    Returns
    -------
    Admission
        Per topic: the messages admitted are exactly those with ``start < key <= end``, a
        prefix of the pending ones in key order (none skipped, none reordered); at least one
        when any is pending; while throttled, as many as fit in ``max_events`` events (one,
        if that one alone is larger).

    Examples
    --------
    >>> lim = Limits(50, lag_high=100, lag_low=20)
    >>> admit({"t": [("a", 5), ("b", 200)]}, {"t": "a"}, lim).admitted  # oversized, alone
    {'t': 200}
    >>> admit({"t": [("a", 30), ("b", 30)]}, {"t": ""}, lim).end  # lag 60 <= 100: all of it
    {'t': 'b'}
    """
    was = throttled or {}
    end: dict[str, str] = {}
    lag: dict[str, int] = {}
    admitted: dict[str, int] = {}
    state: dict[str, bool] = {}
    messages: dict[str, int] = {}
    for topic, msgs in index.items():
        lo = start.get(topic, "")
        pending = [(k, n) for k, n in msgs if k > lo]
        total = sum(n for _, n in pending)
        now = throttle(bool(was.get(topic, False)), total, limits)
        cap = limits.max_events if now else None
        take, got = 0, 0
        for _, n in pending:
            if cap is not None and take and got + n > cap:
                break
            take += 1
            got += n
        end[topic] = pending[take - 1][0] if take else lo
        lag[topic], admitted[topic], state[topic], messages[topic] = total, got, now, take
    return Admission(end, lag, admitted, state, messages)


@dataclass(frozen=True)
class Consumer:
    """A consumer the retention must respect.

    ``topics``: what it reads; ``start``: the offsets it was launched with (its join point, or
    a hand-over successor's inputs); ``committed``: the offsets it has committed (``None``:
    never committed yet).
    """

    name: str
    topics: tuple[str, ...]
    start: Mapping[str, str]
    committed: Mapping[str, str] | None = None

    def needs_after(self, topic: str) -> str:
        """The last key of ``topic`` it has consumed for good: it still needs every later one."""
        c = self.committed.get(topic) if self.committed else None
        return self.start.get(topic, "") if c is None else c


def truncation_points(consumers: Iterable[Consumer], latest: Mapping[str, str],
                      ) -> dict[str, str]:
    """Per topic, the key before which every message may be deleted (keys ``<`` it).

    Parameters
    ----------
    consumers
        Every live consumer: running, draining, or just launched (see :class:`Consumer`).
    latest
        The topics to consider, each with its newest key (``""``: empty).

    Returns
    -------
    dict
        ``topic -> key``: the smallest key any consumer of the topic has consumed for good (a
        consumer that never committed counts with its start offset); a topic nobody reads
        keeps its latest message only (a consumer launched later starts there). Topics with
        nothing to delete are left out.

    Examples
    --------
    >>> cs = [Consumer("fast", ("t",), {"t": "a"}, {"t": "d"}),
    ...       Consumer("slow", ("t",), {"t": "b"}, None)]  # launched at b, never committed
    >>> truncation_points(cs, {"t": "e", "u": "c", "v": ""})
    {'t': 'b', 'u': 'c'}
    """
    readers: dict[str, list[Consumer]] = {}
    for c in consumers:
        for t in c.topics:
            readers.setdefault(t, []).append(c)
    out = {}
    for topic, newest in latest.items():
        cs = readers.get(topic)
        floor = min(c.needs_after(topic) for c in cs) if cs else newest
        if floor:
            out[topic] = floor
    return out

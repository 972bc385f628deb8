"""Resend requests: the ingest asks the publisher again for the ``seq`` a broker lost (issue 34).

A broker that keeps nothing on disk (``reuse broker start``) loses, when it is killed, every
message it had acknowledged to the publisher but not yet delivered to the subscriber. The
publisher's rewinds after a reconnect (:data:`~reuse.runtime.dataplane.publish.REWIND_S`)
cover the last seconds before the drop, but a starved subscriber can be further behind than
any fixed window: under four busy loops at nice 15 the keeper test lost ``seq`` 2-4, sent
four seconds before the broker died (2026-11-28).

The ingest is the one that knows exactly what is missing: a hole in a source's ``seq``
(:class:`~reuse.runtime.dataplane.ingest.Ingest`). So, while a hole stays open, it publishes a
request on ``reuse/resend/<source>``, ``{"from": lo, "to": hi}`` (the hole, both ends
included), QoS 1, again every ``resend_s`` until the hole is filled or given up. The
publisher subscribes to ``reuse/resend/#`` and sends those ``seq`` again, regenerated from
the replay's schedule (:class:`Schedule`: the events are a pure function of the source, the
``seq``, ``t0`` and the rate), so it keeps no history and answers for any ``seq`` it has sent.
What arrives twice is dropped by ``seq`` on the ingest (counted ``stale``). The topic is not
under ``sensors/``, so a request is never taken for a source event.

A request is a door like any other: :func:`decode_request` never raises, and a bad one is
counted by the publisher and ignored. One request asks for at most :data:`MAX_RANGE` events.
A publisher that does not answer (a real sensor, or one that has exited) leaves the hole to
the ingest's ``gap_s``: the request only makes a loss recoverable, never a wait longer.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from typing import TypeGuard

from reuse.core.jsondata import loads
from reuse.runtime.dataplane.mqtt import MqttError, topic_of

__all__ = ["RESEND_PREFIX", "RESEND_SUBSCRIPTION", "MAX_RANGE", "resend_topic",
           "encode_request", "decode_request", "Request", "Schedule"]

#: Requests for source ``S`` go on ``reuse/resend/S``.
RESEND_PREFIX = "reuse/resend/"
#: What a publisher subscribes to.
RESEND_SUBSCRIPTION = RESEND_PREFIX + "#"
#: The most events one request may ask for (a longer hole is asked for from its start).
MAX_RANGE = 10_000


def resend_topic(source: str) -> str:
    """The topic a request for ``source``'s events goes on (``source`` is a checked source
    name: :func:`~reuse.runtime.dataplane.mqtt.topic_of` has accepted it).

    >>> resend_topic("SYS")
    'reuse/resend/SYS'
    """
    return RESEND_PREFIX + source


def encode_request(lo: int, hi: int) -> bytes:
    """A request for ``seq`` ``lo`` to ``hi`` (both included), at most :data:`MAX_RANGE`.

    >>> encode_request(2, 4)
    b'{"from":2,"to":4}'
    >>> encode_request(0, 10 ** 6)
    b'{"from":0,"to":9999}'
    """
    return json.dumps({"from": lo, "to": min(hi, lo + MAX_RANGE - 1)},
                      separators=(",", ":")).encode()


@dataclass(frozen=True)
class Request:
    """A well-formed request: the source and the ``seq`` range, both ends included."""

    source: str
    lo: int
    hi: int


def decode_request(topic: str, payload: bytes) -> Request | str:
    """A request, or the one-line reason it is not one (never raises).

    >>> decode_request("reuse/resend/SYS", b'{"from":2,"to":4}')
    Request(source='SYS', lo=2, hi=4)
    >>> decode_request("reuse/resend/SYS", b'{"from":4,"to":2}')
    'reuse/resend/SYS: "from" 4 is after "to" 2'
    >>> decode_request("reuse/resend/a/b", b'{"from":0,"to":0}')
    "topic 'reuse/resend/a/b' is not reuse/resend/<source>"
    """
    # a source name as the topics' own check takes it
    source = topic[len(RESEND_PREFIX):] if topic.startswith(RESEND_PREFIX) else ""
    try:
        topic_of(source)
    except MqttError:
        return f"topic {topic[:80]!r} is not {RESEND_PREFIX}<source>"
    try:
        body = loads(payload)
    except (ValueError, UnicodeDecodeError):
        return f"{topic}: not JSON"
    if not isinstance(body, dict):
        return f"{topic}: not a JSON object"
    lo, hi = body.get("from"), body.get("to")
    if not (_seq(lo) and _seq(hi)):
        return f'{topic}: "from" and "to" must be integers >= 0'
    if lo > hi:
        return f'{topic}: "from" {lo} is after "to" {hi}'
    if hi - lo >= MAX_RANGE:
        return f"{topic}: asks for {hi - lo + 1} events, more than {MAX_RANGE}"
    return Request(source, lo, hi)


def _seq(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 63


@dataclass
class Schedule:
    """A replay's pieces of constant rate: from which ``seq`` on which ``t0`` and rate held,
    so an event sent earlier can be generated again exactly as it was (a rate change moves
    ``t0``: :meth:`~reuse.runtime.dataplane.publish.Publisher.run`).

    >>> s = Schedule()
    >>> s.add(0, 1000, 10.0); s.add(50, 4000, 200.0)
    >>> s.at(49), s.at(50), s.at(-1)
    ((1000, 10.0), (4000, 200.0), None)
    """

    starts: list[int] = field(default_factory=list)
    pieces: list[tuple[int, float]] = field(default_factory=list)

    def add(self, seq: int, t0_ms: int, rate: float) -> None:
        """From ``seq`` on, events are stamped from ``t0_ms`` at ``rate``."""
        if self.starts and self.starts[-1] == seq:  # replaced before any event went out
            self.pieces[-1] = (t0_ms, rate)
        else:
            self.starts.append(seq)
            self.pieces.append((t0_ms, rate))

    def at(self, seq: int) -> tuple[int, float] | None:
        """``(t0_ms, rate)`` that ``seq`` was stamped with (``None``: before the first)."""
        i = bisect.bisect_right(self.starts, seq) - 1
        return self.pieces[i] if i >= 0 else None

"""``reuse publish``: replay a workload's source streams into an MQTT broker, paced as the paper's.

The paper's replay sent each source stream at a fixed rate (10 events/s per source). Here every
source stream of a workload (the streams the engine would replay for its dataflows:
:func:`workload_streams`) is published on ``sensors/<source>``
(:func:`~reuse.runtime.dataplane.mqtt.topic_of`), one message per event, the message being the
engine's own generated event for that ``seq``
(:func:`~reuse.runtime.common.execution.source_event`, encoded by
:func:`~reuse.runtime.dataplane.mqtt.encode_message`). So the events, their order and their
content are the generated replay's for the publisher's ``t0`` and rate.

Pacing: event ``seq`` of every stream is due at ``m0 + (seq - start) / rate`` on the monotonic
clock (``m0``: when publishing began), and each stream's event ``seq`` is sent at its due time,
in stream order, never earlier. Times are computed from ``m0``, not from the previous send, so
a late send (a busy machine) is followed by a catch-up burst and the rate does not drift.
Messages go with QoS 1: a message counts as sent once the broker acknowledged it.

**A broker that dies and comes back loses nothing (issue 34).** The client reconnects by
itself (within :data:`RECONNECT_MAX_S`) and sends again what the broker had not acknowledged.
What it had acknowledged but not yet delivered died with it (``reuse broker start`` keeps no
persistence), so on every reconnect the publisher also sends again the messages sent since
:data:`REWIND_S` seconds before the connection dropped, as they were first sent; and again
twice in the next seconds (:data:`REWIND_AT_S`), because such a broker also drops what the
publisher sends before a subscriber has subscribed again. A subscriber that has them already
drops them by ``seq`` (the ingest counts them ``stale``): at least once from here, exactly
once on the bus, as long as the subscriber is back within the last rewind and was less than
:data:`REWIND_S` behind the publisher when the broker died.

A subscriber further behind than that (the keeper test under load lost ``seq`` 2-4, sent four
seconds before the broker died, 2026-11-28) asks for what it misses: the publisher answers the
ingest's resend requests (:mod:`reuse.runtime.dataplane.resend`) by generating those events
again from its schedule, for as long as it is connected (until :meth:`Publisher.close`). The
rewinds stay for the one loss a request cannot name: the last events before the drop, with
nothing after them yet to show the hole.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reuse.runtime.common.execution import source_event, task_kind
from reuse.runtime.common.planners import source_stream
from reuse.runtime.dataplane.mqtt import (
    BrokerUrl,
    MqttError,
    connect_error,
    encode_message,
    parse_broker_url,
    topic_of,
)
from reuse.runtime.dataplane.resend import RESEND_SUBSCRIPTION, Schedule, decode_request

__all__ = ["Stream", "workload_streams", "select_streams", "message", "PublishReport",
           "Publisher", "parse_schedule"]


@dataclass(frozen=True)
class Stream:
    """A source stream: its name (the events' ``src``, the topic's last level) and its source
    type (which data file it replays, as :func:`~reuse.runtime.common.execution.source_event`
    takes it)."""

    name: str
    type: str

    @property
    def topic(self) -> str:
        return topic_of(self.name)


def workload_streams(workload: str, *, folder: str | Path | None = None
                     ) -> tuple[Stream, ...]:
    """The source streams of a workload's dataflows, sorted by name, named as the engine names
    them (:func:`~reuse.runtime.common.planners.source_stream`).

    Raises
    ------
    ReuseError
        The workload is unknown (the registry's one-line error).

    Examples
    --------
    >>> [s.name for s in workload_streams("figure1")]
    ['GRID', 'SYS']
    """
    from reuse.workloads.registry import load_workload

    flows = load_workload(workload, folder=folder)
    return tuple(sorted({Stream(source_stream(t.type, t.config), t.type) for f in flows
                         for t in f.tasks if task_kind(t.type, t.config) == "source"},
                        key=lambda s: s.name))


def select_streams(streams: Sequence[Stream], names: Sequence[str] | None) -> tuple[Stream, ...]:
    """The streams named (in the order given), or all of them for ``None``.

    Raises
    ------
    MqttError
        A name that is not one of ``streams``, a repeated name, or an empty selection.

    Examples
    --------
    >>> s = (Stream("FIT", "FIT"), Stream("SYS", "SYS"))
    >>> [x.name for x in select_streams(s, ["SYS"])]
    ['SYS']
    >>> select_streams(s, ["GRID"])
    Traceback (most recent call last):
    ...
    reuse.runtime.dataplane.mqtt.MqttError: unknown source 'GRID' (the workload's sources: FIT, SYS)
    """
    if names is None:
        chosen = tuple(streams)
    else:
        by_name = {s.name: s for s in streams}
        for n in names:
            if n not in by_name:
                raise MqttError(f"unknown source {n!r} (the workload's sources: "
                                f"{', '.join(by_name)})")
        if len(set(names)) != len(names):
            raise MqttError(f"a source is named twice in {', '.join(names)}")
        chosen = tuple(by_name[n] for n in names)
    if not chosen:
        raise MqttError("no source stream to publish")
    return chosen


def message(stream: Stream, seq: int, t0_ms: int, rate: float, data_dir: str = "") -> bytes:
    """The MQTT payload of ``stream``'s event ``seq``: the generated event, encoded.

    Examples
    --------
    >>> message(Stream("S1", "opmw-source"), 3, 1000, 10.0)
    b'{"src":"S1","seq":3,"ts":1300,"payload":"S1:3"}'
    """
    return encode_message(source_event(stream.name, stream.type, seq, t0_ms, rate, data_dir))


def parse_schedule(text: str) -> list[tuple[float, float]]:
    """``RATE:SECONDS[,RATE:SECONDS...]`` (``reuse publish --schedule``): the rates a sensor
    changes through, and for how long each.

    Examples
    --------
    >>> parse_schedule("10:30, 200:30,10:30")
    [(10.0, 30.0), (200.0, 30.0), (10.0, 30.0)]
    >>> parse_schedule("10:x")
    Traceback (most recent call last):
    ...
    reuse.runtime.dataplane.mqtt.MqttError: --schedule: '10:x' is not RATE:SECONDS with a positive rate and seconds >= 0
    """
    out: list[tuple[float, float]] = []
    for part in (p.strip() for p in text.split(",")):
        try:
            rate, seconds = (float(x) for x in part.split(":"))
        except ValueError:
            rate = seconds = float("nan")
        if not (rate > 0 and seconds >= 0 and seconds < float("inf")):
            raise MqttError(f"--schedule: {part!r} is not RATE:SECONDS with a positive rate "
                            f"and seconds >= 0")
        out.append((rate, seconds))
    return out


@dataclass(frozen=True)
class PublishReport:
    """What a publisher sent.

    Attributes
    ----------
    sent
        Messages the broker acknowledged, per topic.
    rate
        The target rate per source (messages/s).
    elapsed_s
        Monotonic seconds from the first send to the last.
    max_late_ms
        The most any send started after its due time.
    t0_ms, start
        The replay's ``t0`` (events' ``ts`` is ``t0 + seq * 1000 / rate``) and first ``seq``.
    unacked
        Messages sent that the broker did not acknowledge (0 unless it went away).
    resent
        Events sent again on a subscriber's resend request
        (:mod:`reuse.runtime.dataplane.resend`).
    """

    sent: dict[str, int]
    rate: float
    elapsed_s: float
    max_late_ms: float
    t0_ms: int
    start: int = 0
    unacked: int = 0
    broker: str = field(default="")
    resent: int = 0

    @property
    def achieved(self) -> float:
        """Achieved messages/s per source: the intervals between the first and last send of
        the stream that sent most (``0.0`` with fewer than two)."""
        n = max(self.sent.values(), default=0)
        return (n - 1) / self.elapsed_s if n > 1 and self.elapsed_s > 0 else 0.0

    def summary(self) -> str:
        """One line: messages per topic and the achieved rate.

        Examples
        --------
        >>> PublishReport({"sensors/SYS": 11}, 10.0, 1.0, 0.4, 0).summary()
        'sent 11 messages: sensors/SYS 11; 10.00 msg/s per source (target 10), latest send 0.4 ms behind schedule, t0 0'
        """
        per = ", ".join(f"{t} {n}" for t, n in self.sent.items())
        line = (f"sent {sum(self.sent.values())} messages: {per}; {self.achieved:.2f} msg/s per "
                f"source (target {self.rate:g}), latest send {self.max_late_ms:.1f} ms behind "
                f"schedule, t0 {self.t0_ms}")
        if self.resent:
            line += f"; {self.resent} sent again on a subscriber's request"
        return line + (f"; {self.unacked} not acknowledged by the broker" if self.unacked else "")


#: Seconds of messages sent again after a reconnect (see the module docstring).
REWIND_S = 2.0
#: When, after a reconnect, the messages since :data:`REWIND_S` before the drop are sent again:
#: at once, and twice more while the subscribers may still be reconnecting (a broker that
#: keeps nothing drops what arrives before a subscriber has subscribed again; a busy machine
#: lost 68 messages that way with one rewind).
REWIND_AT_S = (0.0, 1.5, 3.0)
#: The longest wait between two attempts to reconnect to a broker that went away.
RECONNECT_MAX_S = 2


def _positive_rate(rate: float) -> float:
    """``rate`` as a float, or the one-line error of a rate that is not positive."""
    if not rate > 0:
        raise MqttError(f"the rate must be positive, got {rate:g} messages/s")
    return float(rate)


class Publisher:
    """Publish source streams to a broker at ``rate`` messages/s per stream (QoS 1).

    Use :meth:`run` for a number of seconds (or until :meth:`halt` or an interrupt), then
    :meth:`close`, which waits for the broker's acknowledgements and returns the
    :class:`PublishReport`.

    Parameters
    ----------
    broker
        ``mqtt://host:port``.
    streams
        What to publish, each on ``sensors/<name>``.
    rate
        Messages/s per stream.
    data_dir
        The RIoTBench data folder (empty: the project's).
    start
        The first ``seq`` (a replay continued where another stopped).
    clock, sleep
        The monotonic clock and the sleep (tests may replace them).
    on_send
        Called once per ``seq`` after its message on every stream was handed to the client, with
        ``(seq, due, started)``: its due time and when sending it began, on ``clock``
        (``benchmarks/broker_rate.py`` keeps its rate per window and the late sends with it).
    """

    def __init__(self, broker: str | BrokerUrl, streams: Sequence[Stream], *, rate: float = 10.0,
                 data_dir: str = "", start: int = 0,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 on_send: Callable[[int, float, float], None] | None = None) -> None:
        rate = _positive_rate(rate)
        if start < 0:
            raise MqttError(f"the first seq must be >= 0, got {start}")
        self.broker = parse_broker_url(broker)
        self.streams = tuple(streams)
        self.topics = [s.topic for s in self.streams]  # checks the names
        self.rate = rate
        self.data_dir = data_dir
        self.start = start
        self.clock, self.sleep = clock, sleep
        self.on_send = on_send
        self.t0_ms = 0
        self._next = start
        self._from = start  # the seq the current schedule (rate, t0) starts at
        self._m0 = 0.0
        self._first: float | None = None
        self._last = 0.0
        self._late = 0.0
        self._halt = threading.Event()
        self._waiting: deque[tuple[str, Any]] = deque()  # (topic, message info) not yet acked
        self._sent = dict.fromkeys(self.topics, 0)
        self._client: Any = None
        # (when sent on the monotonic clock, topic, payload) over the last REWIND_S seconds
        self._recent: deque[tuple[float, str, bytes]] = deque()
        self._connects = 0  # connections made (paho's thread counts them)
        self._dropped_at: float | None = None  # when the connection last dropped
        self._rewound_connects = 1
        # the rewinds still due after the last reconnect: (when, the first send time to resend)
        self._rewinds: list[tuple[float, float]] = []
        self.republished = 0  # messages sent again after a reconnect
        self._acked: set[int] = set()  # message ids acknowledged (paho's thread adds them)
        self._schedule = Schedule()  # (seq, t0, rate) pieces: what a resend regenerates
        self.resent = 0  # events sent again on a subscriber's request
        self.bad_requests = 0  # resend requests that were not well formed (ignored)
        self.last_bad_request = ""
        self._asked_at = 0.0  # when the last request arrived (time.monotonic)

    def connect(self, client: Any = None) -> Publisher:
        """Connect to the broker (a one-line :class:`MqttError` when it is down); ``client``:
        a stand-in with paho's ``publish`` instead (tests)."""
        if client is not None:
            self._client = client
            return self
        import paho.mqtt.client as mqtt

        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, clean_session=True)
        client.max_inflight_messages_set(1000)
        client.reconnect_delay_set(1, RECONNECT_MAX_S)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_publish = self._on_publish
        client.on_message = self._on_request
        self.broker.authenticate(client)
        try:
            client.connect(self.broker.host, self.broker.port, keepalive=30)
        except OSError as exc:
            raise connect_error(self.broker, exc) from None
        client.loop_start()
        self._client = client
        return self

    def _on_connect(self, c: Any, userdata: Any, flags: Any, reason: Any, props: Any) -> None:
        if not reason.is_failure:
            self._connects += 1
            c.subscribe(RESEND_SUBSCRIPTION, qos=1)  # again on each reconnect

    def _on_disconnect(self, c: Any, userdata: Any, flags: Any, reason: Any,
                       props: Any) -> None:
        if self._dropped_at is None:
            self._dropped_at = self.clock()

    def _on_publish(self, c: Any, userdata: Any, mid: int, reason: Any, props: Any) -> None:
        self._acked.add(mid)

    def _on_request(self, c: Any, userdata: Any, msg: Any) -> None:
        """A subscriber's resend request (paho's thread): send again the events asked for
        that this publisher has sent, of its own streams; a bad request is counted."""
        self._asked_at = time.monotonic()
        req = decode_request(msg.topic, msg.payload)
        if isinstance(req, str):
            self.bad_requests += 1
            self.last_bad_request = req
            return
        for s, topic in zip(self.streams, self.topics, strict=True):
            if s.name != req.source:
                continue
            for seq in range(max(req.lo, self.start), min(req.hi, self._next - 1) + 1):
                stamp = self._schedule.at(seq)
                if stamp is not None:
                    c.publish(topic, message(s, seq, stamp[0], stamp[1], self.data_dir), qos=1)
                    self.resent += 1

    def _published(self, info: Any) -> bool:
        """Whether the broker acknowledged the message. One published while the connection
        was down is sent on the reconnect, but paho's info keeps the "not connected" code and
        never says so: its acknowledgement is seen by its id (``on_publish``) instead."""
        try:
            return bool(info.is_published())
        except RuntimeError:
            if info.mid in self._acked:
                self._acked.discard(info.mid)
                return True
            return False

    def _rewind(self) -> None:
        """After a reconnect: send again the messages sent since :data:`REWIND_S` seconds
        before the connection dropped, at each of :data:`REWIND_AT_S` after the reconnect (see
        the module docstring)."""
        now = self.clock()
        connects = self._connects
        if connects > self._rewound_connects:
            self._rewound_connects = connects
            dropped = self._dropped_at if self._dropped_at is not None else now
            self._dropped_at = None
            self._rewinds = [(now + at, dropped - REWIND_S) for at in REWIND_AT_S]
        while self._rewinds and self._rewinds[0][0] <= now:
            _, since = self._rewinds.pop(0)
            for sent_at, topic, payload in list(self._recent):
                if sent_at >= since:
                    self._client.publish(topic, payload, qos=1)
                    self.republished += 1

    def halt(self) -> None:
        """Make :meth:`run` return after its current send (from another thread)."""
        self._halt.set()

    def run(self, seconds: float | None = None, *, rate: float | None = None) -> None:
        """Publish ``round(rate * seconds)`` events per stream (``None``: until :meth:`halt`
        or an interrupt), each at its due time.

        ``rate``: change the rate from this call on (a sensor whose rate changes: issue 36).
        The schedule starts again from the next ``seq``, due now, and so do the events'
        timestamps (``ts``: ``t0`` is moved so that the next ``seq`` is stamped now), so ``ts``
        stays each event's own send time and never goes back."""
        if self._client is None:
            self.connect()
        if rate is not None:
            rate = _positive_rate(rate)
            if self._first is None:
                self.rate = rate
            elif rate != self.rate:
                last_ms = self.t0_ms + (self._next - 1) * 1000 / self.rate
                self.rate = rate
                self._anchor(self._next, after_ms=last_ms)
        end = None if seconds is None else self._next + max(0, round(self.rate * seconds))
        if self._first is None:
            self._anchor(self.start)
        while (end is None or self._next < end) and not self._halt.is_set():
            seq = self._next
            due = self._m0 + (seq - self._from) / self.rate
            now = self.clock()
            if now < due:
                self.sleep(due - now)
                now = self.clock()
            self._late = max(self._late, now - due)
            if self._first is None:
                self._first = now
            self._last = now
            self._rewind()
            for s, topic in zip(self.streams, self.topics, strict=True):
                payload = message(s, seq, self.t0_ms, self.rate, self.data_dir)
                info = self._client.publish(topic, payload, qos=1)
                self._waiting.append((topic, info))
                self._recent.append((now, topic, payload))
            # kept from REWIND_S before the last drop while a reconnect or a rewind is pending
            keep = now - REWIND_S
            if self._dropped_at is not None:
                keep = min(keep, self._dropped_at - REWIND_S)
            if self._rewinds:
                keep = min(keep, self._rewinds[0][1])
            while self._recent and self._recent[0][0] < keep:
                self._recent.popleft()
            self._settle()
            self._next = seq + 1
            if self.on_send is not None:
                self.on_send(seq, due, now)

    def _anchor(self, seq: int, after_ms: float | None = None) -> None:
        """Make ``seq`` due now: ``t0`` is when seq 0 would have been at the current rate.
        ``after_ms``: the previous event's stamp, which the new one must not go below."""
        now_ms = round(time.time() * 1000)
        if after_ms is not None:
            now_ms = max(now_ms, int(after_ms) + 1)
        self._from = seq
        self.t0_ms = now_ms - round(seq * 1000 / self.rate)
        self._m0 = self.clock()
        self._schedule.add(seq, self.t0_ms, self.rate)

    def _settle(self) -> None:
        """Count the acknowledged messages at the head of the queue (the broker acknowledges
        in order), so the queue holds only what is in flight."""
        while self._waiting and self._published(self._waiting[0][1]):
            self._sent[self._waiting.popleft()[0]] += 1

    def wait_acked(self, timeout_s: float = 10.0) -> bool:
        """Wait (up to ``timeout_s``) until the broker acknowledged everything sent so far;
        whether it did."""
        deadline = time.monotonic() + timeout_s
        self._settle()
        while self._waiting and time.monotonic() < deadline:
            time.sleep(0.01)
            self._settle()
        return not self._waiting

    def close(self, timeout_s: float = 10.0, *, linger_s: float = 0.0) -> PublishReport:
        """Wait (up to ``timeout_s``) for the broker to acknowledge what was sent and for the
        rewinds still due after a reconnect (:data:`REWIND_AT_S`), disconnect, and report.

        ``linger_s``: before disconnecting, keep answering resend requests until none has come
        for ``linger_s`` seconds, or until :meth:`halt` (a subscriber that is far behind finds
        its holes late; a publisher gone by then cannot fill them)."""
        self._halt.clear()  # run() has returned: halt() now ends the lingering
        deadline = time.monotonic() + timeout_s
        self._settle()
        while (self._waiting or self._rewinds or self._dropped_at is not None
               or self._connects > self._rewound_connects) and time.monotonic() < deadline:
            time.sleep(0.01)
            if self._client is not None:
                self._rewind()
            self._settle()
        quiet_since = time.monotonic()
        while linger_s > 0 and not self._halt.is_set():
            quiet_since = max(quiet_since, self._asked_at)
            if time.monotonic() - quiet_since >= linger_s:
                break
            time.sleep(0.02)
        if self._client is not None:
            self._client.disconnect()
            if hasattr(self._client, "loop_stop"):
                self._client.loop_stop()
            self._client = None
        unacked = 0
        for topic, info in self._waiting:  # acknowledged out of order, or never
            if self._published(info):
                self._sent[topic] += 1
            else:
                unacked += 1
        self._waiting.clear()
        return PublishReport(dict(self._sent), self.rate,
                             (self._last - self._first) if self._first is not None else 0.0,
                             self._late * 1000, self.t0_ms, self.start, unacked,
                             str(self.broker), self.resent)

"""The ingest: a broker's sensor topics appended, in order, to the stream bus.

:class:`Ingest` subscribes to ``sensors/#`` and appends each topic's messages to the stream bus
(:mod:`reuse.runtime.dataplane.bus`) on the topic the engines' own source replay writes
(``src:<source>``), as frames (:func:`~reuse.runtime.dataplane.frames.encode_frame`), where
they get offsets. What a message is, and how one is decoded, is
:mod:`reuse.runtime.dataplane.mqtt`'s (pure data); this module is the part with a client,
threads and a clock.

**Nothing is dropped silently.** :func:`~reuse.runtime.dataplane.mqtt.decode_message` returns
a message or a ``Malformed`` that says why; the ingest counts malformed messages per MQTT topic
(:class:`TopicCounts`) and never appends them. A message whose ``seq`` is on the bus already or
waiting for the next frame (a QoS 1 redelivery, a publisher restarted at 0 or sending its last
seconds again) is counted as ``stale`` and not appended twice.

**Order is restored, not assumed (issue 34).** MQTT keeps a session's order, but not across a
reconnect: after a broker's restart a publisher's resent messages and its new ones interleave.
The bus's frames promise increasing ``seq``, so each flush writes a source's buffered messages
sorted, up to the first hole; what lies past a hole waits (at most ``gap_s``) for the hole to be
filled by a late message. While it waits, the ingest asks the publisher for the hole's ``seq``
again every ``resend_s`` (:mod:`reuse.runtime.dataplane.resend`: a broker killed without
persistence loses what it had acknowledged but not delivered). A hole still open after
``gap_s`` (or at :meth:`Ingest.stop`) is given up: the messages past it are written and its
``seq`` counted ``missed``.

paho-mqtt is imported only when an :class:`Ingest` starts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from reuse.runtime.dataplane.bus import Bus
from reuse.runtime.dataplane.frames import encode_frame
from reuse.runtime.dataplane.mqtt import (
    SUBSCRIPTION,
    BrokerUrl,
    Malformed,
    Message,
    MqttError,
    bus_topic,
    connect_error,
    decode_message,
    parse_broker_url,
)
from reuse.runtime.dataplane.resend import encode_request, resend_topic

__all__ = ["TopicCounts", "Ingest"]


@dataclass(frozen=True)
class TopicCounts:
    """What the ingest did with one MQTT topic's messages.

    Attributes
    ----------
    received
        Messages that arrived (every one is counted in exactly one of the next three).
    appended
        Well-formed messages appended to the bus (including those still buffered for the next
        frame: see ``pending``).
    malformed
        Messages :func:`decode_message` rejected; ``last_error`` says why the last one was.
    stale
        Well-formed messages whose ``seq`` was on the bus already, or buffered already.
    missed
        ``seq`` skipped between consecutive messages written to the bus (lost before the
        broker, or never published), counted once the hole is given up.
    pending
        Appended messages not yet written as a frame (0 after a final :meth:`Ingest.flush`).
    last_seq
        The largest ``seq`` appended (``-1``: none).
    """

    received: int = 0
    appended: int = 0
    malformed: int = 0
    stale: int = 0
    missed: int = 0
    pending: int = 0
    last_seq: int = -1
    last_error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Ingest:
    """Subscribe to ``sensors/#`` and append each topic's messages, in arrival order, to a bus.

    Every ``flush_s`` seconds (and on :meth:`flush` and :meth:`stop`) the well-formed messages
    received since the last flush are appended as one frame per source: bus topic
    ``src:<source>`` (:func:`bus_topic`), key ``<launch:06d>-<n:09d>`` for the ``n``-th flush
    (the engines' producer keys), events the messages' JSON texts, high-water mark the last
    ``seq`` of the frame. Malformed and stale messages are counted per MQTT topic
    (:meth:`counts`), never appended.

    Parameters
    ----------
    bus
        Where to append (:class:`~reuse.runtime.dataplane.bus.FileBus` or ``RedisBus``).
    broker
        ``mqtt://host:port`` (or a :class:`BrokerUrl`).
    launch
        The key prefix: an ingest that takes over the same bus topics must use a larger one,
        so its frames sort after its predecessor's.
    flush_s
        Seconds between frames.
    client_id
        The MQTT client id (empty: the broker makes one).
    qos
        The subscription's QoS (1: the broker redelivers what was not acknowledged).
    sources
        The sources to append (``None``: every ``sensors/<source>``); a message on another
        source's topic is counted malformed.
    persistent
        Keep the MQTT session when disconnected (``clean_session=False``, with a fixed
        ``client_id``): the broker queues the QoS 1 messages published while this ingest is
        gone, for the next ingest with the same id. A message is acknowledged only once it is
        on the bus (or refused), so one in this ingest's buffer when its process dies is
        delivered again to the next (issue 32: a broker-fed run resumed after its driver's
        death loses nothing).
    floor
        Take over topics an earlier ingest appended to: ``floor(source)`` is the last ``seq``
        of ``source`` already on the bus, read when the source's first message arrives, so
        what the broker delivers again is counted stale (never appended twice).
    gap_s
        How long messages past a hole in a source's ``seq`` wait for it to be filled (see the
        module docstring). Long enough for a starved publisher to answer the resend requests
        (beside four busy loops at nice 15 one answered 4.3 s after the request, 2026-11-28,
        after a 3 s wait had given the hole up); it delays only what lies past a hole.
    resend_s
        How often an open hole is asked for again (``0``: never); :attr:`requests` counts the
        requests sent.
    first_seq
        Where every source's stream begins, when the ingest is started before its publisher:
        the ``seq`` before a source's first message that arrives are a hole too (asked for,
        counted ``missed`` if given up). ``None`` (the default): a source's stream begins at
        its first message that arrives (an ingest that joins a live stream).

    Examples
    --------
    Without a broker, :meth:`receive` is what the MQTT callback calls:

    >>> import tempfile
    >>> from reuse.runtime.dataplane.bus import FileBus
    >>> ing = Ingest(FileBus(tempfile.mkdtemp()), "mqtt://127.0.0.1:1883")
    >>> ing.receive("sensors/S1", b'{"src":"S1","seq":0,"ts":0,"payload":"S1:0"}').ok
    True
    >>> ing.receive("sensors/S1", b"{").ok
    False
    >>> ing.flush(), ing.counts()["sensors/S1"].malformed, ing.bus.size("src:S1")
    (1, 1, 1)

    Out of order: 3 waits for 2, which comes late and is written in its place:

    >>> m = lambda q: f'{{"src":"S1","seq":{q},"ts":0,"payload":""}}'.encode()
    >>> _ = ing.receive("sensors/S1", m(1)), ing.receive("sensors/S1", m(3))
    >>> ing.flush(), ing.receive("sensors/S1", m(2)).ok, ing.flush()
    (1, True, 2)
    """

    def __init__(self, bus: Bus, broker: str | BrokerUrl, *, launch: int = 1,
                 flush_s: float = 0.2, client_id: str = "", qos: int = 1,
                 sources: Collection[str] | None = None, persistent: bool = False,
                 floor: Callable[[str], int] | None = None, gap_s: float = 10.0,
                 resend_s: float = 0.5, first_seq: int | None = None) -> None:
        if persistent and not client_id:
            raise MqttError("a persistent MQTT session needs a client id")
        if not 0 <= launch < 10 ** 6:
            raise MqttError(f"launch {launch} is not in 0..999999")
        if flush_s <= 0:
            raise MqttError(f"flush_s must be positive, got {flush_s}")
        self.bus = bus
        self.broker = parse_broker_url(broker)
        self.launch = launch
        self.flush_s = flush_s
        self.client_id = client_id
        self.qos = qos
        self.sources = None if sources is None else frozenset(sources)
        self.persistent, self.floor = persistent, floor
        self.gap_s, self.resend_s = gap_s, resend_s
        self.requests = 0  # resend requests published
        self._holes: dict[str, tuple[int, int]] = {}  # source -> its open hole (both ends)
        self._asked: dict[str, float] = {}  # source -> when its hole was last asked for
        self._lock = threading.Lock()  # buffers and counts
        self._flush_lock = threading.Lock()  # one flush at a time, so frames keep their order
        # source -> seq -> (message, its MQTT id: acked once written)
        self._pending: dict[str, dict[int, tuple[Message, int | None]]] = {}
        self._written: dict[str, int] = {}  # source -> the last seq on the bus
        # the seq before every source's first (None: a source starts where it is joined)
        self._before_first = None if first_seq is None else first_seq - 1
        self._hole_since: dict[str, float] = {}  # source -> when its open hole was first seen
        self._counts: dict[str, dict[str, Any]] = {}
        self._flushes = 0
        self._client: Any = None
        self._subscribed = threading.Event()
        self._stopping = threading.Event()
        self._flusher: threading.Thread | None = None
        self._failure: BaseException | None = None

    # --- the data path (no broker needed) -----------------------------------------------------

    def _count(self, topic: str) -> dict[str, Any]:
        c = self._counts.get(topic)
        if c is None:
            c = self._counts[topic] = TopicCounts().to_dict()
        return c

    def _floor(self, got: Message | Malformed) -> int | None:
        """On a resumed ingest, the last ``seq`` the bus holds of a source seen for the first
        time (read outside the lock: it is a bus call)."""
        if self.floor is None or not isinstance(got, Message) or got.topic in self._counts:
            return None
        return self.floor(got.source)

    def receive(self, topic: str, payload: bytes, mid: int | None = None,
                ) -> Message | Malformed:
        """Take one message (the MQTT callback's body, ``mid`` its MQTT id): decode it, count
        it, and buffer it for the next frame when it is well formed and its ``seq`` is neither
        on the bus nor buffered already. A message not buffered is acknowledged at once; a
        buffered one once its frame is on the bus (:meth:`flush`)."""
        got = decode_message(topic, payload, self.sources)
        floor = self._floor(got)
        keep = False
        with self._lock:
            fresh = topic not in self._counts
            c = self._count(topic)
            if fresh and floor is not None and isinstance(got, Message):
                c["last_seq"] = floor
                self._written.setdefault(got.source, floor)
            c["received"] += 1
            if not isinstance(got, Message):
                c["malformed"] += 1
                c["last_error"] = got.reason
            else:
                held = self._pending.setdefault(got.source, {})
                if got.seq <= self._written.get(got.source, -1) or got.seq in held:
                    c["stale"] += 1
                else:
                    held[got.seq] = (got, mid)
                    c["last_seq"] = max(c["last_seq"], got.seq)
                    c["appended"] += 1
                    c["pending"] += 1
                    keep = True
        if not keep and mid is not None:
            self._ack([mid])
        return got

    def _ack(self, mids: list[int]) -> None:
        client = self._client
        if client is not None:
            for mid in mids:
                client.ack(mid, self.qos)

    def _take(self, source: str, final: bool, now: float) -> list[tuple[Message, int | None]]:
        """The buffered messages of ``source`` to write now, in ``seq`` order: up to the first
        hole, or all of them once the hole is ``gap_s`` old or ``final`` (under the lock). The
        source's last written ``seq`` moves to theirs now, before they are written, so a copy
        arriving meanwhile is stale (:meth:`flush` moves it back if the write fails)."""
        self._holes.pop(source, None)
        held = self._pending.get(source)
        if not held:
            return []
        seqs = sorted(held)
        written = self._written.get(source, self._before_first)
        expect = seqs[0] if written is None else written + 1
        upto = 0
        while upto < len(seqs) and seqs[upto] == expect:
            upto, expect = upto + 1, expect + 1
        if upto < len(seqs):  # a hole at expect
            since = self._hole_since.setdefault(source, now)
            if final or now - since >= self.gap_s:
                upto = len(seqs)
                self._hole_since.pop(source, None)
            else:
                self._holes[source] = (expect, seqs[upto] - 1)
        else:
            self._hole_since.pop(source, None)
        if upto:
            self._written[source] = seqs[upto - 1]
        return [held.pop(q) for q in seqs[:upto]]

    def flush(self, *, final: bool = False) -> int:
        """Append what can be written now, one frame per source (see the module docstring on
        holes; ``final``: give every hole up); returns the number of messages appended. A bus
        that fails keeps the messages for the next flush."""
        with self._flush_lock:
            now = time.monotonic()
            with self._lock:
                before = dict(self._written)
                batch = {src: got for src in list(self._pending)
                         if (got := self._take(src, final, now))}
                holes = dict(self._holes)
            self._ask(holes, now)
            if not batch:
                return 0
            self._flushes += 1
            key = f"{self.launch:06d}-{self._flushes:09d}"
            done = 0
            try:
                for source, msgs in list(batch.items()):
                    self.bus.publish(bus_topic(source), key,
                                     encode_frame(msgs[-1][0].seq, [m.text for m, _ in msgs]))
                    with self._lock:
                        c = self._count(msgs[0][0].topic)
                        c["pending"] -= len(msgs)
                        written = before.get(source, self._before_first)
                        first = msgs[0][0].seq if written is None else written + 1
                        c["missed"] += msgs[-1][0].seq - first + 1 - len(msgs)
                    done += len(msgs)
                    self._ack([mid for _, mid in msgs if mid is not None])  # may be forgotten
                    del batch[source]
            except BaseException:
                with self._lock:  # put back what was not written
                    for source, msgs in batch.items():
                        held = self._pending.setdefault(source, {})
                        for m, mid in msgs:
                            held[m.seq] = (m, mid)
                        if source in before:
                            self._written[source] = before[source]
                        else:
                            self._written.pop(source, None)
                raise
            return done

    def _ask(self, holes: dict[str, tuple[int, int]], now: float) -> None:
        """Publish a resend request for each open hole not asked for in ``resend_s``."""
        client = self._client
        if client is None or self.resend_s <= 0:
            return
        for source, (lo, hi) in holes.items():
            if now - self._asked.get(source, -1e18) >= self.resend_s:
                self._asked[source] = now
                client.publish(resend_topic(source), encode_request(lo, hi), qos=1)
                self.requests += 1

    def counts(self) -> dict[str, TopicCounts]:
        """Per MQTT topic, what arrived and what became of it (a snapshot)."""
        with self._lock:
            return {t: TopicCounts(**c) for t, c in sorted(self._counts.items())}

    # --- the broker side ------------------------------------------------------------------------

    def start(self, timeout_s: float = 10.0) -> Ingest:
        """Connect, subscribe to ``sensors/#`` and start appending; returns once subscribed.

        Raises
        ------
        MqttError
            The broker is down or refuses the connection, or does not grant the subscription
            within ``timeout_s``.
        """
        import paho.mqtt.client as mqtt

        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=self.client_id,
                             clean_session=not self.persistent, manual_ack=True)
        # a broker that died and was started again is found within 2 s (paho's default
        # backs off to 2 minutes); on_connect subscribes again (issue 34)
        client.reconnect_delay_set(1, 2)

        refused: list[str] = []

        def on_connect(c: Any, userdata: Any, flags: Any, reason: Any, props: Any) -> None:
            if not reason.is_failure:  # also on a reconnect: subscribe again
                c.subscribe(SUBSCRIPTION, qos=self.qos)
            elif not self._subscribed.is_set():  # refused (a wrong or missing password)
                refused.append(str(reason))
                self._subscribed.set()

        def on_subscribe(c: Any, userdata: Any, mid: Any, reasons: Any, props: Any) -> None:
            if all(not r.is_failure for r in reasons):
                self._subscribed.set()

        def on_message(c: Any, userdata: Any, msg: Any) -> None:
            self.receive(msg.topic, msg.payload, msg.mid if msg.qos > 0 else None)

        client.on_connect = on_connect
        client.on_subscribe = on_subscribe
        client.on_message = on_message
        self.broker.authenticate(client)
        try:
            client.connect(self.broker.host, self.broker.port, keepalive=30)
        except OSError as exc:
            raise connect_error(self.broker, exc) from None
        self._client = client
        client.loop_start()
        if not self._subscribed.wait(timeout_s) or refused:
            self._disconnect()
            self._subscribed.clear()
            if refused:
                raise MqttError(f"the broker at {self.broker} refused the connection: "
                                f"{refused[0]} (a user and password in the URL: "
                                "mqtt://user:password@host:port)")
            raise MqttError(f"the broker at {self.broker} did not grant a subscription to "
                            f"{SUBSCRIPTION} within {timeout_s:g} s")
        self._flusher = threading.Thread(target=self._flush_loop, name="mqtt-ingest-flush",
                                         daemon=True)
        self._flusher.start()
        return self

    def _flush_loop(self) -> None:
        while not self._stopping.wait(self.flush_s):
            try:
                self.flush()
            except BaseException as exc:  # noqa: BLE001 - reported by stop()
                self._failure = exc
                return

    def _forget(self) -> None:
        """End this client id's persistent session: connect once with a clean session."""
        import paho.mqtt.client as mqtt

        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=self.client_id,
                             clean_session=True)
        self.broker.authenticate(client)
        try:
            client.connect(self.broker.host, self.broker.port, keepalive=30)
            client.loop_start()
            client.disconnect()
            client.loop_stop()
        except OSError:
            pass  # the broker is gone: so is the session, unless it persists; nothing to do

    def _disconnect(self) -> None:
        if self._client is not None:
            self._client.disconnect()
            self._client.loop_stop()
            self._client = None

    def stop(self, *, forget: bool = True) -> dict[str, TopicCounts]:
        """Append what is left, disconnect and return the counts. ``forget`` (a persistent
        session): end the session too, so the broker stops queuing for this client id (a run
        that ended needs no more).

        Raises
        ------
        MqttError
            Appending to the bus failed (the messages not written are named by ``pending``).
        """
        self._disconnect()  # nothing arrives any more; what is buffered is appended below
        self._stopping.set()
        if forget and self.persistent:
            self._forget()
        if self._flusher is not None:
            self._flusher.join()
            self._flusher = None
        if self._failure is None:
            try:
                self.flush(final=True)
            except Exception as exc:  # noqa: BLE001 - reported below, as one line
                self._failure = exc
        if self._failure is not None:
            pending = sum(c.pending for c in self.counts().values())
            raise MqttError(f"appending to the bus failed ({self._failure}); {pending} "
                            "messages were not written")
        return self.counts()

    def __enter__(self) -> Ingest:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

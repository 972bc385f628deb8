"""A closed-loop MQTT load for measuring the broker itself (issue 23: "the broker's own limit").

paho-mqtt spends tens of microseconds of Python per message on each side, so a paho publisher
and subscriber on one core would measure themselves, not the broker. :func:`flood` speaks MQTT
3.1.1 on plain sockets instead: its QoS 1 PUBLISH packets are built once
(:func:`publish_packet`) and sent in chunks, the broker's PUBACKs are only counted, and its own
subscriber (QoS 1, as the ingest subscribes) parses the deliveries in bulk
(:func:`scan_packets`) and acknowledges each one. It keeps at most ``window`` messages between
being sent and being delivered, so the broker's queues stay short and the rate is the one the
whole path sustains: publish -> broker -> subscriber, every message acknowledged on both hops.

With ``delivered=`` (a count someone else's subscriber keeps, e.g. an
:class:`~reuse.runtime.dataplane.ingest.Ingest`'s), :func:`flood` only publishes, with the same
window against that count: the rate is then what that subscriber sustains.

Pure apart from :func:`flood`'s sockets; nothing here starts a process.
"""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reuse.runtime.dataplane.mqtt import SUBSCRIPTION, BrokerUrl, MqttError, parse_broker_url

__all__ = ["remaining_length", "connect_packet", "publish_packet", "subscribe_packet",
           "puback_packet", "scan_packets", "acks_for", "FloodResult", "flood"]

PUBLISH, PUBACK, SUBACK, CONNACK = 3, 4, 9, 2


def remaining_length(n: int) -> bytes:
    """MQTT's variable-length encoding of a packet's remaining length.

    Examples
    --------
    >>> remaining_length(0), remaining_length(127), remaining_length(128), remaining_length(16383)
    (b'\\x00', b'\\x7f', b'\\x80\\x01', b'\\xff\\x7f')
    """
    if not 0 <= n < 268_435_456:
        raise MqttError(f"an MQTT packet cannot hold {n} bytes")
    out = bytearray()
    while True:
        n, digit = divmod(n, 128)
        out.append(digit | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _string(s: str) -> bytes:
    b = s.encode("utf-8")
    return len(b).to_bytes(2, "big") + b


def _packet(first: int, body: bytes) -> bytes:
    return bytes([first]) + remaining_length(len(body)) + body


def connect_packet(client_id: str = "", keepalive_s: int = 60) -> bytes:
    """CONNECT, MQTT 3.1.1, clean session.

    Examples
    --------
    >>> connect_packet().hex()  # what reuse.runtime.dataplane.mosquitto sends to probe a broker
    '100c00044d5154540402003c0000'
    """
    return _packet(0x10, _string("MQTT") + bytes([4, 0x02]) + keepalive_s.to_bytes(2, "big")
                   + _string(client_id))


def publish_packet(topic: str, payload: bytes, packet_id: int, qos: int = 1) -> bytes:
    """PUBLISH of ``payload`` on ``topic`` (``packet_id`` is left out at QoS 0).

    Examples
    --------
    >>> publish_packet("a/b", b"hi", 258).hex()
    '32090003612f6201026869'
    """
    if qos not in (0, 1):
        raise MqttError(f"QoS {qos} is not supported here (0 or 1)")
    pid = packet_id.to_bytes(2, "big") if qos else b""
    if qos and not 1 <= packet_id <= 65535:
        raise MqttError(f"packet id {packet_id} is not in 1..65535")
    return _packet(0x30 | (qos << 1), _string(topic) + pid + payload)


def subscribe_packet(topic_filter: str, packet_id: int = 1, qos: int = 1) -> bytes:
    """SUBSCRIBE to one filter.

    Examples
    --------
    >>> subscribe_packet("sensors/#").hex()
    '820e0001000973656e736f72732f2301'
    """
    return _packet(0x82, packet_id.to_bytes(2, "big") + _string(topic_filter) + bytes([qos]))


def puback_packet(packet_id: int) -> bytes:
    """PUBACK.

    Examples
    --------
    >>> puback_packet(258)
    b'@\\x02\\x01\\x02'
    """
    return b"\x40\x02" + packet_id.to_bytes(2, "big")


def scan_packets(buf: bytes | bytearray, pos: int = 0) -> tuple[list[tuple[int, int, int]], int]:
    """The complete packets in ``buf`` from ``pos``: ``(first byte, body start, body end)``
    each, and the position of the first incomplete one (``len(buf)`` when none is).

    Examples
    --------
    >>> two = publish_packet("t", b"x", 1) + puback_packet(7)
    >>> scan_packets(two + b"\\x32")
    ([(50, 2, 8), (64, 10, 12)], 12)
    >>> scan_packets(two[:5])
    ([], 0)
    """
    out: list[tuple[int, int, int]] = []
    n = len(buf)
    while pos < n:
        first, i, length, shift = buf[pos], pos + 1, 0, 0
        while True:
            if i >= n:
                return out, pos
            b = buf[i]
            length |= (b & 0x7F) << shift
            i += 1
            if not b & 0x80:
                break
            shift += 7
            if shift > 21:
                raise MqttError("malformed MQTT packet: remaining length over 4 bytes")
        if i + length > n:
            return out, pos
        out.append((first, i, i + length))
        pos = i + length
    return out, pos


def acks_for(buf: bytes | bytearray, packets: Sequence[tuple[int, int, int]]
             ) -> tuple[int, bytes]:
    """The PUBLISH packets among ``packets`` (from :func:`scan_packets` on ``buf``) and the
    PUBACKs the QoS 1 ones need, as one buffer.

    Examples
    --------
    >>> buf = publish_packet("t", b"x", 5) + publish_packet("t", b"y", 0, qos=0)
    >>> acks_for(buf, scan_packets(buf)[0])
    (2, b'@\\x02\\x00\\x05')
    """
    acks = []
    count = 0
    for first, start, _end in packets:
        if first >> 4 != PUBLISH:
            continue
        count += 1
        if first & 0x06:
            at = start + 2 + (buf[start] << 8 | buf[start + 1])
            acks.append(b"\x40\x02" + bytes(buf[at:at + 2]))
    return count, b"".join(acks)


@dataclass(frozen=True)
class FloodResult:
    """One :func:`flood`.

    Attributes
    ----------
    sent
        Messages published.
    acked
        PUBACKs the broker returned to the publisher.
    delivered
        Messages the subscriber received (``sent`` when nothing was lost).
    seconds
        From the first send to the last delivery counted.
    cpu_s
        This process's CPU seconds over the same time (every thread: with ``delivered=``, the
        other subscriber's too when it runs in this process).
    """

    sent: int
    acked: int
    delivered: int
    seconds: float
    cpu_s: float

    @property
    def rate(self) -> float:
        """Delivered messages/s."""
        return self.delivered / self.seconds if self.seconds > 0 else 0.0


def _connect(broker: BrokerUrl, client_id: str, timeout_s: float) -> socket.socket:
    s = socket.create_connection((broker.host, broker.port), timeout=timeout_s)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(connect_packet(client_id))
    if _read_packet(s)[0] >> 4 != CONNACK:
        s.close()
        raise MqttError(f"the broker at {broker} did not accept the connection")
    return s


def _read_packet(s: socket.socket) -> tuple[int, bytes]:
    buf = b""
    while True:
        got, _ = scan_packets(buf)
        if got:
            first, a, b = got[0]
            return first, buf[a:b]
        chunk = s.recv(4096)
        if not chunk:
            raise MqttError("the broker closed the connection")
        buf += chunk


def flood(broker: str | BrokerUrl, messages: Sequence[tuple[str, bytes]], *, seconds: float,
          cycle: bool = True, window: int = 1000, chunk: int = 64,
          delivered: Callable[[], int] | None = None, drain_s: float = 30.0,
          clock: Callable[[], float] = time.monotonic) -> FloodResult:
    """Publish ``messages`` (``(topic, payload)``) with QoS 1 as fast as the path takes them,
    keeping at most ``window`` between sent and delivered, for ``seconds`` (or, with
    ``cycle=False``, until every message was sent once, if that is sooner); then wait (up to
    ``drain_s``) until every message sent was delivered.

    Parameters
    ----------
    broker, messages
        ``mqtt://host:port``; more messages than ``window``. Message ``i`` gets packet id
        ``i % 65535 + 1``, so no two in flight share one.
    seconds, drain_s
        How long to publish at most, and then to wait for the rest to be delivered.
    cycle
        Start again from the first message after the last (at most 65,535 messages then, so
        the packet ids stay distinct across the wrap). A subscriber that wants increasing
        ``seq``, such as the ingest, needs ``cycle=False``.
    window, chunk
        Messages at most between sent and delivered; messages per socket write.
    delivered
        Another subscriber's count of delivered messages (``None``: subscribe here, to
        ``sensors/#`` with QoS 1, and count).

    Raises
    ------
    MqttError
        Too few messages for the window, or the broker refused or closed a connection.
    """
    url = parse_broker_url(broker)
    packets = _flood_packets(messages, window=window, chunk=chunk, cycle=cycle)
    pub = _connect(url, "", 10.0)
    sub = None
    sel = selectors.DefaultSelector()
    try:
        if delivered is None:
            sub = _subscriber(url, sel)
        pub.setblocking(False)
        sel.register(pub, selectors.EVENT_READ, "pub")
        sent = acked = got = ack_bytes = 0
        inbuf, out = bytearray(), memoryview(b"")
        cpu0, t0, drain_until = time.process_time(), clock(), None
        stop_at, last = t0 + seconds, t0
        while True:
            now = clock()
            if drain_until is None and (now >= stop_at or (not cycle and sent >= len(packets))):
                drain_until = now + drain_s
            if delivered is not None:
                d = delivered()
                if d > got:
                    got, last = d, now
            seen = min(got, acked) if delivered is None else got
            room = window - (sent - seen)
            if drain_until is None and not out and room > 0:
                part = _next_packets(packets, sent, min(room, chunk), cycle)
                out = memoryview(b"".join(part))
                sent += len(part)
            if out:
                try:
                    out = out[pub.send(out):]
                except BlockingIOError:
                    pass
            if drain_until is not None and ((got >= sent and acked >= sent)
                                            or now > drain_until):
                break
            busy = bool(out) or (drain_until is None and room > 0)
            for key, _ in sel.select(0 if busy else 0.002):
                ack_b, count = _receive(key, url, sub, inbuf)
                ack_bytes += ack_b  # only PUBACKs come back to the publisher: 4 bytes each
                acked = ack_bytes // 4
                if count:
                    got += count
                    last = clock()
        return FloodResult(sent, acked, got, last - t0, time.process_time() - cpu0)
    finally:
        sel.close()
        _disconnect(pub, sub)


def _flood_packets(messages: Sequence[tuple[str, bytes]], *, window: int, chunk: int,
                   cycle: bool) -> list[bytes]:
    """:func:`flood`'s PUBLISH packets, message ``i`` with packet id ``i % 65535 + 1``."""
    if window < 1 or chunk < 1:
        raise MqttError(f"window and chunk must be >= 1, got {window} and {chunk}")
    if len(messages) <= window or (cycle and len(messages) > 65535):
        raise MqttError(f"flood needs more messages than its window ({window})"
                        + (" and at most 65535 to cycle" if cycle else "")
                        + f", got {len(messages)}")
    return [publish_packet(t, p, i % 65535 + 1) for i, (t, p) in enumerate(messages)]


def _next_packets(packets: list[bytes], sent: int, k: int, cycle: bool) -> list[bytes]:
    """The next ``k`` packets after ``sent`` (from the first again after the last, if
    ``cycle``; else fewer at the end)."""
    i = sent % len(packets)
    part = packets[i:i + k]
    if len(part) < k and cycle:
        part += packets[:k - len(part)]
    return part


def _subscriber(url: BrokerUrl, sel: selectors.BaseSelector) -> socket.socket:
    """A connection subscribed to :data:`SUBSCRIPTION` with QoS 1, non-blocking, in ``sel``."""
    sub = _connect(url, "", 10.0)
    sub.sendall(subscribe_packet(SUBSCRIPTION))
    if _read_packet(sub)[0] >> 4 != SUBACK:
        raise MqttError(f"the broker at {url} did not grant {SUBSCRIPTION}")
    sub.setblocking(False)
    sel.register(sub, selectors.EVENT_READ, "sub")
    return sub


def _receive(key: selectors.SelectorKey, url: BrokerUrl, sub: socket.socket | None,
             inbuf: bytearray) -> tuple[int, int]:
    """Read what one ready connection holds: ``(acknowledgement bytes, messages delivered)``;
    the subscriber's messages are acknowledged (QoS 1) as they are counted."""
    try:
        data = key.fileobj.recv(1 << 18)  # type: ignore[union-attr]
    except BlockingIOError:
        return 0, 0
    if not data:
        raise MqttError(f"the broker at {url} closed the connection")
    if key.data == "pub":
        return len(data), 0
    assert sub is not None
    inbuf += data
    pk, pos = scan_packets(inbuf)
    count, acks = acks_for(inbuf, pk)
    del inbuf[:pos]
    if acks:
        sub.setblocking(True)
        sub.sendall(acks)
        sub.setblocking(False)
    return 0, count


def _disconnect(*socks: socket.socket | None) -> None:
    for s in socks:
        if s is not None:
            try:
                s.setblocking(True)
                s.sendall(b"\xe0\x00")  # DISCONNECT
            except OSError:
                pass
            s.close()

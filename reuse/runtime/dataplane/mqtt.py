"""The MQTT path as plain data: broker URLs, topic names, one message's decoding, and the ingest.

The paper's system read its sensor streams from an MQTT broker. Here a publisher
(:mod:`reuse.runtime.dataplane.publish`, ``reuse publish``) replays each source stream on the
topic ``sensors/<source>``, and :class:`Ingest` appends each topic's messages, in arrival order,
to the stream bus (:mod:`reuse.runtime.dataplane.bus`) on the topic the engines' own source
replay writes (``src:<source>``), as frames (:func:`~reuse.runtime.dataplane.frames.encode_frame`),
where they get offsets.

**A message is the engine's generated event.** Its payload is the UTF-8 JSON text of
:func:`~reuse.runtime.common.execution.source_event` for its ``seq``, serialised as the replay
data source serialises it (compact, fields in the generator's order)::

    {"src":"SYS","seq":0,"ts":1700000000000,"event_time":1422748800000,"payload":"{\\"e\\":[...],\\"bt\\":...}"}

``payload`` is the RIoTBench line's SenML pack, ``ts`` the nominal emit time
``t0 + seq * 1000 / rate`` of the publisher's replay. So a message carries its ``seq``, and a
bus fed through the broker holds byte for byte what the generated replay would have written
for the same ``t0`` and rate.

**Nothing is dropped silently.** :func:`decode_message` returns a :class:`Message` or a
:class:`Malformed` that says why (wrong topic, not UTF-8, not JSON, a missing or mistyped
field, a ``src`` that is not the topic's source); the ingest counts malformed messages per
MQTT topic (:class:`TopicCounts`) and never appends them. A message whose ``seq`` is on the bus
already or waiting for the next frame (a QoS 1 redelivery, a publisher restarted at 0 or sending
its last seconds again) is counted as ``stale`` and not appended twice.

**Order is restored, not assumed (issue 34).** MQTT keeps a session's order, but not across a
reconnect: after a broker's restart a publisher's resent messages and its new ones interleave.
The bus's frames promise increasing ``seq``, so each flush writes a source's buffered messages
sorted, up to the first hole; what lies past a hole waits (at most ``gap_s``) for the hole to be
filled by a late message. While it waits, the ingest asks the publisher for the hole's ``seq``
again every ``resend_s`` (:mod:`reuse.runtime.dataplane.resend`: a broker killed without
persistence loses what it had acknowledged but not delivered). A hole still open after
``gap_s`` (or at :meth:`Ingest.stop`) is given up: the messages past it are written and its
``seq`` counted ``missed``.

paho-mqtt is imported only when an :class:`Ingest` starts; everything else here is pure.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from reuse.core.jsondata import bad_text, loads
from reuse.runtime import SparkRuntimeError
from reuse.runtime.dataplane.bus import Bus
from reuse.runtime.dataplane.frames import encode_frame
from reuse.runtime.dataplane.resend import encode_request, resend_topic

__all__ = ["MqttError", "BrokerUrl", "parse_broker_url", "DEFAULT_PORT", "TOPIC_PREFIX",
           "SUBSCRIPTION", "topic_of", "source_of", "bus_topic", "OUTPUT_PREFIX",
           "output_topic", "output_bus_topic", "keep_output", "encode_message", "Message",
           "Malformed", "decode_message", "TopicCounts", "Ingest", "connect_error", "masked",
           "with_password", "is_masked", "MASK"]

#: The MQTT port a broker listens on when a URL names none (IANA's, mosquitto's default).
DEFAULT_PORT = 1883
#: Every source stream is published on ``sensors/<source>``.
TOPIC_PREFIX = "sensors/"
#: What the ingest subscribes to: every source's topic.
SUBSCRIPTION = TOPIC_PREFIX + "#"
_NOT_IN_NAME = ("/", "+", "#", "\x00")
_INT64 = 1 << 63


class MqttError(SparkRuntimeError):
    """The MQTT path cannot do what was asked: a bad broker URL or source name, a broker that is
    down or not installed, a port that is taken."""


@dataclass(frozen=True)
class BrokerUrl:
    """Where an MQTT broker listens: ``mqtt://host:port``, or ``mqtt://user:password@host:port``
    for a broker that refuses anonymous clients (see :func:`parse_broker_url`). The password
    is never shown: ``str`` writes it ``***``, the ``repr`` leaves both out."""

    host: str
    port: int = DEFAULT_PORT
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.host:
            raise MqttError("an MQTT broker URL needs a host (mqtt://host:port)")
        if not 1 <= self.port <= 65535:
            raise MqttError(f"MQTT broker port {self.port} is not in 1..65535")

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        user = "" if self.username is None else f"{self.username}:{MASK}@"
        return f"mqtt://{user}{host}:{self.port}"

    def authenticate(self, client: Any) -> None:
        """Give a paho client this URL's user and password, if it has them."""
        if self.username is not None:
            client.username_pw_set(self.username, self.password)


def parse_broker_url(url: str | BrokerUrl) -> BrokerUrl:
    """Parse and check a broker URL ``mqtt://host[:port]`` (the port defaults to 1883).

    Parameters
    ----------
    url
        The URL as a user wrote it (a :class:`BrokerUrl` passes through).

    Returns
    -------
    BrokerUrl

    Raises
    ------
    MqttError
        Another scheme, no host, a port that is not a number in 1..65535, or a user, path,
        query or fragment (none is supported), each as one line naming the URL.

    Examples
    --------
    >>> parse_broker_url("mqtt://127.0.0.1:1884")
    BrokerUrl(host='127.0.0.1', port=1884)
    >>> str(parse_broker_url("mqtt://localhost"))
    'mqtt://localhost:1883'
    >>> parse_broker_url("redis://127.0.0.1:6379")
    Traceback (most recent call last):
    ...
    reuse.runtime.dataplane.mqtt.MqttError: bad broker URL 'redis://127.0.0.1:6379': the scheme must be mqtt:// (mqtt://host:port)
    """
    if isinstance(url, BrokerUrl):
        return url

    def bad(why: str) -> MqttError:
        return MqttError(f"bad broker URL {url!r}: {why} (mqtt://host:port)")

    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme != "mqtt":
        raise bad("the scheme must be mqtt://")
    if (parts.username is None) != (parts.password is None) or parts.username == "":
        raise bad("give both a user and a password (mqtt://user:password@...), or neither")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise bad("it must not have a path, query or fragment")
    try:
        port = parts.port
    except ValueError:
        raise bad("the port must be a number in 1..65535") from None
    if not parts.hostname:
        raise bad("it has no host")
    if port is not None and port == 0:
        raise bad("the port must be a number in 1..65535")
    return BrokerUrl(parts.hostname, DEFAULT_PORT if port is None else port,
                     None if parts.username is None else urllib.parse.unquote(parts.username),
                     None if parts.password is None else urllib.parse.unquote(parts.password))


def masked(url: str) -> str:
    """A source URL as it may be written down (a journal, a log): its password as ``***``.

    >>> masked("mqtt://reuse:s3cret@10.0.0.5:1883"), masked("replay")
    ('mqtt://reuse:***@10.0.0.5:1883', 'replay')
    """
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", f":{MASK}@", 1)


#: What :func:`masked` writes for a password, and :func:`with_password` replaces.
MASK = "***"


def is_masked(url: str) -> bool:
    """Whether ``url`` is a :func:`masked` URL (its password is the mask).

    >>> is_masked(masked("mqtt://reuse:s3cret@h:1")), is_masked("mqtt://h:1")
    (True, False)
    """
    try:
        return urllib.parse.urlsplit(url).password == MASK
    except ValueError:
        return False


def with_password(url: str, password: str) -> str:
    """``url`` (masked by :func:`masked`) with its password put back.

    >>> with_password("mqtt://reuse:***@h:1", "s3cret")
    'mqtt://reuse:s3cret@h:1'
    """
    return url.replace(f":{MASK}@", f":{urllib.parse.quote(password, safe='')}@", 1)


def _check_source(source: str) -> str | None:
    """Why ``source`` cannot be a topic's last level (``None``: it can)."""
    if not source:
        return "a source name must not be empty"
    bad = [c for c in _NOT_IN_NAME if c in source]
    if bad:
        return f"source name {source!r} must not contain {' or '.join(map(repr, bad))}"
    return None


def topic_of(source: str) -> str:
    """The MQTT topic a source stream is published on.

    Raises
    ------
    MqttError
        ``source`` is empty or holds ``/``, ``+``, ``#`` or NUL (MQTT's level separator and
        wildcards), so it could not be told back from its topic.

    Examples
    --------
    >>> topic_of("SYS")
    'sensors/SYS'
    >>> topic_of("a/b")
    Traceback (most recent call last):
    ...
    reuse.runtime.dataplane.mqtt.MqttError: source name 'a/b' must not contain '/'
    """
    why = _check_source(source)
    if why is not None:
        raise MqttError(why)
    return TOPIC_PREFIX + source


def source_of(topic: str) -> str:
    """The source stream a topic carries: the inverse of :func:`topic_of`.

    Raises
    ------
    MqttError
        ``topic`` is not ``sensors/<source>`` with one level and a valid source name.

    Examples
    --------
    >>> source_of("sensors/TAXI")
    'TAXI'
    >>> source_of("sensors/a/b")
    Traceback (most recent call last):
    ...
    reuse.runtime.dataplane.mqtt.MqttError: topic 'sensors/a/b' is not sensors/<source>: source name 'a/b' must not contain '/'
    """
    if not topic.startswith(TOPIC_PREFIX):
        raise MqttError(f"topic {topic!r} is not {TOPIC_PREFIX}<source>")
    source = topic[len(TOPIC_PREFIX):]
    why = _check_source(source)
    if why is not None:
        raise MqttError(f"topic {topic!r} is not {TOPIC_PREFIX}<source>: {why}")
    return source


#: Each dataflow's sink outputs are published on ``out/<dataflow>/<sink>``.
OUTPUT_PREFIX = "out/"


def output_topic(dag: str, sink: str) -> str:
    """The MQTT topic a dataflow's sink outputs are published on.

    Examples
    --------
    >>> output_topic("etl-sys", "publish")
    'out/etl-sys/publish'
    >>> output_topic("a+b", "s")
    Traceback (most recent call last):
    ...
    reuse.runtime.dataplane.mqtt.MqttError: dataflow name 'a+b' must not contain '+'
    """
    for kind, name in (("dataflow", dag), ("sink", sink)):
        why = _check_source(name)
        if why is not None:
            raise MqttError(why.replace("source name", f"{kind} name"))
    return f"{OUTPUT_PREFIX}{dag}/{sink}"


def output_bus_topic(task: str) -> str:
    """The bus topic a running sink task's records are kept on, for reading back and for the
    publisher of ``out/...`` (:func:`output_topic`).

    >>> output_bus_topic("etl-sys.publish")
    'out:etl-sys.publish'
    """
    return f"out:{task}"


def keep_output(bus: Bus, task: str, key: str, hw: int, lines: list[str]) -> None:
    """Append a sink's record lines of one batch to its bus topic (:func:`output_bus_topic`)
    under the batch's key, as a frame whose ``hw`` is the batch's last ``seq``. The one writer
    of an output topic: an unsplit shard's worker and the driver of a split batch both call
    it. A re-run batch's append is dropped by the bus (idempotent per key)."""
    bus.publish(output_bus_topic(task), key, encode_frame(hw, lines))


def bus_topic(source: str) -> str:
    """The bus topic of a source stream: where the engines' source replay publishes it too.

    Examples
    --------
    >>> bus_topic("SYS")
    'src:SYS'
    """
    return f"src:{source}"


def encode_message(event: Mapping[str, Any]) -> bytes:
    """A source event as an MQTT payload: its compact JSON, as the replay data source writes it.

    Examples
    --------
    >>> encode_message({"src": "S1", "seq": 3, "ts": 1300, "payload": "S1:3"})
    b'{"src":"S1","seq":3,"ts":1300,"payload":"S1:3"}'
    """
    return json.dumps(event, separators=(",", ":")).encode("utf-8")


@dataclass(frozen=True)
class Message:
    """A well-formed message: its topic, source, ``seq``, the event and its JSON text."""

    topic: str
    source: str
    seq: int
    event: Mapping[str, Any]
    text: str

    ok = True


@dataclass(frozen=True)
class Malformed:
    """A message that is not a source event, and why (one line)."""

    topic: str
    reason: str

    ok = False

    def __str__(self) -> str:
        name = repr(self.topic)  # a topic may hold a newline: still one line
        name = name if len(name) <= 120 else name[:120] + "..."
        return f"topic {name}: malformed message: {self.reason}"


def _short(raw: bytes | str, n: int = 40) -> str:
    text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
    text = " ".join(text.split())
    return repr(text if len(text) <= n else text[:n] + "...")


def decode_message(topic: str, payload: bytes, sources: Collection[str] | None = None,
                   ) -> Message | Malformed:
    """Decode one MQTT message into ``(source, seq, event)``, or say why it is malformed.

    Parameters
    ----------
    topic
        The topic it arrived on: ``sensors/<source>``.
    payload
        Its bytes: a JSON object with ``src`` (the topic's source), ``seq`` (an integer >= 0),
        ``ts`` (an integer) and ``payload`` (the SenML text, Unicode), as
        :func:`encode_message` writes :func:`~reuse.runtime.common.execution.source_event`.
        JSON that :func:`reuse.core.jsondata.loads` refuses (nested deeper than it allows,
        ``NaN``, a number out of range) is not JSON here either.
    sources
        The sources the run reads (``None``: any); a message of another source is malformed.

    Returns
    -------
    Message or Malformed
        Never raises for bad input: a :class:`Malformed` names the topic and the reason, so the
        caller counts it instead of dropping it.

    Examples
    --------
    >>> m = decode_message("sensors/S1", b'{"src":"S1","seq":3,"ts":1300,"payload":"S1:3"}')
    >>> m.ok, m.source, m.seq
    (True, 'S1', 3)
    >>> print(decode_message("sensors/S1", b"not json"))
    topic 'sensors/S1': malformed message: not JSON: 'not json'
    >>> print(decode_message("sensors/S1", b'{"src":"S2","seq":3,"ts":0,"payload":""}'))
    topic 'sensors/S1': malformed message: src 'S2' is not the topic's source 'S1'
    """
    try:
        source = source_of(topic)
    except MqttError as exc:
        return Malformed(topic, str(exc))
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return Malformed(topic, f"not UTF-8: {_short(payload)}")
    try:
        event = loads(text)
    except ValueError as exc:  # bad syntax, nested too deeply, NaN, a number out of range
        why = str(exc).removeprefix("not JSON: ")
        detail = "" if why.startswith(("Expecting", "Extra data", "Unterminated", "Invalid")) \
            else f" ({why})"
        return Malformed(topic, f"not JSON{detail}: {_short(text)}")
    if not isinstance(event, dict):
        return Malformed(topic, f"not a JSON object: {_short(text)}")
    for name, kind in (("src", str), ("seq", int), ("ts", int), ("payload", str)):
        if name not in event:
            return Malformed(topic, f"no '{name}' field: {_short(text)}")
        value = event[name]
        if not isinstance(value, kind) or isinstance(value, bool):
            return Malformed(topic, f"'{name}' is {type(value).__name__}, not {kind.__name__}: "
                             f"{_short(text)}")
    if event["src"] != source:
        return Malformed(topic, f"src {_short(event['src'])} is not the topic's source "
                         f"{source!r}")
    if sources is not None and source not in sources:
        return Malformed(topic, f"unknown source {source!r} (not a source of this run)")
    if event["seq"] < 0:
        return Malformed(topic, f"seq {event['seq']} is negative")
    for name in ("seq", "ts"):  # a frame's high-water mark and Spark's columns are 64-bit
        if not -_INT64 <= event[name] < _INT64:
            return Malformed(topic, f"{name} {_short(str(event[name]))} is out of the 64-bit "
                             "range")
    if bad_text(event["payload"]):
        return Malformed(topic, f"'payload' is not Unicode text (a lone surrogate): "
                         f"{_short(text)}")
    return Message(topic, source, event["seq"], event, text)


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


def connect_error(broker: BrokerUrl, exc: OSError) -> MqttError:
    """The one-line error for a connection to ``broker`` that failed with ``exc``.

    Examples
    --------
    >>> print(connect_error(BrokerUrl("127.0.0.1", 1884), ConnectionRefusedError(111, "x")))
    no MQTT broker at mqtt://127.0.0.1:1884 (connection refused); start one with reuse broker start --port 1884
    """
    if isinstance(exc, ConnectionRefusedError):
        hint = (f"; start one with reuse broker start --port {broker.port}"
                if broker.host in ("127.0.0.1", "localhost", "::1") else "")
        return MqttError(f"no MQTT broker at {broker} (connection refused){hint}")
    why = exc.strerror or str(exc) or type(exc).__name__
    return MqttError(f"cannot connect to the MQTT broker at {broker}: {why}")

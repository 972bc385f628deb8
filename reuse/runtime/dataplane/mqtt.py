"""The MQTT path as plain data: broker URLs, topic names and one message's decoding.

The paper's system read its sensor streams from an MQTT broker. Here a publisher
(:mod:`reuse.runtime.dataplane.publish`, ``reuse publish``) replays each source stream on the
topic ``sensors/<source>``, and the ingest (:mod:`reuse.runtime.dataplane.ingest`) appends each
topic's messages, in order, to the stream bus on the topic the engines' own source replay
writes (``src:<source>``).

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
field, a ``src`` that is not the topic's source).

Everything here is pure: no client, no thread, no clock.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from reuse.core.jsondata import bad_text, loads
from reuse.runtime import SparkRuntimeError
from reuse.runtime.dataplane.bus import Bus
from reuse.runtime.dataplane.frames import encode_frame

__all__ = ["MqttError", "BrokerUrl", "parse_broker_url", "DEFAULT_PORT", "TOPIC_PREFIX",
           "SUBSCRIPTION", "topic_of", "source_of", "bus_topic", "OUTPUT_PREFIX",
           "output_topic", "output_bus_topic", "keep_output", "encode_message", "Message",
           "Malformed", "decode_message", "connect_error", "masked",
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

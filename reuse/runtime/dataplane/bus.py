"""The stream bus between partial DAGs: topics of frames, on files or on Redis Streams.

A *topic* carries one running task's output stream (or one source stream). A producer appends
one *message* per micro-batch: a key that sorts after every earlier key of the topic, and a
*frame* (:mod:`reuse.runtime.dataplane.frames`: the batch's events as JSON texts in one Arrow IPC column,
LZ4-compressed when their entropy is low). The frame carries the producer's high-water mark
``hw``: every source event with ``seq <= hw`` has been fully processed by the producer, so its
outputs for those events are in this or an earlier message (consumers use it to align inputs and
to know when they have drained). A task that has ended vouches only below its end cut: past it
a hand-over successor writes the topic (under a larger launch number, once its predecessor's
final state exists, so after the predecessor's last message). The buses move frames as opaque
bytes; producers encode with :func:`~reuse.runtime.dataplane.frames.encode_frame` and the consumer decodes with
:func:`~reuse.runtime.dataplane.frames.decode_frame` inside the query's Python worker, where task CPU is
spent, so both buses carry the same bytes.

Two buses implement the same calls (``publish``, ``latest``, ``read``; ``index``, the pending
messages' event counts from their frame headers, for flow control; ``truncate`` for retention):

- :class:`FileBus` (default, embedded): one directory per topic under ``<root>/topics``, one file
  per message (``<key>.frame``), written to a hidden temporary name and renamed, so readers
  never see a partial message. Keys are ``<launch:06d>-<batch:09d>``: a relaunched producer gets a larger launch
  number, so its messages sort after its predecessor's.
- :class:`RedisBus` (``--bus redis``): one Redis Stream per topic (``XADD`` of the frame's
  bytes), keys are stream ids. Publishing is idempotent per (topic, producer key), as the
  FileBus's rename over ``<key>.frame`` is: a Spark batch re-run after a failure republishes
  its messages under the same keys, and must not append a second copy.

Consumers read through :class:`~reuse.runtime.dataplane.sources.BusDataSource` (Python Data
Source ``reusebus``): its offsets are
the last key read per topic, kept in the query's checkpoint, so a restarted query resumes exactly
where it committed. A new consumer starts at the offsets the runtime gives it (the join point),
not at the topic's beginning, so a late subscriber does not re-read the backlog.

Backpressure and retention (:mod:`reuse.runtime.dataplane.flow_control`): the reader admits whole
messages per batch within its read limit and lag watermarks, writes its lag and throttle state
to ``<root>/lag/<query>.json`` and, on ``commit``, its committed offsets to
``<root>/committed/<query>.json``; the runtime truncates each topic behind the slowest live
consumer (:meth:`Bus.truncate`). A batch that finds fewer messages than it planned (deleted under
it) fails with a :class:`BusError` naming topic, query and offset: nothing is silently skipped.

The rate-paced source replay is :mod:`reuse.runtime.dataplane.sources` (``reusereplay``).
Nothing here imports Spark.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.files import safe_name
from reuse.runtime.dataplane.frames import HEADER_BYTES, peek_frame

__all__ = ["Bus", "BusError", "FileBus", "RedisBus", "make_bus"]


_EXT = ".frame"
class BusError(SparkRuntimeError):
    """A consumer's read went wrong on the bus; names the topic, the query and the offset."""

    def __init__(self, message: str, *, topic: str, query: str, key: str) -> None:
        super().__init__(message)
        self.topic, self.query, self.key = topic, query, key

    def where(self) -> str:
        return f"topic '{self.topic}': query '{self.query}': offset {self.key or '(start)'}"


class Bus:
    """Topic store interface; instances must pickle (they travel to Python workers)."""

    kind = "abstract"

    def spec(self) -> dict[str, str]:
        """Options that rebuild this bus in another process (see :func:`make_bus`)."""
        raise NotImplementedError

    def publish(self, topic: str, key: str, frame: bytes) -> None:
        """Append one message (a frame, see :func:`reuse.runtime.dataplane.frames.encode_frame`)."""
        raise NotImplementedError

    def latest(self, topic: str) -> str:
        """The key of the newest message, or ``""`` for an empty topic."""
        raise NotImplementedError

    def read(self, topic: str, after: str, upto: str) -> Iterator[tuple[str, bytes]]:
        """Messages ``(key, frame)`` with ``after < key <= upto`` in key order (undecoded)."""
        raise NotImplementedError

    def offsets(self, topics: Sequence[str]) -> dict[str, str]:
        return {t: self.latest(t) for t in topics}

    def size(self, topic: str) -> int:
        """Number of messages in a topic (for tests and reports)."""
        return sum(1 for _ in self.read(topic, "", "\uffff"))

    def index(self, topic: str, after: str) -> list[tuple[str, int]]:
        """``(key, events)`` of the messages with ``key > after``, in key order (flow control
        sizes a batch from these; the generic version reads whole frames)."""
        return [(k, peek_frame(f, topic=topic, key=k)[1])
                for k, f in self.read(topic, after, "\uffff")]

    def truncate(self, topic: str, before: str) -> int:
        """Delete the messages with ``key < before`` (retention); returns how many."""
        raise NotImplementedError


class FileBus(Bus):
    """Topics as directories of frame files (no server; survives the session)."""

    kind = "file"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = str(root)

    def spec(self) -> dict[str, str]:
        return {"bus": "file", "root": self.root}

    def topic_dir(self, topic: str) -> Path:
        return Path(self.root) / "topics" / safe_name(topic)

    def publish(self, topic: str, key: str, frame: bytes) -> None:
        d = self.topic_dir(topic)
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{key}.tmp"
        tmp.write_bytes(frame)
        os.replace(tmp, d / f"{key}{_EXT}")

    def _keys(self, topic: str) -> list[str]:
        try:
            names = os.listdir(self.topic_dir(topic))
        except FileNotFoundError:
            return []
        return sorted(n[:-len(_EXT)] for n in names
                      if n.endswith(_EXT) and not n.startswith("."))

    def latest(self, topic: str) -> str:
        keys = self._keys(topic)
        return keys[-1] if keys else ""

    def read(self, topic: str, after: str, upto: str) -> Iterator[tuple[str, bytes]]:
        d = self.topic_dir(topic)
        for k in self._keys(topic):
            if after < k <= upto:
                yield k, (d / f"{k}{_EXT}").read_bytes()

    def size(self, topic: str) -> int:
        return len(self._keys(topic))

    def index(self, topic: str, after: str) -> list[tuple[str, int]]:
        """Reads the 24-byte header of each pending message, not the frame."""
        d = self.topic_dir(topic)
        out = []
        for k in self._keys(topic):
            if k > after:
                with open(d / f"{k}{_EXT}", "rb") as fh:
                    out.append((k, peek_frame(fh.read(HEADER_BYTES), topic=topic, key=k)[1]))
        return out

    def truncate(self, topic: str, before: str) -> int:
        """Removes the frame files (and a dead producer's temporary files) before ``before``."""
        d = self.topic_dir(topic)
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            return 0
        gone = 0
        for n in names:
            if n.endswith(_EXT) and not n.startswith("."):
                key = n[:-len(_EXT)]
            elif n.startswith(".") and n.endswith(".tmp"):
                key = n[1:].split(".", 1)[0]
            else:
                continue
            if key < before:
                try:
                    os.remove(d / n)
                except FileNotFoundError:
                    continue
                gone += n.endswith(_EXT)
        return gone

    def stored_bytes(self) -> int:
        """Bytes of every topic's files (for reports and benchmarks)."""
        total = 0
        for dirpath, _, files in os.walk(Path(self.root) / "topics"):
            for f in files:
                try:
                    total += os.stat(os.path.join(dirpath, f)).st_size
                except FileNotFoundError:
                    pass
        return total


#: Lua helper: ``a > b`` byte by byte, as Python orders ``str`` keys (Lua's own ``<`` on
#: strings goes through ``strcoll`` and the server's locale).
_LUA_AFTER = """
local function after(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end
"""

#: Append one message unless the topic holds, or has trimmed, its producer key; record its
#: event count in the index hash and its key in the key hash, atomically. Returns the new
#: stream id, or ``false`` (nil) when nothing was appended.
#: KEYS: stream, index hash, key hash, key floor; ARGV: frame, event count, producer key.
_REDIS_PUBLISH = _LUA_AFTER + """
if redis.call('HEXISTS', KEYS[3], ARGV[3]) == 1 then return false end
local floor = redis.call('GET', KEYS[4])
if floor and not after(ARGV[3], floor) then return false end
local id = redis.call('XADD', KEYS[1], '*', 'f', ARGV[1])
redis.call('HSET', KEYS[2], id, ARGV[2])
redis.call('HSET', KEYS[3], ARGV[3], id)
return id
"""

#: ``XTRIM MINID`` (exact), then forget the trimmed ids' index entries and producer keys,
#: raising the key floor to the largest key forgotten, atomically. Returns how many entries
#: were trimmed. KEYS as for publishing; ARGV: min id, its milliseconds, its sequence number.
_REDIS_TRUNCATE = _LUA_AFTER + """
local gone = redis.call('XTRIM', KEYS[1], 'MINID', '=', ARGV[1])
local ms, seq = tonumber(ARGV[2]), tonumber(ARGV[3])
local function trimmed(id)
  local m, s = string.match(id, '^(%d+)-(%d+)$')
  m, s = tonumber(m), tonumber(s)
  return m < ms or (m == ms and s < seq)
end
for _, id in ipairs(redis.call('HKEYS', KEYS[2])) do
  if trimmed(id) then redis.call('HDEL', KEYS[2], id) end
end
local floor = redis.call('GET', KEYS[4])
local top = floor
local kv = redis.call('HGETALL', KEYS[3])
for i = 1, #kv, 2 do
  if trimmed(kv[i + 1]) then
    redis.call('HDEL', KEYS[3], kv[i])
    if not top or after(kv[i], top) then top = kv[i] end
  end
end
if top and top ~= floor then redis.call('SET', KEYS[4], top) end
return gone
"""


class RedisBus(Bus):
    """Topics as Redis Streams on a local redis-server (entries ``{"f": frame}``).

    Each topic also has an index hash ``<topic>#n`` (stream id -> event count), written with
    the entry by one Lua script, because ``XRANGE`` cannot return a field without the frame.
    The client is opened lazily, so the object pickles to Python workers.

    **Publishing is idempotent per (topic, key).** Redis assigns stream ids itself, so a plain
    ``XADD`` ignores the producer's key; but a Spark batch re-run after a failure (a producer
    query restarted from its checkpoint, a source batch retried) republishes the same frames
    under the same keys, and consumers would read its events twice. The FileBus is idempotent
    because it renames over ``<key>.frame``; here the same Lua script that appends also keeps a
    key hash ``<topic>#k`` (producer key -> stream id) and appends only a key the topic does not
    hold. A deterministic re-run republishes the same content, so the first copy is kept.

    The key hash stays bounded: :meth:`truncate` forgets the keys of the entries it trims and
    keeps only the largest of them, the topic's *key floor* ``<topic>#kf``. Producer keys sort
    after every earlier key of their topic (see the module docstring), so a key at or under the
    floor is a re-run of a batch whose message was already published, read and trimmed, and it
    is not appended again (the FileBus would write it behind every consumer's offset, where no
    one reads it). So a topic remembers one key per retained message plus one string.
    """

    kind = "redis"

    def __init__(self, url: str, prefix: str = "reuse:", *, patience_s: float = 0.0) -> None:
        self.url = url
        self.prefix = prefix
        self.patience_s = patience_s
        self._client: Any = None
        self._publish: Any = None
        self._truncate: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "prefix": self.prefix, "patience_s": self.patience_s,
                "_client": None, "_publish": None, "_truncate": None}

    def spec(self) -> dict[str, str]:
        spec = {"bus": "redis", "url": self.url, "prefix": self.prefix}
        if self.patience_s > 0:
            spec["patience_s"] = f"{self.patience_s:g}"
        return spec

    @property
    def client(self) -> Any:
        """The Redis client. With ``patience_s`` a call whose connection is refused or broken
        is tried again for that long, so every reader and writer of the bus rides through a
        restart of a durable server (issue 34: the run's Redis is restarted when it dies,
        :mod:`~reuse.runtime.dataplane.keeper`; :func:`~reuse.runtime.common.redis_client.
        redis_client`)."""
        if self._client is None:
            from reuse.runtime.common.redis_client import redis_client

            self._client = redis_client(self.url, patience_s=self.patience_s)
        return self._client

    def _redis_keys(self, topic: str) -> list[str]:
        """The topic's Redis keys: stream, index hash, key hash, key floor."""
        base = self.prefix + topic
        return [base, base + "#n", base + "#k", base + "#kf"]

    def publish(self, topic: str, key: str, frame: bytes) -> None:
        """Append the frame unless ``topic`` already has a message under ``key`` (then keep
        the first: a re-run batch republishes the same content) or has trimmed past ``key``."""
        if self._publish is None:
            self._publish = self.client.register_script(_REDIS_PUBLISH)
        count = peek_frame(frame, topic=topic, key=key)[1]
        self._publish(keys=self._redis_keys(topic), args=[frame, count, key])

    def latest(self, topic: str) -> str:
        got = self.client.xrevrange(self.prefix + topic, count=1)
        return _redis_id(got[0][0]) if got else ""

    def read(self, topic: str, after: str, upto: str) -> Iterator[tuple[str, bytes]]:
        start = f"({after}" if after else "-"
        for entry_id, fields in self.client.xrange(self.prefix + topic, start, upto):
            yield _redis_id(entry_id), bytes(fields[b"f"])

    def offsets(self, topics: Sequence[str]) -> dict[str, str]:
        return {t: self.latest(t) for t in topics}

    def size(self, topic: str) -> int:
        # XLEN: the generic read up to "\uffff" is not a stream id Redis accepts
        return int(self.client.xlen(self.prefix + topic))

    def index(self, topic: str, after: str) -> list[tuple[str, int]]:
        got = self.client.hgetall(self.prefix + topic + "#n")
        out = [(k, int(n)) for k, n in ((_redis_id(i), n) for i, n in got.items()) if k > after]
        return sorted(out)

    def truncate(self, topic: str, before: str) -> int:
        """``XTRIM MINID`` (exact), then the index entries and producer keys of the trimmed
        ids (the largest key trimmed becomes the key floor), in one script."""
        if not before:
            return 0
        if self._truncate is None:
            self._truncate = self.client.register_script(_REDIS_TRUNCATE)
        ms, seq = (int(x) for x in before.split("-"))
        return int(self._truncate(keys=self._redis_keys(topic),
                                  args=[f"{ms}-{seq}", ms, seq]))


def _redis_id(raw: Any) -> str:
    """Redis stream ids as zero-padded text so that string order is id order."""
    ms, seq = (raw.decode() if isinstance(raw, bytes) else str(raw)).split("-")
    return f"{int(ms):015d}-{int(seq):06d}"


def make_bus(spec: dict[str, str]) -> Bus:
    """Rebuild a bus from :meth:`Bus.spec` options."""
    if spec.get("bus", "file") == "file":
        return FileBus(spec["root"])
    if spec["bus"] == "redis":
        return RedisBus(spec["url"], spec.get("prefix", "reuse:"),
                        patience_s=float(spec.get("patience_s", 0)))
    raise ValueError(f"unknown bus {spec['bus']!r}")



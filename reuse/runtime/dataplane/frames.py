"""Bus frames: one topic message = one batch of events in Arrow IPC, LZ4 for low entropy.

A frame is a fixed 24-byte header and a body::

    header = magic "RWBF" | version u8 | flags u8 | reserved u16 | hw i64 | count u32 | crc32 u32
    body   = Arrow IPC stream: schema (one column "v", utf8 or binary), one record batch, end mark

``hw`` is the producer's high-water mark (every source event with ``seq <= hw`` is fully
processed, see :mod:`reuse.runtime.dataplane.bus`), ``count`` the number of events. Why Arrow IPC and not
JSON lines or a hand-made length-prefixed list: it is columnar (the events are one contiguous
UTF-8 buffer plus an offsets buffer, so reading is a pointer walk, not a line split, and an
event may hold any character, newlines included); reads are zero-copy from the received bytes;
pyarrow is already installed as PySpark's Arrow path needs it (no new dependency) and the body
is a standard Arrow stream any Arrow reader (Spark's JVM, arrow-rs) can open; the schema travels
with the frame and is checked on read, so there is no schema drift between producers. The
runtime's events are JSON texts (a utf8 column, read back as ``str``: ``json.loads`` of a
``str`` is much cheaper than of ``bytes``); a batch of ``bytes`` events makes a binary column,
read back as ``bytes``, so opaque payloads (Neptune's random packets) travel as they are.

Compression follows Neptune's selective scheme (Section III.5 of the Neptune paper): LZ4 (the
Arrow IPC format's own ``LZ4_FRAME`` buffer compression, so the body stays a standard Arrow
stream) only when the payload's sampled Shannon entropy is under :data:`ENTROPY_THRESHOLD`, so
low-entropy sensor streams get smaller frames and random-looking payloads are not compressed in
vain. The CRC32 covers the body as stored, so corruption on disk or on the wire is caught before
Arrow or LZ4 ever see the bytes, and every malformed frame raises one :class:`FrameError` that
names the topic and the message key.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from reuse.runtime import SparkRuntimeError

__all__ = ["Frame", "FrameError", "encode_frame", "decode_frame", "peek_frame", "entropy", "MAGIC",
           "VERSION", "HEADER_BYTES", "ENTROPY_THRESHOLD", "SAMPLE_BYTES", "MIN_COMPRESS_BYTES"]

MAGIC = b"RWBF"
VERSION = 1
_LZ4 = 0x01  # flags bit 0: the body's buffers are LZ4-frame compressed
_HEADER = struct.Struct("<4sBBHqII")
#: Size of the fixed frame header (what :func:`peek_frame` needs).
HEADER_BYTES = _HEADER.size
_TEXT = pa.schema([pa.field("v", pa.string(), nullable=False)])
_BINARY = pa.schema([pa.field("v", pa.binary(), nullable=False)])
_PLAIN = pa.ipc.IpcWriteOptions(use_threads=False)
_PACKED = pa.ipc.IpcWriteOptions(compression="lz4", use_threads=False)

#: Bits per byte under which a payload is compressed. Measured on 4 KiB samples
#: (``benchmarks/bus_frames.py``): RIoTBench SYS, TAXI and FIT event streams and OPMW's synthetic
#: events sit at 4.3-4.6 and LZ4 shrinks their frames 5-50x; ``os.urandom`` bytes sit at 7.95 and LZ4
#: gains nothing. 6.0 leaves more than a bit of room on either side. Order-0 entropy is a cheap
#: proxy, not a promise: hex-encoded random bytes (4.0) pass the gate and LZ4 cannot shrink them.
ENTROPY_THRESHOLD = 6.0
#: Bytes of the payload the entropy is estimated from: 8 slices of 512 spread over the payload,
#: so a batch's cost to gate does not grow with its size and a long batch is sampled throughout.
SAMPLE_BYTES = 4096
_SLICES = 8
#: Payloads smaller than this are never compressed: LZ4's frame header and Arrow's per-buffer
#: length prefix would cost more than they save (an empty batch carries only its ``hw``).
MIN_COMPRESS_BYTES = 256


class FrameError(SparkRuntimeError):
    """A bus message is not a readable frame; names the topic and the message key (offset)."""

    def __init__(self, message: str, *, topic: str, key: str) -> None:
        super().__init__(message)
        self.topic = topic
        self.key = key

    def where(self) -> str:
        return f"topic '{self.topic}': message {self.key}"


@dataclass(frozen=True)
class Frame:
    """One decoded topic message: the producer's high-water mark and its events, in order
    (``str`` for a text frame, ``bytes`` for a binary one)."""

    hw: int
    values: list[str] | list[bytes]
    compressed: bool = False


def entropy(data: bytes | memoryview | pa.Buffer, sample: int = SAMPLE_BYTES) -> float:
    """Shannon entropy in bits per byte of a sample of ``data`` (at most ``sample`` bytes).

    The sample is ``8`` equal slices spread evenly over ``data`` (all of it when it is short):
    a fixed cost per batch, as Neptune's gate must be cheaper than the compression it saves.

    Parameters
    ----------
    data
        The payload (anything exposing the buffer protocol).
    sample
        Sample size in bytes.

    Returns
    -------
    float
        ``-sum p_b log2 p_b`` over the byte values ``b`` of the sample; 0.0 for no bytes.

    Examples
    --------
    >>> entropy(b"aaaa"), entropy(bytes(range(256)))
    (0.0, 8.0)
    """
    a = np.frombuffer(data, dtype=np.uint8)
    if len(a) > sample:
        width = sample // _SLICES
        starts = np.linspace(0, len(a) - width, _SLICES).astype(np.int64)
        a = np.concatenate([a[s:s + width] for s in starts])
    if len(a) == 0:
        return 0.0
    counts = np.bincount(a, minlength=256)
    p = counts[counts > 0] / len(a)
    return float(-(p * np.log2(p)).sum()) + 0.0


def encode_frame(hw: int, events: Sequence[str] | Sequence[bytes], *,
                 compress: bool | None = None) -> bytes:
    """One frame holding ``events`` (one value per event) and the high-water mark ``hw``.

    Parameters
    ----------
    hw
        The producer's high-water mark (``-1``: nothing processed yet).
    events
        The batch's events in order. ``str`` events make a text frame, ``bytes`` events a
        binary one (the first event decides; a ``bytes`` event in a text batch must be UTF-8,
        a ``str`` event in a binary batch is stored UTF-8 encoded).
    compress
        ``None`` (default): the entropy gate decides (LZ4 when the payload is at least
        :data:`MIN_COMPRESS_BYTES` and its :func:`entropy` is under :data:`ENTROPY_THRESHOLD`);
        ``True`` / ``False`` force it (benchmarks measure both ways).

    Returns
    -------
    bytes
        Header and Arrow IPC body; :func:`decode_frame` reads it back.

    Raises
    ------
    pyarrow.ArrowInvalid
        A ``bytes`` event in a text batch is not UTF-8.

    Examples
    --------
    >>> data = encode_frame(7, ['{"seq":6}', '{"seq":7}'])
    >>> data[:4], decode_frame(data, topic="t", key="k")
    (b'RWBF', Frame(hw=7, values=['{"seq":6}', '{"seq":7}'], compressed=False))
    """
    schema = _BINARY if len(events) and isinstance(events[0], bytes | bytearray) else _TEXT
    col = pa.array(events, type=schema.field(0).type)
    if compress is None:
        payload = col.buffers()[2]
        compress = (payload is not None and payload.size >= MIN_COMPRESS_BYTES
                    and entropy(payload) < ENTROPY_THRESHOLD)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema, options=_PACKED if compress else _PLAIN) as w:
        w.write_batch(pa.record_batch([col], schema=schema))
    body = sink.getvalue()
    head = _HEADER.pack(MAGIC, VERSION, _LZ4 if compress else 0, 0, hw, len(col),
                        zlib.crc32(body))
    return b"".join((head, body))  # one copy of the body, not two


def peek_frame(head: bytes, *, topic: str, key: str) -> tuple[int, int]:
    """``(hw, count)`` from a frame's header alone (its first 24 bytes are enough).

    Flow control sizes a consumer's next batch from the event counts of the pending messages
    (:mod:`reuse.runtime.dataplane.flow_control`); reading 24 bytes per message instead of the frame
    keeps that cheap. The body is not checked here: :func:`decode_frame` does that in the
    batch, which fails (naming the message) before anything is committed.

    Raises
    ------
    FrameError
        Shorter than a header, or not a bus frame (bad magic).

    Examples
    --------
    >>> peek_frame(encode_frame(41, ["a", "b", "c"]), topic="t", key="k")
    (41, 3)
    """
    if len(head) < _HEADER.size:
        raise FrameError(f"truncated: {len(head)} bytes, shorter than the {_HEADER.size}-byte "
                         "frame header", topic=topic, key=key)
    magic, _, _, _, hw, count, _ = _HEADER.unpack_from(head)
    if magic != MAGIC:
        raise FrameError(f"bad magic {magic!r}, expected {MAGIC!r} (not a bus frame)",
                         topic=topic, key=key)
    return int(hw), int(count)


def decode_frame(data: bytes, *, topic: str, key: str) -> Frame:
    """Read a frame written by :func:`encode_frame`, checking everything on the way.

    Parameters
    ----------
    data
        The message as stored on the bus.
    topic, key
        Where the message was read (named by the error when it is malformed).

    Returns
    -------
    Frame
        ``hw``, the events in order (``str`` or ``bytes``, as encoded), and whether the body
        was compressed.

    Raises
    ------
    FrameError
        Bad magic, unknown version or flags, truncation, checksum mismatch, an undecodable Arrow
        body, a wrong schema or a row count that differs from the header's.

    Examples
    --------
    >>> decode_frame(b"not a frame at all, no", topic="src:SYS", key="000001-000000004")
    Traceback (most recent call last):
    ...
    reuse.runtime.dataplane.frames.FrameError: topic 'src:SYS': message 000001-000000004: truncated: 22 bytes, shorter than the 24-byte frame header
    """
    def fail(why: str) -> FrameError:
        return FrameError(why, topic=topic, key=key)

    if len(data) < _HEADER.size:
        raise fail(f"truncated: {len(data)} bytes, shorter than the {_HEADER.size}-byte "
                   "frame header")
    magic, version, flags, reserved, hw, count, crc = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise fail(f"bad magic {magic!r}, expected {MAGIC!r} (not a bus frame)")
    if version != VERSION:
        raise fail(f"frame version {version}, this reader knows version {VERSION}")
    if flags & ~_LZ4 or reserved:
        raise fail(f"unknown frame flags {flags:#04x}/{reserved:#06x}")
    body = memoryview(data)[_HEADER.size:]
    if zlib.crc32(body) != crc:
        raise fail(f"checksum mismatch over the {len(body)}-byte body (corrupt or truncated)")
    try:
        reader = pa.ipc.open_stream(pa.py_buffer(body))
        batches = list(reader)
    except (pa.ArrowException, ValueError, OSError) as e:
        raise fail(f"undecodable Arrow body: {e}") from e
    if reader.schema != _TEXT and reader.schema != _BINARY:
        got = reader.schema.to_string(show_schema_metadata=False).replace("\n", "; ")
        raise fail(f"schema '{got}', expected one utf8 or binary column 'v'")
    if len(batches) != 1 or batches[0].num_rows != count:
        rows = sum(b.num_rows for b in batches)
        raise fail(f"{len(batches)} record batches with {rows} rows, header says 1 with {count}")
    return Frame(hw, batches[0].column(0).to_pylist(), bool(flags & _LZ4))

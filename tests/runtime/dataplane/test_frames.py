"""The bus frame codec: round trips, the entropy gate both ways, corrupt frames (no Spark)."""

from __future__ import annotations

import json
import os
import struct
import zlib

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reuse.core.paths import riotbench_dir
from reuse.runtime import SparkRuntimeError
from reuse.runtime.common.execution import source_event
from reuse.runtime.dataplane.frames import (
    ENTROPY_THRESHOLD,
    Frame,
    FrameError,
    decode_frame,
    encode_frame,
    entropy,
)
from reuse.tasks.sources import SOURCE_FILES
from reuse.testing import missing


def _rt(data: bytes) -> Frame:
    return decode_frame(data, topic="t", key="k")


def _riot(src: str, n: int) -> list[str]:
    data_dir = riotbench_dir()
    if not (data_dir / SOURCE_FILES[src]).is_file():
        pytest.skip(missing("data", "data/riotbench is not set up (or set REUSE_RIOTBENCH_DIR)"))
    return [json.dumps(source_event(src, src, s, 0, 10.0, str(data_dir)), separators=(",", ":"))
            for s in range(n)]


# --- round trips ---------------------------------------------------------------------------

def test_empty_batch_keeps_its_high_water_mark() -> None:
    for hw in (-1, 0, 2**63 - 1):
        assert _rt(encode_frame(hw, [])) == Frame(hw, [], False)


def test_unicode_and_line_breaks_survive() -> None:
    events = ["", "é", "日本語", "emoji \U0001f600", "line\nbreak", "sep\u2028arator", "nul\x00"]
    assert _rt(encode_frame(5, events)).values == events
    encoded = [e.encode() for e in events]
    assert _rt(encode_frame(5, encoded)).values == encoded  # bytes in, bytes out
    assert _rt(encode_frame(5, ["a", *encoded])).values == ["a", *events]  # UTF-8 in a text batch
    with pytest.raises(pa.ArrowInvalid):
        encode_frame(5, ["a", b"\xff"])


def test_binary_events_come_back_as_bytes() -> None:
    events = [os.urandom(n) for n in (0, 1, 200, 5000)]
    assert _rt(encode_frame(1, events)).values == events


def test_large_batch() -> None:
    events = [json.dumps({"seq": i, "v": "x" * (i % 300)}) for i in range(50_000)]
    frame = _rt(encode_frame(49_999, events))
    assert frame.hw == 49_999 and frame.values == events and frame.compressed


@given(hw=st.integers(-1, 2**63 - 1), events=st.lists(st.text(max_size=300), max_size=60),
       compress=st.none() | st.booleans())
def test_round_trip_property(hw: int, events: list[str], compress: bool | None) -> None:
    frame = _rt(encode_frame(hw, events, compress=compress))
    assert frame.hw == hw and frame.values == events
    if compress is not None:
        assert frame.compressed is compress


@given(events=st.lists(st.binary(max_size=300), min_size=1, max_size=40))
def test_binary_round_trip_property(events: list[bytes]) -> None:
    assert _rt(encode_frame(0, events)).values == events


# --- the entropy gate ----------------------------------------------------------------------

def test_entropy_estimate() -> None:
    assert entropy(b"") == 0.0 and entropy(b"a" * 10_000) == 0.0
    assert entropy(bytes(range(256)) * 100) == pytest.approx(8.0)
    assert entropy(os.urandom(1 << 20)) > 7.9  # a 4 KiB sample of 1 MiB


@pytest.mark.parametrize("src", ["SYS", "TAXI", "FIT"])
def test_riot_streams_are_compressed_and_smaller(src: str) -> None:
    events = _riot(src, 1000)
    raw = "".join(e + "\n" for e in events).encode()
    assert entropy(raw) < ENTROPY_THRESHOLD
    gated, plain = encode_frame(999, events), encode_frame(999, events, compress=False)
    assert _rt(gated).compressed and not _rt(plain).compressed
    assert len(gated) < len(plain) / 3 and len(gated) < len(raw) / 3
    assert _rt(gated).values == events


def test_random_bytes_are_not_compressed() -> None:
    events = [os.urandom(200) for _ in range(1000)]
    assert entropy(b"".join(events)) > ENTROPY_THRESHOLD
    frame = encode_frame(999, events)
    assert not _rt(frame).compressed
    assert len(frame) <= len(encode_frame(999, events, compress=True))  # LZ4 could not help
    assert _rt(frame).values == events


def test_tiny_payloads_are_not_compressed() -> None:
    assert not _rt(encode_frame(0, ['{"seq":0}'])).compressed


# --- corrupt frames ------------------------------------------------------------------------

def _frame() -> bytes:
    return encode_frame(41, [json.dumps({"seq": i, "payload": "abc" * 20}) for i in range(100)])


def _raises(data: bytes, what: str) -> FrameError:
    with pytest.raises(FrameError) as info:
        decode_frame(data, topic="src:SYS", key="000002-000000017")
    text = str(info.value)
    assert text.startswith("topic 'src:SYS': message 000002-000000017: "), text
    assert what in text and "\n" not in text
    assert isinstance(info.value, SparkRuntimeError)
    assert (info.value.topic, info.value.key) == ("src:SYS", "000002-000000017")
    return info.value


@pytest.mark.parametrize("pos", [30, 100, -40, -1])
def test_flipped_byte_is_a_checksum_mismatch(pos: int) -> None:
    data = bytearray(_frame())
    data[pos] ^= 0x40
    _raises(bytes(data), "checksum mismatch")


@pytest.mark.parametrize("cut", [0, 10, 23, 24, 200, -1])
def test_truncated_frame(cut: int) -> None:
    data = _frame()
    _raises(data[:cut], "truncated" if 0 <= cut < 24 else "checksum mismatch")


def test_bad_magic_version_and_flags() -> None:
    data = _frame()
    _raises(b"JSON" + data[4:], "bad magic")
    _raises(b'{"_hw": 3}\n{"seq": 3}\n' + data, "bad magic")  # the old JSON-lines message
    _raises(data[:4] + bytes([2]) + data[5:], "frame version 2")
    _raises(data[:5] + bytes([0x80]) + data[6:], "unknown frame flags")


def _forge(body: bytes, count: int) -> bytes:
    """A frame with a valid header and checksum around an arbitrary body."""
    return struct.pack("<4sBBHqII", b"RWBF", 1, 0, 0, 0, count, zlib.crc32(body)) + body


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def test_wrong_column_type_or_count_or_body() -> None:
    _raises(_forge(_ipc(pa.table({"v": pa.array([1, 2], pa.int64())})), 2), "schema")
    _raises(_forge(_ipc(pa.table({"v": ["a"], "w": ["b"]})), 1), "schema")
    ok = pa.table({"v": pa.array(["a", "b"], pa.string())}).cast(
        pa.schema([pa.field("v", pa.string(), nullable=False)]))
    assert decode_frame(_forge(_ipc(ok), 2), topic="t", key="k").values == ["a", "b"]
    _raises(_forge(_ipc(ok), 3), "header says 1 with 3")
    _raises(_forge(b"\x00" * 64, 0), "undecodable Arrow body")

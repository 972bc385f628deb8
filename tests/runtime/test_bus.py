"""Both buses carry the same frames; a corrupt one is named and loses nothing (no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reuse.runtime.bus import Bus, FileBus
from reuse.runtime.frames import FrameError, decode_frame, encode_frame
from reuse.runtime.partial import run_batch

TOPIC = "etl-sys.parse#2"


def _events(lo: int, hi: int) -> list[str]:
    return [json.dumps({"src": "S", "seq": s, "payload": "é" * (s % 7)}) for s in range(lo, hi)]


def _publish_three(bus: Bus) -> list[str]:
    """Three messages of TOPIC (seq 0-9, 10-19, 20-29); their keys in order."""
    for i, key in enumerate(["000001-000000000", "000001-000000001", "000001-000000002"]):
        bus.publish(TOPIC, key, encode_frame(10 * i + 9, _events(10 * i, 10 * i + 10)))
    return [k for k, _ in bus.read(TOPIC, "", bus.latest(TOPIC))]


def test_frames_round_trip_through_the_bus(bus: Bus) -> None:
    keys = _publish_three(bus)
    assert len(keys) == 3 == bus.size(TOPIC) and keys == sorted(keys)
    assert bus.latest(TOPIC) == keys[-1]
    got = [decode_frame(data, topic=TOPIC, key=k) for k, data in bus.read(TOPIC, keys[0], keys[-1])]
    assert [f.hw for f in got] == [19, 29]
    assert [v for f in got for v in f.values] == _events(10, 30)


def test_file_bus_messages_are_frame_files(tmp_path: Path) -> None:
    bus = FileBus(tmp_path)
    _publish_three(bus)
    names = sorted(p.name for p in bus.topic_dir(TOPIC).iterdir())
    assert names == ["000001-000000000.frame", "000001-000000001.frame", "000001-000000002.frame"]


def _corrupt_middle(bus: Bus, tmp_path: Path) -> list[str]:
    """Three messages of TOPIC with the middle one's bytes damaged on the bus."""
    keys = ["000001-000000000", "000001-000000001", "000001-000000002"]
    frames = [encode_frame(10 * i + 9, _events(10 * i, 10 * i + 10)) for i in range(3)]
    bad = bytearray(frames[1])
    bad[len(bad) // 2] ^= 0xFF
    if isinstance(bus, FileBus):
        for k, f in zip(keys, frames, strict=True):
            bus.publish(TOPIC, k, f)
        (bus.topic_dir(TOPIC) / f"{keys[1]}.frame").write_bytes(bytes(bad))  # damaged at rest
    else:
        for f in (frames[0], bytes(bad), frames[2]):
            bus.publish(TOPIC, "", f)
    return [k for k, _ in bus.read(TOPIC, "", bus.latest(TOPIC))]


def test_corrupt_frame_is_named_and_nothing_is_lost(bus: Bus, tmp_path: Path) -> None:
    keys = _corrupt_middle(bus, tmp_path)
    assert len(keys) == 3  # the damaged message is still on the bus, in its place
    good, errors = [], []
    for k, data in bus.read(TOPIC, "", bus.latest(TOPIC)):
        try:
            good.extend(decode_frame(data, topic=TOPIC, key=k).values)
        except FrameError as e:
            errors.append(str(e))
    assert good == _events(0, 10) + _events(20, 30)  # the others stay readable
    assert len(errors) == 1
    assert errors[0].startswith(f"topic '{TOPIC}': message {keys[1]}: checksum mismatch")
    # the consumer fails the batch instead of skipping the message: its offsets do not move
    spec = {"name": "q", "launch": 1, "tasks": [{"id": "out", "type": "Sink", "config": "sink",
                                                "parents": ["p"]}],
            "topics": {"p": TOPIC}, "name_of": {"out": "out"}, "start": {"out": 0}, "opts": {}}
    messages = [(TOPIC, k, d) for k, d in bus.read(TOPIC, "", bus.latest(TOPIC))]
    with pytest.raises(FrameError, match=f"message {keys[1]}"):
        run_batch(spec, {}, {}, messages)
    first = run_batch(spec, {}, {}, messages[:1])
    assert first["state"]["offsets"] == {TOPIC: keys[0]}
    assert [r["q"] for r in first["sinks"]["out"]] == list(range(10))

"""Both buses carry the same frames; a corrupt one is named and loses nothing; publishing is
idempotent per (topic, key), and the Redis bus's memory of keys stays bounded (no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reuse.runtime.dataplane.bus import Bus, FileBus, RedisBus
from reuse.runtime.dataplane.frames import FrameError, decode_frame, encode_frame
from reuse.runtime.engines.partial.dag import run_batch

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
    else:  # damaged on the way in (Redis keeps what it was given)
        for k, f in zip(keys, (frames[0], bytes(bad), frames[2]), strict=True):
            bus.publish(TOPIC, k, f)
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
    assert [json.loads(r)["q"] for r in first["sinks"]["out"]] == list(range(10))


# --- idempotent publishing (a re-run batch republishes under the same key) ------------------

def _values(bus: Bus, topic: str = TOPIC) -> list[str]:
    return [v for k, data in bus.read(topic, "", bus.latest(topic))
            for v in decode_frame(data, topic=topic, key=k).values]


def test_republished_key_is_kept_once(bus: Bus) -> None:
    key = "000001-000000000"
    frame = encode_frame(9, _events(0, 10))
    bus.publish(TOPIC, key, frame)
    bus.publish(TOPIC, key, frame)  # the batch re-run after a failure
    assert bus.size(TOPIC) == 1
    assert _values(bus) == _events(0, 10)  # every event once
    assert [n for _, n in bus.index(TOPIC, "")] == [10]


def test_a_new_key_still_appends(bus: Bus) -> None:
    bus.publish(TOPIC, "000001-000000000", encode_frame(9, _events(0, 10)))
    bus.publish(TOPIC, "000001-000000001", encode_frame(19, _events(10, 20)))
    bus.publish(TOPIC, "000001-000000001", encode_frame(19, _events(10, 20)))  # re-run
    bus.publish(TOPIC, "000002-000000000", encode_frame(29, _events(20, 30)))  # relaunch
    bus.publish(TOPIC, "000001-000000000", encode_frame(9, _events(0, 10)))  # late re-run
    assert bus.size(TOPIC) == 3
    assert _values(bus) == _events(0, 30)
    other = "src:SYS"  # the same key on another topic is another message
    bus.publish(other, "000001-000000000", encode_frame(9, _events(0, 10)))
    assert bus.size(other) == 1 and _values(bus, other) == _events(0, 10)


def test_redis_key_memory_is_bounded_by_retention(redis_bus: RedisBus) -> None:
    """Truncation forgets the trimmed messages' keys and keeps one key floor: the key hash
    holds one key per retained message, however many were published."""
    bus = redis_bus
    _, _, keys_hash, floor = bus._redis_keys(TOPIC)
    rounds, per_round, keep = 20, 25, 5
    for r in range(rounds):
        for b in range(r * per_round, (r + 1) * per_round):
            key = f"000001-{b:09d}"
            for _ in range(2):  # every batch is published twice (as if re-run)
                bus.publish(TOPIC, key, encode_frame(b, _events(b, b + 1)))
        ids = [k for k, _ in bus.index(TOPIC, "")]
        assert len(ids) == (keep + per_round if r else per_round)
        # the runtime truncates behind the slowest consumer: here, all but the last `keep`
        assert bus.truncate(TOPIC, ids[-keep]) == len(ids) - keep
        assert bus.size(TOPIC) == keep == bus.client.hlen(keys_hash)
        assert len(bus.index(TOPIC, "")) == keep
        last_trimmed = f"000001-{(r + 1) * per_round - keep - 1:09d}"
        assert bus.client.get(floor) == last_trimmed.encode()
    retained = {k.decode() for k in bus.client.hkeys(keys_hash)}
    last = rounds * per_round
    assert retained == {f"000001-{b:09d}" for b in range(last - keep, last)}
    # a batch re-run after its message was read and trimmed is not appended again ...
    before = bus.latest(TOPIC)
    bus.publish(TOPIC, "000001-000000003", encode_frame(3, _events(3, 4)))
    bus.publish(TOPIC, f"000001-{last - keep - 1:09d}", encode_frame(0, _events(0, 1)))
    assert bus.latest(TOPIC) == before and bus.size(TOPIC) == keep
    # ... a retained one neither, and the next batch is
    bus.publish(TOPIC, f"000001-{last - 1:09d}", encode_frame(0, _events(0, 1)))
    bus.publish(TOPIC, f"000001-{last:09d}", encode_frame(last, _events(last, last + 1)))
    assert bus.size(TOPIC) == keep + 1 == bus.client.hlen(keys_hash)
    assert _values(bus)[-2:] == _events(last - 1, last + 1)

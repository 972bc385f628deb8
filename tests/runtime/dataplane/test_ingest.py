"""The ingest into a FileBus (its ``receive`` is what the MQTT callback calls, so no broker is
needed here; the broker-fed ingest is tested in tests/cli/test_broker.py and test_resend.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reuse.runtime.common.execution import source_event
from reuse.runtime.dataplane.bus import FileBus
from reuse.runtime.dataplane.frames import decode_frame
from reuse.runtime.dataplane.ingest import Ingest
from reuse.runtime.dataplane.mqtt import MqttError, encode_message


def msg(src: str, seq: int) -> bytes:
    return encode_message(source_event(src, "synthetic", seq, 0, 10.0))


def events(bus: FileBus, topic: str) -> list[tuple[str, int, list[str]]]:
    """(key, hw, events) of every message of a bus topic, in key order."""
    out = []
    for key, frame in bus.read(topic, "", "\uffff"):
        f = decode_frame(frame, topic=topic, key=key)
        out.append((key, f.hw, list(f.values)))
    return out


def test_ingest_appends_each_topic_in_arrival_order_as_frames(tmp_path: Path) -> None:
    bus = FileBus(tmp_path)
    ing = Ingest(bus, "mqtt://127.0.0.1", launch=3)
    for seq in range(3):
        ing.receive("sensors/A", msg("A", seq))
        ing.receive("sensors/B", msg("B", seq))
    assert ing.counts()["sensors/A"].pending == 3 and bus.size("src:A") == 0
    assert ing.flush() == 6
    ing.receive("sensors/A", msg("A", 3))
    assert ing.flush() == 1 and ing.flush() == 0
    assert events(bus, "src:A") == [
        ("000003-000000001", 2, [msg("A", s).decode() for s in range(3)]),
        ("000003-000000002", 3, [msg("A", 3).decode()])]
    assert events(bus, "src:B") == [("000003-000000001", 2, [msg("B", s).decode()
                                                              for s in range(3)])]
    c = ing.counts()["sensors/A"]
    assert (c.received, c.appended, c.pending, c.last_seq, c.malformed) == (4, 4, 0, 3, 0)


def test_malformed_stale_and_missed_are_counted_not_appended(tmp_path: Path) -> None:
    bus = FileBus(tmp_path)
    ing = Ingest(bus, "mqtt://127.0.0.1")
    ing.receive("sensors/A", msg("A", 0))
    ing.receive("sensors/A", b"garbage")
    ing.receive("sensors/A", msg("A", 0))  # a redelivery
    ing.receive("sensors/A", msg("A", 4))  # 1..3 never came
    ing.receive("sensors/zz/top", msg("A", 5))  # not a source topic
    assert ing.flush() == 1  # 0; 4 waits for the hole before it to be filled
    assert ing.flush(final=True) == 1  # given up: 4 is written, 1..3 are missed
    assert [e for _, _, evs in events(bus, "src:A") for e in evs] == [
        msg("A", 0).decode(), msg("A", 4).decode()]
    counts = ing.counts()
    a = counts["sensors/A"]
    assert (a.received, a.appended, a.malformed, a.stale, a.missed) == (4, 2, 1, 1, 3)
    assert a.last_error == "not JSON: 'garbage'"
    assert counts["sensors/zz/top"].malformed == 1
    assert counts["sensors/zz/top"].to_dict()["appended"] == 0


class FailingBus(FileBus):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.fail = True

    def publish(self, topic: str, key: str, frame: bytes) -> None:
        if self.fail:
            raise OSError("disk full")
        super().publish(topic, key, frame)


def test_a_failed_append_keeps_the_messages_for_the_next_flush(tmp_path: Path) -> None:
    bus = FailingBus(tmp_path)
    ing = Ingest(bus, "mqtt://127.0.0.1")
    ing.receive("sensors/A", msg("A", 0))
    with pytest.raises(OSError):
        ing.flush()
    ing.receive("sensors/A", msg("A", 1))
    assert ing.counts()["sensors/A"].pending == 2
    bus.fail = False
    assert ing.flush() == 2
    assert [e for _, _, evs in events(bus, "src:A") for e in evs] == [
        msg("A", 0).decode(), msg("A", 1).decode()]
    with pytest.raises(MqttError, match="1 messages were not written"):
        bus.fail = True
        ing.receive("sensors/A", msg("A", 2))
        ing.stop()


@pytest.mark.parametrize(("kw", "why"), [({"launch": -1}, "launch"), ({"flush_s": 0}, "flush_s")])
def test_ingest_parameters_are_checked(tmp_path: Path, kw: dict, why: str) -> None:
    with pytest.raises(MqttError, match=why):
        Ingest(FileBus(tmp_path), "mqtt://127.0.0.1", **kw)


def test_an_ingest_told_where_streams_begin_holds_what_precedes_the_first_arrival(
        tmp_path: Path) -> None:
    """Started before its publisher (``first_seq=0``), an ingest whose first message is seq 2
    waits for 0 and 1 as for any hole, and counts them missed when it gives them up; without
    ``first_seq`` the stream begins at 2 (a live stream joined)."""
    m = lambda q: f'{{"src":"S1","seq":{q},"ts":0,"payload":""}}'.encode()  # noqa: E731
    told = Ingest(FileBus(tmp_path / "a"), "mqtt://127.0.0.1:1883", first_seq=0)
    joined = Ingest(FileBus(tmp_path / "b"), "mqtt://127.0.0.1:1883")
    for ing in (told, joined):
        ing.receive("sensors/S1", m(2))
    assert told.flush() == 0 and joined.flush() == 1  # 2 waits for 0 and 1
    told.receive("sensors/S1", m(0))
    assert told.flush() == 1  # 0 written; 2 still waits for 1
    assert told.flush(final=True) == 1 and told.counts()["sensors/S1"].missed == 1
    assert joined.counts()["sensors/S1"].missed == 0

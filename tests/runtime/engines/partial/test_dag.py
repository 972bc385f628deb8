"""The partial-DAG batch function and the file bus, without Spark (fast)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reuse.runtime.common.execution import emitted_bound, source_event
from reuse.runtime.dataplane.bus import FileBus
from reuse.runtime.dataplane.frames import FrameError, decode_frame, encode_frame
from reuse.runtime.engines.partial.dag import run_batch

SPEC = {
    "name": "q", "launch": 1,
    "tasks": [{"id": "pi", "type": "OpmwStep", "config": "default", "parents": ["src"]},
              {"id": "out", "type": "Sink", "config": "sink", "parents": ["pi"]}],
    "topics": {"src": "src:S"}, "name_of": {"pi": "pi", "out": "out"},
    "start": {"pi": 3, "out": 3}, "opts": {"pi_iterations": 10},
}


def _msg(key: str, seqs: range, hw: int | None = None) -> tuple[str, str, bytes]:
    lines = [json.dumps(source_event("S", "synthetic", s, 0, 10.0)) for s in seqs]
    return ("src:S", key, encode_frame(seqs[-1] if hw is None else hw, lines))


def _seqs(frame: bytes) -> list[int]:
    return [json.loads(v)["seq"] for v in decode_frame(frame, topic="t", key="k").values]


def test_admission_cuts_and_publish() -> None:
    res = run_batch(SPEC, {"publish": ["pi"], "end": {"out": 7}}, {}, [_msg("a", range(0, 10))],
                    now_ms=lambda: 0.0)
    assert [json.loads(r)["q"] for r in res["sinks"]["out"]] == [3, 4, 5, 6]  # J = 3 <= seq < R = 7
    assert decode_frame(res["topics"]["pi"], topic="pi", key="k").hw == 9
    assert _seqs(res["topics"]["pi"]) == list(range(3, 10))
    assert res["state"]["offsets"] == {"src:S": "a"} and not res["state"]["final"]


def test_an_ended_task_claims_its_topic_only_below_its_end_cut() -> None:
    """A draining predecessor that reads past its cut in one batch (a burst) must not tell the
    topic's consumers it has processed past it: a hand-over successor writes that part of the
    topic, and a consumer told hw 9 would count itself done before the successor's outputs."""
    res = run_batch(SPEC, {"publish": ["pi"], "end": {"pi": 7, "out": 7}}, {},
                    [_msg("a", range(0, 10))])
    assert decode_frame(res["topics"]["pi"], topic="pi", key="k").hw == 6
    assert _seqs(res["topics"]["pi"]) == [3, 4, 5, 6]
    assert res["state"]["qhw"] == 9 and res["state"]["final"]


def test_final_when_every_task_ended_and_drained() -> None:
    control = {"end": {"pi": 8, "out": 8}}
    early = run_batch(SPEC, control, {}, [_msg("a", range(0, 6))])
    assert not early["state"]["final"]
    late = run_batch(SPEC, control, early["state"], [_msg("b", range(6, 9))])
    assert late["state"]["final"]


def test_stateful_multi_parent_task_waits_for_slower_input() -> None:
    spec = {
        "name": "q", "launch": 1,
        "tasks": [{"id": "err", "type": "ErrorEstimation", "config": {"target": "x"},
                   "parents": ["a", "b"]}],
        "topics": {"a": "A", "b": "B"}, "name_of": {"err": "err"}, "start": {"err": 0},
        "opts": {},
    }

    def msg(topic: str, key: str, seqs: list[int], hw: int) -> tuple[str, str, bytes]:
        evs = [{"src": "S", "seq": s, "ts": 0, "obs": "MLR", "value": 1.0, "actual": 2.0}
               for s in seqs]
        return (topic, key, encode_frame(hw, [json.dumps(e) for e in evs]))

    first = run_batch(spec, {"publish": ["err"]}, {}, [msg("A", "1", [0, 1, 2, 3], 3),
                                                       msg("B", "1", [0, 1], 1)])
    out1 = _seqs(first["topics"]["err"])
    assert out1 == [0, 0, 1, 1]  # seq 2, 3 of A held until B has passed them
    assert [e["seq"] for e in first["state"]["held"]["err"]] == [2, 3]
    second = run_batch(spec, {"publish": ["err"]}, first["state"], [msg("B", "2", [2, 3], 3)])
    out2 = _seqs(second["topics"]["err"])
    assert out2 == [2, 2, 3, 3]


def test_file_bus_orders_messages_and_hides_partial_writes(tmp_path: Path) -> None:
    bus = FileBus(tmp_path)
    assert bus.latest("t") == ""
    bus.publish("t", "000002-000000001", encode_frame(1, ["b"]))
    bus.publish("t", "000001-000000005", encode_frame(0, ["a"]))
    (bus.topic_dir("t") / ".000003-000000000.tmp").write_text("partial")
    assert bus.latest("t") == "000002-000000001"
    assert [k for k, _ in bus.read("t", "", "~")] == ["000001-000000005", "000002-000000001"]
    assert [k for k, _ in bus.read("t", "000001-000000005", "~")] == ["000002-000000001"]


def test_corrupt_input_frame_fails_the_batch_naming_topic_and_key() -> None:
    topic, key, frame = _msg("000001-000000002", range(0, 4))
    bad = frame[:-1] + bytes([frame[-1] ^ 0xFF])
    with pytest.raises(FrameError, match=r"topic 'src:S': message 000001-000000002: checksum"):
        run_batch(SPEC, {"publish": ["pi"]}, {}, [_msg("000001-000000001", range(0, 2)),
                                                  (topic, key, bad)])


def test_sources_are_deterministic_and_paced() -> None:
    a = source_event("SYS", "SYS", 5, 1000, 10.0)
    assert a == source_event("SYS", "SYS", 5, 1000, 10.0) and a["ts"] == 1500
    assert emitted_bound(1000, 10.0, now_ms=1000) == 0
    assert emitted_bound(1000, 10.0, now_ms=1999) == 9


def test_leaf_task_outputs_are_recorded_when_asked() -> None:
    spec = {**SPEC, "tasks": SPEC["tasks"][:1], "name_of": {"pi": "pi"}, "start": {"pi": 0}}
    res = run_batch(spec, {"record": ["pi"]}, {}, [_msg("a", range(0, 4))], now_ms=lambda: 1.0)
    assert [json.loads(r)["q"] for r in res["sinks"]["pi"]] == [0, 1, 2, 3]
    assert run_batch(spec, {}, {}, [_msg("a", range(0, 4))])["sinks"] == {}

"""K+1 copies of a sink's records become one stream, in seq order, each record once."""

from __future__ import annotations

import pytest

from reuse.runtime.control import ControlError, OpLog, OutputLog


def _records(lo: int, hi: int) -> list[tuple[int, str, str]]:
    """Deterministic records: two per even seq (the same record twice at seq % 4 == 0),
    none for odd ones."""
    out = []
    for q in range(lo, hi):
        if q % 2 == 0:
            out.append((q, f"d{q}", f"x{q}"))
            out.append((q, f"d{q}" if q % 4 == 0 else f"e{q}", f"y{q}"))
    return out


def test_copies_with_different_batch_boundaries_appear_once(redis_url: str, run: str) -> None:
    OpLog(redis_url, run).open(0)
    out = OutputLog(redis_url, run)
    assert out.mark("s") == 0
    # instance a claims [0,6) [6,20); instance b [0,10) [10,14) [14,20), interleaved
    assert out.publish("s", 0, 6, _records(0, 6), by="a") == (6, 6)
    assert out.publish("s", 0, 10, _records(0, 10), by="b") == (4, 10)
    assert out.publish("s", 6, 20, _records(6, 20), by="a") == (10, 20)
    assert out.publish("s", 10, 14, _records(10, 14), by="b") == (0, 20)
    assert out.publish("s", 14, 20, _records(14, 20), by="b") == (0, 20)
    got, cursor = out.read("s")
    assert [(o.seq, o.digest) for o in got] == [(q, d) for q, d, _ in _records(0, 20)]
    assert [o.by for o in got[:6]] == ["a"] * 6 and got[6].by == "b"
    assert out.read("s", cursor) == ([], cursor)
    assert out.size("s") == 20
    assert out.client.zcard(out.key("out:s#seen")) == 0  # nothing kept above the mark


def test_a_range_above_the_mark_is_deduplicated_but_does_not_move_it(
        redis_url: str, run: str) -> None:
    OpLog(redis_url, run).open(0)
    out = OutputLog(redis_url, run)
    out.publish("s", 0, 4, _records(0, 4), by="a")
    assert out.publish("s", 8, 12, _records(8, 12), by="joined") == (4, 4)  # lo > mark
    assert out.publish("s", 4, 12, _records(4, 12), by="a") == (4, 12)  # fills [4, 8)
    got, _ = out.read("s")
    assert sorted((o.seq, o.digest) for o in got) == sorted((q, d) for q, d, _ in _records(0, 12))
    assert out.settle("s", 30) == 30 and out.settle("s", 5) == 30
    assert out.publish("s", 12, 30, _records(12, 30)) == (0, 30)


def test_a_torn_publish_of_another_sink_loses_nothing(redis_url: str, run: str) -> None:
    """An instance killed between two sinks' publishes: the other instance's copy fills in."""
    OpLog(redis_url, run).open(0)
    out = OutputLog(redis_url, run)
    out.publish("s1", 0, 8, _records(0, 8), by="a")  # a dies before publishing s2
    out.publish("s1", 0, 8, _records(0, 8), by="b")
    out.publish("s2", 0, 8, _records(0, 8), by="b")
    for sink in ("s1", "s2"):
        assert [(o.seq, o.digest) for o in out.read(sink)[0]] == \
            [(q, d) for q, d, _ in _records(0, 8)]


def test_bad_publishes_are_one_line_errors(redis_url: str, run: str) -> None:
    out = OutputLog(redis_url, run)
    with pytest.raises(ControlError, match="not open"):
        out.publish("s", 0, 2, [])
    OpLog(redis_url, run).open(0)
    with pytest.raises(ControlError, match="seq 5 is outside"):
        out.publish("s", 0, 4, [(5, "d", "p")])
    with pytest.raises(ControlError, match="out of order"):
        out.publish("s", 0, 4, [(2, "d", "p"), (1, "d", "p")])

"""Read limit, lag watermarks and retention points as plain data (no Spark, no bus)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reuse.runtime import SparkRuntimeError
from reuse.runtime.dataplane.flow_control import (
    Consumer,
    Limits,
    admit,
    default_max_events,
    throttle,
    truncation_points,
)


def _keys(n: int, first: int = 0) -> list[str]:
    return [f"000001-{i:09d}" for i in range(first, first + n)]


@st.composite
def limits(draw: st.DrawFn) -> Limits:
    n = draw(st.integers(1, 60))
    hi = draw(st.integers(0, 150))
    lo = draw(st.integers(0, hi))
    return Limits(n, hi, lo)


counts = st.lists(st.integers(0, 40), max_size=25)


@given(limits(), counts, st.integers(0, 25), st.booleans())
def test_admits_a_prefix_in_order_within_the_limit(lim: Limits, ns: list[int], done: int,
                                                   was: bool) -> None:
    keys = _keys(len(ns))
    msgs = list(zip(keys, ns, strict=True))
    done = min(done, len(keys))
    start = keys[done - 1] if done else ""
    a = admit({"t": msgs}, {"t": start}, lim, {"t": was})
    pending = msgs[done:]
    taken = [m for m in msgs if start < m[0] <= a.end["t"]]
    # a prefix of the pending messages, in key order: nothing skipped, nothing reordered
    assert taken == pending[:len(taken)] and a.messages["t"] == len(taken)
    assert a.end["t"] >= start
    assert a.lag["t"] == sum(n for _, n in pending)
    assert a.admitted["t"] == sum(n for _, n in taken)
    # progress: a message is admitted whenever one is pending (even an empty one)
    assert (len(taken) >= 1) == bool(pending)
    if a.throttled["t"]:
        # within the limit, bar a single oversized message taken alone
        assert a.admitted["t"] <= lim.max_events or len(taken) == 1  # type: ignore[operator]
        # and as many as fit: the next one would have crossed the limit
        if len(taken) < len(pending):
            assert a.admitted["t"] + pending[len(taken)][1] > lim.max_events  # type: ignore[operator]
    else:
        # not throttled: everything pending, which is at most lag_high
        assert taken == pending and a.admitted["t"] <= lim.lag_high  # type: ignore[operator]
    assert a.admitted["t"] <= max(lim.batch_bound or 0, max((n for _, n in taken), default=0))


@given(limits(), st.lists(st.integers(0, 300), max_size=40), st.booleans())
def test_hysteresis(lim: Limits, lags: list[int], first: bool) -> None:
    state = first
    for lag in lags:
        new = throttle(state, lag, lim)
        if lag > lim.lag_high:  # type: ignore[operator]
            assert new
        elif lag < lim.lag_low:  # type: ignore[operator]
            assert not new
        else:  # between the watermarks the state holds
            assert new == state
        state = new


@settings(max_examples=60)
@given(limits(), st.lists(st.lists(st.integers(0, 30), max_size=6), min_size=1, max_size=30),
       st.lists(st.integers(0, 3), min_size=1, max_size=30))
def test_a_consumer_reads_every_message_exactly_once(lim: Limits, arrivals: list[list[int]],
                                                     polls: list[int]) -> None:
    """A producer appends messages while a consumer polls 0-3 times per producer step; then
    the consumer drains. It reads each message once, in order, and always finishes."""
    msgs: list[tuple[str, int]] = []
    read: list[str] = []
    start, state = "", False

    def poll() -> None:
        nonlocal start, state
        a = admit({"t": msgs}, {"t": start}, lim, {"t": state})
        read.extend(k for k, _ in msgs if start < k <= a.end["t"])
        start, state = a.end["t"], a.throttled["t"]

    for i, batch in enumerate(arrivals):
        msgs.extend(zip(_keys(len(batch), len(msgs)), batch, strict=True))
        for _ in range(polls[i % len(polls)]):
            poll()
    for _ in range(len(msgs) + 1):
        poll()
    assert read == [k for k, _ in msgs]


def test_no_bound_takes_everything_and_never_throttles() -> None:
    msgs = {"t": list(zip(_keys(3), [10**6, 5, 7], strict=True))}
    a = admit(msgs, {"t": ""}, Limits(None))
    assert a.end == {"t": _keys(3)[-1]} and a.throttled == {"t": False}
    assert Limits.of_options({"max_events": "0"}) == Limits(None)
    assert Limits(None).options() == {} and Limits(None).batch_bound is None


def test_throttled_consumer_catches_up_in_bites_then_is_released() -> None:
    lim = Limits(50, lag_high=100, lag_low=20)
    msgs = list(zip(_keys(12), [20] * 12, strict=True))  # 240 events pending
    start, state, bites = "", False, []
    while True:
        a = admit({"t": msgs}, {"t": start}, lim, {"t": state})
        if a.end["t"] == start:
            break
        bites.append((a.admitted["t"], a.throttled["t"]))
        start, state = a.end["t"], a.throttled["t"]
    # throttled at 240 > 100: bites of 40 (two 20-event messages fit in 50, three do not);
    # the state holds while the lag is between the watermarks (40 and 20 are not < 20 ...)
    assert bites == [(40, True), (40, True), (40, True), (40, True), (40, True), (40, True)]
    # ... and is released once the lag is under the low watermark
    assert admit({"t": [("k", 20)]}, {"t": ""}, lim, {"t": True}).throttled == {"t": True}
    assert admit({"t": [("k", 19)]}, {"t": ""}, lim, {"t": True}).throttled == {"t": False}


def test_topics_are_decided_independently() -> None:
    lim = Limits(10, lag_high=15, lag_low=5)
    a = admit({"a": list(zip(_keys(4), [6] * 4, strict=True)),
               "b": list(zip(_keys(2), [3, 3], strict=True))}, {"a": "", "b": ""}, lim)
    assert a.throttled == {"a": True, "b": False}
    assert (a.admitted, a.lag) == ({"a": 6, "b": 6}, {"a": 24, "b": 6})
    rep = a.report()
    assert rep["lag"] == 24 and rep["throttled"] is True
    assert rep["topics"]["a"] == {"lag": 24, "admitted": 6, "messages": 1, "throttled": True}


def test_limits_validate_and_round_trip() -> None:
    lim = Limits(30, 90, 10)
    assert Limits.of_options(lim.options()) == lim and lim.batch_bound == 90
    with pytest.raises(SparkRuntimeError, match="max_events must be at least 1"):
        Limits(0)
    with pytest.raises(SparkRuntimeError, match="low 8, high 5"):
        Limits(10, 5, 8)
    assert Limits(10, lag_high=3) == Limits(10, 3, 3)  # low default clipped to high
    assert default_max_events(10.0, 2.0, fanout=1) == 200
    assert default_max_events(0.01, 1.0, fanout=1) == 1


# --- retention -----------------------------------------------------------------------------------

def test_join_point_of_a_consumer_that_never_committed_is_kept() -> None:
    keys = _keys(10)
    old = Consumer("old", ("t",), {"t": ""}, {"t": keys[8]})
    new = Consumer("new", ("t",), {"t": keys[4]}, None)  # launched at keys[4], no batch yet
    assert truncation_points([old, new], {"t": keys[9]}) == {"t": keys[4]}
    # alone, the old one lets everything before its committed offset go
    assert truncation_points([old], {"t": keys[9]}) == {"t": keys[8]}


def test_handover_predecessor_and_successor_are_both_respected() -> None:
    keys = _keys(10)
    pred = Consumer("q3", ("t", "u"), {"t": "", "u": ""}, {"t": keys[2], "u": keys[6]})
    succ = Consumer("q5", ("t",), {"t": keys[7]}, None)
    assert truncation_points([pred, succ], {"t": keys[9], "u": keys[9]}) == {
        "t": keys[2], "u": keys[6]}


def test_unread_topics_keep_their_latest_message_and_empty_ones_nothing() -> None:
    keys = _keys(3)
    assert truncation_points([], {"t": keys[2], "e": ""}) == {"t": keys[2]}
    # a consumer at the very start of a topic lets nothing go
    assert truncation_points([Consumer("c", ("t",), {"t": ""})], {"t": keys[2]}) == {}


@given(st.integers(1, 30), st.lists(st.tuples(st.integers(0, 30), st.one_of(
    st.none(), st.integers(0, 30))), max_size=6))
def test_retention_never_drops_what_a_live_consumer_still_needs(n: int, cs: list[tuple[
        int, int | None]]) -> None:
    keys = _keys(n)

    def key(i: int) -> str:
        return "" if i == 0 else keys[min(i, n) - 1]

    consumers = [Consumer(f"c{i}", ("t",), {"t": key(s)},
                          None if c is None else {"t": key(max(s, c))})
                 for i, (s, c) in enumerate(cs)]
    floors = truncation_points(consumers, {"t": keys[-1]})
    kept = [k for k in keys if k >= floors.get("t", "")]
    for c in consumers:
        after = c.needs_after("t")
        assert [k for k in keys if k > after] == [k for k in kept if k > after], c
    assert kept  # the latest message is always kept

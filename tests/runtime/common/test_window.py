"""The one interpreter of a window (issue 32, item 3), without Spark.

What the engines share is checked here on its own: the window rule, the slice, and what
``run_window`` does with the hooks each engine passes (``source``, ``gather``, ``taken``,
``sent``). Each engine's use of it is checked against the reference execution in its own
tests (``test_shard.py`` pins the shard's record lines, ``test_stages.py`` the split stages
against the shard, ``test_dag.py`` the partial DAG's cuts and held events).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from reuse.runtime.common.window import run_window, seq_slice, task_window
from reuse.tasks.columnar import Batch

OPTS = {"pi_iterations": 5}


def _task(tid: str, kind: str, parents: list[str], start: int = 0, end: int | None = None,
          record: bool = False) -> dict[str, Any]:
    types = {"source": "S", "sink": "Sink", "task": "X"}
    return {"id": tid, "type": types[kind], "config": kind if kind != "task" else {"n": tid},
            "parents": parents, "kind": kind, "start": start, "end": end, "record": record,
            "stream": "s1"}


def _events(a: int, b: int) -> list[dict[str, Any]]:
    return [{"src": "s1", "seq": s, "ts": s, "payload": f"s1:{s}"} for s in range(a, b)]


@given(st.lists(st.integers(0, 9), max_size=12), st.integers(0, 10), st.integers(0, 10))
def test_the_slice_is_the_filter_on_sorted_events(seqs: list[int], a: int, b: int) -> None:
    events = [{"seq": s, "i": i} for i, s in enumerate(sorted(seqs))]
    got = seq_slice(events, a, b)
    assert got == [e for e in events if a <= e["seq"] < b]
    if events and all(a <= e["seq"] < b for e in events):
        assert got is events  # nothing to cut: no copy


@given(st.integers(0, 20), st.one_of(st.none(), st.integers(0, 20)), st.integers(0, 20),
       st.integers(0, 20))
def test_a_task_takes_its_cuts_inside_the_batch(start: int, end: int | None, lo: int,
                                                 hi: int) -> None:
    a, b = task_window({"start": start, "end": end}, lo, hi)
    taken = {s for s in range(0, 21) if a <= s < b}
    assert taken == {s for s in range(0, 21)
                     if lo <= s < hi and start <= s and (end is None or s < end)}


def test_each_task_takes_its_window_and_the_hooks_see_what_it_did() -> None:
    tasks = [_task("src", "source", []), _task("x", "task", ["src"], start=3),
             _task("y", "task", ["x"], start=0, end=2, record=True),
             _task("out", "sink", ["x"])]
    asked: list[tuple[str, int, int]] = []
    taken: dict[str, list[int]] = {}
    sent: dict[str, int] = {}

    def source(t: Any, a: int, b: int) -> list[dict[str, Any]]:
        asked.append((t["id"], a, b))
        return _events(a, b)

    res = run_window(tasks, 0, 8, {}, OPTS, source=source,
                     taken=lambda t, evs: taken.setdefault(t["id"], [e["seq"] for e in evs]),
                     sent=lambda t, out: sent.setdefault(t["id"], len(out)),
                     now_ms=lambda: 1.0)
    assert asked == [("src", 0, 8)] and res.events == 8
    # y's window [0, 2) is open, but before x's first output (x starts at 3)
    assert taken == {"x": [3, 4, 5, 6, 7], "y": [], "out": [3, 4, 5, 6, 7]}
    assert res.counts == {"src": 8, "x": 5, "y": 0, "out": 5}
    assert sent == {"src": 8, "x": 5}  # only tasks with outputs are sent on; a sink has none
    assert [json.loads(r)["q"] for r in res.sinks["out"]] == [3, 4, 5, 6, 7]
    assert "y" not in res.sinks  # recorded, but it made nothing
    assert set(res.cpu) == {"src", "x", "y", "out"}


def test_outside_its_window_a_task_keeps_its_state_and_is_not_billed() -> None:
    tasks = [_task("src", "source", [], start=5), _task("x", "task", ["src"], start=5)]
    res = run_window(tasks, 0, 5, {"x": {"kept": 1}}, OPTS, source=lambda t, a, b: _events(a, b))
    assert res.outputs == {"src": [], "x": []} and res.events == 0
    assert res.cpu == {} and res.counts == {}


# --- columnar (issue 35) --------------------------------------------------------------------------


def _spec(tid: str, type_: str, config: Any, parents: list[str], kind: str = "task",
          start: int = 0, end: int | None = None, record: bool = False) -> dict[str, Any]:
    return {"id": tid, "type": type_, "config": config, "parents": parents, "kind": kind,
            "start": start, "end": end, "record": record, "stream": tid}


KALMAN = {"process_noise": 0.1, "sensor_noise": 0.5, "estimated_error": 1.0, "fields": ["t"]}
#: two sources; two RangeFilters on one (a predicate group); a Kalman filter reading both
#: sources (two parents, stateful); a block average of a filter's outputs; PiTasks (no kernel:
#: their own ``process``), one recorded; one Kalman filter nothing reaches; sinks
GRAPH = [
    _spec("s1", "S", "source", [], kind="source"),
    _spec("s2", "S", "source", [], kind="source"),
    _spec("drop", "RangeFilter", {"valid_range": {"t": [2, 7]}}, ["s1"]),
    _spec("null", "RangeFilter", {"valid_range": {"t": [0, 5]}, "mode": "null"}, ["s1"]),
    _spec("kal", "KalmanFilter", KALMAN, ["s1", "s2"], record=True),
    _spec("bwa", "BlockWindowAverage", {"window": 3, "fields": ["t"]}, ["drop"]),
    _spec("pi", "X", {"n": "pi"}, ["kal"], record=True),
    _spec("lone", "KalmanFilter", {**KALMAN, "fields": ["none"]}, ["null"]),
    _spec("after", "KalmanFilter", KALMAN, ["lone"]),
    _spec("o-bwa", "Sink", "sink", ["bwa"], kind="sink"),
    _spec("o-pi", "Sink", "sink", ["pi"], kind="sink"),
    _spec("o-null", "Sink", "sink", ["null"], kind="sink"),
    _spec("o-s2", "Sink", "sink", ["s2"], kind="sink"),
]


def _reading(src: str, seq: int) -> dict[str, Any]:
    """A source event: an observation ``t`` of one of three sensors; its value a float in
    [0, 9), now and then an int, ``None`` or a string (columns of ``object``)."""
    k = (seq * 7 + (3 if src == "s2" else 0)) % 23
    value: Any = k * 0.4 if k % 5 else (None, 4, "6.5", "x", 3)[k % 5 if k < 5 else k % 4]
    return {"src": src, "seq": seq, "ts": seq * 100, "sensor": f"n{seq % 3}", "obs": "t",
            "value": value}


@st.composite
def _windowed(draw: st.DrawFn, graph: list[dict[str, Any]] | None = None,
              ) -> list[dict[str, Any]]:
    """:data:`GRAPH` (or ``graph``) with each task's ``[start, end)`` drawn (inside, across
    or outside the batches) and its record flag sometimes flipped."""
    out = []
    for t in GRAPH if graph is None else graph:
        start = draw(st.integers(0, 25))
        end = draw(st.one_of(st.none(), st.integers(start, 32)))
        rec = t["record"] if t["kind"] != "task" else draw(st.booleans())
        out.append({**t, "start": start, "end": end, "record": rec})
    return out


def _batches(tasks: list[dict[str, Any]], bounds: list[int], opts: dict[str, Any],
             ) -> tuple[dict[str, list[str]], dict[str, Any], list[Any]]:
    """Record lines (batches concatenated), final states and, per batch, what else the run
    says (counts, events, groups, which tasks were billed), the states carried as JSON."""
    states: dict[str, Any] = {}
    lines: dict[str, list[str]] = {}
    rest = []
    made: list[tuple[Batch, dict[str, np.ndarray]]] = []

    def columns(t: Any, a: int, b: int) -> Batch:  # kept, to check no kernel wrote into it
        batch = Batch.from_events([_reading(t["stream"], s) for s in range(a, b)])
        made.append((batch, {k: c.copy() for k, c in batch.cols.items()}))
        return batch

    for lo, hi in zip(bounds, bounds[1:], strict=False):
        res = run_window(tasks, lo, hi, states, opts, now_ms=lambda: 0.0, source_batch=columns,
                         source=lambda t, a, b: [_reading(t["stream"], s) for s in range(a, b)])
        for tid, recs in res.sinks.items():
            lines.setdefault(tid, []).extend(recs)
        states = json.loads(json.dumps(res.states))
        rest.append((res.counts, res.events, res.groups, sorted(res.cpu)))
    for batch, copies in made:
        assert batch.cols.keys() == copies.keys()
        for k, c in batch.cols.items():
            assert c.tolist() == copies[k].tolist(), k
    return lines, states, rest


@given(st.data())
def test_columnar_is_the_per_event_path_whatever_the_windows(data: st.DataObject) -> None:
    """Windows cutting inside batches, tasks starting and ending inside them, a two-parent
    stateful task, a predicate group, tasks that get nothing and states carried outside
    their windows: the columnar path's records, states, counts and groups are the per-event
    path's, byte for byte (the clock fixed)."""
    tasks = data.draw(_windowed())
    cuts = sorted(data.draw(st.lists(st.integers(1, 29), max_size=3, unique=True)))
    bounds = [0, *cuts, 30]
    fuse = data.draw(st.booleans())
    per_event = _batches(tasks, bounds, {**OPTS, "fuse_predicates": fuse})
    columnar = _batches(tasks, bounds, {**OPTS, "fuse_predicates": fuse, "columnar": True})
    assert columnar == per_event


def test_columnar_runs_kernels_on_batches_and_fuses_the_group() -> None:
    """The whole graph over one window: the outputs are batches (no event lists), the
    RangeFilters run as one group, the two-parent filter took both sources' events in
    ``seq`` order, and the tasks given nothing left the states the per-event path leaves."""
    tasks = [{**t, "record": t["kind"] != "source" and t["record"]} for t in GRAPH]
    opts = {**OPTS, "columnar": True}
    src = lambda t, a, b: [_reading(t["stream"], s) for s in range(a, b)]  # noqa: E731
    res = run_window(tasks, 0, 12, {}, opts, source=src, now_ms=lambda: 0.0)
    per = run_window(tasks, 0, 12, {}, OPTS, source=src, now_ms=lambda: 0.0)
    assert res.outputs == {} and set(res.batches) == {t["id"] for t in tasks}
    assert res.groups == per.groups == [["drop", "null"]]
    assert res.counts == per.counts and res.counts["kal"] == 24 and res.events == 24
    assert [json.loads(r)["q"] for r in res.sinks["kal"]] == \
        [json.loads(r)["q"] for r in per.sinks["kal"]]
    assert res.batches["kal"].cols["seq"].tolist() == sorted(res.batches["kal"].cols["seq"])
    assert res.sinks == per.sinks and res.states == per.states
    assert res.states["lone"] == {"series": {}} and "lone" not in res.sinks  # took, made none
    assert res.counts["after"] == 0 and res.states["after"] == {"series": {}}  # no input


def test_columnar_keeps_a_state_outside_its_window_and_bills_nothing() -> None:
    tasks = [_spec("s1", "S", "source", [], kind="source", start=5),
             _spec("kal", "KalmanFilter", KALMAN, ["s1"], end=3)]
    kept = {"series": {"n1|t": [1.0, 0.5]}}
    res = run_window(tasks, 5, 9, {"kal": kept}, {**OPTS, "columnar": True},
                     source=lambda t, a, b: [_reading("s1", s) for s in range(a, b)])
    assert res.states == {"kal": kept} and res.counts == {"s1": 4} and set(res.cpu) == {"s1"}
    assert res.batches["kal"].n == 0 and res.events == 4


def test_columnar_reads_the_clock_once_per_task_and_window() -> None:
    """One reading per task per window that records something (an output's time is its
    batch's completion), where the per-event path reads it per input event."""
    tasks = [_task("src", "source", []), _task("x", "task", ["src"], record=True),
             _task("out", "sink", ["x"])]
    readings = {"per event": 0, "columnar": 0}

    def clock(which: str) -> Callable[[], float]:
        def now() -> float:
            readings[which] += 1
            return 0.0
        return now

    per = run_window(tasks, 0, 6, {}, OPTS, source=lambda t, a, b: _events(a, b),
                     now_ms=clock("per event"))
    col = run_window(tasks, 0, 6, {}, {**OPTS, "columnar": True},
                     source=lambda t, a, b: _events(a, b), now_ms=clock("columnar"))
    assert col.sinks == per.sinks and len(per.sinks["out"]) == 6
    assert readings == {"per event": 12, "columnar": 2}


def test_a_hook_or_a_custom_gather_keeps_the_per_event_path() -> None:
    """Columnar only where the window builds every input itself: a caller that watches what
    a task takes (``taken``), or gathers its inputs, gets event lists."""
    tasks = [_task("src", "source", []), _task("x", "task", ["src"])]
    opts = {**OPTS, "columnar": True}
    src = lambda t, a, b: _events(a, b)  # noqa: E731
    seen: list[int] = []
    res = run_window(tasks, 0, 4, {}, opts, source=src,
                     taken=lambda t, evs: seen.extend(e["seq"] for e in evs))
    assert seen == [0, 1, 2, 3] and len(res.outputs["x"]) == 4 and res.batches == {}
    res = run_window(tasks, 0, 4, {}, opts, source=src,
                     gather=lambda t, outs: list(outs[t["parents"][0]]))
    assert len(res.outputs["x"]) == 4 and res.batches == {}
    res = run_window(tasks, 0, 4, {}, opts, source=src)
    assert res.outputs == {} and res.batches["x"].n == 4


def test_full_records_are_the_same_bytes_on_both_paths() -> None:
    """``record="full"`` writes the event with its keys sorted: a batch does not keep the
    key order a task built its event in."""
    tasks = [_spec("s1", "S", "source", [], kind="source"),
             _spec("s2", "S", "source", [], kind="source"),
             _spec("kal", "KalmanFilter", KALMAN, ["s1", "s2"], record=True),
             _spec("o", "Sink", "sink", ["kal"], kind="sink")]
    full = {**OPTS, "record": "full"}
    src = lambda t, a, b: [_reading(t["stream"], s) for s in range(a, b)]  # noqa: E731
    per = run_window(tasks, 0, 9, {}, full, source=src, now_ms=lambda: 0.0)
    col = run_window(tasks, 0, 9, {}, {**full, "columnar": True}, source=src,
                     now_ms=lambda: 0.0)
    assert col.sinks == per.sinks and len(per.sinks["o"]) > 5
    rec = json.loads(per.sinks["o"][0])
    assert list(rec) == ["s", "q", "ts", "o", "d", "e"] and list(rec["e"]) == sorted(rec["e"])


# --- window groups (issue 35, item 3) -------------------------------------------------------------

def _bwa(tid: str, window: int, parents: list[str], **config: Any) -> dict[str, Any]:
    return _spec(tid, "BlockWindowAverage", {"window": window, "fields": ["t"], **config},
                 parents)


#: block averages of one stream: 3, 5 and 10 (a window group), 2 keyed by field only (other
#: series: alone), 4 and 7 over both sources (a second group, two parents); sinks on two
WINDOWS = [
    _spec("s1", "S", "source", [], kind="source"),
    _spec("s2", "S", "source", [], kind="source"),
    _bwa("w3", 3, ["s1"]), _bwa("w5", 5, ["s1"]), _bwa("w10", 10, ["s1"]),
    _bwa("w2", 2, ["s1"], group_by=["obs"]),
    _bwa("v4", 4, ["s1", "s2"]), _bwa("v7", 7, ["s1", "s2"]),
    _spec("o-w5", "Sink", "sink", ["w5"], kind="sink"),
    _spec("o-v7", "Sink", "sink", ["v7"], kind="sink"),
]


@given(st.data())
def test_a_window_group_is_each_member_alone(data: st.DataObject) -> None:
    """Members starting and ending inside batches, states carried from batch to batch, some
    recorded: with window groups, without (``fuse_windows`` false) and per event, the same
    records, states, counts and billed tasks, byte for byte."""
    tasks = data.draw(_windowed(WINDOWS))
    cuts = sorted(data.draw(st.lists(st.integers(1, 29), max_size=3, unique=True)))
    bounds = [0, *cuts, 30]
    fused = _batches(tasks, bounds, {**OPTS, "columnar": True})
    alone = _batches(tasks, bounds, {**OPTS, "columnar": True, "fuse_windows": False})
    assert fused == alone == _batches(tasks, bounds, OPTS)


def test_window_groups_run_and_fusion_off_turns_them_off() -> None:
    """One window: the groups are reported, the ``WindowOut`` is the one fusion off gives
    (outputs, states, sinks, counts, billed tasks); ``fuse_predicates`` false turns window
    groups off too unless ``fuse_windows`` says otherwise."""
    tasks = [{**t, "record": t["kind"] == "task"} for t in WINDOWS]
    src = lambda t, a, b: [_reading(t["stream"], s) for s in range(a, b)]  # noqa: E731
    states = {"w5": {"blocks": {"n1|t": [2, 0.4, 1.2]}}, "v7": {"blocks": {"n0|t": [6, 3.0]}}}

    def run(**flags: bool) -> Any:
        return run_window(tasks, 0, 24, states, {**OPTS, "columnar": True, **flags},
                          source=src, now_ms=lambda: 0.0)

    on, off = run(), run(fuse_windows=False)
    assert on.window_groups == [["w3", "w5", "w10"], ["v4", "v7"]] and off.window_groups == []
    assert {k: b.to_events() for k, b in on.batches.items()} == \
        {k: b.to_events() for k, b in off.batches.items()}
    assert on.batches["w5"].n == 3 and on.sinks["w5"] and on.sinks["o-v7"]
    assert (on.states, on.sinks, on.counts, on.events) == \
        (off.states, off.sinks, off.counts, off.events)
    assert set(on.cpu) == set(off.cpu)
    assert run(fuse_predicates=False).window_groups == []
    assert run(fuse_predicates=False, fuse_windows=True).window_groups == on.window_groups

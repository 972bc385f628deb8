"""The one interpreter of a window (issue 32, item 3), without Spark.

What the engines share is checked here on its own: the window rule, the slice, and what
``run_window`` does with the hooks each engine passes (``source``, ``gather``, ``taken``,
``sent``). Each engine's use of it is checked against the reference execution in its own
tests (``test_shard.py`` pins the shard's record lines, ``test_stages.py`` the split stages
against the shard, ``test_dag.py`` the partial DAG's cuts and held events).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from reuse.runtime.common.window import run_window, seq_slice, task_window

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

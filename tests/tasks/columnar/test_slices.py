"""Window groups through shared slices (issue 35, item 3): ``run_sliced`` against each member
run alone, through its own kernel and through its per-event task, batch after batch: the
same outputs and states, bit for bit, on generated and real RIoTBench streams, for members of
different windows (dividing each other or not), carried open blocks, their own row spans,
restarts from ``get_state`` between batches, panes and values no proof covers."""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reuse.tasks import make_task
from reuse.tasks.columnar import Batch, blocks, kernel_for, slices
from reuse.tasks.columnar.equivalence import compare
from reuse.tasks.columnar.slices import run_sliced

FAST = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PATHS = {"columns": mock.patch.object(blocks, "_COLUMNS_PER_BLOCK", 1e18),
         "fsum": mock.patch.object(blocks, "_COLUMNS_PER_BLOCK", 0.0),
         "cost": mock.patch.object(blocks, "_COLUMNS_PER_BLOCK", 1 / 8)}
WINDOWS = st.lists(st.sampled_from([1, 2, 3, 4, 5, 6, 7, 10, 20, 70]), min_size=2, max_size=5)


def _made(cfg: dict, state: Any) -> Any:
    task = make_task("BlockWindowAverage", cfg)
    if state is not None:
        task.set_state(json.loads(json.dumps(state)))
    return task


def check(cfgs: list[dict], events: list[dict], cuts: list[int], spans: list[list[tuple]],
          restarts: list[bool], states: list[Any] | None = None) -> list[list[dict]]:
    """Slice ``events`` at ``cuts``; in batch ``b`` member ``m`` takes the batch's rows
    ``spans[b][m]`` (clipped), fused (``run_sliced``), alone through its kernel, and per
    event; after every batch the three states must be equal, and the outputs at the end
    (:func:`~reuse.tasks.columnar.equivalence.compare`: types and bits). A restart rebuilds
    the fused members from their ``get_state()``. Returns the fused outputs per member."""
    states = states or [None] * len(cfgs)
    fused = [_made(c, s) for c, s in zip(cfgs, states, strict=True)]
    alone = [_made(c, s) for c, s in zip(cfgs, states, strict=True)]
    each = [_made(c, s) for c, s in zip(cfgs, states, strict=True)]
    got: list[list[dict]] = [[] for _ in cfgs]
    want: list[list[dict]] = [[] for _ in cfgs]
    ref: list[list[dict]] = [[] for _ in cfgs]
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(events)), len(events)]
    for b, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False)):
        chunk = events[lo:hi]
        n = len(chunk)
        rows = [(min(i, n), min(max(i, j), n)) for i, j in
                (spans[b] if b < len(spans) else [(0, n)] * len(cfgs))[:len(cfgs)]]
        rows += [(0, n)] * (len(cfgs) - len(rows))
        if b < len(restarts) and restarts[b]:
            fused = [_made(c, t.get_state()) for c, t in zip(cfgs, fused, strict=True)]
        out = run_sliced(fused, Batch.from_events([dict(e) for e in chunk]), rows)
        for m, (i, j) in enumerate(rows):
            got[m] += out[m].to_events()
            if j > i:
                want[m] += kernel_for(alone[m]).run(
                    Batch.from_events([dict(e) for e in chunk[i:j]])).to_events()
            ref[m] += [o for e in chunk[i:j] for o in each[m].process(dict(e))]
            compare(each[m].get_state(), alone[m].get_state(), where=f"kernel state {m}")
            compare(each[m].get_state(), fused[m].get_state(), where=f"fused state {m}")
    for m in range(len(cfgs)):
        compare(ref[m], want[m], where=f"kernel outputs {m}")
        compare(ref[m], got[m], where=f"fused outputs {m}")
    return got


SPAN = st.tuples(st.integers(0, 60), st.integers(0, 60))
SLICING = st.tuples(st.lists(st.integers(0, 200), max_size=5),
                    st.lists(st.lists(SPAN, max_size=5), max_size=6),
                    st.lists(st.booleans(), max_size=6))
#: mostly values whose sums round (so slices carry an error term ``e``), now and then a value
#: no proof covers (a member with such a block runs alone): both paths are exercised
NUMBERS = st.one_of(*[st.floats(-100, 100)] * 6, st.integers(-10**6, 10**6),
                    st.sampled_from([0.0, -0.0, 1e16, 1.0, -1e16, 0.1, 5e-324]),
                    st.one_of(st.floats(), st.sampled_from([1e308, -1e308, 2.0**1001])))
VALUES = st.one_of(*[NUMBERS] * 8, st.none(), st.sampled_from(["1.5", "x", "nan"]))


@st.composite
def streams(draw: Any, panes: bool = False, size: int = 120) -> list[dict]:
    """Interleaved series of a few sensors and fields: single observations and joined
    messages; now and then a value beyond ``2**1000``, a cancellation, or a pane."""
    events = []
    for i in range(draw(st.integers(0, size))):
        e: dict = {"src": "G", "seq": i, "ts": i, "sensor": draw(st.sampled_from("abc"))}
        if draw(st.integers(0, 5)):
            e["obs"] = draw(st.sampled_from(["t", "h", "x"]))
            e["value"] = draw(VALUES)
        else:
            e["fields"] = draw(st.dictionaries(st.sampled_from(["t", "h", "x"]), VALUES,
                                               max_size=3))
        if panes and draw(st.integers(0, 7)) == 0:
            e["pane"] = {"n": draw(st.integers(1, 3)), "sum": [draw(st.floats(-9, 9))]}
        events.append(e)
    return events


@st.composite
def carried(draw: Any, windows: list[int], group: list[str]) -> list[Any]:
    """Starting states: per member, open blocks of some series (counts up to past the window,
    floats that cancel or are beyond what a proof covers)."""
    keys = ["t", "h"] if group == ["obs"] else ["a|t", "b|h", "c|x"]
    out: list[Any] = []
    for w in windows:
        if not draw(st.integers(0, 3)):
            out.append(None)
            continue
        blocks_ = {}
        for k in draw(st.lists(st.sampled_from(keys), unique=True)):
            floats = draw(st.lists(st.one_of(st.floats(-50, 50), st.sampled_from(
                [1e16, -1e16, 1e300, 0.1])), max_size=4))
            blocks_[k] = [draw(st.integers(0, w + 1)), *floats]
        out.append({"blocks": blocks_})
    return out


GROUPS = st.sampled_from([["obs"], ["sensor", "obs"]])


@FAST
@given(events=streams(), windows=WINDOWS, group=GROUPS, slicing=SLICING,
       path=st.sampled_from(sorted(PATHS)), data=st.data())
def test_generated_streams(events, windows, group, slicing, path, data):
    cfgs = [{"window": w, "fields": ["t", "h"], "group_by": group} for w in windows]
    states = data.draw(carried(windows, group))
    with PATHS[path]:
        check(cfgs, events, *slicing, states=states)


@settings(max_examples=15, deadline=None)
@given(events=streams(panes=True), windows=WINDOWS, slicing=SLICING)
def test_panes_run_each_member_alone(events, windows, slicing):
    """A batch whose taken rows carry a pane runs every member through its own kernel."""
    cfgs = [{"window": w, "fields": ["t", "h", "x"], "group_by": ["obs"]} for w in windows]
    check(cfgs, events, *slicing)


@settings(max_examples=15, deadline=None)
@given(events=streams(), data=st.data())
def test_members_reading_other_series_run_alone(events, data):
    """Different ``fields`` or ``group_by`` are not one stream's series: run apart."""
    cfgs = [{"window": 3, "fields": ["t"], "group_by": ["obs"]},
            {"window": 5, "fields": ["t", "h"], "group_by": ["obs"]},
            {"window": 4, "fields": ["t"], "group_by": ["sensor", "obs"]}]
    check(cfgs, events, *data.draw(SLICING))


def _series(values: list[float], obs: str = "t") -> list[dict]:
    return [{"src": "G", "seq": i, "ts": i, "sensor": "s", "obs": obs, "value": v}
            for i, v in enumerate(values)]


@settings(max_examples=20, deadline=None)
@given(values=st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=200), slicing=SLICING)
def test_windows_that_divide_each_other_and_not(values, slicing):
    """3, 5 and 10 (none divides 3), 5, 10, 20, 50 (each divides the next) and one long
    window folding its open block (70: past the task's fold size)."""
    for windows in ([3, 5, 10], [5, 10, 20, 50], [7, 70, 3]):
        cfgs = [{"window": w, "fields": ["t"], "group_by": ["obs"]} for w in windows]
        check(cfgs, _series(values), *slicing)


def test_every_member_has_its_outputs_and_state():
    """Twelve values, windows 3 and 5 over all of them, 10 over the last nine: four, two and
    no blocks, each mean of its own values, and the open blocks left in the states."""
    cfgs = [{"window": w, "fields": ["t"], "group_by": ["obs"]} for w in (3, 5, 10)]
    got = check(cfgs, _series([float(v) for v in range(12)]), [], [[(0, 12), (0, 12), (3, 12)]],
                [])
    assert [[o["value"] for o in g] for g in got] == [[1.0, 4.0, 7.0, 10.0], [2.0, 7.0], []]


def test_unproven_blocks_fall_back_to_the_members_kernel():
    """A cancellation below a huge value (a second-order error in the double-double) and a
    value beyond 2**1000: the member's own kernel, the same bits as per event."""
    values = [1e308, 1.0, -1e308, 2.0**1001, -(2.0**1001), 1e-300, 3.0, 1e16, 1.0, -1e16]
    cfgs = [{"window": w, "fields": ["t"], "group_by": ["obs"]} for w in (2, 3, 5)]
    with mock.patch.object(slices, "_alone", wraps=slices._alone) as alone:
        check(cfgs, _series(values * 3), [7, 15], [], [False, True])
    assert alone.call_count >= 3


# --- real RIoTBench streams -----------------------------------------------------------------

@settings(max_examples=12, deadline=None)
@given(src=st.sampled_from(["SYS", "TAXI", "FIT"]), group=GROUPS,
       windows=st.sampled_from([[3, 5, 10], [5, 10, 20, 50], [2, 7], [10, 10, 4]]),
       slicing=SLICING, data=st.data())
def test_real_streams(real_events_of, configs, src, group, windows, slicing, data):
    """Parsed observations then joined messages of each source (as STATS feeds them), the
    source's own fields, windows of the group's drawing, started from carried blocks."""
    events = real_events_of(80)[src]
    base = {**configs[src]["BlockWindowAverage"], "group_by": group}
    cfgs = [{**base, "window": w} for w in windows]
    warm = [_made(c, None) for c in cfgs]
    for task in warm:  # carried open blocks: each member warmed on a stretch of the stream
        for e in events[:data.draw(st.integers(0, 60))]:
            task.process(dict(e))
    cuts, spans, restarts = slicing
    check(cfgs, events[60:], [c * 5 for c in cuts],
          [[(i * 8, j * 8) for i, j in s] for s in spans], restarts,
          states=[t.get_state() for t in warm])

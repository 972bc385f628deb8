"""The columnar batch: events to columns and back, unchanged, whatever they hold."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from reuse.tasks import make_task
from reuse.tasks.columnar import MISSING, Batch, PerEvent, kernel_for
from reuse.tasks.columnar.equivalence import Mismatch, compare, run_both

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False), st.text(max_size=5))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)
events = st.lists(st.dictionaries(st.sampled_from(["src", "seq", "ts", "obs", "value", "meta"]),
                                  values, max_size=6), max_size=8)


@given(events)
def test_events_come_back_as_they_went_in(evs):
    back = Batch.from_events(evs).to_events()
    compare(evs, back)


@given(events, st.lists(st.integers(0, 7), max_size=10))
def test_take_and_concat_move_whole_rows(evs, picks):
    b = Batch.from_events(evs)
    idx = np.array([p for p in picks if p < len(evs)], dtype=np.int64)
    compare([evs[i] for i in idx], b.take(idx).to_events())
    compare(evs + evs[:2], Batch.concat([b, Batch.from_events(evs[:2])]).to_events())


def test_typed_columns_where_every_row_has_the_type():
    b = Batch.from_events([{"seq": 1, "v": 1.5, "x": True}, {"seq": 2, "v": 2.0, "x": 1}])
    assert (b.cols["seq"].dtype, b.cols["v"].dtype, b.cols["x"].dtype) == (
        np.int64, np.float64, object)
    assert b.has("seq").all() and list(Batch.from_events([{"a": 1}, {}]).has("a")) == [True, False]
    assert Batch.from_events([{"a": 1}, {}]).cols["a"][1] is MISSING


def test_a_type_without_a_kernel_runs_per_event_and_the_check_catches_a_difference():
    sink = make_task("Sink", "sink")
    assert isinstance(kernel_for(sink, columnar=False), PerEvent)
    run_both(lambda: make_task("PiTask", {"iterations": 5}),
             [{"seq": i, "payload": "x"} for i in range(5)], cuts=[2], steps=["kernel", "event"])
    try:
        compare([{"v": 1.0}], [{"v": 1}])
    except Mismatch as e:
        assert "float" in str(e) and "int" in str(e)
    else:
        raise AssertionError("1.0 and 1 compared equal")


def test_every_task_type_has_a_kernel_of_its_own():
    """Issue 35's acceptance: a kernel for every task type the RIoTBench and OPMW workloads
    use (each tested against its per-event task in this folder)."""
    from reuse.tasks import TASK_TYPES
    from reuse.tasks.columnar import KERNELS

    assert set(KERNELS) == set(TASK_TYPES)
    assert all(k.type_name == name for name, k in KERNELS.items())

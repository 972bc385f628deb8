"""The STATS kernels (KalmanFilter, SlidingLinearRegression, BlockWindowAverage,
DistinctApproxCount, SecondOrderMoment) against their per-event tasks, through ``run_both``
only: bit-identical outputs and states, sliced through the kernel, ``process`` and restarts,
on real RIoTBench streams as the STATS dataflows feed them and on generated ones."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reuse.tasks import make_task
from reuse.tasks.columnar import KERNELS, Batch, blocks, kernel_for, lanes
from reuse.tasks.columnar import stats as columnar_stats
from reuse.tasks.columnar.equivalence import run_both
from reuse.tasks.columnar.sketches import DistinctApproxCountKernel

KINDS = ["BlockWindowAverage", "DistinctApproxCount", "KalmanFilter", "SecondOrderMoment",
         "SlidingLinearRegression"]
GROUPS = [["obs"], ["sensor", "obs"]]
STEP = st.sampled_from(["kernel", "event", "restart"])
FAST = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def slicing(n: int) -> st.SearchStrategy:
    """Cut points into ``n`` events and how each slice runs."""
    return st.tuples(st.lists(st.integers(0, n), max_size=6), st.lists(STEP, max_size=7))


#: paths a kernel chooses by cost; both must give the same bits, so the tests force each
PATHS = {
    "grid": mock.patch.object(lanes, "GRID_STEP_COST", 0.0),
    "loop": mock.patch.object(lanes, "GRID_STEP_COST", 1e18),
    "columns": mock.patch.object(blocks, "_COLUMNS_PER_BLOCK", 1e18),
    "fsum": mock.patch.object(blocks, "_COLUMNS_PER_BLOCK", 0.0),
    "cost": mock.patch.object(lanes, "LOOP_ITEM_COST", 1.0),  # the default choice
}


def test_every_stats_type_has_its_kernel():
    for kind in KINDS:
        assert kind in KERNELS
    cfg = {"window": 2, "fields": ["t"], "group_by": ["obs"]}
    assert type(kernel_for(make_task("BlockWindowAverage", cfg))).__name__ == \
        "BlockWindowAverageKernel"


# --- real RIoTBench streams -----------------------------------------------------------------

@pytest.fixture(scope="session")
def streams(real_events_of, configs):
    """Per source: parsed observations then joined messages (what STATS and PRED feed the
    tasks), and the KalmanFilter's outputs per keying (what SlidingLinearRegression reads)."""
    real = real_events_of(80)
    out = {}
    for src, events in real.items():
        kalman = {}
        for group in GROUPS:
            kf = make_task("KalmanFilter", {**configs[src]["KalmanFilter"], "group_by": group})
            kalman[tuple(group)] = [o for e in events for o in kf.process(e)]
        out[src] = (events, kalman)
    return out


def _config(configs, src: str, kind: str, group: list[str]) -> dict:
    cfg = dict(configs[src][kind])
    if "group_by" in cfg:
        cfg["group_by"] = group
    return cfg


@FAST
@given(src=st.sampled_from(["SYS", "TAXI", "FIT"]), kind=st.sampled_from(KINDS),
       group=st.sampled_from(GROUPS), path=st.sampled_from(sorted(PATHS)), data=st.data())
def test_real_streams(streams, configs, src, kind, group, path, data):
    events, kalman = streams[src]
    if kind == "SlidingLinearRegression" and data.draw(st.booleans()):
        events = kalman[tuple(group)]  # Kalman -> SLR, as the STATS dataflow chains them
    cfg = _config(configs, src, kind, group)
    cuts, steps = data.draw(slicing(len(events)))
    with PATHS[path]:
        run_both(lambda: make_task(kind, cfg), events, cuts, steps)


@pytest.mark.parametrize("src", ["SYS", "TAXI", "FIT"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("group", GROUPS, ids=["field", "sensor"])
def test_real_streams_every_combination(streams, configs, src, kind, group):
    """Each source, task and keying once, in slices of 1000 events or fewer, taking turns."""
    events, kalman = streams[src]
    if kind == "SlidingLinearRegression":
        events = events + kalman[tuple(group)]
    cfg = _config(configs, src, kind, group)
    cuts = list(range(137, len(events), 311))
    run_both(lambda: make_task(kind, cfg), events, cuts, ["kernel", "restart", "event"] * 9)


@settings(max_examples=6, deadline=None)
@given(src=st.sampled_from(["SYS", "TAXI"]), data=st.data())
def test_real_moment_ams(streams, configs, src, data):
    cfg = {**configs[src]["SecondOrderMoment"], "estimator": "ams", "max_map_size": 4}
    events = streams[src][0]
    cuts, steps = data.draw(slicing(len(events)))
    run_both(lambda: make_task("SecondOrderMoment", cfg), events, cuts, steps)


# --- generated streams ----------------------------------------------------------------------

SENSORS = st.sampled_from(["a", "b", "a|b", "", "s1"])
NAMES = st.sampled_from(["t", "h", "b|t", "x"])
NUMBERS = st.one_of(st.floats(), st.floats(-100, 100), st.integers(-10**6, 10**6),
                    st.sampled_from([0.0, -0.0, 1e16, 1.0, -1e16, 1e308, -1e308, 5e-324]))
VALUES = st.one_of(NUMBERS, NUMBERS, st.none(), st.booleans(),
                   st.sampled_from(["1.5", " 2 ", "abc", "nan", "inf", "-0.0", ""]))
PANES = st.one_of(st.builds(lambda n, s: {"n": n, "sum": s}, st.integers(1, 4),
                            st.lists(st.floats(-1e3, 1e3), max_size=2)),
                  st.sampled_from([{"n": 0, "sum": []}, {"n": 2}, "x", {"n": True, "sum": []},
                                   {"n": 2, "sum": [float("inf")]}]))


@st.composite
def generated(draw, panes: bool = False) -> list[dict]:
    """Interleaved series: single observations and joined messages, odd values, absent
    keys, separators inside names, and (for the block average) events carrying panes."""
    events = []
    for i in range(draw(st.integers(0, 40))):
        e: dict = {"src": "G", "seq": i, "ts": 10 * i}
        if draw(st.integers(0, 9)):
            e["sensor"] = draw(SENSORS)
        if draw(st.booleans()):
            e["meta"] = {"m": i}
        shape = draw(st.integers(0, 9))
        if shape < 6:
            e["obs"] = draw(NAMES)
            if draw(st.integers(0, 9)):
                e["value"] = draw(VALUES)
        elif shape < 9:
            e["fields"] = draw(st.dictionaries(NAMES, VALUES, max_size=4))
        if panes and draw(st.integers(0, 3)) == 0:
            e["pane"] = draw(PANES)
        events.append(e)
    return events


FIELDS = st.sampled_from([["t"], ["t", "h", "b|t"], ["t", "h", "x", "b|t"]])
GROUP_BY = st.sampled_from([["obs"], ["sensor", "obs"], ["sensor"], [], ["obs", "src"],
                            ["sensor", "obs", "route"]])  # no event has a route: ""


@FAST
@given(events=generated(), cuts=slicing(40), path=st.sampled_from(["grid", "loop"]),
       q=st.floats(0.0, 2.0), r=st.floats(0.01, 2.0), p0=st.floats(0.0, 50.0), fields=FIELDS,
       group=GROUP_BY)
def test_generated_kalman(events, cuts, path, q, r, p0, fields, group):
    cfg = {"process_noise": q, "sensor_noise": r, "estimated_error": p0, "fields": fields,
           "group_by": group}
    with PATHS[path]:
        run_both(lambda: make_task("KalmanFilter", cfg), events, *cuts)


@FAST
@given(events=generated(), cuts=slicing(40), train=st.integers(1, 5), predict=st.integers(0, 3),
       fields=st.one_of(st.none(), FIELDS), group=GROUP_BY)
def test_generated_regression(events, cuts, train, predict, fields, group):
    cfg = {"train_window": train, "predict_window": predict, "fields": fields, "group_by": group}
    run_both(lambda: make_task("SlidingLinearRegression", cfg), events, *cuts)


@FAST
@given(events=generated(panes=True), cuts=slicing(40), window=st.integers(1, 5),
       path=st.sampled_from(["columns", "fsum"]), fields=FIELDS, group=GROUP_BY)
def test_generated_block_average(events, cuts, window, path, fields, group):
    cfg = {"window": window, "fields": fields, "group_by": group}
    with PATHS[path]:
        run_both(lambda: make_task("BlockWindowAverage", cfg), events, *cuts)


@FAST
@given(events=generated(), cuts=slicing(40), buckets=st.integers(1, 4),
       sensors=st.lists(st.one_of(st.none(), st.integers(-3, 3), st.floats(-2, 2),
                                  st.booleans(), st.text(max_size=3)), max_size=40))
def test_generated_distinct_count(events, cuts, buckets, sensors):
    for e, s in zip(events, sensors, strict=False):
        e["sensor"] = s  # any type: the item is str(sensor)
    run_both(lambda: make_task("DistinctApproxCount", {"buckets": buckets, "field": "id"}),
             events, *cuts)


@FAST
@given(events=generated(), cuts=slicing(40), size=st.integers(1, 3),
       estimator=st.sampled_from(["riotbench", "ams"]), fields=st.one_of(st.none(), FIELDS),
       group=GROUP_BY)
def test_generated_moment(events, cuts, size, estimator, fields, group):
    cfg = {"max_map_size": size, "estimator": estimator, "fields": fields, "group_by": group}
    run_both(lambda: make_task("SecondOrderMoment", cfg), events, *cuts)


# --- states the tasks' own runs rarely reach ------------------------------------------------

def _restored(kind: str, cfg: dict, state: dict):
    def make():
        task = make_task(kind, cfg)
        task.set_state(state)  # type: ignore[attr-defined]
        return task
    return make


def _series(values, obs="t"):
    return [{"src": "G", "seq": i, "ts": i, "sensor": "s", "obs": obs, "value": v}
            for i, v in enumerate(values)]


@given(cuts=slicing(30), values=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=30),
       sequential=st.booleans())
@settings(max_examples=20, deadline=None)
def test_regression_fallbacks(cuts, values, sequential):
    """Positions past 2**31 (a restored count) and a compensating ``sum`` (CPython 3.12+) take
    the per-event fit; the results are still the same bits."""
    cfg = {"train_window": 3, "predict_window": 2, "group_by": ["obs"]}
    state = {"series": {"t": {"n": 2**40, "ys": [1.0, 2.5]}}}
    with mock.patch.object(columnar_stats, "SEQUENTIAL_SUM", sequential):
        run_both(_restored("SlidingLinearRegression", cfg, state), _series(values), *cuts)
        run_both(lambda: make_task("SlidingLinearRegression", cfg), _series(values), *cuts)


@given(cuts=slicing(150), values=st.lists(st.one_of(st.floats(-1e3, 1e3), st.floats()),
                                          min_size=60, max_size=150))
@settings(max_examples=10, deadline=None)
def test_block_average_long_blocks_fold(cuts, values):
    """Windows past the task's fold size: the open block is folded into partials as the task
    folds it, in the kernel as in ``process``."""
    cfg = {"window": 70, "fields": ["t"], "group_by": ["obs"]}
    run_both(lambda: make_task("BlockWindowAverage", cfg), _series(values), *cuts)
    state = {"blocks": {"t": [60, 1e308, 1.0, -1e308], "u": [1, 2.0]}}
    run_both(_restored("BlockWindowAverage", cfg, state), _series(values), *cuts)


def test_block_average_keeps_the_tasks_key_order():
    """A block completed and begun again moves to the end of the blocks dict, in ``process``
    and in the kernel alike (the state is compared with its order)."""
    cfg = {"window": 2, "fields": ["t", "h"], "group_by": ["obs"]}
    state = {"blocks": {"t": [1, 1.0], "h": [1, 2.0]}}
    events = _series([3.0, 4.0])
    result = run_both(_restored("BlockWindowAverage", cfg, state), events, [])
    task = make_task("BlockWindowAverage", cfg)
    task.set_state(state)  # type: ignore[attr-defined]
    kernel_for(task).run(Batch.from_events(events))
    assert list(task.get_state()["blocks"]) == ["h", "t"]  # type: ignore[attr-defined]
    assert [o["value"] for o in result.candidate] == [2.0]


@given(cuts=slicing(30), values=st.lists(st.sampled_from([1.0, 2.0, 3.0]), max_size=30))
@settings(max_examples=10, deadline=None)
def test_moment_restored_maps(cuts, values):
    """A restored map holding an item twice (the task never makes one) goes through the
    task's own update, which finds the first; a count past 2**52 divides as Python ints."""
    cfg = {"max_map_size": 3, "group_by": ["obs"]}
    state = {"series": {"t": {"n": 4, "items": ["1.0", "1.0"], "freq": [2, 2]}}}
    run_both(_restored("SecondOrderMoment", cfg, state), _series(values), *cuts)
    state = {"series": {"t": {"n": 2**52, "items": ["1.0"], "freq": [2**51]}}}
    run_both(_restored("SecondOrderMoment", cfg, state), _series(values), *cuts)


@given(cuts=slicing(30), values=st.lists(st.integers(-50, 50), max_size=30),
       group=GROUP_BY)
@settings(max_examples=10, deadline=None)
def test_int_values_and_a_small_hash_memo(cuts, values, group):
    """An all-int value column (``int64``) reads as float(int); DAC forgets its hash memo
    when full and hashes again."""
    events = _series(values)
    for kind, cfg in [("KalmanFilter", {"process_noise": 0.1, "sensor_noise": 0.3,
                                        "estimated_error": 1.0, "fields": ["t"]}),
                      ("SlidingLinearRegression", {"train_window": 3, "predict_window": 2}),
                      ("BlockWindowAverage", {"window": 3, "fields": ["t"]}),
                      ("SecondOrderMoment", {"max_map_size": 2})]:
        run_both(lambda: make_task(kind, {**cfg, "group_by": group}), events, *cuts)  # noqa: B023
    for e, v in zip(events, values, strict=True):
        e["sensor"] = v % 7
    with mock.patch.object(DistinctApproxCountKernel, "MEMO", 3):
        run_both(lambda: make_task("DistinctApproxCount", {"buckets": 2, "field": "id"}),
                 events, *cuts)


@pytest.mark.parametrize("path", ["grid", "loop"])
def test_kalman_division_by_zero_raises_as_per_event(path):
    cfg = {"process_noise": 0.0, "sensor_noise": 0.0, "estimated_error": 0.0, "fields": ["t"],
           "group_by": ["obs"]}
    events = _series([1.0, 2.0])
    with pytest.raises(ZeroDivisionError):
        make_task("KalmanFilter", cfg).process(events[0])
    with PATHS[path], pytest.raises(ZeroDivisionError):
        kernel_for(make_task("KalmanFilter", cfg)).run(Batch.from_events(events))


@given(cuts=slicing(30), values=st.lists(st.floats(-5, 5), max_size=30))
@settings(max_examples=10, deadline=None)
def test_kalman_restored_int_state(cuts, values):
    cfg = {"process_noise": 0.125, "sensor_noise": 0.32, "estimated_error": 30,
           "fields": ["t"], "group_by": ["obs"]}
    run_both(_restored("KalmanFilter", cfg, {"series": {"t": [3, 1]}}), _series(values), *cuts)


def test_a_value_beyond_float_is_read_only_where_the_task_reads_it():
    """``float(10**400)`` raises: per event only for a field the task reads, so the kernel
    converts only those values."""
    cfg = {"process_noise": 0.1, "sensor_noise": 0.3, "estimated_error": 1.0, "fields": ["t"],
           "group_by": ["obs"]}
    skipped = _series([1.0, 10**400], obs="u") + _series([2.0])
    run_both(lambda: make_task("KalmanFilter", cfg), skipped, [])
    read = _series([1.0, 10**400])
    with pytest.raises(OverflowError):
        make_task("KalmanFilter", cfg).process(read[1])
    with pytest.raises(OverflowError):
        kernel_for(make_task("KalmanFilter", cfg)).run(Batch.from_events(read))

"""The ETL kernels give what the per-event tasks give, state included after every slice: the
row-wise ``sum`` against the built-in, then Interpolation and Join through run_both on the real
SYS, TAXI and FIT streams and on generated ones (keys interleaved, repeated and missing seqs,
values of every kind, tiny windows and window 0, a bound on open messages that evicts)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reuse.tasks import make_task
from reuse.tasks.columnar import Batch, kernel_for
from reuse.tasks.columnar import sums as sums_module
from reuse.tasks.columnar.equivalence import run_both
from reuse.tasks.columnar.sums import sum_rows
from reuse.workloads.riotbench import source_configs

FAST = settings(max_examples=30, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
cuts = st.lists(st.integers(0, 500), max_size=5)
steps = st.lists(st.sampled_from(["kernel", "event", "restart"]), max_size=6)


@pytest.fixture(scope="session")
def streams(real_events_of, configs, data_dir):
    """Per source: its parsed observations, the same after RangeFilter ``null`` and ``drop``
    (the ETL inputs, and a lossy one that leaves messages open), and the joined messages."""
    out = {}
    for src in ("SYS", "TAXI", "FIT"):
        evs = real_events_of(60)[src]
        obs = [e for e in evs if "fields" not in e]
        null = make_task("RangeFilter", configs[src]["RangeFilter.null"])
        drop = make_task("RangeFilter", configs[src]["RangeFilter.drop"])
        out[src] = {"obs": obs, "nulled": [o for e in obs for o in null.process(e)],
                    "dropped": [o for e in obs for o in drop.process(e)],
                    "joined": [e for e in evs if "fields" in e]}
    out["sensor"] = {s: source_configs(s, data_dir, keying="sensor") for s in out}
    return out


# --- the built-in sum, row by row ---------------------------------------------------------

def _neumaier(xs):
    """CPython 3.12's ``sum`` of floats, from its source (``0 + x0``, then compensated)."""
    total, comp = 0 + xs[0], 0.0
    for x in xs[1:]:
        t = total + x
        comp += (total - t) + x if abs(total) >= abs(x) else (x - t) + total
        total = t
    return total + comp if comp and math.isfinite(comp) else total


values_rows = st.lists(st.lists(st.floats(width=64) | st.sampled_from([1e16, -1e16, 1.0, 0.1]),
                                min_size=1, max_size=6), min_size=1, max_size=10)


def _matrix(rows):
    width = max(map(len, rows))
    return (np.array([r + [7.0] * (width - len(r)) for r in rows]),
            np.array([len(r) for r in rows]))


@settings(max_examples=200, deadline=None)
@given(values_rows)
def test_sum_rows_is_this_pythons_sum(rows):
    got = sum_rows(*_matrix(rows)).tolist()
    want = [sum(r) for r in rows]
    assert [(g == w) or (g != g and w != w) for g, w in zip(got, want, strict=True)] == \
        [True] * len(rows)


@settings(max_examples=200, deadline=None)
@given(values_rows)
def test_sum_rows_replays_neumaier_for_python_3_12(rows):
    was, sums_module._NEUMAIER = sums_module._NEUMAIER, True
    try:
        got = sum_rows(*_matrix(rows)).tolist()
    finally:
        sums_module._NEUMAIER = was
    want = [_neumaier(r) for r in rows]
    assert all((g == w) or (g != g and w != w) for g, w in zip(got, want, strict=True))


# --- Interpolation ------------------------------------------------------------------------

@FAST
@given(cuts, steps, st.sampled_from(["SYS", "TAXI", "FIT"]), st.sampled_from(["field", "sensor"]),
       st.sampled_from(["nulled", "obs", "joined"]))
def test_interpolation_on_the_real_streams(streams, configs, cut, step, src, keying, kind):
    cfg = (configs if keying == "field" else streams["sensor"])[src]["Interpolation"]
    if src == "TAXI":  # its window is 0: nothing to interpolate from; give it one too
        cfg = {**cfg, "window": 3}
    r = run_both(lambda: make_task("Interpolation", cfg), streams[src][kind], cut, step)
    if kind == "nulled" and src == "SYS" and keying == "field":
        assert any(o.get("interpolated") for o in r.reference)


OBS = ["a", "b", "c", "z"]
values = st.one_of(st.floats(-5, 5), st.integers(-5, 5), st.none(), st.booleans(),
                   st.sampled_from([math.nan, math.inf, -math.inf, "2.5", "x", -0.0]))
head = st.fixed_dictionaries({}, optional={
    "src": st.sampled_from(["A", "B"]), "seq": st.integers(0, 4), "ts": st.just(0),
    "sensor": st.sampled_from(["s1", "s2", 3, None]), "meta": st.just({"m": 0}),
    "filtered": st.just(True)})
single = st.builds(lambda h, o: {**h, **o}, head, st.fixed_dictionaries({}, optional={
    "obs": st.sampled_from(OBS), "value": values}))
joined = st.builds(lambda h, f: {**h, "fields": f}, head,
                   st.dictionaries(st.sampled_from(OBS), values, max_size=3))
interp_config = st.fixed_dictionaries({
    "fields": st.lists(st.sampled_from(OBS[:3]), max_size=3),
    "window": st.integers(-1, 4),
    "group_by": st.sampled_from([["obs"], ["sensor", "obs"], ["src"], [], ["sensor"]])})
histories = st.dictionaries(st.sampled_from(["a", "b", "s1|a", "None|b", "A", "", "3"]),
                            st.lists(st.floats(-5, 5), max_size=7), max_size=4)


@settings(FAST, max_examples=60)
@given(st.lists(st.one_of(single, single, single, joined), min_size=1, max_size=60), cuts,
       steps, interp_config, histories)
def test_interpolation_on_generated_events(evs, cut, step, cfg, history):
    def make():
        task = make_task("Interpolation", cfg)
        task.set_state({"history": history})  # lists longer than the window too
        return task

    run_both(make, evs, cut, step)


# --- Join ---------------------------------------------------------------------------------

@FAST
@given(cuts, steps, st.sampled_from(["SYS", "TAXI", "FIT"]),
       st.sampled_from(["obs", "nulled", "dropped"]), st.sampled_from([1000, 3]))
def test_join_on_the_real_streams(streams, configs, cut, step, src, kind, max_pending):
    cfg = {**configs[src]["Join"], "max_pending": max_pending}
    r = run_both(lambda: make_task("Join", cfg), streams[src][kind], cut, step)
    assert r.reference


join_config = st.fixed_dictionaries({"fields": st.lists(st.sampled_from(OBS[:3]), min_size=1,
                                                        max_size=4)},
                                    optional={"max_count": st.integers(0, 4),
                                              "max_pending": st.integers(0, 3)})
join_events = st.lists(st.fixed_dictionaries(
    {"obs": st.sampled_from(OBS), "value": values},
    optional={"src": st.sampled_from(["A", "A", "A", "B", 1]),
              "seq": st.one_of(st.integers(0, 5), st.integers(0, 5), st.sampled_from(
                  [1.0, "1", True, -0.0])),
              "ts": st.just(1), "sensor": st.just("s"), "meta": st.just({"m": 1})}),
    min_size=1, max_size=60)


@settings(FAST, max_examples=60)
@given(join_events, cuts, steps, join_config, st.integers(0, 6))
def test_join_on_generated_events(evs, cut, step, cfg, warm):
    def make():  # some messages already open when the slices start
        task = make_task("Join", cfg)
        for e in evs[:warm]:
            task.process(dict(e))
        return task

    run_both(make, evs[warm:], cut, step)


@settings(FAST, max_examples=20)
@given(st.integers(0, 5), st.integers(2, 7))
def test_join_with_seqs_that_repeat_in_one_batch(cut, times):
    """One ``seq`` over and over (messages close and reopen within a batch: the loop over
    positions), then the same in ints from one source (keys made per run)."""
    evs = [{"src": "A", "seq": i // (3 * times), "obs": o, "value": float(i)}
           for i, o in enumerate(["a", "b", "c"] * times * 4)]
    run_both(lambda: make_task("Join", {"fields": ["a", "b", "c"]}), evs, [cut * 7])
    run_both(lambda: make_task("Join", {"fields": ["a", "b"], "max_count": 2}), evs, [cut])


def test_join_hands_a_key_reopened_very_often_to_process():
    """No seq: one key for all. Open all along, its rows are summed at once; closed every
    other row, its 70 messages would take a numpy step per row: the batch runs per event."""
    evs = [{"src": "A", "obs": "a", "value": 1.0}] * 140
    for max_count, emitted, fallbacks in ((200, 0, 0), (2, 70, 1)):
        cfg = {"fields": ["a", "b"], "max_count": max_count}
        kernel = kernel_for(make_task("Join", cfg))
        assert kernel.run(Batch.from_events(evs)).n == emitted
        assert kernel.fallbacks == fallbacks
        run_both(lambda cfg=cfg: make_task("Join", cfg), evs, [])


def test_real_streams_never_leave_the_vectorized_path(streams, configs):
    for src in ("SYS", "TAXI", "FIT"):
        for name, evs in (("Interpolation", streams[src]["nulled"]),
                          ("Join", streams[src]["nulled"]), ("Join", streams[src]["obs"])):
            kernel = kernel_for(make_task(name, configs[src][name]))
            kernel.run(Batch.from_events(evs))
            assert kernel.fallbacks == 0, (src, name)


@pytest.mark.parametrize("name,cfg,odd,error", [
    ("Interpolation", {"fields": ["a"], "window": 2}, {"fields": None}, AttributeError),
    ("Interpolation", {"fields": ["a"], "window": 2}, {"obs": ["a"]}, TypeError),
    ("Interpolation", {"fields": [1], "window": 2, "group_by": ["obs"]}, {"obs": 1}, TypeError),
    ("Join", {"fields": ["a"]}, {"obs": ["a"]}, TypeError)])
def test_rows_the_kernels_do_not_model_fail_as_process_fails(name, cfg, odd, error):
    """The state is left as ``process`` leaves it: the rows before the odd one applied."""
    good = [{"src": "A", "seq": 1, "obs": "a", "value": 1.0},
            {"src": "A", "seq": 2, "obs": "a", "value": None}]
    ref, task = make_task(name, cfg), make_task(name, cfg)
    with pytest.raises(error):
        for e in good + [{**good[0], **odd}]:
            ref.process(e)
    kernel = kernel_for(task)
    with pytest.raises(error):
        kernel.run(Batch.from_events(good + [{**good[0], **odd}]))
    assert kernel.fallbacks == 1 and task.get_state() == ref.get_state()

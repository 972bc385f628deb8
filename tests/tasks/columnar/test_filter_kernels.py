"""The filter kernels give what the per-event filters give: on the real streams and on
generated ones (values of every kind ``as_float`` meets, missing keys, joined events), sliced
at generated cuts through the kernel, ``process`` or a restart; and the fused selectors give
each member's own decisions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reuse.tasks import make_task
from reuse.tasks.columnar import Batch, kernel_for
from reuse.tasks.columnar.equivalence import compare, run_both
from reuse.tasks.columnar.filters import BloomFilterCheckKernel, RangeFilterKernel, _Probe

FAST = settings(max_examples=25, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

cuts = st.lists(st.integers(0, 400), max_size=5)
steps = st.lists(st.sampled_from(["kernel", "event", "restart"]), max_size=6)

FIELDS = ["t", "h", "x", "free"]
numbers = st.one_of(st.floats(-50, 50), st.integers(-50, 50),
                    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 2**70]))
values = st.one_of(numbers, st.none(), st.booleans(),
                   st.sampled_from(["8", " 1e1 ", "nan", "-inf", "1_0", "abc", ""]),
                   st.lists(st.integers(), max_size=1))
extra = st.fixed_dictionaries({}, optional={
    "src": st.sampled_from(["SYS", "TAXI"]), "seq": st.integers(0, 5), "ts": st.integers(0, 9),
    "sensor": st.one_of(st.sampled_from(["a", "b", "c"]), st.integers(0, 3), st.none(),
                        st.booleans(), st.floats(0, 2)),
    "meta": st.just({"m": 1}), "filtered": st.booleans(), "analytic": st.just("BWA")})
single = st.builds(lambda base, obs: {**base, **obs}, extra, st.fixed_dictionaries(
    {}, optional={"obs": st.sampled_from(FIELDS), "value": values}))
joined = st.builds(lambda base, f: {**base, "fields": f}, extra,
                   st.dictionaries(st.sampled_from(FIELDS), values, max_size=4))
events = st.lists(st.one_of(single, single, joined), max_size=40)
ranges = st.dictionaries(st.sampled_from(FIELDS[:3]),
                         st.tuples(st.floats(-60, 60), st.floats(-60, 60)).map(list), max_size=3)
range_configs = st.builds(lambda r, m: {"valid_range": r, "mode": m}, ranges,
                          st.sampled_from(["drop", "null"]))


def _passes(task, ev):
    """Whether ``process`` returns the very event (what a selector says)."""
    out = task.process(ev)
    return len(out) == 1 and out[0] is ev


# --- RangeFilter --------------------------------------------------------------------------

@FAST
@given(cuts, steps, st.sampled_from(["SYS", "TAXI", "FIT"]), st.sampled_from(["drop", "null"]))
def test_range_filter_on_the_real_streams(real_events_of, configs, cut, step, src, mode):
    evs = real_events_of(40)[src]
    run_both(lambda: make_task("RangeFilter", configs[src][f"RangeFilter.{mode}"]), evs, cut, step)


@FAST
@given(events, cuts, steps, range_configs)
def test_range_filter_on_generated_events(evs, cut, step, cfg):
    run_both(lambda: make_task("RangeFilter", cfg), evs, cut, step)


@FAST
@given(events, st.lists(range_configs, min_size=1, max_size=4))
def test_range_filter_fused_selectors_are_each_members_decisions(evs, cfgs):
    members = [make_task("RangeFilter", c) for c in cfgs]
    fused = RangeFilterKernel.fuse(members)
    batch = Batch.from_events(evs)
    selected = fused.select(batch)
    assert fused.drops == tuple(c["mode"] == "drop" for c in cfgs)
    for task, sel in zip(members, selected, strict=True):
        assert sel.tolist() == [_passes(task, e) for e in evs]
        compare([o for e in evs for o in task.process(e)],
                RangeFilterKernel(task).outputs(batch, sel).to_events())


def test_range_filter_fused_on_real_events_agrees_with_task_fuse(real_events_of, configs):
    evs = real_events_of(30)["SYS"]
    cfg = configs["SYS"]["RangeFilter.drop"]
    narrow = {**cfg, "valid_range": {k: [lo + 1, hi - 1] for k, (lo, hi) in
                                     cfg["valid_range"].items()}}
    members = [make_task("RangeFilter", c) for c in (cfg, narrow, configs["SYS"]["RangeFilter.null"])]
    mine = RangeFilterKernel.fuse(members).select(Batch.from_events(evs))
    theirs = type(members[0]).fuse(members).select(evs)
    assert [m.astype(np.uint8).tobytes() for m in mine] == theirs
    assert 0 < mine[1].sum() < mine[0].sum() < len(evs)


# --- BloomFilterCheck ---------------------------------------------------------------------

@pytest.fixture(scope="session")
def taxi_bloom(configs, data_dir):
    return make_task("BloomFilterCheck", configs["TAXI"]["BloomFilterCheck"], data_dir=data_dir)


def _small_bloom(data_dir, stride=2, offset=0, n=300, p=0.05):
    return make_task("BloomFilterCheck", {
        "field": "taxi_identifier", "train_file": "TAXI_sample_data_senml.csv",
        "train_stride": stride, "train_offset": offset, "expected_insertions": n,
        "fp_ratio": p}, data_dir=data_dir)


@FAST
@given(cuts, steps, st.sampled_from(["SYS", "TAXI", "FIT"]))
def test_bloom_filter_on_the_real_streams(real_events_of, configs, data_dir, taxi_bloom, cut,
                                          step, src):
    evs = real_events_of(40)[src]
    task = taxi_bloom if src == "TAXI" else \
        make_task("BloomFilterCheck", configs[src]["BloomFilterCheck"], data_dir=data_dir)
    r = run_both(lambda: task, evs, cut, step)
    assert 0 < len(r.reference) <= len(evs)


@FAST
@given(st.lists(extra, max_size=60), cuts, steps, st.data())
def test_bloom_filter_on_generated_ids(data_dir, taxi_obs, evs, cut, step, data):
    known = [o["sensor"] for o in taxi_obs[::7]]
    for e in evs:  # half of them carry ids of the file (trained on the even lines or not)
        if data.draw(st.booleans()):
            e["sensor"] = data.draw(st.sampled_from(known))
    task = _small_bloom(data_dir)
    run_both(lambda: task, evs, cut, step)


def test_bloom_filter_fused_selectors(data_dir, taxi_obs):
    members = [_small_bloom(data_dir, 2, 0), _small_bloom(data_dir, 2, 1),
               _small_bloom(data_dir, 1, 0), _small_bloom(data_dir, 2, 0),
               _small_bloom(data_dir, 2, 0, n=5000, p=0.01)]
    evs = taxi_obs + [{"sensor": s} for s in (None, 1, True, 1.0, "NOT-A-TAXI")] + [{}]
    batch = Batch.from_events(evs)
    fused = BloomFilterCheckKernel.fuse(members)
    assert fused.drops == (True,) * 5
    theirs = type(members[0]).fuse(members).select(evs)
    for task, sel, ref in zip(members, fused.select(batch), theirs, strict=True):
        assert sel.tolist() == [_passes(task, e) for e in evs]
        assert sel.astype(np.uint8).tobytes() == ref
        compare([o for e in evs for o in task.process(e)],
                BloomFilterCheckKernel(task).outputs(batch, sel).to_events())
    assert len(_Probe([m.filter for m in members]).filters) == 4  # equal filters probed once


def test_bloom_positions_in_python_ints_when_int64_could_overflow(data_dir, taxi_obs):
    task = _small_bloom(data_dir)
    kernel = BloomFilterCheckKernel(task)
    kernel.probe.int64_limit = 0  # as if k*m did not fit int64: the filter's own arithmetic
    compare([o for e in taxi_obs for o in task.process(e)],
            kernel.run(Batch.from_events(taxi_obs)).to_events())


def test_real_streams_never_leave_the_vectorized_path(real_events_of, configs, data_dir,
                                                      taxi_bloom):
    for src in ("SYS", "TAXI", "FIT"):
        batch = Batch.from_events(real_events_of(40)[src])
        tasks = [make_task("RangeFilter", configs[src][f"RangeFilter.{m}"]) for m in ("drop", "null")]
        tasks.append(taxi_bloom if src == "TAXI" else make_task(
            "BloomFilterCheck", configs[src]["BloomFilterCheck"], data_dir=data_dir))
        for task in tasks:
            kernel = kernel_for(task)
            kernel.run(batch)
            assert kernel.fallbacks == 0, (src, task.type_name)


def test_odd_batches_read_as_process_reads_them():
    """Typed int values, and a nulled observation without ``obs`` (a range for the field
    ``""``): the same outputs, or the same error, as ``process``."""
    evs = [{"obs": "t", "value": v} for v in (-3, 0, 7, 2**40)]
    for mode in ("drop", "null"):
        run_both(lambda m=mode: make_task("RangeFilter", {"valid_range": {"t": [0, 9]},
                                                          "mode": m}), evs, [2])
    task = make_task("RangeFilter", {"valid_range": {"": [0, 1]}, "mode": "null"})
    assert task.process({"value": 5.0}) == [{"obs": "", "value": None, "filtered": True}]
    run_both(lambda: make_task("RangeFilter", {"valid_range": {"": [0, 1]}, "mode": "null"}),
             [{"obs": "t", "value": 1.0}, {"value": 5.0}, {"value": 0.5}], [1])

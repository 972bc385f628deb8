"""The predictive kernels give what the per-event tasks give, bit for bit: the row-wise
``fsum`` against ``math.fsum``, the array tree against ``predict_one``, and the kernels through
run_both on the real SYS and TAXI messages and on generated ones."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reuse.tasks import make_task
from reuse.tasks.columnar import Batch, kernel_for
from reuse.tasks.columnar.equivalence import run_both
from reuse.tasks.columnar.predict import _Tree
from reuse.tasks.columnar.sums import fsum_rows
from reuse.tasks.sources import replay

FAST = settings(max_examples=30, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
cuts = st.lists(st.integers(0, 300), max_size=5)
steps = st.lists(st.sampled_from(["kernel", "event", "restart"]), max_size=6)


@pytest.fixture(scope="session")
def models(configs, data_dir):
    return {(src, name): make_task(name, configs[src][name], data_dir=data_dir)
            for src in ("SYS", "TAXI")
            for name in ("DecisionTreeClassify", "MultiVarLinearRegression")}


@pytest.fixture(scope="session")
def messages(configs, data_dir):
    """The real joined messages of SYS and TAXI, and the regression's and the block average's
    outputs interleaved (ErrorEstimation's two inputs)."""
    out = {}
    for src in ("SYS", "TAXI"):
        cfg = configs[src]
        parse, join = make_task("SenMLParse", cfg["SenMLParse"]), make_task("Join", cfg["Join"])
        msgs = [m for ev in replay(src, data_dir, limit=150) for o in parse.process(ev)
                for m in join.process(o)]
        mlr = make_task("MultiVarLinearRegression", cfg["MultiVarLinearRegression"],
                        data_dir=data_dir)
        bwa = make_task("BlockWindowAverage", {**cfg["BlockWindowAverage.target"], "window": 3})
        out[src] = msgs, [o for m in msgs for t in (bwa, mlr) for o in t.process(m)]
    return out


# --- fsum, row by row ---------------------------------------------------------------------

def _scaled(m: int, e: int) -> float:
    return math.ldexp(float(m), e)


finite = st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64),
                   st.builds(_scaled, st.integers(-2**53, 2**53), st.integers(-1100, 960)),
                   st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e16, -1e16, 1e-16, 2.0**-1074]))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8).flatmap(lambda k: st.lists(st.lists(finite, min_size=k, max_size=k),
                                                    min_size=1, max_size=12)))
def test_fsum_rows_is_math_fsum(rows):
    got = fsum_rows(np.array(rows, dtype=np.float64)).tolist()
    for row, g in zip(rows, got, strict=True):
        try:
            want = math.fsum(row)
        except OverflowError:
            assert not math.isfinite(g)
            continue
        assert g == want and math.copysign(1, g) == math.copysign(1, want), (row, g, want)


def test_fsum_rows_on_rounding_ties():
    rows = [[1e-16, 1.0, 1e16], [1e16, 1.0, 1e-16], [-1e-16, -1.0, -1e16], [2.0**53, 1.0, 2.0**-60],
            [1.0, 2.0**-53, 2.0**-106], [0.1] * 8, [-0.0, -0.0, 0.0], [1e308, -1e308, 1.0]]
    got = fsum_rows(np.array([r + [0.0] * (8 - len(r)) for r in rows]))
    assert got.tolist() == [math.fsum(r) for r in rows]


# --- the tree, as arrays ------------------------------------------------------------------

@FAST
@given(st.data(), st.sampled_from(["SYS", "TAXI"]))
def test_array_tree_is_predict_one(models, data, src):
    task = models[(src, "DecisionTreeClassify")]
    lo, hi = task.train_x.min(axis=0), task.train_x.max(axis=0)
    k = len(lo)
    rows = data.draw(st.lists(st.lists(st.floats(-1.0, 2.0) | st.sampled_from(
        [math.nan, math.inf, -math.inf]), min_size=k, max_size=k), max_size=30))
    x = np.array(rows, dtype=float).reshape(-1, k) * (hi - lo) + lo
    x = np.vstack([x, task.train_x])
    assert _Tree(task.tree).predict(x).tolist() == [task.tree.predict_one(list(r)) for r in x]


# --- the kernels, on real and generated messages ------------------------------------------

@FAST
@given(cuts, steps, st.sampled_from(["SYS", "TAXI"]),
       st.sampled_from(["DecisionTreeClassify", "MultiVarLinearRegression"]))
def test_predictors_on_the_real_messages(models, messages, cut, step, src, name):
    msgs, _ = messages[src]
    r = run_both(lambda: models[(src, name)], msgs, cut, step)
    assert len(r.reference) == len(msgs)


@FAST
@given(cuts, steps, st.sampled_from(["SYS", "TAXI"]))
def test_error_estimation_on_the_real_streams(configs, messages, cut, step, src):
    _, mixed = messages[src]
    r = run_both(lambda: make_task("ErrorEstimation", configs[src]["ErrorEstimation"]), mixed,
                 cut, step)
    assert any(o["relative"] is not None for o in r.reference)


feature_values = st.one_of(
    st.floats(-100, 3000), st.integers(-100, 3000), st.none(), st.booleans(),
    st.sampled_from(["12.5", "nan", "abc", " 7 ", math.nan, -0.0, 0.0]))


@st.composite
def message(draw, features, tree):
    """A message of the model's features: in ``fields``, in ``meta`` or missing; a number
    (most messages have them all) or a value of any kind; now and then a single observation
    instead."""
    fields, meta = {}, {}
    full = draw(st.booleans())
    odd = feature_values | st.sampled_from([math.inf, -math.inf]) if tree else feature_values
    for f in features + ["extra"]:
        where = draw(st.sampled_from(["fields", "fields", "fields", "meta", "both"] +
                                     ([] if full else ["none"])))
        v = draw(st.floats(-100, 3000) if full and draw(st.integers(0, 19)) else odd)
        if where in ("fields", "both"):
            fields[f] = v
        if where == "meta":
            meta[f] = v
        if where == "both":  # shadowed by the observation
            meta[f] = draw(feature_values)
    ev = {"src": "S", "seq": draw(st.integers(0, 9)), "ts": 1, "sensor": "s"}
    if full or draw(st.booleans()):
        ev["meta"] = meta
    kind = draw(st.sampled_from(["joined"] * 6 + ["single", "bare"]))
    if kind == "joined":
        ev["fields"] = fields
    elif kind == "single" and fields:
        ev["obs"], ev["value"] = next(iter(fields.items()))
    return ev


@settings(FAST, max_examples=60)
@given(st.data(), cuts, steps, st.sampled_from(["SYS", "TAXI"]),
       st.sampled_from(["DecisionTreeClassify", "MultiVarLinearRegression"]))
def test_predictors_on_generated_messages(models, data, cut, step, src, name):
    task = models[(src, name)]
    feats = task.features + ([task.target] if name == "MultiVarLinearRegression" else [])
    evs = data.draw(st.lists(message(feats, name == "DecisionTreeClassify"), min_size=5,
                                  max_size=40))
    run_both(lambda: task, evs, cut, step)


ee_events = st.lists(st.fixed_dictionaries({"src": st.just("T"), "seq": st.integers(0, 5)}, optional={
    "analytic": st.sampled_from(["BWA", "MLR", "X", None]),
    "obs": st.sampled_from(["fare_amount", "MLR", "tip", None]),
    "value": feature_values | st.sampled_from([math.inf, -math.inf, 1e308]),
    "actual": feature_values | st.just(-1e308), "meta": st.just({"a": 1})}), min_size=5, max_size=40)


@FAST
@given(ee_events, cuts, steps, st.sampled_from([None, 0.0, -0.0, 4.0, math.nan, 1e-320]))
def test_error_estimation_on_generated_events(evs, cut, step, start):
    def make():
        task = make_task("ErrorEstimation", {"target": "fare_amount"})
        task.average = start
        return task

    run_both(make, evs, cut, step)


def test_real_messages_never_leave_the_vectorized_path(models, messages, configs):
    for src in ("SYS", "TAXI"):
        msgs, mixed = messages[src]
        for task, evs in ((models[(src, "DecisionTreeClassify")], msgs),
                          (models[(src, "MultiVarLinearRegression")], msgs),
                          (make_task("ErrorEstimation", configs[src]["ErrorEstimation"]), mixed)):
            kernel = kernel_for(task)
            kernel.run(Batch.from_events(evs))
            assert kernel.fallbacks == 0, (src, task.type_name)


@pytest.mark.parametrize("target", [None, ["fare_amount"], 3])
def test_error_estimation_with_a_target_numpy_could_misread(target):
    evs = [{"analytic": "BWA", "obs": target, "value": 4.0}, {"obs": "MLR", "value": 1.0,
                                                              "actual": 3.0},
           {"analytic": "BWA", "value": 2.0}, {"obs": "MLR", "value": 1.0, "actual": 2.0},
           {"analytic": "BWA", "obs": 3.0, "value": 8.0}, {"obs": "MLR", "value": 0.0,
                                                            "actual": 2.0}]
    r = run_both(lambda: make_task("ErrorEstimation", {"target": target}), evs, [3])
    assert r.reference[0]["average"] == 4.0


@pytest.mark.parametrize("odd,error", [({"fields": 5}, TypeError), ({"meta": [1]}, TypeError),
                                       ({"fields": None}, TypeError)])
def test_rows_the_kernels_do_not_model_fail_as_process_fails(models, odd, error):
    good = {"fields": {"trip_time_in_secs": 60.0, "trip_distance": 1.0}, "meta": {}}
    for name in ("DecisionTreeClassify", "MultiVarLinearRegression"):
        task = models[("TAXI", name)]
        with pytest.raises(error):
            task.process({**good, **odd})
        kernel = kernel_for(task)
        with pytest.raises(error):
            kernel.run(Batch.from_events([good, {**good, **odd}]))
        assert kernel.fallbacks == 1

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from reuse.tasks import make_task


def test_sys_decision_tree_training_accuracy(configs, data_dir):
    dtc = make_task("DecisionTreeClassify", configs["SYS"]["DecisionTreeClassify"], data_dir=data_dir)
    acc = dtc.tree.accuracy(dtc.train_x, dtc.train_labels)
    assert len(dtc.train_labels) == 800
    # the ARFF has only 20 distinct feature rows, each labelled both Good and Bad; the best any
    # classifier can do on it is the per-row majority, and the tree reaches exactly that (0.725)
    by_row: dict[tuple, Counter] = {}
    for row, lab in zip(map(tuple, dtc.train_x), dtc.train_labels, strict=True):
        by_row.setdefault(row, Counter())[lab] += 1
    best = sum(c.most_common(1)[0][1] for c in by_row.values()) / 800
    assert len(by_row) == 20
    assert acc == pytest.approx(best) == pytest.approx(0.725)


def test_taxi_decision_tree_training_accuracy(configs, data_dir):
    dtc = make_task("DecisionTreeClassify", configs["TAXI"]["DecisionTreeClassify"], data_dir=data_dir)
    assert set(dtc.train_labels) == {"Bad", "Good", "VeryGood"}  # 3 EXCELLENT rows undeclared
    assert dtc.tree.accuracy(dtc.train_x, dtc.train_labels) >= 0.9


def _joined(src, configs, data_dir, n):
    from reuse.tasks.sources import replay
    parse = make_task("SenMLParse", configs[src]["SenMLParse"])
    join = make_task("Join", configs[src]["Join"])
    return [m for ev in replay(src, data_dir, limit=n) for o in parse.process(ev)
            for m in join.process(o)]


def test_classify_and_regress_real_messages(configs, data_dir):
    msgs = _joined("TAXI", configs, data_dir, 50)
    dtc = make_task("DecisionTreeClassify", configs["TAXI"]["DecisionTreeClassify"], data_dir=data_dir)
    mlr = make_task("MultiVarLinearRegression", configs["TAXI"]["MultiVarLinearRegression"],
                    data_dir=data_dir)
    classes = [o["value"] for m in msgs for o in dtc.process(m)]
    assert len(classes) == 50 and set(classes) <= {"Bad", "Good", "VeryGood"}
    preds = [o for m in msgs for o in mlr.process(m)]
    errs = np.array([o["actual"] - o["value"] for o in preds])
    # the fare is close to linear in time and distance
    assert np.median(np.abs(errs)) < 3.0
    json.dumps(preds)


def test_linear_model_fits_its_training_set(configs, data_dir):
    mlr = make_task("MultiVarLinearRegression", configs["SYS"]["MultiVarLinearRegression"],
                    data_dir=data_dir)
    assert mlr.train_x.shape[1] == 6
    resid = mlr.train_y - np.array([mlr.model.predict_one(list(r)) for r in mlr.train_x])
    assert abs(resid.mean()) < 1e-6  # least squares with intercept: residuals sum to zero


def test_error_estimation_joins_average_and_prediction():
    ee = make_task("ErrorEstimation", {"target": "fare_amount"})
    assert ee.process({"seq": 1, "obs": "fare_amount", "value": 10.0, "analytic": "BWA"}) == []
    out = ee.process({"src": "TAXI", "seq": 2, "ts": 5, "obs": "MLR", "value": 7.0, "actual": 9.0})
    assert out[0]["value"] == pytest.approx(2.0) and out[0]["average"] == 10.0
    assert out[0]["relative"] == pytest.approx(0.2) and out[0]["seq"] == 2
    restored = make_task("ErrorEstimation", {"target": "fare_amount"})
    restored.set_state(json.loads(json.dumps(ee.get_state())))
    assert restored.average == 10.0

"""Predictive tasks of the PRED application: DecisionTreeClassify, MultiVarLinearRegression and
ErrorEstimation.

Both predictors train their model when the task starts, from the benchmark's ARFF training data
(a header ARFF plus, for TAXI, a CSV of rows), and then score joined messages one at a time.
The features are named by the event fields they read, aligned with the ARFF attributes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from reuse.core.paths import riotbench_dir
from reuse.tasks.base import (
    Event,
    StatefulTask,
    Task,
    TaskError,
    as_float,
    config_dict,
    data_path,
    derive,
    observations,
    require,
    str_list,
    to_int,
)
from reuse.tasks.models import DecisionTree, LinearModel
from reuse.tasks.resources import Arff, read_arff

__all__ = ["DecisionTreeClassify", "MultiVarLinearRegression", "ErrorEstimation", "feature_row"]


def feature_row(event: Event, features: list[str]) -> list[float] | None:
    """The numeric feature vector of a message, from its observations then its meta fields."""
    values = {**event.get("meta", {}), **observations(event)}
    row = []
    for f in features:
        num = as_float(values.get(f))
        if num is None:
            return None
        row.append(num)
    return row


def _model_config(config: Any) -> dict[str, Any]:
    """The canonical form both predictors share: ``arff`` and ``train_data`` as normalised paths
    (no train data, ``""`` and ``null`` are one), ``result_index`` an int when given (its default
    is read from the ARFF, so it is left implicit), ``features`` in order."""
    c = config_dict(config)
    c["arff"] = data_path(c["arff"])
    train = c.get("train_data")
    c["train_data"] = None if train is None or train == "" else data_path(train)
    if "result_index" in c:
        c["result_index"] = to_int(c["result_index"])
    c["features"] = str_list(c["features"])
    return c


def _load(task: Task, data_dir: Any) -> tuple[Arff, int]:
    """Read the task's training ARFF and the index of its result attribute."""
    base = riotbench_dir(data_dir)
    train = task._cfg("train_data")
    arff = read_arff(base / task._cfg("arff", required=True), base / train if train else None)
    idx = int(task._cfg("result_index", len(arff.names) - 1))
    if not 0 <= idx < len(arff.names):
        raise TaskError(f"{task.type_name}: result_index {idx} outside {arff.names}")
    feats = task._cfg("features", required=True)
    if len(feats) != len(arff.names) - 1:
        raise TaskError(f"{task.type_name}: {len(feats)} features for ARFF attributes {arff.names}")
    return arff, idx


class DecisionTreeClassify(Task):
    """Classify a joined message with a CART tree trained at start-up.

    Config keys: ``arff`` (training ARFF, or header-only ARFF when ``train_data`` names a CSV of
    rows), ``train_data``, ``result_index`` (the class attribute), ``features`` (event field per
    non-class attribute, in order), ``max_depth``. Class labels of the data are matched to the
    header's nominal values case-insensitively; rows whose label is not declared are skipped (as
    Weka would reject them). Output: ``obs`` "DTC", ``value`` the class. Messages missing a
    feature produce no output.
    """

    type_name = "DecisionTreeClassify"

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """The predictors' shared form, and ``max_depth`` as an int (default 8 written out)."""
        c = _model_config(config)
        c["max_depth"] = to_int(c.get("max_depth", 8))
        return c

    def __init__(self, config: Any, data_dir: Any = None) -> None:
        super().__init__(config)
        arff, idx = _load(self, data_dir)
        self.features: list[str] = list(self._cfg("features"))
        declared = arff.nominal[idx] or []
        canon = {v.lower(): v for v in declared}
        xs, labels = [], []
        for row in arff.rows:
            lab = row[idx]
            if declared:
                if lab.lower() not in canon:
                    continue
                lab = canon[lab.lower()]
            xs.append([float(v) for i, v in enumerate(row) if i != idx])
            labels.append(lab)
        self.train_x = np.array(xs, dtype=float)
        self.train_labels = labels
        self.tree = DecisionTree(max_depth=int(self._cfg("max_depth", 8))).fit(self.train_x, labels)

    def process(self, event: Event) -> list[Event]:
        row = feature_row(event, self.features)
        if row is None:
            return []
        return [derive(event, obs="DTC", value=self.tree.predict_one(row), analytic="DTC")]


class MultiVarLinearRegression(Task):
    """Predict a numeric field of a joined message by least squares trained at start-up.

    Config keys: ``arff``, ``train_data``, ``result_index`` (the predicted attribute, default the
    last, as Weka's class index), ``features`` (event field per other attribute, in order),
    ``target`` (event field of the predicted attribute, reported as ``actual`` when present).
    Output: ``obs`` "MLR", ``value`` the prediction, ``target``, ``actual``.
    """

    type_name = "MultiVarLinearRegression"

    @classmethod
    def _canonical(cls, config: Any) -> Any:
        """The predictors' shared form (``target`` as written)."""
        c = _model_config(config)
        require(c, "target")
        return c

    def __init__(self, config: Any, data_dir: Any = None) -> None:
        super().__init__(config)
        arff, idx = _load(self, data_dir)
        self.features: list[str] = list(self._cfg("features"))
        self.target: str = self._cfg("target", required=True)
        data = np.array([[float(v) for v in r] for r in arff.rows], dtype=float)
        self.train_x = np.delete(data, idx, axis=1)
        self.train_y = data[:, idx]
        self.model = LinearModel().fit(self.train_x, self.train_y)

    def process(self, event: Event) -> list[Event]:
        row = feature_row(event, self.features)
        if row is None:
            return []
        actual = as_float(observations(event).get(self.target))
        pred = self.model.predict_one(row)
        return [derive(event, obs="MLR", value=pred, target=self.target, actual=actual,
                       analytic="MLR")]


class ErrorEstimation(StatefulTask):
    """Join the regression's predictions with the block average of the predicted field.

    Two input streams interleave: BlockWindowAverage outputs (``analytic`` "BWA") for ``target``
    update the latest average (no output); MultiVarLinearRegression outputs (``obs`` "MLR") yield
    ``value`` = actual - predicted, plus ``average`` (latest block average, ``None`` before the
    first block) and ``relative`` = error / average. Config keys: ``target``.
    State: the latest average.
    """

    type_name = "ErrorEstimation"
    #: a two-stream join: the block averages write the one latest average that every
    #: regression output reads, whatever its key, so both inputs are gathered, in order
    partitioning = "join"

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.target: str = self._cfg("target", required=True)
        self.average: float | None = None

    def process(self, event: Event) -> list[Event]:
        if event.get("analytic") == "BWA":
            if event.get("obs") == self.target:
                self.average = as_float(event.get("value"))
            return []
        if event.get("obs") != "MLR":
            return []
        pred, actual = as_float(event.get("value")), as_float(event.get("actual"))
        err = actual - pred if actual is not None and pred is not None else None
        rel = err / self.average if err is not None and self.average else None
        return [derive(event, obs="ERR", value=err, predicted=pred, actual=actual,
                       average=self.average, relative=rel, analytic="ERR")]

    def get_state(self) -> Any:
        return {"average": self.average}

    def set_state(self, state: Any) -> None:
        self.average = as_float(state["average"])

"""The RIoTBench IoT workload: 21 dataflows built from the four RIoTBench applications.

The paper's 21 RIoT dataflows (138 tasks, 19 distinct task types, 4-8 tasks each) were never
published, so this module builds its own set with the same recipe: permutations and variants of
ETL, STATS and PRED (TRAIN needs a table store and a timer, so its model training is folded into
the predictors' start-up) over the three sources that have data here (SYS urban sensing, TAXI,
FIT mHealth; GRID has no data upstream). Per source, the variants share prefixes the way users of
one stream would (source -> SenMLParse -> RangeFilter ...), so the merge algorithm finds reuse.

Every task config is read from the benchmark's ``tasks_<CITY|TAXI|FIT>.properties`` and schema
files, so the same task type on two sources differs in config where the benchmark's parameters
differ. Sinks are ``MQTTPublish`` with the paper's constant config ``"sink"``: a sink's identity
is its type plus its ancestors, so two users' sinks with equivalent ancestors are merged, which
is the paper's semantics (both receive the identical stream).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from reuse.core.dataflow import parse_dataflow
from reuse.core.equivalence import signatures
from reuse.core.errors import ReuseError
from reuse.tasks.resources import read_properties, read_schema
from reuse.tasks.sources import SOURCE_FILES
from reuse.workloads import write_dags

__all__ = [
    "SOURCES",
    "KEYINGS",
    "PROPERTIES_FILES",
    "source_configs",
    "TEMPLATES",
    "build_template",
    "build_dataflows",
    "merkle_signatures",
    "workload_stats",
    "write_dags",
    "PAPER_STATS",
]

#: Source name -> RIoTBench properties file (SYS is the benchmark's CITY).
PROPERTIES_FILES = {"SYS": "tasks_CITY.properties", "TAXI": "tasks_TAXI.properties",
                    "FIT": "tasks_FIT.properties"}
SOURCES = ("SYS", "TAXI", "FIT")

#: How stateful tasks key their state (see :func:`group_by`). "field" is the default.
KEYINGS = ("field", "sensor")

#: The Bloom filter is trained on every ``BLOOM_TRAIN_STRIDE``-th line of the data file (the even
#: lines); the odd lines are held out, so the filter meets ids it was not trained on.
BLOOM_TRAIN_STRIDE = 2

#: The paper's figures for its RIoT workload (Section 5.1 and 5.4).
PAPER_STATS = {"dags": 21, "tasks": 138, "distinct_types": 19, "min_tasks": 4, "max_tasks": 8,
               "merged_tasks": 75}

#: Per source: (DecisionTree arff, train rows, features, result index) and the same for
#: linear regression (features, target). SYS trains on the full ARFF shipped with data;
#: TAXI on the header-only ARFF plus the CSV rows the TRAIN application used.
_MODELS: dict[str, dict[str, Any]] = {
    "SYS": {
        "dtc": {"arff": "DecisionTreeClassify-SYS.arff", "train_data": None, "result_index": 7,
                "features": ["longitude", "latitude", "temperature", "humidity", "light",
                             "dust", "airquality_raw"]},
        "mlr": {"arff": "linearregression.arff", "train_data": None, "result_index": 6,
                "features": ["longitude", "latitude", "temperature", "humidity", "light",
                             "dust"], "target": "airquality_raw"},
    },
    "TAXI": {
        "dtc": {"arff": "DecisionTreeClassifyHeaderOnly-TAXI.arff",
                "train_data": "filename-DTC-sample.txt", "result_index": 3,
                "features": ["trip_time_in_secs", "trip_distance", "fare_amount"]},
        "mlr": {"arff": "linearregressionHeaderOnly-TAXI.arff", "train_data": "filename.txt",
                "result_index": 2, "features": ["trip_time_in_secs", "trip_distance"],
                "target": "fare_amount"},
    },
}


def _basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _ranges(value: str) -> dict[str, list[float]]:
    """``f:lo:hi,...`` of ``FILTER.RANGE_FILTER.VALID_RANGE`` to ``{f: [lo, hi]}``."""
    out = {}
    for item in _split(value):
        name, low, high = item.split(":")
        out[name] = [float(low), float(high)]
    return out


def group_by(keying: str) -> list[str]:
    """The ``group_by`` of every keyed stateful task for a keying choice.

    ``"sensor"`` is the original's: RIoTBench's bolts keep one task object per ``sensorID +
    obsType`` (Interpolation, KalmanFilter, SlidingLinearRegression, BlockWindowAverage,
    SecondOrderMoment). ``"field"`` keeps one series per field over all sensors: the sample files
    repeat a sensor only ~1.3 times in 1000 messages (SYS 788 ids, TAXI 782; FIT has one
    subject), so per-sensor windows of 5-10 values almost never fill and BlockWindowAverage and
    SlidingLinearRegression would emit almost nothing (see ``benchmarks/task_semantics.py``).

    Examples
    --------
    >>> group_by("field"), group_by("sensor")
    (['obs'], ['sensor', 'obs'])
    """
    if keying not in KEYINGS:
        raise ReuseError(f"unknown keying {keying!r} (choose from {', '.join(KEYINGS)})")
    return ["obs"] if keying == "field" else ["sensor", "obs"]


def source_configs(src: str, data_dir: str | os.PathLike[str], *,
                   keying: str = "field") -> dict[str, Any]:
    """The config of every task type for one source, read from its properties and schema files.

    Where a properties file leaves a value unset (or gives a column index rather than field
    names), the fallback is stated inline. The observed fields are the schema minus the meta
    fields, as in the original's SenMLParse bolt: an id field that is not a meta field (TAXI's
    ``taxi_identifier``) is an observation too. ``keying`` chooses the stateful tasks'
    ``group_by`` (see :func:`group_by`).
    """
    group = group_by(keying)
    base = Path(data_dir)
    p = read_properties(base / PROPERTIES_FILES[src])
    schema = read_schema(base / _basename(p["PARSE.CSV_SCHEMA_FILEPATH"]))
    annotated = read_schema(base / _basename(p["PARSE.CSV_SCHEMA_WITH_ANNOTATEDFIELDS_FILEPATH"]))
    id_field = p["PARSE.ID_FIELD_SCHEMA"]
    meta = _split(p["PARSE.META_FIELD_SCHEMA"])
    observed = [n for n, _, _ in schema if n not in meta]
    plain = {n for n, _, _ in schema}
    ranges = _ranges(p["FILTER.RANGE_FILTER.VALID_RANGE"])
    numeric_fields = list(ranges)  # the fields the benchmark validates are its sensed quantities
    kalman_fields = _split(p.get("STATISTICS.KALMAN_FILTER.USE_MSG_FIELDLIST", "")) or numeric_fields
    interp_fields = (_split(p.get("STATISTICS.INTERPOLATION.USE_MSG_FIELD_LIST", ""))
                     or _split(p["STATISTICS.INTERPOLATION.USE_MSG_FIELD"]))
    bwa_fields = _split(p.get("AGGREGATE.BLOCK_AVERAGE.USE_MSG_FIELD", "")) or numeric_fields
    cfg: dict[str, Any] = {
        "source": "source",
        "SenMLParse": {"id_field": id_field, "meta_fields": meta, "fields": observed},
        "RangeFilter.drop": {"valid_range": ranges, "mode": "drop"},
        "RangeFilter.null": {"valid_range": ranges, "mode": "null"},
        "BloomFilterCheck": {
            "field": id_field, "train_file": SOURCE_FILES[src],
            "train_stride": BLOOM_TRAIN_STRIDE, "train_offset": 0,
            "expected_insertions": int(p["FILTER.BLOOM_FILTER_TRAIN.EXPECTED_INSERTIONS"]),
            "fp_ratio": float(p["FILTER.BLOOM_FILTER_TRAIN.FALSEPOSITIVE_RATIO"])},
        "Interpolation": {"fields": interp_fields,
                          "window": int(p["STATISTICS.INTERPOLATION.WINDOW_SIZE"]),
                          "group_by": group},
        "Join": {"fields": observed, "max_count": int(p["JOIN.MAX_COUNT_VALUE"])},
        "Annotate": {"file": _basename(p["ANNOTATE.ANNOTATE_FILE_PATH"]),
                     "fields": [n for n, _, _ in annotated if n not in plain]},
        "CsvToSenML": {"id_field": id_field, "schema": [list(s) for s in annotated]},
        "KalmanFilter": {"process_noise": float(p["STATISTICS.KALMAN_FILTER.PROCESS_NOISE"]),
                         "sensor_noise": float(p["STATISTICS.KALMAN_FILTER.SENSOR_NOISE"]),
                         "estimated_error": float(p["STATISTICS.KALMAN_FILTER.ESTIMATED_ERROR"]),
                         "fields": kalman_fields, "group_by": group},
        "SlidingLinearRegression": {
            "train_window": int(p.get("PREDICT.SIMPLE_LINEAR_REGRESSION.WINDOW_SIZE_TRAIN", 10)),
            "predict_window": int(p.get("PREDICT.SIMPLE_LINEAR_REGRESSION.WINDOW_SIZE_PREDICT", 10)),
            "group_by": group},
        "BlockWindowAverage": {"window": int(p["AGGREGATE.BLOCK_COUNT.WINDOW_SIZE"]),
                               "fields": bwa_fields, "group_by": group},
        "DistinctApproxCount": {"buckets": int(p["AGGREGATE.DISTINCT_APPROX_COUNT.BUCKETS"]),
                                "field": id_field},
        "SecondOrderMoment": {"max_map_size": int(p["STATISTICS.MOMENT.MAX_HASHMAPSIZE"]),
                              "estimator": "riotbench", "fields": kalman_fields,
                              "group_by": group},
        "MQTTPublish": "sink",
    }
    if src in _MODELS:
        dtc, mlr = _MODELS[src]["dtc"], _MODELS[src]["mlr"]
        cfg["DecisionTreeClassify"] = {**dtc, "max_depth": 8}
        cfg["MultiVarLinearRegression"] = dict(mlr)
        cfg["BlockWindowAverage.target"] = {**cfg["BlockWindowAverage"], "fields": [mlr["target"]]}
        cfg["ErrorEstimation"] = {"target": mlr["target"]}
    return cfg


class _Dag:
    """Tiny builder: add tasks by id with a config key of :func:`source_configs`."""

    def __init__(self, dag_id: str, src: str, cfg: dict[str, Any]) -> None:
        self.id, self.src, self.cfg = dag_id, src, cfg
        self.tasks: list[dict[str, Any]] = [{"id": "src", "type": src, "config": "source"}]
        self.streams: list[list[str]] = []

    def add(self, tid: str, key: str, *parents: str) -> _Dag:
        self.tasks.append({"id": tid, "type": key.split(".")[0], "config": self.cfg[key]})
        self.streams.extend([p, tid] for p in parents)
        return self

    def chain(self, *steps: tuple[str, str]) -> _Dag:
        prev = self.tasks[-1]["id"]
        for tid, key in steps:
            self.add(tid, key, prev)
            prev = tid
        return self

    def done(self) -> dict[str, Any]:
        return {"id": self.id, "tasks": self.tasks, "streams": self.streams}


def _etl(d: _Dag, csv: bool) -> _Dag:
    d.chain(("parse", "SenMLParse"), ("range", "RangeFilter.null"), ("interp", "Interpolation"),
            ("join", "Join"), ("annotate", "Annotate"))
    if csv:
        d.chain(("senml", "CsvToSenML"))
    return d.chain(("publish", "MQTTPublish"))


def _stats(d: _Dag, with_bwa: bool) -> _Dag:
    d.chain(("parse", "SenMLParse"))
    outs = []
    if with_bwa:
        d.add("bwa", "BlockWindowAverage", "parse")
        d.add("kalman", "KalmanFilter", "parse").add("slr", "SlidingLinearRegression", "kalman")
        outs += ["bwa", "slr"]
    else:
        d.add("moment", "SecondOrderMoment", "parse")
        outs.append("moment")
    d.add("distinct", "DistinctApproxCount", "parse")
    return d.add("publish", "MQTTPublish", *outs, "distinct")


def _clean(d: _Dag, kalman: bool) -> _Dag:
    d.chain(("parse", "SenMLParse"), ("bloom", "BloomFilterCheck"), ("range", "RangeFilter.drop"))
    if kalman:
        d.chain(("kalman", "KalmanFilter"), ("slr", "SlidingLinearRegression"))
    return d.chain(("publish", "MQTTPublish"))


def _pred(d: _Dag, variant: str) -> _Dag:
    d.chain(("parse", "SenMLParse"), ("join", "Join"))
    outs = []
    if variant in ("full", "dtc"):
        d.add("classify", "DecisionTreeClassify", "join")
        outs.append("classify")
    if variant in ("full", "mlr"):
        d.add("regress", "MultiVarLinearRegression", "join")
        d.add("average", "BlockWindowAverage.target", "join")
        d.add("error", "ErrorEstimation", "average", "regress")
        outs.insert(0, "error")
    return d.add("publish", "MQTTPublish", *outs)


#: The dataflow shapes by name (the dataflow id is ``<name>-<source>``) and the sources each is
#: built on: FIT has no training data, so it gets ETL, STATS and clean only.
TEMPLATES: dict[str, tuple[str, ...]] = {
    "etl": SOURCES, "etl-annotate": ("SYS", "TAXI"), "stats": SOURCES,
    "stats-moment": ("SYS", "TAXI"), "clean": SOURCES, "clean-kalman": ("SYS", "TAXI"),
    "pred": ("SYS", "TAXI"), "pred-classify": ("SYS", "TAXI"), "pred-error": ("SYS", "TAXI")}

_BUILDERS = {
    "etl": lambda d: _etl(d, csv=True), "etl-annotate": lambda d: _etl(d, csv=False),
    "stats": lambda d: _stats(d, with_bwa=True), "stats-moment": lambda d: _stats(d, with_bwa=False),
    "clean": lambda d: _clean(d, kalman=False), "clean-kalman": lambda d: _clean(d, kalman=True),
    "pred": lambda d: _pred(d, "full"), "pred-classify": lambda d: _pred(d, "dtc"),
    "pred-error": lambda d: _pred(d, "mlr")}


def build_template(name: str, src: str, cfg: dict[str, Any], dag_id: str | None = None,
                   ) -> dict[str, Any]:
    """One dataflow of a :data:`TEMPLATES` shape over ``src``, its task configs taken from
    ``cfg`` (keyed as :func:`source_configs` keys them), as a dataflow dict.

    Examples
    --------
    >>> cfg = {k: k for k in ("SenMLParse", "BloomFilterCheck", "RangeFilter.drop", "MQTTPublish")}
    >>> d = build_template("clean", "SYS", cfg)
    >>> d["id"], [t["type"] for t in d["tasks"]][1:]
    ('clean-sys', ['SenMLParse', 'BloomFilterCheck', 'RangeFilter', 'MQTTPublish'])
    """
    if src not in TEMPLATES.get(name, ()):
        raise ReuseError(f"no RIoTBench template {name!r} on source {src!r}")
    return _BUILDERS[name](_Dag(dag_id or f"{name}-{src.lower()}", src, cfg)).done()


def build_dataflows(data_dir: str | os.PathLike[str], *,
                    keying: str = "field") -> list[dict[str, Any]]:
    """Build the 21 RIoTBench dataflows (9 on SYS, 9 on TAXI, 3 on FIT).

    ``keying`` ("field" or "sensor", see :func:`group_by`) goes into every keyed stateful task's
    config, so the two keyings give the same DAG shapes with different task configs.

    Per SYS/TAXI: ETL with and without CsvToSenML, STATS (parse forks to BlockWindowAverage,
    Kalman -> SLR and DistinctApproxCount, joined at the sink), the older STATS variant with
    SecondOrderMoment, a bloom + range "clean" stream with and without Kalman -> SLR, and PRED
    (parse -> Join -> {DecisionTree, Regression, BlockWindowAverage}, {BWA, Regression} ->
    ErrorEstimation, {ErrorEstimation, DecisionTree} -> sink) with its two halves as their own
    dataflows. FIT has no training data, so it gets ETL, STATS and clean only
    (:data:`TEMPLATES`).
    """
    dags = []
    for src in SOURCES:
        cfg = source_configs(src, data_dir, keying=keying)
        dags += [build_template(name, src, cfg) for name, srcs in TEMPLATES.items()
                 if src in srcs]
    return dags


def merkle_signatures(dag: dict[str, Any]) -> dict[str, str]:
    """Signature of every task (see :mod:`reuse.core.equivalence`): equal iff the tasks are equivalent."""
    return signatures(parse_dataflow(dag))


def workload_stats(dataflows: list[dict[str, Any]]) -> dict[str, Any]:
    """Size and overlap figures of a workload, to report beside :data:`PAPER_STATS`.

    ``merged_tasks`` is the number of distinct tasks (by Merkle signature) over all dataflows,
    i.e. the running task count with reuse once all are submitted (the SEQ trace's peak).
    """
    sizes = [len(d["tasks"]) for d in dataflows]
    types = {t["type"] for d in dataflows for t in d["tasks"]}
    sources = {t["type"] for d in dataflows for t in d["tasks"] if t["config"] == "source"}
    abstract = {(t["type"], json.dumps(t["config"], sort_keys=True))
                for d in dataflows for t in d["tasks"]}
    merged = {s for d in dataflows for s in merkle_signatures(d).values()}
    return {
        "dags": len(dataflows),
        "tasks": sum(sizes),
        "distinct_types": len(types),
        "distinct_types_excluding_sources": len(types - sources),
        "distinct_abstract_tasks": len(abstract),
        "min_tasks": min(sizes),
        "max_tasks": max(sizes),
        "merged_tasks": len(merged),
    }

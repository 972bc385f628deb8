"""Many tenants on the RIoTBench streams: a seeded workload for semantic reuse (issue 25, item 5).

Each tenant (user) submits one dataflow of one of the 21 RIoTBench shapes
(:data:`reuse.workloads.riotbench.TEMPLATES`) and writes its task configs itself. What it
*means* (thresholds, windows, a Bloom filter's training lines, the state keying) and how it
*spells* it (number formats, defaults, list order, paths, key order, the order of a sink's
inputs) are drawn from the distributions below, from ``random.Random`` streams seeded by the workload's
``seed`` and the tenant's number (one for the meaning, one for the spelling, one for key and
input order), so a seed gives the same dataflows every time and the spelling knob leaves what
each tenant means unchanged. Nothing here is measured usage: where a file of
the benchmark says what values a parameter takes, the draw follows it; where nothing does, the
draw is stated as an assumption (and ``BENCHMARKS.md`` reports how the figures move with it).

What a tenant means (these change outputs, so no policy may merge two different choices):

- **Shape and source**: uniform over the 21 (shape, source) pairs of the ``riot`` workload
  (9 SYS, 9 TAXI, 3 FIT). No usage data says which application is more common.
- **Range filter thresholds** (``RangeFilter`` of ETL, ``null`` mode, and of the clean shapes,
  ``drop``): the fields are the ones ``FILTER.RANGE_FILTER.VALID_RANGE`` of
  ``tasks_<CITY|TAXI|FIT>.properties`` validates; the bounds are the observed values of each
  field in the source's sample stream (``<SRC>_sample_data_senml.csv``, all lines) with the
  same ``k``% trimmed off both tails, ``k`` uniform over {0, 1, 5, 10} (the observed minimum
  and maximum, and the usual winsorising levels; nearest rank, so every bound is a value the
  stream holds). One ``k`` per tenant for all its fields, so two tenants' ranges always nest,
  which is when the ``range`` containment rule applies.
- **Windows and sketch sizes** (``BlockWindowAverage.window``, ``Interpolation.window``,
  ``SlidingLinearRegression`` train and predict windows, ``DistinctApproxCount.buckets``,
  ``SecondOrderMoment.max_map_size``): with probability 1/2 the source's own value (what the
  ``riot`` workload uses), else uniform over the values the five properties files
  (``tasks.properties`` and ``tasks_{CITY,FIT,GRID,TAXI}.properties``) give that key, e.g. a
  block window of 5 (CITY) or 10 (the four others), an interpolation window of 0 (TAXI) or 5.
- **Bloom filter training lines** (``train_stride``, ``train_offset`` over the source's sample
  file): stride uniform over {1, 2, 4} (every line, half, a quarter) and offset uniform below
  it. The model file of the benchmark is missing upstream (see ``RIOTBENCH.md``), so there is no
  file to follow; nested samples make the ``bloom`` containment rule apply.
- **State keying** (``group_by`` of the stateful tasks, :func:`~reuse.workloads.riotbench.group_by`):
  per field with probability 3/4, per sensor (RIoTBench's own bolts) 1/4; an assumption.

How a tenant spells it (the ``semantic`` policy's canonical forms make these one config; under
``exact`` they are different tasks). One style per tenant, as one tool writes all of a user's
configs; per dimension the builder's spelling (the one the ``riot`` workload writes) with
probability ``1 - respell`` (default 1/2), else uniform over the others. There is no data on
how users spell configs; ``respell`` is the knob.

- numbers: the builder's (ints and floats), ``text`` (``"10"``, ``"0.125"``, as copied from a
  properties file), ``float`` (every number a float: ``10.0``, ``2e7``), ``js`` (an integral
  float written as an int: ``30``, ``1345``);
- defaults: the builder's, ``explicit`` (every default written out: ``max_pending``,
  ``max_depth``, a sink's ``topic`` and ``keep``), ``implicit`` (every key equal to its default
  left out);
- lists a task only uses as a set (``meta_fields``, stateful tasks' ``fields``): the builder's
  order, sorted, sorted descending;
- resource paths: ``x.csv`` or ``./x.csv``.

Key order is shuffled in every config and the inputs of a sink with several inputs come in a
random order; neither changes a signature under either policy (``exact`` compares canonical JSON
and sorted parents, and a sink commutes), and they are drawn so that the tests see them.
"""

from __future__ import annotations

import copy
import math
import os
import random
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from reuse.core.errors import ReuseError
from reuse.tasks.parse import parse_senml_line
from reuse.tasks.resources import read_properties
from reuse.tasks.sources import SOURCE_FILES
from reuse.workloads.riotbench import PROPERTIES_FILES, TEMPLATES, build_template, source_configs

__all__ = ["DEFAULT_TENANTS", "TRIM_PERCENT", "BLOOM_STRIDES", "INT_PARAMETERS", "STYLES",
           "observed_values", "trimmed_ranges", "parameter_values", "draw_style", "respell",
           "build_tenants"]

#: How many tenants the registered ``riot-tenants`` workload has by default.
DEFAULT_TENANTS = 100

#: Percent trimmed off each tail of a field's observed values.
TRIM_PERCENT = (0, 1, 5, 10)

#: Bloom filter training strides (every line, half of them, a quarter).
BLOOM_STRIDES = (1, 2, 4)

#: Probability that a tenant keys its state per sensor rather than per field.
SENSOR_KEYING = 0.25

#: ``(task type, config key) -> properties key`` of the integer parameters a tenant draws.
INT_PARAMETERS: dict[tuple[str, str], str] = {
    ("BlockWindowAverage", "window"): "AGGREGATE.BLOCK_COUNT.WINDOW_SIZE",
    ("Interpolation", "window"): "STATISTICS.INTERPOLATION.WINDOW_SIZE",
    ("SlidingLinearRegression", "train_window"): "PREDICT.SIMPLE_LINEAR_REGRESSION.WINDOW_SIZE_TRAIN",
    ("SlidingLinearRegression", "predict_window"):
        "PREDICT.SIMPLE_LINEAR_REGRESSION.WINDOW_SIZE_PREDICT",
    ("DistinctApproxCount", "buckets"): "AGGREGATE.DISTINCT_APPROX_COUNT.BUCKETS",
    ("SecondOrderMoment", "max_map_size"): "STATISTICS.MOMENT.MAX_HASHMAPSIZE",
}

#: The properties files whose values a parameter is drawn from.
ALL_PROPERTIES = ("tasks.properties", "tasks_CITY.properties", "tasks_FIT.properties",
                  "tasks_GRID.properties", "tasks_TAXI.properties")

#: The spellings of each style dimension, the builder's first.
STYLES: dict[str, tuple[str, ...]] = {
    "numbers": ("builder", "text", "float", "js"),
    "defaults": ("builder", "explicit", "implicit"),
    "sets": ("builder", "sorted", "descending"),
    "paths": ("builder", "dotslash"),
}

# --- what the spellings know of each type (the canonical forms in reuse.tasks accept them) ---

_INTS = {"Interpolation": ("window",), "Join": ("max_count", "max_pending"),
         "BlockWindowAverage": ("window",),
         "SlidingLinearRegression": ("train_window", "predict_window"),
         "DistinctApproxCount": ("buckets",), "SecondOrderMoment": ("max_map_size",),
         "BloomFilterCheck": ("expected_insertions", "train_stride", "train_offset"),
         "DecisionTreeClassify": ("result_index", "max_depth"),
         "MultiVarLinearRegression": ("result_index",), "MQTTPublish": ("keep",)}
_FLOATS = {"KalmanFilter": ("process_noise", "sensor_noise", "estimated_error"),
           "BloomFilterCheck": ("fp_ratio",)}
_SETS = {"SenMLParse": ("meta_fields",), "Interpolation": ("fields",), "Join": ("fields",),
         "KalmanFilter": ("fields",), "BlockWindowAverage": ("fields",),
         "SecondOrderMoment": ("fields",), "SlidingLinearRegression": ("fields",)}
_PATHS = {"BloomFilterCheck": ("train_file",), "Annotate": ("file",),
          "DecisionTreeClassify": ("arff", "train_data"),
          "MultiVarLinearRegression": ("arff", "train_data")}
_KEYED = ("Interpolation", "KalmanFilter", "BlockWindowAverage", "SlidingLinearRegression",
          "SecondOrderMoment")


def _defaults(type_: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The keys a type's constructor defaults, with their defaults (from the tasks' code)."""
    out: dict[str, Any] = {}
    if type_ in _KEYED:
        out["group_by"] = ["sensor", "obs"]
    if type_ == "RangeFilter":
        out["mode"] = "drop"
    elif type_ == "BloomFilterCheck":
        out |= {"train_stride": 1, "train_offset": 0}
    elif type_ == "Join":
        out |= {"max_count": len(config.get("fields", [])), "max_pending": 1000}
    elif type_ == "SecondOrderMoment":
        out["estimator"] = "riotbench"
    elif type_ == "DecisionTreeClassify":
        out["max_depth"] = 8
    elif type_ == "SenMLParse":
        out["meta_fields"] = []
    elif type_ == "MQTTPublish":
        out |= {"topic": "sink", "keep": 1000}
    if type_ in ("DecisionTreeClassify", "MultiVarLinearRegression"):
        out["train_data"] = None
    return out


# --- what the data and the properties files say ---------------------------------------------

@cache
def _observed(path: str, fields: tuple[str, ...]) -> dict[str, tuple[float, ...]]:
    values: dict[str, list[float]] = {f: [] for f in fields}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        _, msg = parse_senml_line(line)
        for e in msg.get("e", []):
            if e.get("n") in values and "v" in e:
                try:
                    num = float(e["v"])
                except (TypeError, ValueError):
                    continue
                if math.isfinite(num):
                    values[e["n"]].append(num)
    return {f: tuple(sorted(v)) for f, v in values.items()}


def observed_values(src: str, data_dir: str | os.PathLike[str], fields: list[str],
                    ) -> dict[str, tuple[float, ...]]:
    """Each field's numeric values in the source's sample stream, sorted (every line read)."""
    return _observed(str(Path(data_dir) / SOURCE_FILES[src]), tuple(fields))


def trimmed_ranges(observed: Mapping[str, tuple[float, ...]], percent: float,
                   ) -> dict[str, list[float]]:
    """``[lo, hi]`` per field with ``percent``% of its sorted values cut off each tail (nearest
    rank), so a larger ``percent`` gives a range inside a smaller one's.

    >>> trimmed_ranges({"t": tuple(range(101))}, 5), trimmed_ranges({"t": (1.0, 2.0)}, 10)
    ({'t': [5, 95]}, {'t': [1.0, 2.0]})
    """
    out = {}
    for f, vals in observed.items():
        if not vals:
            raise ReuseError(f"no numeric value of field {f!r} in the stream")
        n = len(vals) - 1
        cut = math.floor(n * percent / 100)
        out[f] = [vals[cut], vals[n - cut]]
    return out


def parameter_values(data_dir: str | os.PathLike[str]) -> dict[tuple[str, str], list[int]]:
    """The values the benchmark's five properties files give each :data:`INT_PARAMETERS` key
    (a file that leaves the key out, or comments it out, gives nothing)."""
    files = [read_properties(Path(data_dir) / name) for name in ALL_PROPERTIES
             if (Path(data_dir) / name).is_file()]
    return {param: [int(p[key]) for p in files if key in p]
            for param, key in INT_PARAMETERS.items()}


# --- spelling ----------------------------------------------------------------------------------

def draw_style(rng: random.Random, respell: float) -> dict[str, str]:
    """One tenant's spelling: per dimension the builder's with probability ``1 - respell``."""
    return {dim: (opts[0] if rng.random() >= respell else rng.choice(opts[1:]))
            for dim, opts in STYLES.items()}


def _number(value: Any, style: str, integer: bool) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if style == "text":
        if integer:
            return str(int(value))
        text = repr(float(value))
        return text[:-2] if text.endswith(".0") else text
    if style == "float":
        return float(value)
    if style == "js" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def respell(type_: str, config: Any, style: Mapping[str, str],
            rng: random.Random | None = None) -> Any:
    """``config`` spelled in ``style``: the same canonical form (the tests check it), another
    text. ``rng`` shuffles the key order (none: keys in order)."""
    if not isinstance(config, dict):
        if type_ == "MQTTPublish" and style["defaults"] != "builder":
            config = {}
        else:
            return config
    c = copy.deepcopy(config)
    defaults = _defaults(type_, c)
    if style["defaults"] == "explicit":
        for k, v in defaults.items():
            c.setdefault(k, "" if k == "train_data" else v)
        if c.get("train_data", 0) is None:
            c["train_data"] = ""
    elif style["defaults"] == "implicit":
        for k, v in defaults.items():
            if k in c and c[k] == v:
                del c[k]
    for k in _SETS.get(type_, ()):
        if isinstance(c.get(k), list) and style["sets"] != "builder":
            c[k] = sorted(c[k], reverse=style["sets"] == "descending")
    for k in _PATHS.get(type_, ()):
        if isinstance(c.get(k), str) and c[k] and style["paths"] == "dotslash":
            c[k] = f"./{c[k]}"
    for k in _INTS.get(type_, ()):
        if k in c:
            c[k] = _number(c[k], style["numbers"], integer=True)
    for k in _FLOATS.get(type_, ()):
        if k in c:
            c[k] = _number(c[k], style["numbers"], integer=False)
    if type_ == "RangeFilter":
        c["valid_range"] = {f: [_number(b, style["numbers"], integer=False) for b in r]
                            for f, r in c["valid_range"].items()}
    if rng is None:
        return c
    keys = list(c)
    rng.shuffle(keys)
    return {k: c[k] for k in keys}


# --- the workload ------------------------------------------------------------------------------

@cache
def _source_configs(src: str, data_dir: str, keying: str) -> dict[str, Any]:
    return source_configs(src, data_dir, keying=keying)


def _meaning(rng: random.Random, src: str, data_dir: str | os.PathLike[str],
             params: Mapping[tuple[str, str], list[int]]) -> dict[str, Any]:
    """One tenant's task configs over ``src``, keyed as :func:`source_configs` keys them."""
    keying = "sensor" if rng.random() < SENSOR_KEYING else "field"
    cfg = copy.deepcopy(_source_configs(src, str(data_dir), keying))
    fields = list(cfg["RangeFilter.drop"]["valid_range"])
    ranges = trimmed_ranges(observed_values(src, data_dir, fields), rng.choice(TRIM_PERCENT))
    for mode in ("drop", "null"):
        cfg[f"RangeFilter.{mode}"]["valid_range"] = copy.deepcopy(ranges)
    for (type_, key), pooled in params.items():
        if rng.random() >= 0.5 and pooled:
            cfg[type_][key] = rng.choice(pooled)
    stride = rng.choice(BLOOM_STRIDES)
    cfg["BloomFilterCheck"] |= {"train_stride": stride, "train_offset": rng.randrange(stride)}
    if "BlockWindowAverage.target" in cfg:
        cfg["BlockWindowAverage.target"]["window"] = cfg["BlockWindowAverage"]["window"]
    return cfg


def build_tenants(data_dir: str | os.PathLike[str], *, tenants: int = DEFAULT_TENANTS,
                  seed: int = 1, respell_p: float = 0.5) -> list[dict[str, Any]]:
    """The ``riot-tenants`` workload: ``tenants`` dataflow dicts, deterministic per ``seed``.

    Parameters
    ----------
    data_dir
        The RIoTBench data folder (properties, schemas, sample streams).
    tenants
        How many tenants (dataflows), ids ``u000-<shape>-<source>``, ``u001-...``.
    seed
        The one seed of every draw.
    respell_p
        Per style dimension, the probability that a tenant does not write the builder's
        spelling (0: every tenant spells as the ``riot`` workload does).

    Raises
    ------
    ReuseError
        ``tenants < 1`` or ``respell_p`` outside ``[0, 1]``.
    """
    if tenants < 1:
        raise ReuseError(f"the tenant workload needs at least 1 tenant, got {tenants}")
    if not 0 <= respell_p <= 1:
        raise ReuseError(f"respell probability must be in [0, 1], got {respell_p}")
    params = parameter_values(data_dir)
    shapes = [(name, src) for src in PROPERTIES_FILES for name, srcs in TEMPLATES.items()
              if src in srcs]
    width = max(3, len(str(tenants - 1)))
    out = []
    for i in range(tenants):
        # three streams per tenant, so that the spelling knob does not move what tenants mean
        means, spells, order = (random.Random(f"{seed}:{i}:{what}")
                                for what in ("meaning", "spelling", "order"))
        name, src = means.choice(shapes)
        cfg = _meaning(means, src, data_dir, params)
        style = draw_style(spells, respell_p)
        dag = build_template(name, src, cfg, f"u{i:0{width}d}-{name}-{src.lower()}")
        for task in dag["tasks"]:
            task["config"] = respell(task["type"], task["config"], style, order)
        sinks = {t["id"] for t in dag["tasks"] if t["type"] == "MQTTPublish"}
        into = [s for s in dag["streams"] if s[1] in sinks]
        order.shuffle(into)
        dag["streams"] = [s for s in dag["streams"] if s[1] not in sinks] + into
        out.append(dag)
    return out

"""Canonical configs and commuting inputs, task by task, on real RIoTBench events (issue 25).

For every task type of the RIoT workload, a hypothesis strategy respells the workload's own
config (from the benchmark's properties files) the ways its canonical form claims are the same:
number formats, key order, defaults written out or left out, repeated or reordered set-like lists,
``./`` in file names. Each spelling must give the same semantic signature *and*, built and fed
the same real events, identical outputs. Changing a value must change the signature.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reuse.core.matching import EXACT
from reuse.tasks import TASK_TYPES, make_task
from reuse.tasks.matching import SEMANTIC, canonical, commutes, match_policy
from reuse.tasks.sources import replay

#: Per type: keys the task only uses as a set, defaults the constructor fills in, file names.
SETS = {"SenMLParse": ["meta_fields"], "Interpolation": ["fields"], "Join": ["fields"],
        "KalmanFilter": ["fields"], "BlockWindowAverage": ["fields"],
        "SlidingLinearRegression": ["fields"], "SecondOrderMoment": ["fields"]}
GROUP = {"group_by": ["sensor", "obs"]}
DEFAULTS: dict[str, dict[str, Any]] = {
    "SenMLParse": {"meta_fields": []}, "RangeFilter": {"mode": "drop"},
    "BloomFilterCheck": {"train_stride": 1, "train_offset": 0}, "Interpolation": GROUP,
    "Join": {"max_pending": 1000}, "KalmanFilter": GROUP, "BlockWindowAverage": GROUP,
    "SlidingLinearRegression": {**GROUP, "fields": None},
    "SecondOrderMoment": {**GROUP, "estimator": "riotbench", "fields": None},
    "DecisionTreeClassify": {"max_depth": 8, "train_data": None},
    "MultiVarLinearRegression": {"train_data": None}, "PiTask": {"iterations": 1600},
    "MQTTPublish": {"topic": "sink", "keep": 1000}}
PATHS = {"BloomFilterCheck": ["train_file"], "Annotate": ["file"],
         "DecisionTreeClassify": ["arff", "train_data"],
         "MultiVarLinearRegression": ["arff", "train_data"]}

#: (type, config key in source_configs, source, what it reads).
CASES = [("SenMLParse", "SenMLParse", s, "raw") for s in ("SYS", "TAXI", "FIT")] + [
    ("RangeFilter", "RangeFilter.drop", "SYS", "parsed"),
    ("RangeFilter", "RangeFilter.null", "TAXI", "parsed"),
    ("BloomFilterCheck", "BloomFilterCheck", "SYS", "parsed"),
    ("Interpolation", "Interpolation", "SYS", "nulled"),
    ("Interpolation", "Interpolation", "TAXI", "nulled"),
    ("Join", "Join", "SYS", "parsed"), ("Join", "Join", "TAXI", "parsed"),
    ("Annotate", "Annotate", "SYS", "joined"), ("CsvToSenML", "CsvToSenML", "SYS", "annotated"),
    ("KalmanFilter", "KalmanFilter", "SYS", "parsed"),
    ("KalmanFilter", "KalmanFilter", "FIT", "parsed"),
    ("BlockWindowAverage", "BlockWindowAverage", "TAXI", "parsed"),
    ("SlidingLinearRegression", "SlidingLinearRegression", "SYS", "parsed"),
    ("DistinctApproxCount", "DistinctApproxCount", "TAXI", "parsed"),
    ("SecondOrderMoment", "SecondOrderMoment", "SYS", "parsed"),
    ("DecisionTreeClassify", "DecisionTreeClassify", "SYS", "joined"),
    ("DecisionTreeClassify", "DecisionTreeClassify", "TAXI", "joined"),
    ("MultiVarLinearRegression", "MultiVarLinearRegression", "TAXI", "joined"),
    ("ErrorEstimation", "ErrorEstimation", "SYS", "parsed"),
    ("MQTTPublish", "MQTTPublish", "SYS", "parsed"), ("PiTask", "PiTask", "SYS", "parsed")]


#: Configs of types the RIoT workload does not configure.
EXTRA = {"PiTask": {"iterations": 40}}


def config_of(configs, src: str, key: str) -> Any:
    return EXTRA[key] if key in EXTRA else configs[src][key]


def test_every_task_type_has_a_case():
    assert {c[0] for c in CASES} | {"Sink"} == set(TASK_TYPES)


@pytest.fixture(scope="module")
def events(configs, data_dir):
    """Real events of each kind a task reads, per source (60 messages each)."""
    out: dict[tuple[str, str], list[dict]] = {}
    for src in ("SYS", "TAXI", "FIT"):
        cfg = configs[src]
        raw = list(replay(src, data_dir, limit=60))
        parsed = run(make_task("SenMLParse", cfg["SenMLParse"]), raw)
        joined = run(make_task("Join", cfg["Join"]), parsed)
        annotate = make_task("Annotate", cfg["Annotate"], data_dir=data_dir)
        out.update({(src, "raw"): raw, (src, "parsed"): parsed, (src, "joined"): joined,
                    (src, "nulled"): run(make_task("RangeFilter", cfg["RangeFilter.null"]),
                                         parsed),
                    (src, "annotated"): run(annotate, joined)})
    return out


def run(task, inputs: list[dict]) -> list[dict]:
    return [o for ev in inputs for o in task.process(ev)]


def outputs(type_: str, config: Any, inputs: list[dict], data_dir) -> Any:
    task = make_task(type_, config, data_dir=data_dir)
    out = run(task, inputs)
    if hasattr(task, "published"):
        return task.count, list(task.published)
    return out


@st.composite
def number(draw, value: Any) -> Any:
    """Another spelling of a number the constructor converts with ``int`` or ``float``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    forms: list[Any] = [value, float(value)]
    if isinstance(value, int):
        forms.append(str(value))
    else:
        forms.append(repr(value))
        if value.is_integer():
            forms += [int(value), str(int(value))]
    return draw(st.sampled_from(forms))


@st.composite
def respelled(draw, type_: str, config: Any) -> Any:
    """A spelling of ``config`` its type's canonical form claims means the same."""
    if not isinstance(config, dict):  # a sink's "sink": the defaults
        return draw(st.sampled_from([config, {}, {"topic": "sink"}, {"keep": "1000"}]))
    c: dict[str, Any] = {}
    for key, value in config.items():
        if key in SETS.get(type_, []) and isinstance(value, list) and value:
            value = draw(st.permutations(value)) + draw(st.lists(st.sampled_from(value),
                                                                 max_size=2))
        elif key == "valid_range":
            value = {k: [draw(number(lo)), draw(number(hi))] for k, (lo, hi) in value.items()}
        elif key in PATHS.get(type_, []) and isinstance(value, str):
            value = draw(st.sampled_from([value, "./" + value]))
        else:
            value = draw(number(value))
        c[key] = value
    for key, default in DEFAULTS.get(type_, {}).items():
        if key in c and c[key] == default and draw(st.booleans()):
            del c[key]
        elif key not in c and draw(st.booleans()):
            c[key] = default
    if type_ == "Join" and "max_count" in c and int(c["max_count"]) == len(c["fields"]) \
            and draw(st.booleans()):
        del c["max_count"]  # its default is len(fields) as written
    keys = list(c)
    random.Random(draw(st.integers(0, 99))).shuffle(keys)
    return {k: c[k] for k in keys}


@pytest.mark.parametrize("type_, key, src, reads", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_two_spellings_give_one_signature_and_identical_outputs(
        type_, key, src, reads, configs, events, data_dir, data):
    config = config_of(configs, src, key)
    other = data.draw(respelled(type_, config))
    form = canonical(type_, config)
    assert canonical(type_, other) == form
    assert SEMANTIC.config_key(type_, other) == SEMANTIC.config_key(type_, config)
    assert canonical(type_, form) == form  # idempotent
    inputs = events[(src, reads)]
    expected = outputs(type_, config, inputs, data_dir)
    assert outputs(type_, other, inputs, data_dir) == expected
    assert outputs(type_, form, inputs, data_dir) == expected


@pytest.mark.parametrize("type_, change", [
    ("RangeFilter", {"mode": "null"}), ("Interpolation", {"window": 6}),
    ("Join", {"max_count": 3}), ("KalmanFilter", {"process_noise": 0.2}),
    ("BlockWindowAverage", {"window": 2}), ("SlidingLinearRegression", {"fields": ["dust"]}),
    ("SecondOrderMoment", {"estimator": "ams"}), ("SenMLParse", {"fields": ["dust", "light"]}),
    ("DistinctApproxCount", {"buckets": 9}), ("DecisionTreeClassify", {"max_depth": 3}),
    ("MQTTPublish", {"topic": "other"}), ("BloomFilterCheck", {"train_offset": 1}),
    ("SenMLParse", {"fields": ["airquality_raw", "dust", "light", "humidity", "temperature"]}),
    ("Annotate", {"fields": ["type", "location"]})])
def test_a_different_value_is_a_different_config(configs, type_, change):
    config = configs["SYS"]["RangeFilter.drop" if type_ == "RangeFilter" else type_]
    changed = {**(config if isinstance(config, dict) else {}), **change}
    assert SEMANTIC.config_key(type_, changed) != SEMANTIC.config_key(type_, config)


@pytest.mark.parametrize("type_, config", [
    ("RangeFilter", {"valid_range": {"t": [1, "nan"]}}), ("KalmanFilter", {"fields": ["t"]}),
    ("Join", {"fields": "abc"}), ("SenMLParse", "parse"), ("BlockWindowAverage", {"window": "5.5"}),
    ("SomeOpmwStep", {"b": 1, "a": "1"})])
def test_a_config_the_form_cannot_read_stays_as_written(type_, config):
    assert canonical(type_, config) == config


def test_what_the_constructor_reads_the_same_is_the_same():
    """Conversions the code really makes, however odd: truncation, clamped windows, non-dict
    sink configs, ``max(1, iterations)``."""
    assert canonical("BlockWindowAverage", {"window": 0, "fields": []}) == \
        canonical("BlockWindowAverage", {"window": "1", "fields": []})
    assert canonical("Interpolation", {"window": 5.7, "fields": []})["window"] == 5
    assert canonical("MQTTPublish", "sink") == canonical("MQTTPublish", {"topic": "sink"})
    assert canonical("PiTask", "default") == canonical("PiTask", {"iterations": "1600"})
    assert canonical("PiTask", {"iterations": 0}) == canonical("PiTask", {"iterations": 1})


def test_which_types_commute():
    """Every stateless task is a union (one event at a time); every stateful one sees the
    order of its inputs; a type with no code keeps the paper's order-free inputs."""
    assert {t for t, c in TASK_TYPES.items() if commutes(t)} == {
        "SenMLParse", "RangeFilter", "BloomFilterCheck", "Annotate", "CsvToSenML",
        "DecisionTreeClassify", "MultiVarLinearRegression", "MQTTPublish", "Sink", "PiTask"}
    assert all(commutes(t) != c.stateful for t, c in TASK_TYPES.items())
    assert commutes("SYS") and commutes("Classifier")


@pytest.mark.parametrize("type_, reads", [("RangeFilter", "parsed"), ("PiTask", "parsed"),
                                          ("MQTTPublish", "parsed")])
def test_a_commuting_task_gives_one_multiset_per_seq_whatever_the_input_order(
        configs, events, data_dir, type_, reads):
    """Two inputs (the source's events, and the same events shifted in value) interleaved in
    either order per ``seq``: the same outputs per ``seq``, as multisets."""
    one = events[("SYS", reads)]
    two = [{**e, "value": e["value"] * 2} if isinstance(e.get("value"), float) else e
           for e in one]
    config = config_of(configs, "SYS", "RangeFilter.drop" if type_ == "RangeFilter" else type_)
    per_seq: list[dict[int, list[str]]] = []
    for first, second in ((one, two), (two, one)):
        merged = sorted(first + second, key=lambda e: e["seq"])  # stable: parent order per seq
        got = outputs(type_, config, merged, data_dir)
        items = got[1] if isinstance(got, tuple) else got
        seqs: dict[int, list[str]] = {}
        for o in items:
            seqs.setdefault(o["seq"], []).append(repr(sorted(o.items(), key=str)))
        per_seq.append({k: sorted(v) for k, v in seqs.items()})
    assert per_seq[0] == per_seq[1]


def test_policies_by_name():
    assert match_policy("exact") is EXACT and match_policy("semantic") is SEMANTIC
    with pytest.raises(Exception, match="unknown match policy 'fuzzy'"):
        match_policy("fuzzy")

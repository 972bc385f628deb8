"""Containment rules against the tasks' code (issue 25, item 3).

Each rule claims that a narrow task fed a wide one's output emits exactly what it emits fed
the input itself. Hypothesis draws configs (narrow ones mostly derived from the wide one, so the
claim is often made) and checks the claim by running the tasks: on synthetic events that hold
every kind of value the filter treats specially (missing fields, ``None``, NaN, bools, numeric
and other strings, infinities, the bounds themselves), and on the real RIoTBench streams. Where
a rule refuses, a witness shows why: the rewrite would change the outputs.

Then the whole path: random RIoTBench dataflows with their own ranges and Bloom training
samples, submitted and removed in any order through the semantic manager. After every step the
invariants hold, each dataflow's plan and the running tasks (each run once, as the merged DAG)
give each sink what the dataflow alone gives, and a wide task a residual reads stays running
after its owner leaves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reuse.core.dataflow import Dataflow, parse_dataflow
from reuse.core.invariants import assert_invariants
from reuse.core.manager import Manager
from reuse.tasks import make_task
from reuse.tasks.containment import RULES, containment_rules
from reuse.tasks.filters import BloomFilter, RangeFilter
from reuse.tasks.matching import SEMANTIC
from reuse.testing import checked_replay, execute_tasks, run_flow

FIELDS = ["t", "h", "d"]
RANGE = RULES["range"].contains
BLOOM = RULES["bloom"].contains
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def run(task: Any, events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for e in events for o in task.process(e)]


def chained(wide: Any, narrow: Any, events: Sequence[dict[str, Any]], **kw: Any,
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What the narrow task emits fed the events, and fed the wide task's output."""
    type_ = kw.pop("type_", "RangeFilter")
    n = make_task(type_, narrow, **kw)
    return run(n, events), run(n, run(make_task(type_, wide, **kw), events))


# --- RangeFilter on synthetic events ---------------------------------------------------------

POINTS = [-10, 0, 5, 10, 10.5, 20, 30, 40, 50]
BOUND = st.sampled_from(POINTS)
VALUES = st.one_of(st.floats(-20, 60, allow_nan=False), st.integers(-20, 60), BOUND,
                   st.sampled_from([None, math.nan, math.inf, -math.inf, True, False, "abc", "",
                                    "12.5", "nan", "1e3", "5", -0.0, [1], {"a": 1}]))


@st.composite
def synthetic_events(draw) -> list[dict[str, Any]]:
    """Single observations (sometimes without ``obs`` or ``value``) and joined messages."""
    out = []
    for seq in range(draw(st.integers(1, 25))):
        base = {"src": "X", "seq": seq, "ts": seq, "sensor": "s1", "meta": {"m": 1}}
        if draw(st.booleans()):
            fields = draw(st.dictionaries(st.sampled_from(FIELDS + ["other"]), VALUES,
                                          max_size=4))
            out.append({**base, "fields": fields, **draw(st.sampled_from([{}, {"x": 1}]))})
        else:
            ev = {**base, "obs": draw(st.sampled_from(FIELDS + ["other"]))}
            if draw(st.integers(0, 9)):
                ev["value"] = draw(VALUES)
            out.append(ev)
    return out



@st.composite
def range_pairs(draw) -> tuple[dict[str, Any], dict[str, Any]]:
    """A wide config and a narrow one: mostly the wide one's fields with bounds moved in (or
    out, or crossed), sometimes with a field dropped or added, any modes, bounds respelled."""
    wide = {f: sorted([draw(BOUND), draw(BOUND)]) for f in
            draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3, unique=True))}
    narrow = {}
    for f, (lo, hi) in wide.items():
        if draw(st.integers(0, 9)) == 0:
            continue
        how = draw(st.sampled_from(["same", "in", "in", "out", "point", "empty"]))
        point = draw(BOUND)
        a, b = {"same": (lo, hi), "in": (max(lo, draw(BOUND)), min(hi, draw(BOUND))),
                "out": (draw(BOUND), draw(BOUND)), "point": (point, point),
                "empty": (hi + 1, lo - 1)}[how]
        narrow[f] = [draw(st.sampled_from([a, float(a), str(a)])), b]
    for f in FIELDS:
        if f not in wide and draw(st.booleans()):
            narrow[f] = sorted([draw(BOUND), draw(BOUND)])
    modes = st.sampled_from([None, "drop", "null"])
    configs = []
    for ranges in (wide, narrow):
        c: dict[str, Any] = {"valid_range": ranges}
        mode = draw(modes)
        if mode is not None:
            c["mode"] = mode
        configs.append(c)
    return configs[0], configs[1]


@given(range_pairs(), synthetic_events())
@settings(max_examples=400)
def test_range_rule_is_exact_on_every_kind_of_value(pair, events):
    wide, narrow = pair
    if RANGE(wide, narrow):
        alone, behind = chained(wide, narrow, events)
        assert behind == alone


def test_range_rule_says_yes_where_it_should():
    wide = {"valid_range": {"t": [0, 40], "h": [10, 90]}}
    assert RANGE(wide, {"valid_range": {"t": [5, 30], "h": ["10", 90.0], "d": [0, 1]}})
    assert RANGE(wide, {"valid_range": {"t": [50, 0], "h": [10, 90]}})  # t rejects every number
    assert RANGE({**wide, "mode": "null"}, {"valid_range": {"t": [0, 40], "h": [20, 30]},
                                            "mode": "null"})
    assert RANGE({**wide, "mode": "null"}, {"valid_range": {"t": [1, 2], "h": [20, 30]}})


@pytest.mark.parametrize("wide, narrow, event", [
    # null behind drop: the wide filter drops what the narrow one passes nulled
    ({"valid_range": {"t": [0, 40]}}, {"valid_range": {"t": [5, 30]}, "mode": "null"},
     {"obs": "t", "value": 50.0}),
    # a field the wide filter ranges and the narrow one does not
    ({"valid_range": {"t": [0, 40], "h": [0, 1]}}, {"valid_range": {"t": [5, 30]}},
     {"fields": {"t": 10.0, "h": 5.0}}),
    # not inside
    ({"valid_range": {"t": [0, 40]}}, {"valid_range": {"t": [5, 50]}}, {"obs": "t", "value": 45}),
])
def test_range_rule_refuses_where_the_rewrite_would_change_outputs(wide, narrow, event):
    assert not RANGE(wide, narrow)
    alone, behind = chained(wide, narrow, [{"src": "X", "seq": 0, **event}])
    assert alone != behind


@pytest.mark.parametrize("config", [
    {"valid_range": {"t": [0, "inf"]}}, {"valid_range": {"t": [0, "nan"]}},
    {"valid_range": {"t": [0]}}, {"valid_range": {"t": "0-4"}}, {"valid_range": [0, 4]},
    {"valid_range": {"t": [0, 4]}, "mode": "Drop"}, {"valid_range": {"": [0, 4]}}, "range", {}])
def test_range_rule_refuses_a_config_it_does_not_read(config):
    good = {"valid_range": {"t": [-100, 100]}}
    assert not RANGE(config, good) and not RANGE(good, config)


# --- RangeFilter on the real streams --------------------------------------------------------

@pytest.fixture(scope="module")
def real_events(real_events_of) -> dict[str, list[dict[str, Any]]]:
    """150 messages of each source, parsed (one observation each) and joined (one message)."""
    return real_events_of(150)


@st.composite
def real_range_pairs(draw, ranges: Mapping[str, Sequence[float]]):
    """A wide and a narrow config over a source's own valid ranges, cut at tenths."""
    def cut(lo: float, hi: float) -> list[float]:
        a, b = sorted([draw(st.integers(0, 10)), draw(st.integers(0, 10))])
        return [lo + (hi - lo) * a / 10, lo + (hi - lo) * b / 10]

    names = draw(st.lists(st.sampled_from(sorted(ranges)), min_size=1, max_size=3, unique=True))
    wide = {f: cut(*ranges[f]) for f in names}
    narrow = {f: cut(*wide[f]) if draw(st.integers(0, 5)) else cut(*ranges[f]) for f in wide}
    modes = draw(st.sampled_from([("drop", "drop"), ("null", "null"), ("null", "drop"),
                                  ("drop", "null")]))
    return ({"valid_range": wide, "mode": modes[0]}, {"valid_range": narrow, "mode": modes[1]})


@pytest.mark.parametrize("src", ["SYS", "TAXI", "FIT"])
@SETTINGS
@given(data=st.data())
def test_range_rule_is_exact_on_the_real_streams(src, configs, real_events, data):
    ranges = configs[src]["RangeFilter.drop"]["valid_range"]
    wide, narrow = data.draw(real_range_pairs(ranges))
    if RANGE(wide, narrow):
        alone, behind = chained(wide, narrow, real_events[src])
        assert behind == alone


# --- BloomFilterCheck -----------------------------------------------------------------------

def bloom(src: str, stride: int, offset: int, n: Any = 400, p: Any = 0.05) -> dict[str, Any]:
    """A small filter (400 insertions expected, 5% false positives) so collisions happen."""
    return {"field": {"SYS": "source", "TAXI": "taxi_identifier"}[src],
            "train_file": f"{src}_sample_data_senml.csv", "train_stride": stride,
            "train_offset": offset, "expected_insertions": n, "fp_ratio": p}


SAMPLES = [(1, 0), (2, 0), (2, 1), (3, 0), (4, 0), (4, 1), (4, 2), (6, 0), (6, 3), (8, 4)]


@pytest.mark.parametrize("src", ["SYS", "TAXI"])
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(SAMPLES), st.sampled_from(SAMPLES))
def test_bloom_rule_is_exact_on_the_real_streams(src, real_events, data_dir, wide, narrow):
    w, n = bloom(src, *wide), bloom(src, *narrow)
    assert BLOOM(w, n) == (narrow[0] % wide[0] == 0 and narrow[1] % wide[0] == wide[1])
    if BLOOM(w, n):
        alone, behind = chained(w, n, real_events[src], type_="BloomFilterCheck",
                                data_dir=data_dir)
        assert behind == alone


def test_bloom_rule_compares_the_filters_shape_not_its_spelling():
    """Two (n, p) with the same (m, k) set the same bits; another shape does not."""
    p2 = next(p for p in (0.0500001, 0.0500002, 0.0499999) if BloomFilter.shape(400, p) ==
              BloomFilter.shape(400, 0.05))
    assert BLOOM(bloom("SYS", 1, 0), bloom("SYS", 2, 0, n="400", p=str(p2)))
    assert not BLOOM(bloom("SYS", 1, 0), bloom("SYS", 2, 0, n=4000))
    assert not BLOOM(bloom("SYS", 1, 0), bloom("TAXI", 2, 0))
    assert not BLOOM(bloom("SYS", 2, 0), bloom("SYS", 4, 1))
    assert not BLOOM(bloom("SYS", 1, 0, p=1.5), bloom("SYS", 1, 0, p=1.5))



def test_bloom_rule_refuses_other_training_lines(real_events, data_dir):
    """A narrow filter trained on lines the wide one never saw lets through ids it drops."""
    wide, narrow = bloom("SYS", 2, 0), bloom("SYS", 4, 1)
    assert not BLOOM(wide, narrow)
    alone, behind = chained(wide, narrow, real_events["SYS"], type_="BloomFilterCheck",
                            data_dir=data_dir)
    assert alone != behind


def test_the_registry_is_explicit():
    assert [r.type for r in containment_rules()] == ["RangeFilter", "BloomFilterCheck",
                                                      "BlockWindowAverage"]
    assert [r.fresh_inputs for r in containment_rules()] == [False, False, True]
    assert SEMANTIC.containment == containment_rules()
    assert RULES["range"].contains == RangeFilter.contains
    with pytest.raises(Exception, match="unknown containment rule 'window'"):
        containment_rules(["window"])


# --- the manager on the real streams --------------------------------------------------------

@st.composite
def riot_flows(draw, dag: str, configs: Mapping[str, Any], src: str) -> Dataflow:
    """``src -> parse [-> join | bloom] -> range [-> range] [-> kalman | bwa] -> publish``
    over one source, each tenant with its own ranges (cut at quarters of the benchmark's),
    modes, Bloom training sample and topic; mostly the plain chain, so tenants meet."""
    cfg = configs[src]
    ranges = cfg["RangeFilter.drop"]["valid_range"]
    names = sorted(ranges)[:2]

    def cut() -> dict[str, Any]:
        """Mostly the middle ``[k/4, 1 - k/4]`` of each range (so tenants' ranges nest),
        sometimes any quarters."""
        k = draw(st.integers(0, 2))
        out = {}
        for f in names:
            lo, hi = ranges[f]
            a, b = (k, 4 - k) if draw(st.integers(0, 3)) else sorted(
                [draw(st.integers(0, 4)), draw(st.integers(0, 4))])
            out[f] = [lo + (hi - lo) * a / 4, lo + (hi - lo) * b / 4]
        return out

    steps: list[tuple[str, str, Any]] = [("parse", "SenMLParse", cfg["SenMLParse"])]
    prefix = draw(st.sampled_from(["", "", "join", "bloom"]))
    if prefix == "join":
        steps.append(("join", "Join", cfg["Join"]))
    elif prefix == "bloom":
        steps.append(("bloom", "BloomFilterCheck", bloom(src, *draw(st.sampled_from(
            [(1, 0), (2, 0), (4, 0), (4, 2)])))))
    for i in range(draw(st.sampled_from([1, 1, 2]))):
        steps.append((f"range{i}", "RangeFilter",
                      {"valid_range": cut(), "mode": draw(st.sampled_from(["drop", "drop",
                                                                           "null"]))}))
    below = draw(st.sampled_from([None, None, "KalmanFilter", "BlockWindowAverage"]))
    if below is not None:
        steps.append(("stat", below, cfg[below]))
    steps.append(("publish", "MQTTPublish", {"topic": draw(st.sampled_from(["a", "b"]))}))
    tasks = [{"id": "src", "type": src, "config": "source"}]
    tasks += [{"id": i, "type": t, "config": c} for i, t, c in steps]
    ids = [t["id"] for t in tasks]
    return parse_dataflow({"id": dag, "tasks": tasks,
                           "streams": [[a, b] for a, b in zip(ids, ids[1:], strict=False)]})


@st.composite
def riot_workloads(draw, configs: Mapping[str, Any]):
    src = draw(st.sampled_from(["SYS", "TAXI"]))
    flows = [draw(riot_flows(f"T{i}", configs, src)) for i in range(draw(st.integers(3, 6)))]
    ops, present = [], set()
    for _ in range(draw(st.integers(len(flows), 2 * len(flows) + 2))):
        dag = draw(st.sampled_from([f.id for f in flows]))
        ops.append(("remove" if dag in present else "submit", dag))
        present ^= {dag}
    return flows, ops


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_the_semantic_manager_keeps_every_dataflows_outputs(configs, data_dir, data):
    """Random tenants' dataflows on the real streams, submitted and removed in any order."""
    flows, ops = data.draw(riot_workloads(configs))
    for _ in checked_replay(flows, ops, data_dir, {}):
        pass


def test_a_narrow_tenant_shares_the_wide_tenants_filter_until_it_leaves(configs, data_dir):
    """The scenario of issue 25, on SYS: a wide range filter, a narrower tenant behind it; the
    wide tenant leaves, and (issue 36) the narrow tenant is re-planned as written, so the wide
    filter stops and no more tasks run than exact matching runs; outputs as each alone."""
    cfg = configs["SYS"]

    def tenant(dag: str, ranges: dict[str, Any], topic: str) -> Dataflow:
        return parse_dataflow({"id": dag, "tasks": [
            {"id": "src", "type": "SYS", "config": "source"},
            {"id": "parse", "type": "SenMLParse", "config": cfg["SenMLParse"]},
            {"id": "range", "type": "RangeFilter", "config": {"valid_range": ranges}},
            {"id": "kalman", "type": "KalmanFilter", "config": cfg["KalmanFilter"]},
            {"id": "publish", "type": "MQTTPublish", "config": {"topic": topic}}],
            "streams": [["src", "parse"], ["parse", "range"], ["range", "kalman"],
                        ["kalman", "publish"]]})

    wide = tenant("wide", {"temperature": [-12.5, 43.1], "humidity": [10.7, 95.2]}, "w")
    narrow = tenant("narrow", {"temperature": ["0", 30], "humidity": [20, 80],
                               "dust": [186.61, 5188.21]}, "n")
    built: dict[str, Any] = {}
    m = Manager(match=SEMANTIC)
    m.submit(wide)
    delta = m.submit(narrow)
    assert [t.id for t in delta.start] == ["narrow.range", "narrow.kalman", "narrow.publish"]
    assert m.running_task("narrow.range").parents == ("wide.range",)
    assert m.task_count == 8 and m.default_task_count == 10
    m.remove("wide")
    assert_invariants(m)
    assert m.task_count == len(narrow.tasks)  # the narrow tenant alone: the wide filter left
    assert all(t.id != "wide.range" for t in m.running_tasks())
    sink = m.sink_map("narrow")["publish"]
    running = execute_tasks({t.id: (t.type, t.config, t.parents) for t in m.running_tasks()},
                            data_dir, built)
    assert running[sink] == run_flow(narrow, data_dir, built)["publish"]
    assert sum(running[sink].values()) > 0

"""The ``panes`` containment rule against BlockWindowAverage's code (issue 25, item 3).

A window of ``k * w`` reading a running window ``w``'s blocks (its panes) must emit exactly what
it emits from the values. Hypothesis draws window pairs (mostly multiples, so the claim is
made) and checks the claim by running the tasks: on synthetic series built to defeat a float
sum (huge and tiny magnitudes that cancel, ``-0.0``, ints, non-numbers, joined messages) and
on the real RIoTBench streams. Where the rule refuses, a witness shows the rewrite would change
the outputs; one shows why the rule asks for fresh inputs. The warm case: a residual joining a
running wide task later continues as the narrow task warm-started with the wide task's partial
blocks. Then the whole path: random tenants' window dataflows submitted and removed in any
order through the semantic manager, each sink getting what its dataflow alone gives.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reuse.core.dataflow import Dataflow, parse_dataflow
from reuse.core.invariants import assert_invariants
from reuse.core.manager import Manager
from reuse.tasks import make_task
from reuse.tasks.containment import RULES
from reuse.tasks.matching import SEMANTIC
from reuse.tasks.stats import BlockWindowAverage, exact_partials
from reuse.testing import checked_replay, execute_tasks, run_flow

PANES = RULES["panes"].contains
FIELDS = ["t", "h", "d"]
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def run(task: Any, events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for e in events for o in task.process(e)]


def bwa(window: int, fields: Sequence[str] = FIELDS, group_by: Sequence[str] = ("obs",),
        **more: Any) -> dict[str, Any]:
    return {"window": window, "fields": list(fields), "group_by": list(group_by), **more}


def chained(wide: Any, narrow: Any, events: Sequence[dict[str, Any]],
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What the narrow task emits fed the events, and fed the wide task's output."""
    alone = run(make_task("BlockWindowAverage", narrow), events)
    behind = run(make_task("BlockWindowAverage", narrow),
                 run(make_task("BlockWindowAverage", wide), events))
    return alone, behind


# --- exactness of the task itself ------------------------------------------------------------

# every magnitude a double has, short of sums beyond the float range (a block whose exact sum
# overflows has no pane: the one case the rule does not cover, tested on its own below)
NASTY = st.one_of(st.floats(-1e300, 1e300, width=64),
                  st.sampled_from([1e16, -1e16, 1.0, 0.1, 0.2, 0.3, -0.0, 0.0, 5e-324, 1e300,
                                   -1e300, 2.0 ** 52, 3]),
                  st.integers(-10, 10))


@given(st.lists(st.lists(NASTY, max_size=40), min_size=1, max_size=3))
@settings(max_examples=300)
def test_partials_are_exact_and_one_spelling_per_sum(groups):
    """However the values are grouped, their partials are the same floats, summing exactly."""
    values = [float(v) for g in groups for v in g]
    try:
        whole = exact_partials(values)
    except OverflowError:
        return
    regrouped = [p for g in groups for p in exact_partials([float(v) for v in g])]
    assert exact_partials(regrouped) == whole
    assert sum(map(Fraction, whole)) == sum(map(Fraction, values))
    assert all(abs(a) > abs(b) for a, b in zip(whole, whole[1:], strict=False))


def test_the_mean_comes_from_the_exact_sum(real_events):
    """On SYS, per field: each block's value is ``fsum / count`` over the very values of the
    block, and its pane's partials sum to them exactly."""
    fields = sorted({e["obs"] for e in real_events["SYS"] if "obs" in e})[:2]
    task = make_task("BlockWindowAverage", bwa(3, fields))
    pending: dict[str, list[float]] = {}
    checked = 0
    for ev in (e for e in real_events["SYS"] if "obs" in e):
        out = task.process(ev)
        if ev["obs"] in fields and isinstance(ev["value"], float):
            pending.setdefault(ev["obs"], []).append(ev["value"])
        for o in out:
            vals = pending.pop(o["obs"])
            assert len(vals) == 3 and o["value"] == math.fsum(vals) / 3
            assert o["pane"]["n"] == 3
            assert sum(map(Fraction, o["pane"]["sum"])) == sum(map(Fraction, vals))
            checked += 1
    assert checked > 20


# --- the rule on synthetic series ------------------------------------------------------------

@st.composite
def synthetic_events(draw) -> list[dict[str, Any]]:
    """Single observations of three fields over two sensors, and joined messages, with values
    that make a float sum depend on its grouping."""
    value = st.one_of(NASTY, st.sampled_from([None, math.nan, math.inf, "abc", "12.5", True]))
    out = []
    for seq in range(draw(st.integers(1, 40))):
        base = {"src": "X", "seq": seq, "ts": seq, "sensor": draw(st.sampled_from(["s1", "s2"])),
                "meta": {"m": 1}}
        if draw(st.integers(0, 4)) == 0:
            out.append({**base, "fields": draw(st.dictionaries(
                st.sampled_from(FIELDS + ["other"]), value, max_size=4))})
        else:
            out.append({**base, "obs": draw(st.sampled_from(FIELDS + ["other"])),
                        "value": draw(value)})
    return out


@st.composite
def window_pairs(draw) -> tuple[dict[str, Any], dict[str, Any]]:
    """A wide config and a narrow one: mostly a multiple of the window over a subset of the
    fields and the same series; sometimes another window, field or keying."""
    w = draw(st.integers(1, 4))
    group = draw(st.sampled_from([["obs"], ["sensor", "obs"], ["src"], ["obs", "sensor"]]))
    wide_fields = draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3, unique=True))
    narrow_fields = draw(st.lists(st.sampled_from(wide_fields if draw(st.integers(0, 5))
                                                  else FIELDS), min_size=1, unique=True))
    window = w * draw(st.integers(1, 4)) if draw(st.integers(0, 5)) else draw(st.integers(1, 12))
    narrow_group = group if draw(st.integers(0, 5)) else draw(st.sampled_from(
        [["obs"], ["sensor", "obs"], ["obs", "sensor"]]))
    return bwa(w, wide_fields, group), bwa(window, narrow_fields, narrow_group)


@given(window_pairs(), synthetic_events())
@settings(max_examples=150, deadline=None)
def test_panes_rule_is_exact_on_series_a_float_sum_gets_wrong(pair, events):
    wide, narrow = pair
    if PANES(wide, narrow):
        alone, behind = chained(wide, narrow, events)
        assert behind == alone


def test_panes_rule_says_yes_where_it_should():
    assert PANES(bwa(5), bwa(20, ["t"]))
    assert PANES(bwa(5), bwa(5))
    assert PANES({"window": "2", "fields": ["t", "h"]}, {"window": 6.0, "fields": ["h"],
                                                          "group_by": ["sensor", "obs"]})
    assert PANES(bwa(1, group_by=("meta", "src")), bwa(7, group_by=("meta", "src")))
    assert not PANES(bwa(1, group_by=("src",)), bwa(7, ["t"], group_by=("src",)))


# a burst of joined and single observations: enough for a block of every window below
BURST = [{"src": "X", "seq": i, "ts": i, "sensor": "s1", "meta": {}, "line": i % 2,
          "obs": "th"[i % 5 == 4], "value": v}
         for i, v in enumerate([1e16, 1.0, -1e16, 0.1, 0.2, 0.3, 7.0, 2.5, 3.0, -4.0, 1e-300,
                                9.0])]
ONE_SERIES = [{**e, "obs": "t"} for e in BURST]


@pytest.mark.parametrize("wide, narrow", [
    (bwa(2), bwa(3)),                                  # 2 does not divide 3
    (bwa(2, ["h"]), bwa(4, ["t"])),                    # a field the wide task drops
    (bwa(2, group_by=("src",)), bwa(4, ["t"], group_by=("src",))),   # a series over fields
    (bwa(2, group_by=("obs",)), bwa(4, group_by=("sensor", "obs"))),   # other series
    (bwa(2, group_by=("line",)), bwa(4, group_by=("line",))),          # a key panes lose
    (bwa(4), bwa(2)),                                  # the wide one is the narrower
])
def test_panes_rule_refuses_where_the_rewrite_would_change_outputs(wide, narrow):
    events = [{**e, "sensor": "s2", "seq": e["seq"] + 12, "line": 0} for e in BURST]
    events = events[-1:] + BURST + events
    assert not PANES(wide, narrow)
    alone, behind = chained(wide, narrow, events)
    assert alone != behind


def test_a_mean_of_means_would_not_do(configs, real_events):
    """The witness for the exact sums, on SYS: the mean of two pane means (what a residual
    without them could do) misses the window's mean in a last bit on many blocks."""
    wide = {**configs["SYS"]["BlockWindowAverage"], "window": 3, "group_by": ["obs"]}
    narrow = {**wide, "window": 6}
    alone, behind = chained(wide, narrow, real_events["SYS"])
    assert alone == behind
    panes: dict[str, list[float]] = {}
    for o in run(make_task("BlockWindowAverage", wide), real_events["SYS"]):
        panes.setdefault(o["obs"], []).append(o["value"])
    seen: dict[str, int] = {}
    missed = 0
    for o in alone:
        i = seen[o["obs"]] = seen.get(o["obs"], -1) + 1
        a, b = panes[o["obs"]][2 * i: 2 * i + 2]
        missed += (a + b) / 2 != o["value"]
    assert missed > len(alone) / 10


def test_panes_of_another_window_are_why_the_rule_asks_for_fresh_inputs():
    """Fed blocks of 3 values, a window of 4 takes two (6 values) and one of 8 takes three (9):
    8 behind 4 takes two of 4's, 12 values. The configs alone cannot see it."""
    assert RULES["panes"].fresh_inputs
    threes = run(make_task("BlockWindowAverage", bwa(3)), ONE_SERIES * 3)
    assert PANES(bwa(4), bwa(8))
    alone, behind = chained(bwa(4), bwa(8), threes)
    assert alone != behind
    assert {o["pane"]["n"] for o in alone} == {9} and {o["pane"]["n"] for o in behind} == {12}


def test_a_block_beyond_the_float_range_has_no_pane():
    task = make_task("BlockWindowAverage", bwa(2))
    (out,) = run(task, [{"obs": "t", "value": 1e308}, {"obs": "t", "value": 1e308}])
    assert out["value"] == math.inf and "pane" not in out


@pytest.mark.parametrize("config", [{"window": "x", "fields": ["t"]}, {"fields": ["t"]},
                                    {"window": 2}, "window", {"window": 2, "fields": 5}])
def test_panes_rule_refuses_a_config_it_does_not_read(config):
    assert not PANES(config, bwa(4)) and not PANES(bwa(1), config)


def test_state_holds_a_few_floats_whatever_the_window():
    task = make_task("BlockWindowAverage", bwa(10_000, ["t"]))
    run(task, [{**ONE_SERIES[i % 12], "seq": i} for i in range(5000)])
    (block,) = task.get_state()["blocks"].values()
    assert block[0] == 5000 and len(block) <= BlockWindowAverage.FOLD + 1


# --- the rule on the real streams, fresh and warm --------------------------------------------

@pytest.fixture(scope="module")
def real_events(real_events_of) -> dict[str, list[dict[str, Any]]]:
    """300 messages of each source, parsed (one observation each) and joined (one message)."""
    return real_events_of(300)


@st.composite
def real_pairs(draw, cfg: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The workload's config with a drawn window ``w`` and keying, and ``k * w`` over a
    subset of its fields."""
    fields = sorted(cfg["fields"])
    group = draw(st.sampled_from([["obs"], ["sensor", "obs"]]))
    w = draw(st.integers(1, 6))
    narrow_fields = draw(st.lists(st.sampled_from(fields), min_size=1, unique=True))
    return ({**cfg, "window": w, "group_by": group},
            {**cfg, "window": w * draw(st.integers(1, 5)), "fields": narrow_fields,
             "group_by": group})


@pytest.mark.parametrize("src", ["SYS", "TAXI", "FIT"])
@SETTINGS
@given(data=st.data())
def test_panes_rule_is_exact_on_the_real_streams(src, configs, real_events, data):
    wide, narrow = data.draw(real_pairs(configs[src]["BlockWindowAverage"]))
    assert PANES(wide, narrow)
    alone, behind = chained(wide, narrow, real_events[src])
    assert behind == alone and (alone or narrow["group_by"] != ["obs"])


@pytest.mark.parametrize("src", ["SYS", "TAXI"])
@SETTINGS
@given(data=st.data())
def test_a_residual_joining_later_continues_warm_from_the_wide_blocks(src, configs, real_events,
                                                                      data):
    """The promise for a residual that joins a running wide task at ``J``: it emits what the
    narrow task emits from ``J`` on when started with the wide task's partial blocks as its
    own (the alignment of the wide task, as an exact reuse has it), not what it emits alone."""
    wide, narrow = data.draw(real_pairs(configs[src]["BlockWindowAverage"]))
    events = real_events[src]
    j = data.draw(st.integers(0, len(events)))
    w = make_task("BlockWindowAverage", wide)
    run(w, events[:j])
    warm = make_task("BlockWindowAverage", narrow)
    warm.set_state(w.get_state())
    residual = run(make_task("BlockWindowAverage", narrow), run(w, events[j:]))
    assert residual == run(warm, events[j:])


def test_a_late_residual_is_aligned_to_the_wide_task_not_to_its_own_start(configs, real_events):
    wide = {**configs["SYS"]["BlockWindowAverage"], "window": 3, "group_by": ["obs"]}
    narrow = {**wide, "window": 6}
    events = real_events["SYS"][:600]
    w = make_task("BlockWindowAverage", wide)
    run(w, events[:7])  # mid-block for every series
    residual = run(make_task("BlockWindowAverage", narrow), run(w, events[7:]))
    assert residual and residual != run(make_task("BlockWindowAverage", narrow), events[7:])


# --- the manager on the real streams --------------------------------------------------------

@st.composite
def window_flows(draw, dag: str, configs: Mapping[str, Any], src: str) -> Dataflow:
    """``src -> parse [-> range] [-> bwa] -> bwa -> publish``: each tenant's window is drawn
    from a divisor lattice (2, 4, 8, 3, 6, 12) over a subset of fields, so tenants nest; a few
    put a window above it (which the rule must leave alone)."""
    cfg = configs[src]
    base = cfg["BlockWindowAverage"]
    fields = sorted(base["fields"])
    steps: list[tuple[str, str, Any]] = [("parse", "SenMLParse", cfg["SenMLParse"])]
    if draw(st.integers(0, 3)) == 0:
        steps.append(("range", "RangeFilter", cfg["RangeFilter.drop"]))
    if draw(st.integers(0, 5)) == 0:
        steps.append(("pre", "BlockWindowAverage", {**base, "window": draw(st.sampled_from(
            [2, 3])), "group_by": ["obs"]}))
    picked = fields if draw(st.booleans()) else draw(st.lists(st.sampled_from(fields),
                                                             min_size=1, unique=True))
    steps.append(("bwa", "BlockWindowAverage", {
        **base, "window": draw(st.sampled_from([2, 4, 8, 3, 6, 12])), "fields": picked,
        "group_by": ["obs"]}))
    steps.append(("publish", "MQTTPublish", {"topic": draw(st.sampled_from(["a", "b"]))}))
    tasks = [{"id": "src", "type": src, "config": "source"}]
    tasks += [{"id": i, "type": t, "config": c} for i, t, c in steps]
    ids = [t["id"] for t in tasks]
    return parse_dataflow({"id": dag, "tasks": tasks,
                           "streams": [[a, b] for a, b in zip(ids, ids[1:], strict=False)]})


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_the_semantic_manager_keeps_every_window_dataflows_outputs(configs, data_dir, data):
    """Random tenants' window dataflows on the real streams, submitted and removed in any
    order: after each step every dataflow's plan, and the running tasks run once, give each
    sink what the dataflow alone gives, and every residual's wide task still runs."""
    src = data.draw(st.sampled_from(["SYS", "TAXI"]))
    flows = [data.draw(window_flows(f"T{i}", configs, src))
             for i in range(data.draw(st.integers(3, 6)))]
    ops, present = [], set()
    for _ in range(data.draw(st.integers(len(flows), 2 * len(flows) + 2))):
        dag = data.draw(st.sampled_from([f.id for f in flows]))
        ops.append(("remove" if dag in present else "submit", dag))
        present ^= {dag}
    by_id = {f.id: f for f in flows}
    for m in checked_replay(flows, ops, data_dir, {}, limit=80):
        for d in m.submitted:
            for r in m.rewrites(d):
                if r.rule == "panes":
                    assert "pre" not in by_id[d].parents[r.task]


def window_tenant(dag: str, configs: Mapping[str, Any], window: int, topic: str) -> Dataflow:
    base = configs["SYS"]["BlockWindowAverage"]
    return parse_dataflow({"id": dag, "tasks": [
        {"id": "src", "type": "SYS", "config": "source"},
        {"id": "parse", "type": "SenMLParse", "config": configs["SYS"]["SenMLParse"]},
        {"id": "bwa", "type": "BlockWindowAverage",
         "config": {**base, "window": window, "group_by": ["obs"]}},
        {"id": "publish", "type": "MQTTPublish", "config": {"topic": topic}}],
        "streams": [["src", "parse"], ["parse", "bwa"], ["bwa", "publish"]]})


def test_nested_windows_read_each_other_until_their_owners_leave(configs, data_dir):
    """Windows 2, 4 and 8: 4 reads 2's panes, 8 reads 4's; the owners of 2 and 4 leave and
    (issue 36) the remaining windows are re-planned to read the parsed stream themselves, so
    no more tasks run than exact matching runs; outputs as each alone."""
    built: dict[str, Any] = {}
    m = Manager(match=SEMANTIC)
    m.submit(window_tenant("w2", configs, 2, "a"))
    m.submit(window_tenant("w4", configs, 4, "b"))
    m.submit(window_tenant("w8", configs, 8, "c"))
    assert m.running_task("w4.bwa").parents == ("w2.bwa",)
    assert m.running_task("w8.bwa").parents == ("w4.bwa",)
    assert [r.rule for r in m.rewrites("w8")] == ["panes", "panes"]
    exact = Manager()
    for name, window, topic in (("w2", 2, "a"), ("w4", 4, "b"), ("w8", 8, "c")):
        exact.submit(window_tenant(name, configs, window, topic))
    for gone in ("w2", "w4"):
        m.remove(gone)
        exact.remove(gone)
        assert_invariants(m)
        assert m.task_count <= exact.task_count
    assert {t.id for t in m.running_tasks()}.isdisjoint({"w2.bwa", "w4.bwa"})
    sink = m.sink_map("w8")["publish"]
    running = execute_tasks({t.id: (t.type, t.config, t.parents) for t in m.running_tasks()},
                            data_dir, built, limit=80)
    expected = run_flow(window_tenant("w8", configs, 8, "c"), data_dir, built, limit=80)
    assert running[sink] == expected["publish"] and sum(expected["publish"].values())
    m.remove("w8")
    assert m.task_count == 0

"""Key parallelism's decisions, without Spark: split plans executed in Python equal the unsplit
shard worker and the reference execution.

:func:`run_split` runs a plan by the staged executor (:mod:`reuse.runtime.engines.shared.stages`,
what the engine will run on Spark): each partition makes the source events it owns, runs each
task on what reaches it (forwarded, shuffled by key or gathered, as bytes between stages), in
order-key order, and keeps its own part of every keyed state. The tests drive it over real RIoTBench streams,
through random traces of submits and removes, random re-splits and rebalances mid-stream and
random or skewed key-range tables, and compare, batch by batch, every sink's records with
:func:`run_shard` on one shard (the unsplit engine) and, at the end, with
:func:`reference_records`; the merged states equal the unsplit ones after every batch.
"""

from __future__ import annotations

import functools
import json
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reuse.core.paths import riotbench_dir
from reuse.runtime import SparkRuntimeError
from reuse.runtime.accounting import reference_records
from reuse.runtime.common.execution import build_task, digest
from reuse.runtime.common.planners import ReusePlanner
from reuse.runtime.common.sink_history import ledger_task
from reuse.runtime.engines.shared.deploy import Deployment
from reuse.runtime.engines.shared.shard import run_shard
from reuse.runtime.engines.shared.split import (
    MESSAGE,
    GroupMove,
    KeyRanges,
    KeySpec,
    RangeMove,
    SplitPlan,
    plan_split,
    type_split,
)
from reuse.runtime.engines.shared.split_moves import (
    merge_states,
    move_states,
    rebalance,
    resplit,
    split_states,
)
from reuse.runtime.engines.shared.stages import run_split as staged_split
from reuse.tasks import TASK_TYPES
from reuse.tasks.base import group_key
from reuse.testing import ROOT, missing, riot_flows

DATA = riotbench_dir(None)
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=missing("data", "no data/riotbench"))
Key = tuple[int, str]


# --- the model executor -------------------------------------------------------------------------

def run_split(plan: SplitPlan, tasks: Sequence[Mapping[str, Any]], lo: int, hi: int,
              states: Sequence[Mapping[str, Any]], opts: Mapping[str, Any],
              ) -> tuple[dict[str, Counter[Key]], list[dict[str, Any]], Counter[int]]:
    """One batch ``[lo, hi)`` of ``tasks`` run as ``plan`` says, by the staged executor
    (:func:`reuse.runtime.engines.shared.stages.run_split`, every stage of every partition,
    parcels through their bytes), its checks on.

    Returns every recorded task's ``(seq, digest)`` multiset over all partitions, the new
    per-partition states and the events keyed tasks took per key range (the CPU proxy).
    """
    res = staged_split(plan, tasks, lo, hi, states, opts, now_ms=lambda: 0.0, check=True)
    recs = {t: Counter((r["q"], r["d"]) for r in map(json.loads, lines))
            for t, lines in res.sinks.items()}
    return recs, res.states, res.ranges


def run_whole(tasks: Sequence[Mapping[str, Any]], lo: int, hi: int, states: Mapping[str, Any],
              opts: Mapping[str, Any]) -> tuple[dict[str, Counter[Key]], dict[str, Any]]:
    """The unsplit engine: :func:`run_shard` on one shard."""
    res = run_shard(tasks, lo, hi, states, opts, t0=0, rate=10.0, now_ms=lambda: 0.0)
    recs = {t: Counter((r["q"], r["d"]) for r in map(json.loads, lines))
            for t, lines in res["sinks"].items()}
    return recs, res["states"]


def _opts() -> dict[str, Any]:
    return {"data_dir": str(DATA), "pi_iterations": 5, "record": "digest", "limit": None}


@functools.cache
def flows(keying: str) -> dict[str, Any]:
    """The 21 RIoTBench dataflows with a keying, parsed (once per keying)."""
    return riot_flows(keying=keying)


# every RIoTBench task type is in one of these
MIX = ("stats-sys", "etl-taxi", "pred-sys", "clean-kalman-taxi", "stats-moment-taxi",
       "pred-error-taxi", "stats-fit", "etl-fit", "clean-fit")


# --- per type: what the task code says ----------------------------------------------------------

def test_every_type_declares_how_it_splits() -> None:
    roles = {n: type_split(n, None).role for n in TASK_TYPES}
    keyed = {n for n, c in TASK_TYPES.items() if c.partitioning == "keyed"}
    assert keyed == {"Interpolation", "KalmanFilter", "SlidingLinearRegression",
                     "BlockWindowAverage", "SecondOrderMoment"}
    assert {n for n, r in roles.items() if r == "gathered"} == {
        "Join", "DistinctApproxCount", "ErrorEstimation"} | keyed  # keyed: unreadable config
    for name, cls in TASK_TYPES.items():
        assert cls.stateful == (cls.partitioning != "stateless"), name
        if cls.partitioning == "keyed":
            assert cls.state_map, name
    assert TASK_TYPES["ErrorEstimation"].partitioning == "join"
    # OPMW types run as PiTask, OPMW sinks as Sink: stateless; sources are generated
    assert type_split("TextAnalytics:Classifier", "default").role == "stateless"
    assert type_split("Output:T/x", "sink").role == "stateless"
    assert type_split("PatternFile", "source").role == "source"


KEYED_CONFIGS = {
    "KalmanFilter": {"process_noise": 0.1, "sensor_noise": 0.5, "estimated_error": 1.0,
                     "fields": ["a", "b", "c"]},
    "BlockWindowAverage": {"window": 3, "fields": ["a", "b", "c"]},
    "SlidingLinearRegression": {"train_window": 3, "predict_window": 2},
    "SecondOrderMoment": {"max_map_size": 2},
    "SecondOrderMoment.ams": {"max_map_size": 2, "estimator": "ams"},
    "Interpolation": {"fields": ["a", "b"], "window": 2},
}

# skewed on purpose: one hot sensor, a few warm ones, a long tail; few fields
sensors = st.one_of(st.just("hot"), st.sampled_from(["w1", "w2", "w3"]),
                    st.integers(0, 300).map(lambda i: f"s{i}"))
values = st.one_of(st.none(), st.integers(-3, 3).map(float), st.floats(-50, 50))
observation = st.fixed_dictionaries({"sensor": sensors, "obs": st.sampled_from("abcd"),
                                     "value": values})


@pytest.mark.parametrize("name", sorted(KEYED_CONFIGS))
@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(observation, max_size=60), keying=st.sampled_from(["field", "sensor"]),
       owners=st.lists(st.integers(0, 3), min_size=8, max_size=8),
       cut=st.integers(0, 60), parts=st.integers(1, 4))
def test_a_keyed_task_split_by_its_key_is_exact(name: str, events: list[dict[str, Any]],
                                                keying: str, owners: list[int], cut: int,
                                                parts: int) -> None:
    """Skewed random observations through each keyed type: split over a random range table,
    re-split to another number of partitions mid-stream, the outputs and the merged state
    equal one unsplit task's."""
    typ = name.split(".")[0]
    group = ["obs"] if keying == "field" else ["sensor", "obs"]
    cfg = {**KEYED_CONFIGS[name], "group_by": group}
    evs = [{"src": "S", "seq": i, "ts": i, **e} for i, e in enumerate(events)]
    whole = build_task(typ, cfg, {})
    expect = Counter(digest(o) for e in evs for o in whole.process(e))
    dag = [{"id": "s", "type": "S", "config": "source", "parents": [], "kind": "source"},
           {"id": "k", "type": typ, "config": cfg, "parents": ["s"], "kind": "task"}]
    plan = plan_split(dag, KeyRanges(tuple(owners), 4))
    key = plan.step("k").key
    assert key == KeySpec(tuple(group))
    got: Counter[str] = Counter()
    states: list[dict[str, Any]] = [{} for _ in range(plan.partitions)]

    def run(plan: SplitPlan, chunk: list[dict[str, Any]]) -> None:
        for p in range(plan.partitions):
            task = build_task(typ, cfg, {})
            if "k" in states[p]:
                task.set_state(states[p]["k"])
            for e in chunk:
                if plan.ranges.partition_of(key.key(e)) == p:
                    got.update(digest(o) for o in task.process(e))
            states[p]["k"] = task.get_state()

    run(plan, evs[:cut])
    new, _ = resplit(plan, parts)  # mid-stream: state moves with its key ranges
    states = move_states(plan, new, states)
    plan = new
    run(plan, evs[cut:])
    assert got == expect
    assert merge_states(plan, states)["k"] == whole.get_state()
    # every state key lives in the partition that owns it
    for p, part in enumerate(states):
        assert all(plan.ranges.partition_of(k) == p
                   for k in part["k"][plan.step("k").state_map])


def test_the_gathered_types_do_not_split_by_key() -> None:
    """Why DistinctApproxCount and ErrorEstimation are gathered: split by sensor, their outputs
    change (the sketch misses the other part's sensors, the average comes from elsewhere)."""
    evs = [{"src": "S", "seq": i, "sensor": f"s{i}", "obs": "a", "value": 1.0}
           for i in range(40)]
    whole = build_task("DistinctApproxCount", {"buckets": 4, "field": "id"}, {})
    halves = [build_task("DistinctApproxCount", {"buckets": 4, "field": "id"}, {})
              for _ in range(2)]
    assert ([o["value"] for e in evs for o in whole.process(e)]
            != [o["value"] for e in evs for o in halves[int(e["seq"]) % 2].process(e)])
    err = build_task("ErrorEstimation", {"target": "a"}, {})
    err.process({"seq": 0, "sensor": "x", "obs": "a", "value": 4.0, "analytic": "BWA"})
    out = err.process({"seq": 1, "sensor": "y", "obs": "MLR", "value": 1.0, "actual": 3.0})
    assert out[0]["average"] == 4.0  # another sensor's (key's) average: not per key


# --- plans --------------------------------------------------------------------------------------

@needs_data
@pytest.mark.parametrize("keying", ["field", "sensor"])
def test_plans_of_the_riot_workload(keying: str) -> None:
    """The 21 RIoT dataflows merged: the roles the module's table gives, one shuffle into each
    keyed chain, gathered tasks sharing their parents' partition, stages counting exchanges."""
    pl, dep = ReusePlanner(), Deployment(1)
    for f in flows(keying).values():
        dep.deploy(pl.submit(f), 0)
    tasks = dep.claim(0, 1).shards[0]
    plan = plan_split(tasks, 3)
    types = {t["id"]: t["type"] for t in tasks}
    mixed = {t.type for name in MIX for t in flows(keying)[name].tasks}
    assert mixed >= set(TASK_TYPES) - {"PiTask", "Sink"}  # the random traces meet every type
    for s in plan.steps:
        typ = types[s.task]
        if typ in ("DistinctApproxCount", "Join", "ErrorEstimation"):
            assert s.role == "gathered", s
        elif typ in ("KalmanFilter", "SlidingLinearRegression", "SecondOrderMoment",
                     "Interpolation"):
            assert s.role == "keyed" and s.key == KeySpec(
                ("obs",) if keying == "field" else ("sensor", "obs")), s
        elif typ == "BlockWindowAverage":  # PRED's, on joined messages: one series by field
            assert s.role == ("gathered" if keying == "field" and s.key is None else "keyed")
        elif typ in ("SYS", "TAXI", "FIT"):
            assert s.role == "source" and s.layout.key == MESSAGE
        else:
            assert s.role == "stateless", s
            assert all(e.kind == "forward" for e in s.inputs), s
        assert s.stage == max((plan.step(e.parent).stage + (e.kind != "forward")
                               for e in s.inputs), default=0)
    # Kalman -> SLR: SLR reads Kalman's outputs where they are
    slr = [s for s in plan.steps if types[s.task] == "SlidingLinearRegression"]
    assert slr and all(e.kind == "forward" for s in slr for e in s.inputs
                       if types[e.parent] == "KalmanFilter")
    # gathered groups are spread over the partitions and kept across a re-plan
    assert {p for _, p in plan.groups} == {0, 1, 2}
    assert plan_split(tasks, plan.ranges, groups=dict(plan.groups)) == plan
    again = plan_split(tasks, plan.ranges, groups={g: (p + 1) % 3 for g, p in plan.groups})
    assert dict(again.groups) == {g: (p + 1) % 3 for g, p in plan.groups}


def test_an_opmw_dag_splits_with_no_exchange() -> None:
    """OPMW: every process is stateless (Viete's pi), so the whole DAG runs where its source
    events are made, and the split's outputs are the unsplit ones."""
    dag = [{"id": "i1", "type": "PatternFile", "config": "source", "parents": [],
            "kind": "source", "stream": "i1", "start": 0, "end": None, "record": False},
           {"id": "i2", "type": "GenesFile", "config": "source", "parents": [],
            "kind": "source", "stream": "i2", "start": 0, "end": None, "record": False},
           {"id": "a", "type": "Tokenizer", "config": "default", "parents": ["i1"],
            "kind": "task", "start": 2, "end": None, "record": False},
           {"id": "b", "type": "Merge", "config": "default", "parents": ["a", "i2"],
            "kind": "task", "start": 0, "end": 17, "record": True},
           {"id": "o", "type": "Output:T/x", "config": "sink", "parents": ["b"],
            "kind": "sink", "start": 0, "end": None, "record": False}]
    opts = {**_opts(), "data_dir": ""}
    for n in (1, 2, 3):
        plan = plan_split(dag, n)
        assert plan.exchanges() == [] and {s.stage for s in plan.steps} == {0}
        got, _, _ = run_split(plan, dag, 0, 25, [{}] * n, opts)
        assert got == run_whole(dag, 0, 25, {}, opts)[0] and got["o"] and got["b"]


def test_plan_errors() -> None:
    with pytest.raises(SparkRuntimeError, match="task 'k'.*reads p, which is not listed"):
        plan_split([{"id": "k", "type": "X", "config": {}, "parents": ["p"], "kind": "task"}], 2)
    with pytest.raises(SparkRuntimeError, match="power of two"):
        KeyRanges((0, 1, 0), 2)
    with pytest.raises(SparkRuntimeError, match="outside 0..1"):
        KeyRanges((0, 2), 2)
    with pytest.raises(SparkRuntimeError, match="positive integer"):
        KeyRanges.even(0)
    with pytest.raises(SparkRuntimeError, match="task 'x'.*not in the split plan"):
        plan_split([], 2).step("x")


# --- key ranges, rebalancing, state -------------------------------------------------------------

def test_the_key_hash_is_stable() -> None:
    """The same range in every process, whatever its ``PYTHONHASHSEED`` (``hash()`` is salted)."""
    keys = ["temperature", "s1|humidity", "S|7"]
    code = ("from reuse.runtime.engines.shared.split import KeyRanges; "
            f"print([KeyRanges.even(4).range_of(k) for k in {keys!r}])")
    here = [KeyRanges.even(4).range_of(k) for k in keys]
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout
        assert json.loads(out) == here
    assert KeyRanges.even(1, 1).range_of("anything") == 0


@given(owners=st.lists(st.integers(0, 4), min_size=16, max_size=16), m=st.integers(1, 6))
def test_a_resplit_moves_the_fewest_whole_ranges(owners: list[int], m: int) -> None:
    kr = KeyRanges(tuple(owners), 5)
    new, moves = kr.resplit(m)
    counts = [new.owner.count(p) for p in range(m)]
    assert max(counts) - min(counts) <= 1 and new.partitions == m
    assert {mv.range for mv in moves} == {r for r in range(16) if new.owner[r] != kr.owner[r]}
    if m <= 5:  # the moves replay on the old table
        assert kr.moved(moves).owner == new.owner
    # the fewest: whatever does not fit its partition's quota (or lost its partition) moves
    quota = sorted(counts, reverse=True)
    have = sorted((owners.count(p) for p in range(min(m, 5))), reverse=True) + [0] * max(0, m - 5)
    least = len(owners) - sum(min(h, q) for h, q in zip(have, quota, strict=True))
    assert len(moves) == least


@given(cpu=st.lists(st.one_of(st.just(0.0), st.floats(0.01, 1.0), st.floats(5, 50)),
                    min_size=16, max_size=16),
       owners=st.lists(st.integers(0, 2), min_size=16, max_size=16),
       group=st.floats(0, 30), fixed=st.lists(st.floats(0, 10), min_size=3, max_size=3))
def test_rebalance_moves_whole_ranges_until_no_move_helps(
        cpu: list[float], owners: list[int], group: float, fixed: list[float]) -> None:
    dag = [{"id": "s", "type": "S", "config": "source", "parents": [], "kind": "source"},
           {"id": "d", "type": "DistinctApproxCount", "config": {"buckets": 4, "field": "x"},
            "parents": ["s"], "kind": "task"}]
    plan = plan_split(dag, KeyRanges(tuple(owners), 3))
    per = dict(enumerate(cpu))

    def loads(p: SplitPlan) -> list[float]:
        out = list(fixed)
        for r, q in enumerate(p.ranges.owner):
            out[q] += per[r]
        out[p.group_at("d")] += group
        return out

    new, moves = rebalance(plan, per, group_cpu={"d": group}, fixed=fixed)
    before, after = loads(plan), loads(new)
    assert max(after) <= max(before)
    assert sum(after) == pytest.approx(sum(before))
    # the moves are whole ranges or the group, and replay to the new plan
    assert new.ranges == plan.ranges.moved(m for m in moves if isinstance(m, RangeMove))
    assert all(m.group == "d" for m in moves if isinstance(m, GroupMove))
    if moves:  # worth it, and no range or group left that would bring hi and lo closer
        assert max(after) < 0.95 * max(before)
        hi = max(range(3), key=lambda p: (after[p], -p))
        lo = min(range(3), key=lambda p: (after[p], p))
        items = [per[r] for r in new.ranges.ranges_of(hi)]
        items += [group] if new.group_at("d") == hi else []
        assert not any(w > 0 and after[lo] + w < after[hi] for w in items)
    else:
        assert new == plan
    # the first moves only, on request: a prefix of the same moves
    assert rebalance(plan, per, group_cpu={"d": group}, fixed=fixed, max_moves=1)[1] == moves[:1]
    # deterministic, and a second call finds nothing to do
    assert rebalance(plan, per, group_cpu={"d": group}, fixed=fixed) == (new, moves)
    assert rebalance(new, per, group_cpu={"d": group}, fixed=fixed)[1] == []


def test_rebalance_spreads_many_keys_and_isolates_a_hot_one() -> None:
    rng = random.Random(7)
    dag = [{"id": "s", "type": "S", "config": "source", "parents": [], "kind": "source"}]
    plan = plan_split(dag, KeyRanges(tuple([0] * 64), 4))  # all on one partition
    cpu = {r: rng.uniform(0.5, 1.5) for r in range(64)}
    new, _ = rebalance(plan, cpu)
    loads = [sum(cpu[r] for r in new.ranges.ranges_of(p)) for p in range(4)]
    assert max(loads) / (sum(loads) / 4) < 1.1
    cpu[5] = 100.0  # one hot key range: it ends alone, the rest elsewhere
    new, _ = rebalance(plan, cpu)
    hot = new.ranges.owner[5]
    assert new.ranges.ranges_of(hot) == [5]


@given(entries=st.dictionaries(st.text(max_size=6), st.floats(-1, 1), max_size=30),
       owners=st.lists(st.integers(0, 2), min_size=4, max_size=4))
def test_keyed_state_splits_and_merges_back(entries: dict[str, float], owners: list[int]) -> None:
    cfg = {"process_noise": 1, "sensor_noise": 1, "estimated_error": 1, "fields": ["t"],
           "group_by": ["obs"]}
    dag = [{"id": "s", "type": "S", "config": "source", "parents": [], "kind": "source"},
           {"id": "k", "type": "KalmanFilter", "config": cfg, "parents": ["s"], "kind": "task"},
           {"id": "j", "type": "Join", "config": {"fields": ["t"]}, "parents": ["s"],
            "kind": "task"}]
    plan = plan_split(dag, KeyRanges(tuple(owners), 3))
    whole = {"k": {"series": {k: [v, 1.0] for k, v in entries.items()}},
             "j": {"pending": [["S|1", {"head": {}, "fields": {}, "count": 0}]]}}
    parts = split_states(plan, whole)
    assert merge_states(plan, parts) == whole
    assert [p for p in range(3) if "j" in parts[p]] == [plan.group_at("j")]
    bad = [dict(p) for p in parts]
    bad[0]["k"] = {"series": {**bad[0]["k"]["series"], "x": [0, 0]}}
    bad[1]["k"] = {"series": {**bad[1]["k"]["series"], "x": [0, 0]}}
    with pytest.raises(SparkRuntimeError, match="key 'x' has state in two partitions"):
        merge_states(plan, bad)
    with pytest.raises(SparkRuntimeError, match="task 'j'.*state in 2 partitions"):
        merge_states(plan, [{"j": 1}, {"j": 1}, {}])
    with pytest.raises(SparkRuntimeError, match="task 's'.*has state but is source"):
        split_states(plan, {"s": {}})


# --- whole running DAGs on real streams ----------------------------------------------------------

ops = st.one_of(
    st.tuples(st.just("submit"), st.sampled_from(MIX)),
    st.tuples(st.just("remove"), st.integers(0, 10)),
    st.tuples(st.just("resplit"), st.integers(1, 4)),
    st.tuples(st.just("rebalance"), st.just(0)),
    st.tuples(st.just("skew"), st.integers(0, 2**31)),
    st.tuples(st.just("restart"), st.just(0)),
)


@needs_data
@settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(keying=st.sampled_from(["field", "sensor"]), first=st.sampled_from(MIX),
       steps=st.lists(st.tuples(st.integers(2, 12), ops, st.integers(0, 11)), min_size=3,
                      max_size=6),
       parts=st.integers(2, 4))
def test_split_running_dags_equal_the_unsplit_engine_and_the_reference(
        keying: str, first: str, steps: list[tuple[int, tuple[str, Any], int]], parts: int,
) -> None:
    """A random trace of merges and unmerges over real streams (cut at or past the frontier,
    inside a batch too), with random re-splits, rebalances on measured work, random or skewed
    range tables and restarts from the merged checkpoint between batches: per batch, every
    sink's records and the merged states equal the unsplit shard worker's; at the end, the
    reference execution's."""
    opts = _opts()
    fl = flows(keying)
    pl, dep = ReusePlanner(), Deployment(1)
    ledger: dict[str, dict[str, Any]] = {}
    dags: dict[str, Any] = {}
    live: list[str] = []

    def submit(name: str, at: int) -> None:
        if name in live:
            return
        p = pl.submit(fl[name])
        dep.deploy(p, at)
        for t in p.start:
            ledger[t.id] = ledger_task(t, at)
        dags[p.instance] = {"dag": name, "J": at, "R": None, "sinks": dict(p.sinks)}
        live.append(name)

    def remove(name: str, at: int) -> None:
        r = pl.remove(name)
        dep.end(r, at)
        for t in r.stop:
            ledger[t]["end"] = at
        dags[r.instance]["R"] = at
        live.remove(name)

    submit(first, 0)
    plan: SplitPlan | None = None
    ranges = KeyRanges.even(parts)
    parts_state: list[dict[str, Any]] = [{} for _ in range(parts)]
    whole_state: dict[str, Any] = {}
    measured: Counter[int] = Counter()
    seen_split: dict[str, Counter[Key]] = {}
    lo = 0
    for size, (op, arg), within in steps:
        hi = lo + size
        cut = lo + within % size  # at or past the frontier, maybe inside the batch
        if op == "submit":
            submit(arg, cut)
        elif op == "remove" and len(live) > 1:  # an unmerge; one dataflow stays
            remove(live[arg % len(live)], cut)
        tasks = dep.claim(lo, hi).shards[0]
        new = plan_split(tasks, ranges, groups=dict(plan.groups) if plan else None)
        if plan is not None:
            if op == "resplit":
                new, _ = resplit(new, arg)
            elif op == "rebalance":
                new, _ = rebalance(new, measured)
            elif op == "skew":  # a random table: some partitions get nothing, one maybe all
                rng = random.Random(arg)
                favour = rng.sample(range(new.partitions), rng.randint(1, new.partitions))
                owner = tuple(rng.choice(favour) for _ in range(new.ranges.ranges))
                new = plan_split(tasks, KeyRanges(owner, new.partitions),
                                 groups={g: rng.choice(favour) for g, _ in new.groups})
            parts_state = move_states(plan, new, parts_state)
            if op == "restart":  # from the checkpoint: the merged states, as JSON
                saved = json.loads(json.dumps(merge_states(new, parts_state)))
                parts_state = split_states(new, saved)
        plan, ranges = new, new.ranges
        got, parts_state, per_range = run_split(plan, tasks, lo, hi, parts_state, opts)
        measured += per_range
        want, whole_state = run_whole(tasks, lo, hi, whole_state, opts)
        assert {t: c for t, c in got.items() if c} == {t: c for t, c in want.items() if c}
        merged = merge_states(plan, parts_state)
        assert merged == {t: s for t, s in whole_state.items() if t in plan}
        for t, c in got.items():
            seen_split.setdefault(t, Counter()).update(c)
        lo = hi
    ref = reference_records({"t0": 0, "rate": 10.0, "data_dir": opts["data_dir"], "opts": opts,
                             "tasks": ledger, "dags": dags}, lo)
    for tid, expected in ref.items():
        assert seen_split.get(tid, Counter()) == expected, tid


@needs_data
def test_a_gathered_task_sees_the_unsplit_order() -> None:
    """A Join that emits a message after its first two observations, fed by a Kalman filter
    split by field: which two it keeps depends on the order of one message's observations,
    which come from several partitions; the order keys restore it."""
    from reuse.workloads.riotbench import source_configs

    cfg = source_configs("SYS", DATA)
    spec = {"start": 0, "end": None, "record": False}
    dag = [{"id": "s", "type": "SYS", "config": "source", "parents": [], "kind": "source",
            "stream": "S", **spec},
           {"id": "p", "type": "SenMLParse", "config": cfg["SenMLParse"], "parents": ["s"],
            "kind": "task", **spec},
           {"id": "k", "type": "KalmanFilter", "config": cfg["KalmanFilter"],
            "parents": ["p"], "kind": "task", **spec},
           {"id": "j", "type": "Join", "config": {**cfg["Join"], "max_count": 2},
            "parents": ["k"], "kind": "task", **spec},
           {"id": "o", "type": "MQTTPublish", "config": "sink", "parents": ["j"],
            "kind": "sink", **spec}]
    plan = plan_split(dag, 4)
    assert [plan.step(t).role for t in "kj"] == ["keyed", "gathered"]
    assert len({plan.ranges.partition_of(f) for f in cfg["KalmanFilter"]["fields"]}) > 1
    got, _, _ = run_split(plan, dag, 0, 30, [{}] * 4, _opts())
    want, _ = run_whole(dag, 0, 30, {}, _opts())
    assert got == want and sum(got["o"].values()) == 2 * 30  # two, two, one pending


def test_group_key_is_the_routing_key() -> None:
    """The route of an observation is its state key in every keyed task (what lets a key's
    state live with its range)."""
    ev = {"src": "S", "seq": 3, "sensor": "s9", "obs": "dust", "value": 1.0}
    for group in (["obs"], ["sensor", "obs"], ["src", "sensor"]):
        assert KeySpec(tuple(group)).key(ev) == group_key(ev, "dust", group)


@needs_data
@pytest.mark.parametrize("parts, k", [(2, 1), (3, 2)])
def test_k_safe_replicas_of_a_split_running_dag_run_apart_and_exact(parts: int, k: int) -> None:
    """``--split --k-safe K`` (issue 32): every task of one split running DAG (U = 1: keyed,
    gathered, stateless and sources) runs K more times, and each copy of a key, a group or a
    source message runs ``level`` partitions after its primary's (mod N), so no partition runs
    two copies of one piece of work. Replicas join mid-run seeded with their primary's saved
    state; the batches' records and states equal the unsplit engine's, through a merge, an
    unmerge and a re-split; each replica outputs what the reference says its primary does from
    the replica's start, and the union of a sink's copies is the primary's output."""
    from reuse.analysis.blast import replicated
    from reuse.runtime.accounting import copies
    from reuse.runtime.engines.shared.deploy import replica_level
    from reuse.runtime.engines.shared.shard import seed_replicas

    opts, fl = _opts(), flows("field")
    pl, dep = ReusePlanner(), Deployment(parts)
    ledger: dict[str, dict[str, Any]] = {}
    dags: dict[str, Any] = {}

    def apply(op: str, name: str, at: int) -> None:
        if op == "submit":
            p = pl.submit(fl[name])
            dep.deploy(p, at)
            ledger.update((t.id, ledger_task(t, at)) for t in p.start)
            dags[p.instance] = {"dag": name, "J": at, "R": None, "sinks": dict(p.sinks)}
        else:
            r = pl.remove(name)
            dep.end(r, at)
            for t in r.stop:
                ledger[t]["end"] = at
            dags[r.instance]["R"] = at
        live = {t for t, d in dep.tasks.items() if d.end is None and d.replica_of is None}
        dep.replicate(replicated(pl.users(), 1) & live, k, at)

    ops = {0: ("submit", "stats-sys", 0), 1: ("submit", "clean-kalman-sys", 13),
           3: ("submit", "pred-sys", 37), 4: ("remove", "clean-kalman-sys", 44)}
    bounds = [0, 9, 20, 31, 44, 50, 63, 70]
    plan: SplitPlan | None = None
    parts_state: list[dict[str, Any]] = []
    whole: dict[str, Any] = {}
    seen: dict[str, Counter[Key]] = {}
    for n, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False)):
        if n in ops:
            apply(*ops[n])
        epoch = dep.claim(lo, hi)
        tasks = [t for shard in epoch.shards for t in shard]
        new = plan_split(tasks, plan.ranges if plan else parts,
                         groups=dict(plan.groups) if plan else None)
        if n == 5:  # a re-split keeps the copies apart
            new, _ = resplit(new, parts + 1)
        saved = seed_replicas(epoch, merge_states(plan, parts_state) if plan else {}, lo)
        parts_state = split_states(new, {t: s for t, s in saved.items() if t in new})
        whole = seed_replicas(epoch, whole, lo)
        plan = new
        for s in plan.steps:
            of = dep.tasks[s.task].replica_of if s.task in dep.tasks else None
            if of is None:
                continue
            level, prim = replica_level(s.task), plan.step(of)
            assert 1 <= level <= k and s.role == prim.role, s
            if s.layout.key is not None:  # sources, keyed tasks and what keeps their key
                assert s.layout.key == replace(prim.layout.key, shift=level), s
            if s.group is not None and prim.group is not None:
                assert plan.group_at(s.group) == (plan.group_at(prim.group) + level) % \
                    plan.partitions, s
        # check=True: every keyed task took only keys its partition owns, shifted
        got, parts_state, _ = run_split(plan, tasks, lo, hi, parts_state, opts)
        want, whole = run_whole(tasks, lo, hi, whole, opts)
        assert {t: c for t, c in got.items() if c} == {t: c for t, c in want.items() if c}
        assert merge_states(plan, parts_state) == {t: s for t, s in whole.items() if t in plan}
        for t, c in got.items():
            seen.setdefault(t, Counter()).update(c)
    full = {"t0": 0, "rate": 10.0, "data_dir": opts["data_dir"], "opts": opts,
            "tasks": ledger, "dags": dags, "replicas": dep.replica_log}
    ref = reference_records(full, bounds[-1])
    assert {v["of"] for v in dep.replica_log.values()} >= {
        t for t, d in ledger.items() if d["kind"] == "sink"}, "every sink was replicated"
    for sink in (t for t, d in ledger.items() if d["kind"] == "sink"):
        union: Counter[Key] = Counter()
        for c in copies(full, sink)[1:]:
            start = dep.replica_log[c]["start"]
            assert seen.get(c) and seen[c] == Counter(
                {q: m for q, m in ref[sink].items() if q[0] >= start}), c
        for c in copies(full, sink):
            union |= seen.get(c, Counter())
        assert union == ref[sink], sink

"""The staged executor of a split running DAG, without Spark: exact against the unsplit shard
worker and the reference execution.

Each test drives the stages as the engine will: every stage of every partition in turn (the
partitions of a stage in a random order), each stage's outbox encoded to its ``(dest, bytes)``
rows, the rows shuffled (Spark's exchange keeps no order) and decoded into the next stage's
inboxes, the per-partition states carried between batches through JSON. Checked on the RIoT
SEQ peak (``field`` and ``sensor`` keying), a many-tenant sample with predicate groups, a
small DAG built to need every kind of edge (forward across stages with a shuffle of the same
parent, a carry through a stage, a gather, broker-fed sources), and random traces of merges,
unmerges, re-splits, rebalances, skewed tables and restarts from the merged states: per batch,
the sorted record lines and the merged states equal :func:`run_shard`'s on one shard; at the
end, every sink's records equal the reference execution's.
"""

from __future__ import annotations

import functools
import json
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reuse.core.dataflow import parse_dataflow
from reuse.core.paths import riotbench_dir
from reuse.runtime import SparkRuntimeError
from reuse.runtime.accounting import reference_records
from reuse.runtime.common.execution import source_event
from reuse.runtime.common.planners import ReusePlanner
from reuse.runtime.common.sink_history import ledger_task
from reuse.runtime.engines.shared.deploy import Deployment
from reuse.runtime.engines.shared.shard import run_shard
from reuse.runtime.engines.shared.split import KeyRanges, SplitPlan, plan_split
from reuse.runtime.engines.shared.split_moves import (
    merge_states,
    move_states,
    rebalance,
    resplit,
    split_states,
)
from reuse.runtime.engines.shared.stages import (
    Parcel,
    decode_parcels,
    encode_outbox,
    run_split,
    run_stage,
    same_parcels,
    stage_count,
)
from reuse.testing import deployed_at_zero, missing, riot_flows

DATA = riotbench_dir(None)
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=missing("data", "no data/riotbench"))
OPTS = {"data_dir": str(DATA), "pi_iterations": 10, "record": "digest", "limit": None}
Lines = dict[str, list[str]]
Feed = Callable[[str, int, int], list[dict[str, Any]]]


def _clock() -> float:
    return 0.0


def drive(plan: SplitPlan, tasks: Sequence[Mapping[str, Any]], lo: int, hi: int,
          states: Sequence[Mapping[str, Any]], rng: random.Random, *,
          opts: Mapping[str, Any] = OPTS, feed: Feed | None = None,
          ) -> tuple[Lines, list[dict[str, Any]], Counter[int]]:
    """One batch, stage by stage, as the engine runs it (see the module doc): record lines per
    task, the new per-partition states (through JSON) and the events per key range."""
    n = plan.partitions
    lines: Lines = {}
    new: list[dict[str, Any]] = [{} for _ in range(n)]
    ranges: Counter[int] = Counter()
    inbox: list[list[Parcel]] = [[] for _ in range(n)]
    for stage in range(stage_count(plan)):
        rows: list[tuple[int, bytes]] = []
        for p in rng.sample(range(n), n):
            res = run_stage(tasks, plan, stage, p, states[p], inbox[p], opts, t0=0, rate=10.0,
                            lo=lo, hi=hi, now_ms=_clock, feed=feed, check=True)
            out = encode_outbox(res.outbox)
            assert len({d for d, _ in out}) == len(out)  # one row per destination
            rows += out
            for tid, recs in res.sinks.items():
                lines.setdefault(tid, []).extend(recs)
            assert not set(res.states) & set(new[p])  # a task runs in one stage
            new[p].update(res.states)
            ranges += res.ranges
            assert set(res.cpu) == set(res.counts)
        rng.shuffle(rows)
        inbox = [[] for _ in range(n)]
        for dest, raw in rows:
            inbox[dest] += decode_parcels(raw)
    assert not any(inbox)  # nothing is addressed past the last stage
    return lines, json.loads(json.dumps(new)), ranges


def whole(tasks: Sequence[Mapping[str, Any]], lo: int, hi: int, states: Mapping[str, Any], *,
          opts: Mapping[str, Any] = OPTS, feed: Feed | None = None,
          ) -> tuple[Lines, dict[str, Any]]:
    """The unsplit engine: :func:`run_shard` on one shard."""
    res = run_shard(tasks, lo, hi, states, opts, t0=0, rate=10.0, now_ms=_clock, feed=feed)
    return res["sinks"], json.loads(json.dumps(res["states"]))


def same_lines(got: Lines, want: Lines) -> None:
    assert {t for t, v in got.items() if v} == {t for t, v in want.items() if v}
    for tid, recs in want.items():
        assert sorted(got.get(tid, [])) == sorted(recs), tid


def as_records(lines: Lines) -> dict[str, Counter[tuple[int, str]]]:
    return {t: Counter((r["q"], r["d"]) for r in map(json.loads, v)) for t, v in lines.items()}


def run_batches(tasks: Sequence[Mapping[str, Any]], bounds: Sequence[int],
                plans: Sequence[SplitPlan], seed: int, opts: Mapping[str, Any] = OPTS) -> Lines:
    """Consecutive batches, batch ``i`` split by ``plans[i]`` (states moved between plans);
    each batch checked against the unsplit shard. Returns the split's lines, concatenated."""
    rng = random.Random(seed)
    parts: list[dict[str, Any]] = [{} for _ in range(plans[0].partitions)]
    full: dict[str, Any] = {}
    seen: Lines = {}
    for i, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False)):
        plan = plans[i]
        if i:
            parts = move_states(plans[i - 1], plan, parts)
        got, parts, _ = drive(plan, tasks, lo, hi, parts, rng, opts=opts)
        want, full = whole(tasks, lo, hi, full, opts=opts)
        same_lines(got, want)
        assert merge_states(plan, parts) == full
        for tid, recs in got.items():
            seen.setdefault(tid, []).extend(recs)
    return seen


@functools.cache
def flows(keying: str) -> dict[str, Any]:
    """The 21 RIoTBench dataflows with a keying, parsed (once per keying)."""
    return riot_flows(keying=keying)


# --- the RIoT SEQ peak and a tenants sample -----------------------------------------------------

@needs_data
@pytest.mark.parametrize(("keying", "partitions", "columnar"),
                         [("field", 2, False), ("sensor", 3, False), ("sensor", 1, False),
                          ("field", 2, True)])
def test_the_riot_peak_staged_equals_the_shard_and_the_reference(keying: str, partitions: int,
                                                                  columnar: bool) -> None:
    """All 21 dataflows merged into running DAGs, split over ``partitions``, uneven batches;
    a re-split to another count and a rebalance on the measured ranges between batches.
    ``columnar``: the unsplit shard runs columnar (the live default; the stages run per event
    whatever the flag, issue 35)."""
    dep, ledger = deployed_at_zero(flows(keying).values(), 1, OPTS)
    tasks = dep.claim(0, 1).shards[0]
    bounds = [0, 1, 23, 24, 61, 90]
    plan = plan_split(tasks, partitions)
    assert stage_count(plan) >= 3 and plan.exchanges()  # shuffles and gathers to cross
    rng = random.Random(partitions)
    counted = drive(plan, tasks, 0, 40, [{}] * partitions, rng)[2]
    assert (sum(counted.values()) > 0) == (partitions > 1)  # nothing to balance on one
    other = resplit(plan, partitions % 3 + 1)[0]
    moved = rebalance(other, counted)[0]
    plans = [plan, plan, other, other, moved]
    seen = run_batches(tasks, bounds, plans, seed=partitions,
                       opts={**OPTS, "columnar": columnar})
    ref = reference_records(ledger, bounds[-1])
    got = as_records(seen)
    for tid, expected in ref.items():
        assert got.get(tid, Counter()) == expected, tid
    assert sum(map(len, seen.values())) > 1000


@needs_data
def test_a_tenants_sample_with_predicate_groups() -> None:
    """Twenty tenants: their filters run as predicate groups inside a stage (with order tags),
    and the split equals the shard (fused or not) and the reference."""
    from reuse.workloads.tenants import build_tenants

    dep, ledger = deployed_at_zero(
        (parse_dataflow(d) for d in build_tenants(DATA, tenants=20, seed=3)), 1, OPTS)
    tasks = dep.claim(0, 1).shards[0]
    plan = plan_split(tasks, 2)
    grouped = [m for s in range(stage_count(plan)) for p in range(2)
               for m in run_stage(tasks, plan, s, p, {}, [], OPTS, t0=0, rate=10.0, lo=0,
                                  hi=0).groups]
    assert {ledger["tasks"][g[0]]["type"] for g in grouped} >= {"RangeFilter"}
    bounds = [0, 7, 19, 30]
    seen = run_batches(tasks, bounds, [plan] * 3, seed=1)
    unfused = run_batches(tasks, bounds, [plan] * 3, seed=2,
                          opts={**OPTS, "fuse_predicates": False})
    assert {t: sorted(v) for t, v in seen.items()} == {t: sorted(v) for t, v in unfused.items()}
    got = as_records(seen)
    for tid, expected in reference_records(ledger, bounds[-1]).items():
        assert got.get(tid, Counter()) == expected, tid


# --- every kind of edge, broker-fed sources --------------------------------------------------------

def _edges_dag() -> list[dict[str, Any]]:
    """SYS -> parse -> Kalman (a shuffle); ``f`` reads parse in stage 0 and Kalman in stage 1
    (a forward across stages, beside parse's shuffle to Kalman); a Join gathers Kalman's
    outputs; ``y`` reads parse (carried through stage 1) and the Join in stage 2."""
    from reuse.workloads.riotbench import source_configs

    cfg = source_configs("SYS", DATA)
    spec = {"start": 0, "end": None, "record": False, "stream": None}
    return [{**spec, "id": "s", "type": "SYS", "config": "source", "parents": [],
             "kind": "source", "stream": "SYS"},
            {**spec, "id": "p", "type": "SenMLParse", "config": cfg["SenMLParse"],
             "parents": ["s"], "kind": "task"},
            {**spec, "id": "k", "type": "KalmanFilter", "config": cfg["KalmanFilter"],
             "parents": ["p"], "kind": "task", "start": 3},
            {**spec, "id": "f", "type": "RangeFilter", "config": cfg["RangeFilter.null"],
             "parents": ["p", "k"], "kind": "task", "record": True},
            {**spec, "id": "j", "type": "Join", "config": {**cfg["Join"], "max_count": 3},
             "parents": ["k"], "kind": "task", "end": 25},
            {**spec, "id": "y", "type": "Annotate", "config": cfg["Annotate"],
             "parents": ["p", "j"], "kind": "task"},
            {**spec, "id": "o", "type": "MQTTPublish", "config": "sink", "parents": ["y"],
             "kind": "sink"}]


@needs_data
@pytest.mark.parametrize("partitions", [1, 2, 4])
@pytest.mark.parametrize("fed", [False, True])
def test_every_kind_of_edge(partitions: int, fed: bool) -> None:
    dag = _edges_dag()
    plan = plan_split(dag, partitions)
    edges = {(t, e.parent): (e.kind, plan.step(t).stage - plan.step(e.parent).stage)
             for t, s in ((s.task, s) for s in plan.steps) for e in s.inputs}
    assert edges[("k", "p")] == ("shuffle", 1) and edges[("f", "p")] == ("forward", 1)
    assert edges[("j", "k")] == ("gather", 1) and edges[("y", "p")] == ("forward", 2)
    calls: list[tuple[str, int, int]] = []

    def feed(stream: str, a: int, b: int) -> list[dict[str, Any]]:
        calls.append((stream, a, b))
        return [source_event(stream, "SYS", q, 0, 10.0, str(DATA)) for q in range(a, b)]

    rng = random.Random(partitions)
    parts: list[dict[str, Any]] = [{} for _ in range(partitions)]
    full: dict[str, Any] = {}
    columnar: dict[str, Any] = {}  # the unsplit shard's states, columnar (issue 35)
    f = feed if fed else None
    for lo, hi in [(0, 2), (2, 11), (11, 30)]:
        got, parts, _ = drive(plan, dag, lo, hi, parts, rng, feed=f)
        want, full = whole(dag, lo, hi, full, feed=f)
        col, columnar = whole(dag, lo, hi, columnar, feed=f, opts={**OPTS, "columnar": True})
        same_lines(got, want)
        assert col == want and columnar == full
        assert got["o"] and got["f"]
        assert merge_states(plan, parts) == full
    assert bool(calls) == fed


# --- random traces ---------------------------------------------------------------------------------

MIX = ("stats-sys", "etl-taxi", "pred-sys", "clean-kalman-taxi", "stats-moment-taxi",
       "pred-error-taxi", "stats-fit", "etl-fit", "clean-fit")
ops = st.one_of(
    st.tuples(st.just("submit"), st.sampled_from(MIX)),
    st.tuples(st.just("remove"), st.integers(0, 10)),
    st.tuples(st.just("resplit"), st.integers(1, 4)),
    st.tuples(st.just("rebalance"), st.just(0)),
    st.tuples(st.just("skew"), st.integers(0, 2**31)),
    st.tuples(st.just("restart"), st.integers(1, 4)),
)


@needs_data
@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(keying=st.sampled_from(["field", "sensor"]), first=st.sampled_from(MIX),
       steps=st.lists(st.tuples(st.integers(1, 12), ops, st.integers(0, 11)), min_size=3,
                      max_size=6),
       parts=st.integers(1, 4), seed=st.integers(0, 2**31))
def test_random_traces_equal_the_shard_and_the_reference(
        keying: str, first: str, steps: list[tuple[int, tuple[str, Any], int]], parts: int,
        seed: int) -> None:
    """Merges and unmerges (at or past the frontier, inside a batch too), re-splits,
    rebalances on the measured ranges, skewed random tables (some partitions empty) and
    restarts from the merged states onto any number of partitions, between uneven batches."""
    fl = flows(keying)
    pl, dep = ReusePlanner(), Deployment(1)
    ledger: dict[str, dict[str, Any]] = {}
    dags: dict[str, Any] = {}
    live: list[str] = []

    def submit(name: str, at: int) -> None:
        if name not in live:
            p = pl.submit(fl[name])
            dep.deploy(p, at)
            ledger.update((t.id, ledger_task(t, at)) for t in p.start)
            dags[p.instance] = {"dag": name, "J": at, "R": None, "sinks": dict(p.sinks)}
            live.append(name)

    submit(first, 0)
    rng = random.Random(seed)
    plan: SplitPlan | None = None
    ranges = KeyRanges.even(parts)
    states: list[dict[str, Any]] = [{} for _ in range(parts)]
    full: dict[str, Any] = {}
    measured: Counter[int] = Counter()
    seen: Lines = {}
    lo = 0
    for size, (op, arg), within in steps:
        hi = lo + size
        cut = lo + within % size
        if op == "submit":
            submit(arg, cut)
        elif op == "remove" and len(live) > 1:
            r = pl.remove(live.pop(arg % len(live)))
            dep.end(r, cut)
            for t in r.stop:
                ledger[t]["end"] = cut
            dags[r.instance]["R"] = cut
        tasks = dep.claim(lo, hi).shards[0]
        new = plan_split(tasks, ranges, groups=dict(plan.groups) if plan else None)
        if plan is not None:
            if op == "resplit":
                new = resplit(new, arg)[0]
            elif op == "rebalance":
                new = rebalance(new, measured)[0]
            elif op == "skew":
                r2 = random.Random(arg)
                favour = r2.sample(range(new.partitions), r2.randint(1, new.partitions))
                owner = tuple(r2.choice(favour) for _ in range(new.ranges.ranges))
                new = plan_split(tasks, KeyRanges(owner, new.partitions),
                                 groups={g: r2.choice(favour) for g, _ in new.groups})
            states = move_states(plan, new, states)
            if op == "restart":  # the merged checkpoint, onto ``arg`` partitions
                saved = json.loads(json.dumps(merge_states(new, states)))
                new = resplit(new, arg)[0]
                states = split_states(new, saved)
        plan, ranges = new, new.ranges
        got, states, counted = drive(plan, tasks, lo, hi, states, rng)
        measured += counted
        want, full = whole(tasks, lo, hi, full)
        same_lines(got, want)
        assert merge_states(plan, states) == {t: s for t, s in full.items() if t in plan}
        for tid, recs in got.items():
            seen.setdefault(tid, []).extend(recs)
        lo = hi
    ref = reference_records({"t0": 0, "rate": 10.0, "data_dir": OPTS["data_dir"], "opts": OPTS,
                             "tasks": ledger, "dags": dags}, lo)
    got_recs = as_records(seen)
    for tid, expected in ref.items():
        assert got_recs.get(tid, Counter()) == expected, tid


# --- the bytes ---------------------------------------------------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.text(max_size=5),
                    st.floats(allow_nan=False, allow_infinity=False))
values = st.recursive(scalars, lambda v: st.one_of(st.lists(v, max_size=3),
                                                   st.dictionaries(st.text(max_size=4), v,
                                                                   max_size=3)), max_leaves=8)
events = st.fixed_dictionaries({"seq": st.integers(0, 10**6)},
                               optional={"obs": st.text(max_size=4), "x": values})
parcels = st.builds(Parcel, st.integers(0, 3), st.text(min_size=1, max_size=4),
                    st.lists(st.tuples(st.lists(st.integers(0, 10**6), max_size=9).map(tuple),
                                       events), max_size=4))


@given(outbox=st.dictionaries(st.integers(0, 3), st.lists(parcels, max_size=3), max_size=4))
def test_the_encoding_gives_back_the_parcels(outbox: dict[int, list[Parcel]]) -> None:
    """Events (big ints too: the JSON fallback) and their order tags come back equal, one
    row per destination that has parcels."""
    rows = encode_outbox(outbox)
    assert [d for d, _ in rows] == sorted(d for d, v in outbox.items() if v)
    for dest, raw in rows:
        assert same_parcels(decode_parcels(raw), outbox[dest])
        assert [[ev for _, ev in pc.items] for pc in decode_parcels(raw)] == [
            [ev for _, ev in pc.items] for pc in outbox[dest]]


def test_a_nan_does_not_cross_unnoticed() -> None:
    """orjson writes NaN as null: ``check`` refuses a parcel that would change."""
    dag = [{"id": "s", "type": "S", "config": "source", "parents": [], "kind": "source",
            "stream": "S", "start": 0, "end": None, "record": False},
           {"id": "d", "type": "DistinctApproxCount", "config": {"buckets": 4, "field": "x"},
            "parents": ["s"], "kind": "task", "start": 0, "end": None, "record": False}]
    plan = plan_split(dag, 2)
    assert stage_count(plan) == 2

    def feed(stream: str, a: int, b: int) -> list[dict[str, Any]]:
        return [{"src": stream, "seq": q, "x": float("nan")} for q in range(a, b)]

    opts = {**OPTS, "data_dir": ""}
    run_split(plan, dag, 0, 4, [{}, {}], opts, feed=lambda s, a, b: feed(s, a, b)[:0],
              check=True)
    with pytest.raises(SparkRuntimeError, match="changes through orjson"):
        run_split(plan, dag, 0, 4, [{}, {}], opts, feed=feed, check=True)
    with pytest.raises(SparkRuntimeError, match="no stage 2 of partition 0"):
        run_stage(dag, plan, 2, 0, {}, [], opts, t0=0, rate=10.0, lo=0, hi=4)
    with pytest.raises(SparkRuntimeError, match="states for 1 partitions"):
        run_split(plan, dag, 0, 4, [{}], opts)


@needs_data
def test_the_model_driver_counts_the_exchange() -> None:
    """``run_split`` (the one-process driver) gives the same lines as the staged drive, and
    counts bytes only where an exchange is: none on one partition with no shuffle."""
    dag = _edges_dag()
    plan = plan_split(dag, 3)
    res = run_split(plan, dag, 0, 20, [{}] * 3, OPTS, now_ms=_clock, check=True)
    got, states, _ = drive(plan, dag, 0, 20, [{}] * 3, random.Random(0))
    assert {t: sorted(v) for t, v in res.sinks.items()} == {t: sorted(v) for t, v in got.items()}
    assert json.loads(json.dumps(res.states)) == states
    assert res.exchanged > res.crossed > 0 and res.rows >= 3 and res.events == 20
    assert 0 < res.critical <= sum(res.partition_cpu)
    opmw = [{"id": "i", "type": "PatternFile", "config": "source", "parents": [],
             "kind": "source", "stream": "i", "start": 0, "end": None, "record": False},
            {"id": "o", "type": "Output:T/x", "config": "sink", "parents": ["i"],
             "kind": "sink", "start": 0, "end": None, "record": False}]
    one = run_split(plan_split(opmw, 2), opmw, 0, 9, [{}, {}], {**OPTS, "data_dir": ""})
    assert one.exchanged == 0 and len(one.sinks["o"]) == 9


@needs_data
def test_tags_only_where_one_seqs_events_meet_from_several_partitions() -> None:
    """On the edges DAG: the Kalman filter's outputs are gathered (one ``seq``'s observations
    were split by key), so they carry full tags, and the parse they extend carries its
    partition's index (one ``seq``'s events are made in one partition); the source, the
    filter, the Join, the annotation and the sink carry none. On one partition: no tags."""
    from reuse.runtime.engines.shared.stages import _seq_local, _tags

    dag = _edges_dag()
    plan = plan_split(dag, 2)
    assert _seq_local(plan) == {"s", "p", "j"}
    assert _tags(plan) == ({"k"}, {"p"})
    assert _tags(plan_split(dag, 1)) == (frozenset(), frozenset())
    stage0 = run_stage(dag, plan, 0, 0, {}, [], OPTS, t0=0, rate=10.0, lo=0, hi=20)
    sent = {pc.task: pc for pcs in stage0.outbox.values() for pc in pcs}
    assert sent["p"].tagged and all(isinstance(tag, int) for tag, _ in sent["p"].items)
    inbox = decode_parcels(dict(encode_outbox(stage0.outbox))[0])
    stage1 = run_stage(dag, plan, 1, 0, {}, inbox, OPTS, t0=0, rate=10.0, lo=0, hi=20)
    kal = [pc for pcs in stage1.outbox.values() for pc in pcs if pc.task == "k"]
    assert kal and all(pc.tagged and len(tag) == 4 for pc in kal for tag, _ in pc.items)

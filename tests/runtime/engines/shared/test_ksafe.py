"""k-safety's replicas in the shared query's deployment, without Spark (issue 13, item 2).

Replicas of every task used by at least ``U`` dataflows sit in other shards than their
primaries, follow the users as dataflows come and go, start on a batch boundary, and, run by
the shard worker with the state their primary saved, output exactly what the reference
execution says their primary outputs over the replica's own window.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from reuse.core.dataflow import parse_dataflow
from reuse.runtime import SparkRuntimeError
from reuse.runtime.accounting import copies, reference_records
from reuse.runtime.common.planners import DefaultPlanner, ReusePlanner
from reuse.runtime.common.sink_history import ledger_task
from reuse.runtime.engines.shared.deploy import (
    REPLICA_MARK,
    Deployment,
    End,
    Epoch,
    Move,
    Replicate,
)
from reuse.runtime.engines.shared.shard import run_shard, seed_replicas
from reuse.testing import riot_flows


def chain(dag: str, *types: str, src: str = "S") -> Any:
    tasks = [{"id": "src", "type": src, "config": "source"}]
    tasks += [{"id": f"t{i}", "type": t, "config": {}} for i, t in enumerate(types)]
    tasks.append({"id": "out", "type": "Sink", "config": "sink"})
    ids = [t["id"] for t in tasks]
    return parse_dataflow({"id": dag, "tasks": tasks,
                           "streams": list(zip(ids, ids[1:], strict=False))})


def replicate(pl: Any, dep: Deployment, k: int, at: int, min_users: int = 2) -> list[Any]:
    """What the engine does after every submit and remove."""
    live = {t for t, d in dep.tasks.items() if d.end is None and d.replica_of is None}
    return dep.replicate({t for t, n in pl.users().items() if n >= min_users and t in live},
                         k, at)


def test_shared_tasks_get_replicas_apart_from_their_primaries() -> None:
    pl, dep = ReusePlanner(), Deployment(3)
    dep.deploy(pl.submit(chain("a", "X", "Y")), 0)
    assert replicate(pl, dep, 2, 0) == []  # one user: nothing to replicate
    dep.deploy(pl.submit(chain("b", "X", "Z")), 10)  # shares src and X with a
    acts = replicate(pl, dep, 2, 10)
    reps = dep.replicas()
    assert sorted(reps) == ["a.src", "a.t0"]
    assert all(len(r) == 2 for r in reps.values())
    assert {a.task for a in acts if isinstance(a, Replicate)} == {
        r for rs in reps.values() for r in rs}
    for prim, rs in reps.items():  # the primary and each level in a shard of its own
        assert len({dep.tasks[prim].shard} | {dep.tasks[r].shard for r in rs}) == 3
        for r in rs:
            assert REPLICA_MARK in r and dep.tasks[r].start == 10
            # a replica reads the replica of its parent at its own level, in its own shard
            assert all(dep.tasks[p].replica_of is not None
                       and dep.tasks[p].shard == dep.tasks[r].shard
                       for p in dep.tasks[r].parents)
    dep.check()
    assert replicate(pl, dep, 2, 12) == []  # nothing changed: nothing to do


def test_replicas_end_when_users_fall_below_u_and_are_freed() -> None:
    pl, dep = ReusePlanner(), Deployment(2)
    dep.deploy(pl.submit(chain("a", "X", "Y")), 0)
    dep.deploy(pl.submit(chain("b", "X", "Z")), 5)
    replicate(pl, dep, 1, 5)
    dep.claim(0, 8)
    dep.end(pl.remove("b"), 20)
    acts = replicate(pl, dep, 1, 20)
    ended = {a.task for a in acts if isinstance(a, End)}
    assert ended == {"a.src" + REPLICA_MARK + "1", "a.t0" + REPLICA_MARK + "1"}
    assert dep.replicas() == {}
    assert dep.replica_log["a.t0" + REPLICA_MARK + "1"]["end"] == 20
    dep.claim(8, 20)
    dep.claim(20, 25)
    assert not any(d.replica_of for d in dep.tasks.values())  # freed past their cut
    # a task shared again later gets a fresh replica (ids are never reused)
    dep.deploy(pl.submit(chain("c", "X", "W")), 30)
    replicate(pl, dep, 1, 30)
    assert sorted(r for rs in dep.replicas().values() for r in rs) == [
        "a.src" + REPLICA_MARK + "1~2", "a.t0" + REPLICA_MARK + "1~2"]


def test_a_replica_starts_on_a_batch_boundary() -> None:
    pl, dep = ReusePlanner(), Deployment(2)
    dep.deploy(pl.submit(chain("a", "X")), 0)
    dep.claim(0, 10)
    dep.deploy(pl.submit(chain("b", "X", "Y")), 13)
    replicate(pl, dep, 1, 13)
    r = "a.t0" + REPLICA_MARK + "1"
    epoch = dep.claim(10, 17)  # 13 falls inside [10, 17): the replica waits for 17
    assert dep.tasks[r].start == 17 == dep.replica_log[r]["start"]
    assert next(t for s in epoch.shards for t in s if t["id"] == r)["start"] == 17
    epoch = dep.claim(17, 20)
    # its first batch: seeded with the state its primary saved after the batch before
    states = seed_replicas(epoch, {"a.t0": {"n": 3}}, 17)
    assert states[r] == {"n": 3}
    assert seed_replicas(dep.claim(20, 24), {"a.t0": {"n": 5}}, 20).get(r) is None


def test_a_replica_made_with_its_primary_keeps_its_start_inside_a_batch() -> None:
    """With U = 1 a submit replicates its new tasks at its own cut. Primary and replica start
    cold there, so the replica is not moved to the batch's end: its start is the cut whatever
    the batches were, and a resumed engine that re-enacts the submit (no batch claimed yet)
    decides the same start as the driver that ran the batch (a killed driver's resume once
    ran such a replica cold from a checkpoint that had no state for it)."""
    def deployment(batches: list[tuple[int, int]]) -> Deployment:
        pl, dep = ReusePlanner(), Deployment(2)
        dep.claim(0, 164)
        dep.deploy(pl.submit(chain("a", "X")), 168)
        replicate(pl, dep, 1, 168, min_users=1)
        for lo, hi in batches:
            dep.claim(lo, hi)
        return dep

    ran, resumed = deployment([(164, 184)]), deployment([])
    r = "a.t0" + REPLICA_MARK + "1"
    assert ran.tasks[r].start == resumed.tasks[r].start == 168
    assert ran.replica_log[r] == resumed.replica_log[r]
    # and a replica of a primary that already ran still waits for the batch's end
    pl, dep = ReusePlanner(), Deployment(2)
    dep.deploy(pl.submit(chain("a", "X")), 0)
    dep.claim(0, 10)
    replicate(pl, dep, 1, 13, min_users=1)
    dep.claim(10, 17)
    assert dep.tasks[r].start == 17


def test_a_resume_gives_a_moved_replica_the_start_its_dead_driver_gave_it() -> None:
    """A replica of a primary that already ran, made inside the last batch a driver completed
    before dying: that batch's claim moved it to the batch's end, where it was seeded. The
    resume re-enacts the replication at its cut and claims no batch already run, so without
    the saved starts the replica kept the cut, was never seeded and ran cold."""
    def deployment(batches: list[tuple[int, int]]) -> tuple[Deployment, Epoch]:
        pl, dep = ReusePlanner(), Deployment(2)
        dep.deploy(pl.submit(chain("a", "X")), 0)
        replicate(pl, dep, 1, 13, min_users=1)
        epoch = dep.snapshot()
        for lo, hi in batches:
            epoch = dep.claim(lo, hi)
        return dep, epoch

    r = "a.t0" + REPLICA_MARK + "1"
    ran, last = deployment([(0, 10), (10, 17)])  # 13 falls in the last batch run: moved to 17
    saved = {t["id"]: int(t["start"]) for s in last.shards for t in s if t.get("replica_of")}
    assert saved[r] == 17
    resumed, _ = deployment([])
    assert resumed.tasks[r].start == 13  # re-enacted: the cut, as if no batch had run
    resumed.resume_starts(saved)
    assert resumed.tasks[r].start == ran.tasks[r].start == 17
    assert resumed.replica_log[r] == ran.replica_log[r]
    # its first batch after the resume seeds it with the state its primary saved at 17
    states = seed_replicas(resumed.claim(17, 20), {"a.t0": {"n": 3}}, 17)
    assert states[r] == {"n": 3}
    # a start saved before a later claim moved it (a restart's in-flight batch) stays moved
    ran.resume_starts({r: 13})
    assert ran.tasks[r].start == 17


def test_moving_a_primary_onto_its_replica_moves_the_replica_away() -> None:
    pl, dep = ReusePlanner(), Deployment(2)
    dep.deploy(pl.submit(chain("a", "X")), 0)
    dep.deploy(pl.submit(chain("b", "X", "Y")), 0)
    replicate(pl, dep, 1, 0)
    prim, rep = dep.tasks["a.t0"].shard, dep.tasks["a.t0" + REPLICA_MARK + "1"].shard
    assert prim != rep
    acts = dep.move("a.t0", rep)
    assert sum(isinstance(a, Move) for a in acts) == 2
    assert dep.tasks["a.t0" + REPLICA_MARK + "1"].shard == prim
    dep.check()
    assert dep.rebalance() == []  # replica units are never balanced onto their primaries
    dep.check()


def test_replication_errors_change_nothing() -> None:
    pl, dep = ReusePlanner(), Deployment(2)
    dep.deploy(pl.submit(chain("a", "X", "Y")), 0)
    dep.deploy(pl.submit(chain("b", "X", "Y")), 0)
    dep.claim(0, 10)
    snap = (dep.as_dict(), list(dep.history), dict(dep.replica_log))
    with pytest.raises(SparkRuntimeError, match="K=2 needs K\\+1=3 shards.*there are 2"):
        dep.replicate({"a.src"}, 2, 10)
    with pytest.raises(SparkRuntimeError, match="task 'a.t1'.*its parent a.t0 is not"):
        dep.replicate({"a.src", "a.t1"}, 1, 10)
    with pytest.raises(SparkRuntimeError, match="task 'zz'.*not a live primary"):
        dep.replicate({"zz"}, 1, 10)
    with pytest.raises(SparkRuntimeError, match="cut 4 is in the past"):
        dep.replicate({"a.src"}, 1, 4)
    assert (dep.as_dict(), list(dep.history), dict(dep.replica_log)) == snap


def test_default_never_shares_so_u2_replicates_nothing_and_u1_everything() -> None:
    pl, dep = DefaultPlanner(), Deployment(2)
    for d in "ab":
        dep.deploy(pl.submit(chain(d, "X")), 0)
    assert replicate(pl, dep, 1, 0) == []
    replicate(pl, dep, 1, 0, min_users=1)
    assert len(dep.replicas()) == 6
    dep.check()


def _stateful_twins() -> dict[str, Any]:
    """Two identical dataflows over SYS whose Kalman filter keeps state: the second reuses
    every task of the first, so the whole chain becomes shared (and replicated) mid-run."""
    base = riot_flows("stats-sys")["stats-sys"]
    keep = ["src", "parse", "kalman", "publish"]
    tasks = [{"id": t, "type": base.task(t).type, "config": base.task(t).config} for t in keep]
    streams = [["src", "parse"], ["parse", "kalman"], ["kalman", "publish"]]
    return {d: parse_dataflow({"id": d, "tasks": tasks, "streams": streams})
            for d in ("twin-a", "twin-b")}


def test_replicas_output_what_their_primaries_do_from_their_own_start() -> None:
    """A replica of a stateful task that joins mid-run, seeded with its primary's saved state,
    outputs exactly the reference's records of its primary over the replica's window; the
    union of copies is the primary's output; a move between batches changes nothing."""
    from reuse.core.paths import riotbench_dir

    flows = _stateful_twins()
    opts = {"data_dir": str(riotbench_dir(None)), "pi_iterations": 10, "record": "digest",
            "limit": None}
    pl, dep = ReusePlanner(), Deployment(2)
    tasks: dict[str, dict[str, Any]] = {}
    dags: dict[str, Any] = {}

    def submit(dag: str, at: int) -> None:
        p = pl.submit(flows[dag])
        dep.deploy(p, at)
        for t in p.start:
            tasks[t.id] = ledger_task(t, at)
        dags[p.instance] = {"dag": dag, "J": at, "R": None, "sinks": dict(p.sinks)}
        replicate(pl, dep, 1, at)

    saved: dict[str, Any] = {}  # the states saved after the last batch, as the handler keeps
    seen: dict[str, list[dict[str, Any]]] = {}
    plan = {0: lambda: submit("twin-a", 0), 2: lambda: submit("twin-b", 23),
            4: lambda: dep.move("twin-a.kalman", 1 - dep.tasks["twin-a.kalman"].shard)}
    bounds = [0, 9, 20, 31, 44, 50, 63]
    for n, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False)):
        if n in plan:
            plan[n]()
        epoch = dep.claim(lo, hi)
        states = seed_replicas(epoch, dict(saved), lo)
        new: dict[str, Any] = {}
        for shard in epoch.shards:
            mine = {t["id"]: states[t["id"]] for t in shard if t["id"] in states}
            res = run_shard(shard, lo, hi, mine, opts, t0=0, rate=10.0, now_ms=lambda: 0.0)
            new.update(res["states"])
            for tid, recs in res["sinks"].items():
                seen.setdefault(tid, []).extend(json.loads(x) for x in recs)
        saved = new
    rep = "twin-a.publish" + REPLICA_MARK + "1"
    assert dep.replica_log[rep]["start"] == 31  # 23 fell inside [20, 31)
    assert "twin-a.kalman" + REPLICA_MARK + "1" in dep.replica_log
    ledger = {"t0": 0, "rate": 10.0, "data_dir": opts["data_dir"], "opts": opts,
              "tasks": tasks, "dags": dags, "replicas": dep.replica_log}
    ref = reference_records(ledger, bounds[-1])["twin-a.publish"]
    got = Counter((r["q"], r["d"]) for r in seen[rep])
    assert got and got == Counter({k: n for k, n in ref.items() if k[0] >= 31})
    assert copies(ledger, "twin-a.publish") == ["twin-a.publish", rep]
    union: Counter[Any] = Counter()
    for c in copies(ledger, "twin-a.publish"):
        union |= Counter((r["q"], r["d"]) for r in seen[c])
    assert union == ref


@pytest.mark.parametrize("extra, message", [
    (["--k-safe", "2"], "K=2 needs K\\+1=3 distinct executors.*only 2"),
    (["--k-safe", "1", "--merge", "partial"], "--k-safe needs the shared query"),
    (["--k-safe", "1", "--replicate-min-users", "0"], "--replicate-min-users must be an integer >= 1"),
    (["--k-safe", "1", "--shards", "1"], "K=1 needs K\\+1=2 distinct executors.*only 1"),
])
def test_reuse_run_rejects_k_safety_it_cannot_place_before_spark_starts(
        refused_run: Any, extra: list[str], message: str) -> None:
    import re

    code, err = refused_run(extra)
    assert code == 1 and len(err.splitlines()) == 1 and re.search(message, err), err


def test_the_engine_replicates_what_the_blast_radius_model_counts() -> None:
    """Over the RIoT SEQ trace the live deployment holds, after every step, exactly the
    replicas the planner-level model charges k-safety with (``replicas_extra``), and always
    keeps them apart from their primaries."""
    from reuse.analysis.blast import blast_trace
    from reuse.workloads.trace_registry import build_trace

    trace = build_trace("riot", "seq")
    model = blast_trace(trace.flows, trace.ops, executors=2, k=1, min_users=2)
    pl, dep = ReusePlanner(), Deployment(2)
    for n, (op, step) in enumerate(zip(trace.ops, model, strict=True)):
        if op.op == "submit":
            dep.deploy(pl.submit(trace.flows[op.dag]), 10 * n)
        else:
            dep.end(pl.remove(op.dag), 10 * n)
        replicate(pl, dep, 1, 10 * n)
        dep.claim(10 * n, 10 * n + 10)
        dep.check()
        assert sum(len(r) for r in dep.replicas().values()) == step.replicas_extra, op
    assert max(s.replicas_extra for s in model) > 0

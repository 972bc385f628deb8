"""The inplace engine's deployment layer, without Spark: planners, shards, windows, epochs.

The shard worker is checked against the pure-Python reference execution: a deployment changed
by submits, removes and moves between batches of uneven size gives, batch by batch, exactly the
sink outputs the reference computes from the same windows.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from reuse.core.dataflow import parse_dataflow
from reuse.runtime import SparkRuntimeError
from reuse.runtime.accounting import reference_records
from reuse.runtime.common.execution import digest
from reuse.runtime.common.planners import DefaultPlanner, Placement, Removal, ReusePlanner
from reuse.runtime.common.policy import LIVE_MODES, Merge, Mode, Policy, Unmerge, live_policy
from reuse.runtime.common.sink_history import ledger_task
from reuse.runtime.engines.shared.deploy import Deployment, End, Free, Move, Start
from reuse.runtime.engines.shared.shard import run_shard
from reuse.runtime.spec import RunSpec
from reuse.testing import riot_flows


def chain(dag: str, *types: str, src: str = "S") -> Any:
    tasks = [{"id": "src", "type": src, "config": "source"}]
    tasks += [{"id": f"t{i}", "type": t, "config": {}} for i, t in enumerate(types)]
    tasks.append({"id": "out", "type": "Sink", "config": "sink"})
    ids = [t["id"] for t in tasks]
    return parse_dataflow({"id": dag, "tasks": tasks, "streams": list(zip(ids, ids[1:], strict=False))})


# --- policy ----------------------------------------------------------------------------------

def test_policy_from_strings_and_errors() -> None:
    p = Policy.of("default", "inplace", "lazy")
    assert (p.mode, p.merge, p.unmerge, p.engine) == (Mode.DEFAULT, Merge.INPLACE,
                                                        Unmerge.FREE, "inplace")
    assert p.label == "default-inplace" and not p.shares
    assert live_policy("reuse-relaunch-lazy") == Policy(Mode.REUSE, Merge.RELAUNCH, Unmerge.LAZY)
    assert all(live_policy(name).label == name for name in LIVE_MODES)
    with pytest.raises(SparkRuntimeError, match="unknown merge 'sideways'"):
        Policy.of("reuse", "sideways")
    with pytest.raises(SparkRuntimeError, match="unknown mode"):
        Policy.of("shared")
    with pytest.raises(SparkRuntimeError, match="inplace engine's own"):
        Policy.of("reuse", "partial", "free")
    with pytest.raises(SparkRuntimeError, match="unknown live mode 'x'"):
        live_policy("x")


def test_default_sources_private_by_default_shared_on_request() -> None:
    # the paper's baseline: each Default dataflow replays its own sources
    assert Policy.of("default").private_sources and Policy.of("default", "inplace").private_sources
    shared = Policy.of("default", "partial", "pause", "shared")
    assert not shared.private_sources and shared.label == "default-shared"
    assert live_policy("default") != live_policy("default-shared")
    # Reuse shares equivalent sources whatever is asked: merging a source is reuse
    assert Policy.of("reuse", sources="private") == Policy.of("reuse")
    with pytest.raises(SparkRuntimeError, match="needs a query-per-DAG engine"):
        Policy.of("default", "inplace", sources="shared")
    with pytest.raises(SparkRuntimeError, match="unknown default sources 'mine'"):
        Policy.of("default", sources="mine")


# --- planners --------------------------------------------------------------------------------

def test_reuse_planner_fresh_ids_and_incarnations() -> None:
    pl = ReusePlanner()
    a, b = chain("a", "X", "Y"), chain("b", "X", "Z")
    pa = pl.submit(a)
    assert [t.id for t in pa.start] == ["a.src", "a.t0", "a.t1", "a.out"]
    pb = pl.submit(b)
    assert pb.reused == ("a.src", "a.t0") and [t.id for t in pb.start] == ["b.t1", "b.out"]
    assert sorted(map(sorted, pl.groups())) == [sorted(["a.src", "a.t0", "a.t1", "a.out",
                                                         "b.t1", "b.out"])]
    assert set(pl.remove("a").stop) == {"a.t1", "a.out"}
    assert set(pl.remove("b").stop) == {"a.src", "a.t0", "b.t1", "b.out"}
    again = pl.submit(a)  # the manager hands out a.src again: the runtime id must be fresh
    assert again.instance == "a~2"
    assert [t.id for t in again.start] == ["a.src~2", "a.t0~2", "a.t1~2", "a.out~2"]
    assert again.sinks == {"out": "a.out~2"}


def test_default_planner_runs_every_dag_alone() -> None:
    pl = DefaultPlanner()
    pa, pb = pl.submit(chain("a", "X")), pl.submit(chain("b", "X"))
    assert pb.reused == () and [t.id for t in pb.start] == ["b.src", "b.t0", "b.out"]
    assert pa.start[0].kind == "source" and pa.start[-1].kind == "sink"
    assert sorted(pl.groups()) == [("a.src", "a.t0", "a.out"), ("b.src", "b.t0", "b.out")]
    assert pl.remove("a").stop == ("a.src", "a.t0", "a.out")
    assert pl.submit(chain("a", "X")).instance == "a~2"


@pytest.mark.parametrize("planner", [ReusePlanner, DefaultPlanner])
def test_planner_errors_change_nothing(planner: type) -> None:
    pl = planner()
    pl.submit(chain("a", "X"))
    before = (dict(pl.instances), pl.groups())
    with pytest.raises(SparkRuntimeError, match="dag 'a'.*already submitted|a.*already"):
        pl.submit(chain("a", "X"))
    with pytest.raises(SparkRuntimeError, match="not submitted"):
        pl.remove("zzz")
    assert (dict(pl.instances), pl.groups()) == before


# --- deployment ------------------------------------------------------------------------------

def test_new_units_spread_and_merging_units_move_together() -> None:
    pl, dep = ReusePlanner(), Deployment(2)
    acts = dep.deploy(pl.submit(chain("a", "X", src="S1")), 0)
    assert {a.shard for a in acts if isinstance(a, Start)} == {0}
    acts = dep.deploy(pl.submit(chain("b", "X", src="S2")), 0)
    assert {a.shard for a in acts if isinstance(a, Start)} == {1}
    # c joins both running DAGs (a parent from each source): one unit, one shard
    c = parse_dataflow({"id": "c", "tasks": [
        {"id": "s1", "type": "S1", "config": "source"}, {"id": "s2", "type": "S2",
                                                         "config": "source"},
        {"id": "x1", "type": "X", "config": {}}, {"id": "x2", "type": "X", "config": {}},
        {"id": "j", "type": "J", "config": {}}, {"id": "out", "type": "Sink", "config": "sink"}],
        "streams": [["s1", "x1"], ["s2", "x2"], ["x1", "j"], ["x2", "j"], ["j", "out"]]})
    dep.frontier = 40
    acts = dep.deploy(pl.submit(c), 50)
    moves = [a for a in acts if isinstance(a, Move)]
    assert len(moves) == 1 and moves[0].at == 40 and moves[0].src != moves[0].dst
    dep.check()
    assert len({d.shard for d in dep.tasks.values()}) == 1
    assert all(isinstance(a, Start) and a.at == 50 for a in acts if not isinstance(a, Move))


def test_deployment_balances_by_one_unit_move() -> None:
    pl, dep = DefaultPlanner(), Deployment(2)
    for name in "abc":
        dep.deploy(pl.submit(chain(name, "X", "Y")), 0)
    assert sorted(dep.loads()) == [3.0, 6.0]
    heavy = max(range(2), key=lambda s: dep.load(s))
    victim = next(t for t, d in dep.tasks.items() if d.shard == heavy)
    dep.end(pl.remove(victim.split(".")[0]), 10)  # leaves 3 and 3... or 0 and 6
    assert sorted(dep.loads()) == [3.0, 3.0]
    assert dep.rebalance() == []


def test_end_frees_at_the_cut_and_claim_moves_the_frontier() -> None:
    pl, dep = ReusePlanner(), Deployment(1)
    dep.deploy(pl.submit(chain("a", "X")), 0)
    dep.deploy(pl.submit(chain("b", "X", "Y")), 5)
    acts = dep.end(pl.remove("b"), 12)
    assert sorted(a.task for a in acts if isinstance(a, End)) == ["b.out", "b.t1"]
    e = dep.claim(0, 10)
    assert dep.frontier == 10 and {t["id"] for t in e.shards[0]} >= {"b.t1", "b.out"}
    dep.claim(10, 12)
    assert "b.t1" in dep.tasks  # the batch [10, 12) still gave it events
    before = dep.version
    e = dep.claim(12, 15)
    assert "b.t1" not in dep.tasks and dep.version == before + 1
    assert {a.task for a in dep.history if isinstance(a, Free)} == {"b.t1", "b.out"}
    assert [t["id"] for t in e.shards[0]] == ["a.src", "a.t0", "a.out"]


def test_deployment_errors_change_nothing() -> None:
    pl, dep = ReusePlanner(), Deployment(2)
    dep.deploy(pl.submit(chain("a", "X")), 0)
    dep.claim(0, 20)
    snap = (dep.as_dict(), list(dep.history))
    with pytest.raises(SparkRuntimeError, match="cut 5 is in the past.*below 20"):
        dep.deploy(pl.submit(chain("b", "X", "Y")), 5)
    with pytest.raises(SparkRuntimeError, match="is already deployed"):
        dep.deploy(Placement("a", "a~2", (pl.manager and ReusePlanner().submit(
            chain("a", "X")).start), (), {}), 30)
    with pytest.raises(SparkRuntimeError, match="task 'nope'.*is not deployed"):
        dep.end(Removal("a", "a", ("nope",)), 30)
    with pytest.raises(SparkRuntimeError, match="cut 3 is in the past"):
        dep.end(Removal("a", "a", ("a.t0",)), 3)
    with pytest.raises(SparkRuntimeError, match="no shard 7"):
        dep.move("a.t0", 7)
    with pytest.raises(SparkRuntimeError, match="positive integer"):
        Deployment(0)
    assert (dep.as_dict(), list(dep.history)) == snap
    dep.end(Removal("a", "a", ("a.out",)), 30)
    with pytest.raises(SparkRuntimeError, match="already ends at 30"):
        dep.end(Removal("a", "a", ("a.out",)), 31)


# --- the shard worker against the reference execution ---------------------------------------

def _ledger(tasks: dict[str, dict[str, Any]], dags: dict[str, Any], opts: dict[str, Any]
            ) -> dict[str, Any]:
    return {"t0": 0, "rate": 10.0, "data_dir": opts["data_dir"], "opts": opts,
            "tasks": tasks, "dags": dags}


@pytest.mark.parametrize("mode", ["reuse", "default"])
def test_shards_compute_what_the_reference_does(mode: str) -> None:
    """Submits, a remove and a move between batches of uneven size: every sink's records
    equal the reference execution's, and no task outputs outside its window."""
    from reuse.core.paths import riotbench_dir

    flows = riot_flows("stats-sys", "clean-kalman-sys", "clean-sys", "etl-taxi")
    opts = {"data_dir": str(riotbench_dir(None)), "pi_iterations": 10, "record": "digest",
            "limit": None}
    pl = ReusePlanner() if mode == "reuse" else DefaultPlanner()
    dep = Deployment(2)
    ledger_tasks: dict[str, dict[str, Any]] = {}
    dags: dict[str, Any] = {}

    def submit(dag: str, at: int) -> None:
        p = pl.submit(flows[dag])
        dep.deploy(p, at)
        for t in p.start:
            ledger_tasks[t.id] = ledger_task(t, at)
        dags[p.instance] = {"dag": dag, "J": at, "R": None, "sinks": dict(p.sinks)}

    def remove(dag: str, at: int) -> None:
        r = pl.remove(dag)
        dep.end(r, at)
        for t in r.stop:
            ledger_tasks[t]["end"] = at
        dags[r.instance]["R"] = at

    states: dict[str, Any] = {}
    seen: dict[str, list[dict[str, Any]]] = {}
    plan = {0: lambda: (submit("stats-sys", 0), submit("etl-taxi", 3)),
            1: lambda: submit("clean-kalman-sys", 9),
            2: lambda: submit("clean-sys", 17),
            3: lambda: remove("clean-kalman-sys", 31),
            4: lambda: dep.move(next(iter(dep.tasks)), 1 - dep.tasks[next(iter(dep.tasks))].shard)}
    bounds = [0, 7, 16, 29, 33, 41, 52]
    for n, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False)):
        if n in plan:
            plan[n]()
        epoch = dep.claim(lo, hi)
        for tasks in epoch.shards:
            mine = {t["id"]: states[t["id"]] for t in tasks if t["id"] in states}
            res = run_shard(tasks, lo, hi, mine, opts, t0=0, rate=10.0, now_ms=lambda: 0.0)
            states.update(res["states"])
            for tid, recs in res["sinks"].items():
                seen.setdefault(tid, []).extend(json.loads(x) for x in recs)
    assert any(isinstance(a, Move) for a in dep.history)
    ref = reference_records(_ledger(ledger_tasks, dags, opts), bounds[-1])
    assert ref and all(sum(c.values()) > 0 for c in ref.values())
    for tid, expected in ref.items():
        got = Counter((r["q"], r["d"]) for r in seen.get(tid, []))
        assert got == expected, tid
        info = ledger_tasks[tid]
        end = info["end"] if info["end"] is not None else bounds[-1]
        assert all(info["start"] <= r["q"] < end for r in seen.get(tid, [])), tid
    # a sink record's digest is the digest of the event it received
    assert all(len(r["d"]) == 16 for rs in seen.values() for r in rs)
    assert digest({"seq": 1}) != digest({"seq": 2})


def test_engine_root_is_absolute(tmp_path: Any, monkeypatch: Any) -> None:
    """Executors write sink records under the run directory; on a standalone cluster their
    working directory is the worker's, so a relative ``--root`` must be made absolute (a run
    with ``--root run`` on ``reuse cluster start`` lost every output before this)."""
    from reuse.runtime.engines.shared.engine import InplaceRuntime

    monkeypatch.chdir(tmp_path)
    rt = InplaceRuntime(None, RunSpec.of(root=Path("run"), shards=1))  # type: ignore[arg-type]
    assert rt.root == tmp_path / "run" and rt.root.is_absolute()

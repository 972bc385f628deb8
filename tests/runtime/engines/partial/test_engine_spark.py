"""Real Spark streaming merge and unmerge: three overlapping RIoT dataflows, the middle removed.

Each scenario replays the same deterministic SYS stream (60 events/s, held at each operation's cut, seq < LIMIT) with the same
join and end cuts, so the runs (Reuse+pause, Reuse+stop, Default with its own sources or shared
ones, ...) see identical input events and every sink's outputs can be compared across runs and
with the reference execution.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from reuse.runtime.accounting import account, dag_outputs, leaked_records
from reuse.runtime.engines.partial.engine import Runtime
from reuse.runtime.spec import RunSpec
from reuse.testing import riot_flows

pytestmark = pytest.mark.spark

RATE = 60.0
# an operation is enacted once the sources are this close to its cut, and the sources are held
# at the cut until it is enacted (Runtime.hold): however long a loaded machine takes to start a
# query, no cut is passed before its operation (a fixed lead alone was passed by removes on a
# loaded machine)
LEAD = int(RATE * 2)
# 60 seqs (1 s) past the last operation of STEPS: enough to see what a removal left running
# and stopped; the runs with later operations (defragment, lazy removals) run to LATE_LIMIT
LIMIT = 360
LATE_LIMIT = 420
# A = stats-sys; B = clean-kalman-sys reuses src, parse; C = clean-sys reuses src, parse and B's
# bloom and range. Removing B stops B's kalman, slr and sink but keeps bloom and range for C.
STEPS: list[tuple[str, str, int]] = [
    ("submit", "stats-sys", 120),
    ("submit", "clean-kalman-sys", 180),
    ("submit", "clean-sys", 240),
    ("remove", "clean-kalman-sys", 300),
]


# lazy unmerge: removing B pauses its tasks inside the one running query; removing A and C then
# leaves that query no live task, so it is stopped
LAZY_STEPS = [*STEPS, ("remove", "stats-sys", 330), ("remove", "clean-sys", 360)]


def _wait_for(rt: Runtime, seq: int, lead: int) -> None:
    while rt.bound() < seq - lead:
        time.sleep(0.05)


def scenario(spark: Any, root: Path, mode: str, unmerge: str,
             steps: list[tuple[str, str, int]] = STEPS, limit: int = LIMIT,
             merge: str = "partial", sources: str | None = None,
             ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], list[dict[str, int]]]:
    """Run the steps live; return (accounting, outputs, ledger, counts after each step)."""
    flows = riot_flows(*{dag for op, dag, _ in steps if op != "defrag"})
    rt = Runtime(spark, RunSpec.of(mode=mode, merge=merge, unmerge=unmerge,
                                   default_sources=sources, root=root, rate=RATE,
                                   trigger_s=1.0, limit=limit),
                 t0_ms=int(time.time() * 1000) + 500)
    counts = []
    try:
        rt.hold(steps[0][2])
        rt.start_sources(["SYS"])
        for op, dag, at in steps:
            rt.hold(at)
            _wait_for(rt, at, lead=LEAD)
            if op == "submit":
                rt.submit(flows[dag], at=at)
            elif op == "defrag":
                rt.defragment(at=at)
            else:
                rt.remove(dag, at=at)
            rt.poll()
            counts.append(rt.counts())
        rt.hold(None)
        rt.wait_processed(limit - 1, timeout_s=90)
        rt.wait_stopped(timeout_s=60)
        counts.append(rt.counts())
        ledger = rt.ledger()
        assert not [e for e in rt.log if e["event"] == "late_cut"]
    finally:
        rt.close()
    # no paused, stopped or handed-over task output anything at or past its end cut (the
    # per-DAG accounting cuts outputs to each DAG's window, so it could not see that)
    assert leaked_records(root, ledger, limit) == {}
    return account(root, ledger, limit), dag_outputs(root, ledger, limit), ledger, counts


@pytest.fixture(scope="module")
def runs(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = {}
    for mode, unmerge in (("reuse", "stop"), ("default", "pause")):
        root = tmp_path_factory.mktemp(f"{mode}-{unmerge}")
        out[f"{mode}-{unmerge}"] = scenario(spark, root, mode, unmerge)
    root = tmp_path_factory.mktemp("default-shared")
    out["default-shared-pause"] = scenario(spark, root, "default", "pause", sources="shared")
    # Reuse with pause, then a defragmentation once B is removed: the steps up to the removal
    # are those of the pause run, so one run serves both (a run costs 20 s of the suite)
    root = tmp_path_factory.mktemp("reuse-defrag")
    out["reuse-defrag"] = scenario(spark, root, "reuse", "pause",
                                   steps=[*STEPS, ("defrag", "", 360)], limit=LATE_LIMIT)
    # as the pause run, its outputs up to LIMIT, where the others end (past it, the
    # accounting against the reference execution checks them)
    acc, _, ledger, counts = out["reuse-defrag"]
    out["reuse-pause"] = (acc, dag_outputs(root, ledger, LIMIT), ledger, counts)
    root = tmp_path_factory.mktemp("reuse-relaunch")
    out["reuse-relaunch"] = scenario(spark, root, "reuse", "stop", merge="relaunch")
    root = tmp_path_factory.mktemp("reuse-relaunch-lazy")
    out["reuse-relaunch-lazy"] = scenario(spark, root, "reuse", "lazy", merge="relaunch",
                                          steps=LAZY_STEPS, limit=LATE_LIMIT)
    return out


@pytest.mark.parametrize("run", ["reuse-stop", "default-pause",
                                 "default-shared-pause", "reuse-defrag", "reuse-relaunch",
                                 "reuse-relaunch-lazy"])
def test_no_event_lost_or_duplicated(runs: dict[str, Any], run: str) -> None:
    acc = runs[run][0]
    assert set(acc) == {"stats-sys", "clean-kalman-sys", "clean-sys"}
    for dag, a in acc.items():
        assert a["expected"] > 0, dag
        assert (a["lost"], a["duplicated"]) == (0, 0), (dag, a)
    assert acc["clean-kalman-sys"]["window"] == [180, 300]


def test_reuse_outputs_equal_default(runs: dict[str, Any]) -> None:
    default = runs["default-pause"][1]
    for run in ("reuse-stop", "reuse-pause", "reuse-relaunch",
                "default-shared-pause"):
        assert runs[run][1] == default, run
    # the comparison is not vacuous: every sink output something in its window
    assert all(sum(c.values()) > 0 for per in default.values() for c in per.values())


def test_merge_reuses_and_unmerge_stops_only_unneeded(runs: dict[str, Any]) -> None:
    _, _, ledger, counts = runs["reuse-pause"]
    _, _, dledger, dcounts = runs["default-pause"]
    # after the three submits: Reuse runs 6 + 5 + 1 tasks, Default 6 + 6 + 4 (sources excluded)
    assert counts[2]["running_tasks"] == 12
    assert dcounts[2]["running_tasks"] == 16
    assert ledger["dags"]["clean-sys"]["reused"] == [
        "stats-sys.src", "stats-sys.parse", "clean-kalman-sys.bloom", "clean-kalman-sys.range"]
    # pause: B's kalman, slr and sink stay deployed but skip work; nothing else is touched
    assert counts[3] == {"running_tasks": 9, "paused_tasks": 3, "queries": 4,
                         "replica_tasks": 0}
    ended = sorted(t for t, i in ledger["tasks"].items() if i["end"] is not None)
    assert ended == ["clean-kalman-sys.kalman", "clean-kalman-sys.publish",
                     "clean-kalman-sys.slr"]


def test_default_runs_each_dataflows_own_sources(runs: dict[str, Any]) -> None:
    """The paper's baseline: a replay query per Default dataflow, stopped with it; shared
    sources (on request) are one replay for all, and give the same outputs (above)."""
    _, _, ledger, counts = runs["default-pause"]
    _, _, sledger, scounts = runs["default-shared-pause"]
    assert (ledger["sources"], sledger["sources"]) == ("private", "shared")
    own = {t: i["topic"] for t, i in ledger["tasks"].items() if i["kind"] == "source"}
    assert sorted(own.values()) == sorted(f"src:SYS@own:{t}" for t in own) and len(own) == 3
    assert {i["topic"] for i in sledger["tasks"].values() if i["kind"] == "source"} == {"src:SYS"}
    # after the three submits: three partial queries, and three replays or one
    assert (counts[2]["queries"], scounts[2]["queries"]) == (6, 4)
    # the removed dataflow's query and its own replay stop once it has drained
    assert (counts[-1]["queries"], scounts[-1]["queries"]) == (4, 3)
    stopped = [e["query"] for e in ledger["log"] if e["event"] == "stopped"]
    assert any(q.startswith("src") and "clean-kalman-sys" in q for q in stopped), stopped


def test_stop_hands_over_kept_tasks(runs: dict[str, Any]) -> None:
    _, _, ledger, counts = runs["reuse-stop"]
    # B's query (bloom, range, kalman, slr, sink) was replaced by one with bloom and range
    assert counts[-1] == {"running_tasks": 9, "paused_tasks": 0, "queries": 4,
                         "replica_tasks": 0}
    launches = [e for e in ledger["log"] if e["event"] == "launch"]
    assert launches[-1]["tasks"] == ["clean-kalman-sys.bloom", "clean-kalman-sys.range"]
    assert launches[-1]["cut"] == 300
    stopped = [e["query"] for e in ledger["log"] if e["event"] == "stopped"]
    assert len(stopped) == 1 and "clean-kalman-sys" in stopped[0]


def test_defragment_relaunches_running_dag_as_one_query(runs: dict[str, Any]) -> None:
    _, _, ledger, counts = runs["reuse-defrag"]
    assert counts[3] == {"running_tasks": 9, "paused_tasks": 3, "queries": 4,
                         "replica_tasks": 0}
    # after defragment: the source query and one query with the 9 live tasks, nothing paused
    assert counts[-1] == {"running_tasks": 9, "paused_tasks": 0, "queries": 2,
                         "replica_tasks": 0}
    launches = [e for e in ledger["log"] if e["event"] == "launch"]
    assert len(launches[-1]["tasks"]) == 9 and launches[-1]["cut"] == 360
    assert len([e for e in ledger["log"] if e["event"] == "stopped"]) == 3


def test_relaunch_merge_keeps_one_query_per_running_dag(runs: dict[str, Any]) -> None:
    _, _, ledger, counts = runs["reuse-relaunch"]
    # B and C each reuse tasks of the running query: it is handed over, with the new tasks, to
    # one query; removing B hands the 9 kept tasks over again (stop)
    assert [c["running_tasks"] for c in counts[:4]] == [6, 11, 12, 9]
    # (right after an op the predecessor is still draining; after the run it has stopped)
    assert counts[-1] == {"running_tasks": 9, "paused_tasks": 0, "queries": 2,
                         "replica_tasks": 0}
    launches = [e for e in ledger["log"] if e["event"] == "launch"]
    assert [len(e["tasks"]) for e in launches] == [6, 11, 12, 9]
    assert [e["cut"] for e in launches] == [120, 180, 240, 300]


def test_lazy_unmerge_pauses_until_no_live_task_is_left(runs: dict[str, Any]) -> None:
    _, outs, ledger, counts = runs["reuse-relaunch-lazy"]
    # removing B starts no query: its kalman, slr and sink are paused in the running query
    # (the query count right after an op still includes a draining hand-over predecessor)
    assert (counts[3]["running_tasks"], counts[3]["paused_tasks"]) == (9, 3)
    launches = [e for e in ledger["log"] if e["event"] == "launch"]
    assert [e["cut"] for e in launches] == [120, 180, 240]
    # removing A, then C: nothing is live any more, so the query drains and is stopped
    assert (counts[4]["running_tasks"], counts[4]["paused_tasks"]) == (4, 8)
    assert counts[-1] == {"running_tasks": 0, "paused_tasks": 0, "queries": 1,
                         "replica_tasks": 0}
    stopped = {e["query"] for e in ledger["log"] if e["event"] == "stopped"}
    assert launches[-1]["query"] in stopped
    # B's outputs in its window are those of Default
    assert outs["clean-kalman-sys"] == runs["default-pause"][1]["clean-kalman-sys"]


def test_restart_resumes_task_state(spark: Any, tmp_path: Path) -> None:
    """Kill a stateful partial query mid-stream and restart it from its checkpoint with a fresh
    handler: the sink outputs still equal the reference exactly (state resumed, no replay loss
    or duplicate)."""
    flows = riot_flows("stats-sys")
    limit = 240
    rt = Runtime(spark, RunSpec.of(merge="partial", root=tmp_path, rate=RATE, trigger_s=1.0,
                                   limit=limit),
                 t0_ms=int(time.time() * 1000) + 500)
    try:
        rt.hold(100)
        rt.start_sources(["SYS"])
        rt.submit(flows["stats-sys"], at=100)
        rt.hold(None)
        q = next(n for n, qi in rt.queries.items() if qi.kind == "partial")
        deadline = time.time() + 60
        while rt.qhw(q) <= 130 and time.time() < deadline:  # it builds state before the kill
            rt.poll()
            time.sleep(0.1)
        assert rt.qhw(q) > 130
        rt.restart(q)
        rt.wait_processed(limit - 1, timeout_s=90)
        # restarted once its input is all read, it runs no batch again: what it processed
        # must stay known (it read -1 once, and a wait for it stalled on a loaded machine)
        rt.restart(q)
        rt.wait_processed(limit - 1, timeout_s=20)
        ledger = rt.ledger()
    finally:
        rt.close()
    acc = account(tmp_path, ledger, limit)["stats-sys"]
    assert acc["expected"] > 0
    assert (acc["lost"], acc["duplicated"]) == (0, 0), acc
    assert [e["event"] for e in ledger["log"]].count("restart") == 2


def test_warm_state_guarantee(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    """etl-annotate-sys joins mid-stream and reuses etl-sys's stateful Interpolation and Join.

    Guarantee: under Reuse its outputs are the reference execution's with those tasks warm (they
    started at etl-sys's join point, 160); under Default, with all its tasks cold at its own join
    point (240). Both are checked exactly, and the two differ (in the reference execution most
    outputs do: test_accounting.py), so a Reuse run with the reused tasks cold would fail.
    """
    steps = [("submit", "etl-sys", 160), ("submit", "etl-annotate-sys", 240)]
    res = {}
    for mode in ("reuse", "default"):
        acc, outs, ledger, _ = scenario(spark, tmp_path_factory.mktemp(mode), mode, "pause",
                                        steps=steps, limit=320)
        for dag, a in acc.items():
            assert a["expected"] > 0 and (a["lost"], a["duplicated"]) == (0, 0), (mode, dag, a)
        res[mode] = (outs, ledger)
    reuse_led = res["reuse"][1]
    interp = [t for t, i in reuse_led["tasks"].items() if i["type"] == "Interpolation"]
    assert [reuse_led["tasks"][t]["start"] for t in interp] == [160]  # warm: one, from 160
    assert res["reuse"][0]["etl-sys"] == res["default"][0]["etl-sys"]
    warm = res["reuse"][0]["etl-annotate-sys"]["publish"]
    cold = res["default"][0]["etl-annotate-sys"]["publish"]
    assert sum(warm.values()) == sum(cold.values()) > 0  # as many outputs, different ones:
    assert warm != cold, "warm and cold outputs are equal: the exact checks cannot tell them apart"


@pytest.mark.parametrize("mode", ["reuse"])
def test_resubmitted_dag_is_a_new_incarnation(spark: Any, tmp_path: Path, mode: str) -> None:
    """A random walk may submit a DAG again after removing it: its second run gets its own
    window and fresh ids for the tasks the manager starts again, and both windows are
    accounted exactly. (Default's incarnations are plain fresh prefixes, checked without
    Spark in tests/runtime/engines/shared/test_deploy.py; the live runs of random walks also resubmit under Default.)"""
    steps = [("submit", "stats-sys", 100), ("submit", "clean-kalman-sys", 140),
             ("remove", "clean-kalman-sys", 200), ("submit", "clean-kalman-sys", 260)]
    acc, _, ledger, _ = scenario(spark, tmp_path, mode, "pause", steps=steps, limit=340)
    assert set(acc) == {"stats-sys", "clean-kalman-sys", "clean-kalman-sys~2"}
    assert acc["clean-kalman-sys"]["window"] == [140, 200]
    assert acc["clean-kalman-sys~2"]["window"] == [260, 340]
    for dag, a in acc.items():
        assert a["expected"] > 0, dag
        assert (a["lost"], a["duplicated"]) == (0, 0), (dag, a)
    first = set(ledger["dags"]["clean-kalman-sys"]["sinks"].values())
    second = set(ledger["dags"]["clean-kalman-sys~2"]["sinks"].values())
    assert first.isdisjoint(second)

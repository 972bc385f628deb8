"""Blast radius (reuse.analysis.blast, reuse blast): small scenarios worked out by hand, the model's
properties over the RIoT SEQ trace, and bad input as one clean line."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from reuse.analysis.blast import (
    BLAST_COLUMNS,
    Placement,
    apps_placement,
    blast_radius,
    blast_step,
    blast_trace,
    default_placement,
    ksafe_placement,
    lost,
    reuse_placement,
    snapshot,
)
from reuse.cli import main
from reuse.core.dataflow import Dataflow, dump_dataflow, parse_dataflow
from reuse.core.errors import ReuseError
from reuse.core.manager import Manager
from reuse.core.paths import data_dir
from reuse.core.traces import Op, dump_trace
from reuse.testing import missing
from reuse.workloads.registry import load_workload
from reuse.workloads.trace_registry import build_trace

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def chain(name: str, *types: str) -> Dataflow:
    """A pipeline ``t0 -> t1 -> ...`` of the given task types (equal prefixes are shared)."""
    ids = [f"t{i}" for i in range(len(types))]
    return parse_dataflow({"id": name,
                           "tasks": [{"id": i, "type": t, "config": {}} for i, t in zip(ids, types, strict=True)],
                           "streams": [[a, b] for a, b in zip(ids, ids[1:], strict=False)]})


def submitted(*flows: Dataflow) -> Manager:
    m = Manager()
    for f in flows:
        m.submit(f)
    return m


def test_three_identical_dataflows_by_hand() -> None:
    # Three users submit the same 3-task pipeline; E = 2. Default: three 3-task units go to
    # executors 0, 1, 0, so losing executor 0 cuts off 2. Reuse: one running DAG of 3 tasks
    # serving all three, on executor 0: 3. k-safe K=1 U=2: every task has 3 users, so each gets
    # a replica on executor 1 and no single failure cuts anyone off, for 3 extra replicas.
    state = snapshot(submitted(*(chain(d, "SYS", "Parse", "Out") for d in "ABC")))
    s = blast_step(state, 2, 1, 2)
    assert (s.default_worst, s.reuse_worst, s.ksafe_worst) == (2, 3, 0)
    assert (s.default_mean, s.reuse_mean, s.ksafe_mean) == (1.5, 1.5, 0.0)
    assert s.replicas_extra == 3 and s.submitted == 3
    # U = 4: no task has 4 users, nothing is replicated, k-safe is Reuse
    s4 = blast_step(state, 2, 1, 4)
    assert (s4.ksafe_worst, s4.ksafe_mean, s4.replicas_extra) == (3, 1.5, 0)


def test_shared_prefix_with_own_sinks_by_hand() -> None:
    # A, B, C share SYS -> Parse and each has its own sink: 5 running tasks in one running DAG.
    # E = 2. Default: units of 3 tasks on executors 0, 1, 0 -> worst 2. Reuse: the running DAG
    # on executor 0 -> worst 3. k-safe K=1 U=2: SYS and Parse (3 users) get a replica on
    # executor 1, so through the shared part nobody loses output when executor 0 fails (0); the
    # own sinks run only beside the primary, so all three still lose output there (3).
    m = submitted(chain("A", "SYS", "Parse", "OutA"), chain("B", "SYS", "Parse", "OutB"),
                  chain("C", "SYS", "Parse", "OutC"))
    state = snapshot(m)
    s = blast_step(state, 2, 1, 2)
    assert (s.default_worst, s.reuse_worst, s.ksafe_worst, s.replicas_extra) == (2, 3, 3, 2)
    placement, uses = ksafe_placement(state, 2, 1, 2)
    shared = {m.running_id("A", "t0"), m.running_id("A", "t1")}
    assert all(placement.replicas[t] == (0, 1) for t in shared)
    shared_uses = {d: ts & shared for d, ts in uses.items()}
    assert blast_radius(placement, shared_uses) == (0, 0.0)
    # without k-safety the shared part alone cuts off all three
    base, _ = reuse_placement(state, 2)
    assert blast_radius(base, shared_uses) == (3, 1.5)


def test_default_balances_dataflows_and_reuse_keeps_running_dags_whole() -> None:
    # Two running DAGs: R1 (A, B share SYS) and R2 (D alone, another source). E = 2.
    m = submitted(chain("A", "SYS", "Kalman"), chain("B", "SYS", "Average"),
                  chain("D", "FIT", "Parse", "Kalman", "Out"))
    state = snapshot(m)
    default, d_uses = default_placement(state, 2)
    # Default: D (4 tasks) first onto executor 0, then A and B (2 each) onto executor 1
    assert {d: {default.replicas[t] for t in ts} for d, ts in d_uses.items()} == {
        "D": {(0,)}, "A": {(1,)}, "B": {(1,)}}
    reuse, r_uses = reuse_placement(state, 2)
    # Reuse: R1 has 3 tasks and R2 4: R2 on executor 0, R1 on executor 1
    assert lost(reuse, r_uses, 0) == {"D"} and lost(reuse, r_uses, 1) == {"A", "B"}
    assert reuse.loads() == [4, 3] and reuse.extra == 0


def test_replicas_go_to_the_least_loaded_other_executors() -> None:
    # One running DAG of 4 tasks on executor 0 (E = 3); its shared source (2 users) gets K = 2
    # replicas on executors 1 and 2; a task is lost only where all its replicas are.
    state = snapshot(submitted(chain("A", "SYS", "X"), chain("B", "SYS", "Y")))
    placement, uses = ksafe_placement(state, 3, 2, 2)
    src = next(t for t, users in state.users.items() if len(users) == 2)
    assert placement.replicas[src] == (0, 1, 2)
    assert placement.loads() == [3, 1, 1] and placement.extra == 2
    assert all(lost(placement, {"S": frozenset({src})}, e) == frozenset() for e in range(3))


def test_lost_needs_every_replica_on_the_failed_executor() -> None:
    p = Placement(3, {"a": (0, 1), "b": (2,)})
    uses = {"X": frozenset("a"), "Y": frozenset("ab")}
    assert [sorted(lost(p, uses, e)) for e in range(3)] == [[], [], ["Y"]]
    assert blast_radius(p, uses) == (1, pytest.approx(1 / 3))


def test_empty_system_loses_nothing() -> None:
    s = blast_step(snapshot(Manager()), 3, 1, 2)
    assert (s.submitted, s.default_worst, s.reuse_mean, s.ksafe_worst, s.replicas_extra) == \
        (0, 0, 0.0, 0, 0)


@pytest.mark.parametrize(("executors", "k", "users", "match"), [
    (2, 2, 2, "K=2 needs K[+]1=3 distinct executors for each replicated task, but there are "
              "only 2"),
    (1, 1, 2, "K=1 needs K[+]1=2 distinct executors"),
    (0, 0, 2, "executors must be an integer >= 1, got 0"),
    (3, -1, 2, "K must be an integer >= 0, got -1"),
    (3, 1, 0, "min users U must be an integer >= 1, got 0"),
])
def test_bad_parameters_are_one_line(executors: int, k: int, users: int, match: str) -> None:
    with pytest.raises(ReuseError, match=match) as info:
        blast_trace({}, [], executors, k, users)
    assert "\n" not in str(info.value)


# --- the real workloads ---------------------------------------------------------------------

needs_data = pytest.mark.skipif(not (data_dir() / "riotbench").is_dir(),
                                reason=missing("data", "data/ not set up (run scripts/setup.sh)"))


@needs_data
@pytest.mark.parametrize(("executors", "k", "users"), [(2, 1, 2), (4, 1, 2), (4, 3, 2), (5, 2, 3)])
def test_riot_seq_properties(executors: int, k: int, users: int) -> None:
    trace = build_trace("riot", "seq", load_workload("riot"))
    steps = blast_trace(trace.flows, trace.ops, executors, k, users, check=False)
    m = Manager()
    for s, op in zip(steps, trace.ops, strict=True):
        m.submit(trace.flows[op.dag]) if op.op == "submit" else m.remove(op.dag)
        n = len(m.submitted)
        assert s.submitted == n
        # every dataflow lives on exactly one executor under Default and Reuse
        assert s.default_mean == pytest.approx(n / executors)
        assert s.reuse_mean == pytest.approx(n / executors)
        # one executor holds at least the average, at most everything
        for worst in (s.default_worst, s.reuse_worst):
            assert n / executors <= worst <= n
        # replication only adds replicas to Reuse's placement: it never cuts off more
        assert s.ksafe_worst <= s.reuse_worst and s.ksafe_mean <= s.reuse_mean
        # K extra instances of each task used by >= U dataflows
        replicated = sum(1 for c in m.reuse_counts().values() if c >= users)
        assert s.replicas_extra == k * replicated
    assert max(s.submitted for s in steps) == 21


@needs_data
def test_riot_seq_replicating_everything_loses_nothing() -> None:
    trace = build_trace("riot", "seq", load_workload("riot"))
    steps = blast_trace(trace.flows, trace.ops, 4, 1, 1, check=False)
    assert all(s.ksafe_worst == 0 for s in steps)
    assert max(s.reuse_worst for s in steps) > max(s.default_worst for s in steps)


@needs_data
@pytest.mark.parametrize(("executors", "k", "users"), [(2, 1, 2), (4, 1, 2), (6, 2, 2), (4, 1, 1)])
def test_riot_seq_across_applications(executors: int, k: int, users: int) -> None:
    """Issue 24's placement: every running task in the home instance, each replicated one in
    K more instances, no instance sharing an executor with another; a replicated task's
    copies are on K+1 distinct executors, the rest on one; replicating everything loses
    nothing; the copies cost what they cost in one query."""
    trace = build_trace("riot", "seq", load_workload("riot"))
    m = Manager()
    for op in trace.ops:
        m.submit(trace.flows[op.dag]) if op.op == "submit" else m.remove(op.dag)
        state = snapshot(m)
        p, uses = apps_placement(state, executors, k, users)
        counts = m.reuse_counts()
        for task, held in p.replicas.items():
            want = k + 1 if counts[task] >= users else 1
            assert len(held) == want and len(set(held)) == want
            assert sorted(e % (k + 1) for e in held) == list(range(want))  # one per instance
        assert p.extra == ksafe_placement(state, executors, k, users)[0].extra
        s = blast_step(state, executors, k, users, replicas="apps")
        # a failed executor of a replica instance loses nothing: only the home's can
        assert all(not lost(p, uses, e) for e in range(executors) if e % (k + 1))
        if users == 1:
            assert s.ksafe_worst == 0


# --- the command ----------------------------------------------------------------------------


def write_inputs(tmp_path: Path) -> tuple[Path, Path]:
    dags = tmp_path / "dags"
    dags.mkdir()
    for d in "ABC":
        dump_dataflow(chain(d, "SYS", "Parse", f"Out{d}"), dags / f"{d}.json")
    trace = tmp_path / "trace.json"
    dump_trace([Op("submit", "A"), Op("submit", "B"), Op("submit", "C"), Op("remove", "B")],
               trace)
    return dags, trace


def test_blast_command_writes_one_row_per_step(tmp_path: Path) -> None:
    dags, trace = write_inputs(tmp_path)
    out = tmp_path / "blast.csv"
    r = subprocess.run([sys.executable, "-m", "reuse", "blast", "--dags", str(dags), "--trace",
                        str(trace), "--executors", "2", "--k-safe", "1",
                        "--replicate-min-users", "2", "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "4 steps" in r.stdout and "default 2, reuse 3, k-safe 3" in r.stdout
    assert out.read_text().splitlines()[0] == ",".join(BLAST_COLUMNS)
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["op"] for r in rows] == ["submit", "submit", "submit", "remove"]
    # after step 3: as in test_shared_prefix_with_own_sinks_by_hand
    assert [rows[2][c] for c in ("submitted", "default_worst", "reuse_worst", "ksafe_worst",
                                 "replicas_extra")] == ["3", "2", "3", "3", "2"]
    assert rows[0]["replicas_extra"] == "0"  # one user: nothing to replicate


@pytest.mark.parametrize(("change", "message"), [
    ({"--executors": "2", "--k-safe": "2"}, "K=2 needs K+1=3 distinct executors"),
    ({"--executors": "0"}, "executors must be an integer >= 1"),
    ({"--replicate-min-users": "0"}, "min users U must be an integer >= 1"),
    ({"--trace": "missing.json"}, "missing.json: cannot read file"),
    ({"--dags": "nowhere"}, "nowhere: is not a directory"),
    ({"--trace": "bad.json"}, "bad.json: step 2: dag 'Z': unknown DAG id"),
])
def test_blast_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     change: dict[str, str], message: str) -> None:
    dags, trace = write_inputs(tmp_path)
    (tmp_path / "bad.json").write_text(json.dumps({"ops": [{"op": "submit", "dag": "A"},
                                                           {"op": "submit", "dag": "Z"}]}))
    args = {"--dags": str(dags), "--trace": str(trace), "--out": str(tmp_path / "o.csv"),
            "--executors": "3"}
    args |= {k: str(tmp_path / v) if k in ("--dags", "--trace") else v
             for k, v in change.items()}
    assert main(["blast", *(x for kv in args.items() for x in kv)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("reuse: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "o.csv").exists()

"""The run accounting can say "no" (issue 21): exact counts on hand-made runs, without Spark.

Every live test trusts :mod:`reuse.runtime.accounting` to report lost and duplicated outputs,
so here each fault is made by hand in a run directory the engine could have left, and the
reports must count it exactly. The run: dataflow ``a`` (source, a task, a sink) submitted at
``seq`` 0; ``b``, the same but for its sink, submitted at 8 (it reuses ``a``'s source and task);
``a`` removed at 20; checked up to 30. Its ``ledger.json`` comes from the real planner, and its
sink records from the engine's own shard worker, written batch by batch with the engine's
writer (``sinks/<task>/<launch>-<batch>.jsonl``); each test then damages the files.

The gap computation (``gap_s``) is checked the same way on a hand-made ``batches.jsonl``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reuse.core.dataflow import Dataflow, parse_dataflow
from reuse.runtime.accounting import account, leaked_records, reference_records, replica_account
from reuse.runtime.common.execution import parents_first, record_line
from reuse.runtime.common.files import safe_name, write_json, write_records
from reuse.runtime.common.planners import DefaultPlanner, ReusePlanner
from reuse.runtime.common.sink_history import ledger_task
from reuse.runtime.engines.shared.deploy import REPLICA_MARK
from reuse.runtime.engines.shared.shard import run_shard

RATE = 10.0
UPTO = 30
OPTS = {"data_dir": "", "pi_iterations": 10, "record": "digest", "limit": None}
BATCHES = [(0, 10), (10, 20), (20, 30)]
REPLICA = f"b.out{REPLICA_MARK}1"
BAD_DIGEST = "f" * 16


def _flow(dag: str) -> Dataflow:
    """Source, one OPMW-style task (run as Viete's pi), a sink configured per dataflow."""
    return parse_dataflow({"id": dag, "tasks": [
        {"id": "src", "type": "S", "config": "source"},
        {"id": "pi", "type": "Step", "config": {}},
        {"id": "out", "type": "Sink", "config": {"topic": dag}}],
        "streams": [["src", "pi"], ["pi", "out"]]})


def _ledger() -> dict[str, Any]:
    """The run's ledger as the shared-query engine saves it (``InplaceRuntime.ledger``)."""
    pl = ReusePlanner()
    tasks: dict[str, dict[str, Any]] = {}
    dags: dict[str, dict[str, Any]] = {}
    for dag, at in (("a", 0), ("b", 8)):
        p = pl.submit(_flow(dag))
        tasks.update({t.id: ledger_task(t, at) for t in p.start})
        dags[p.instance] = {"dag": dag, "J": at, "R": None, "sinks": dict(p.sinks),
                            "tasks": [t.id for t in p.start], "reused": list(p.reused)}
    removal = pl.remove("a")
    for t in removal.stop:
        tasks[t]["end"] = 20
    dags[removal.instance]["R"] = 20
    assert dags["b"]["reused"] == ["a.src", "a.pi"] and removal.stop == ("a.out",)
    return {"mode": "reuse", "engine": "inplace", "shards": 1, "t0": 0, "rate": RATE,
            "limit": None, "data_dir": "", "opts": OPTS, "tasks": tasks, "dags": dags,
            "log": [], "k_safe": 0, "replicate_min_users": 2, "replicas": {}}


def _key(batch: int, launch: int = 1) -> str:
    """A batch's sink file name, as the shared query's handler builds it."""
    return f"{launch:06d}-{batch:09d}"


def _write(root: Path, task: str, key: str, recs: list[dict[str, Any]]) -> None:
    write_records(root / "sinks", task, key,
                  "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in recs))


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, dict[str, list[dict[str, Any]]]]:
    """A clean run directory: ``ledger.json`` and every sink's records, batch by batch, as the
    engine's shard worker computes them; with the records per task, for the tests to damage."""
    ledger = _ledger()
    write_json(tmp_path / "ledger.json", ledger)
    tasks = ledger["tasks"]
    specs = [{**tasks[t], "id": t, "record": False, "replica_of": None,
              "stream": tasks[t]["topic"].split(":", 1)[1] if tasks[t]["kind"] == "source"
              else None}
             for t in parents_first({t: i["parents"] for t, i in tasks.items()})]
    states: dict[str, Any] = {}
    recs: dict[str, list[dict[str, Any]]] = {}
    for n, (lo, hi) in enumerate(BATCHES):
        res = run_shard(specs, lo, hi, states, OPTS, t0=0, rate=RATE, now_ms=lambda: 5.0)
        states = res["states"]
        for tid, lines in res["sinks"].items():
            write_records(tmp_path / "sinks", tid, _key(n), "\n".join(lines) + "\n")
            recs.setdefault(tid, []).extend(json.loads(x) for x in lines)
    assert {t: [r["q"] for r in rs] for t, rs in recs.items()} == {
        "a.out": list(range(0, 20)), "b.out": list(range(8, 30))}
    return tmp_path, recs


def _ledger_of(root: Path, **extra: Any) -> dict[str, Any]:
    """The run's ledger read back from disk (with ``extra`` fields replaced, then saved)."""
    ledger = json.loads((root / "ledger.json").read_text(encoding="utf-8"))
    if extra:
        ledger.update(extra)
        write_json(root / "ledger.json", ledger)
    return ledger


def _edit(root: Path, task: str, q: int, change: Callable[[dict[str, Any]], list[Any]]) -> None:
    """Replace ``task``'s record of ``seq`` ``q``, in the batch file holding it, by
    ``change(record)`` (an empty list drops it)."""
    hits = 0
    for f in sorted((root / "sinks" / safe_name(task)).glob("*.jsonl")):
        recs = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines()]
        if any(r["q"] == q for r in recs):
            hits += 1
            out = [y for r in recs for y in (change(r) if r["q"] == q else [r])]
            f.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in out),
                         encoding="utf-8")
    assert hits == 1, (task, q)


def _clean(dag: str) -> dict[str, Any]:
    expected = {"a": 20, "b": 22}[dag]
    return {"expected": expected, "observed": expected, "lost": 0, "duplicated": 0,
            "window": {"a": [0, 20], "b": [8, 30]}[dag], "lost_sample": [], "lost_seqs": [],
            "duplicated_seqs": []}


def _with_replica(root: Path, recs: list[dict[str, Any]]) -> dict[str, Any]:
    """k-safety: ``b.out`` got a replica at 20 that wrote ``recs``; the ledger says so."""
    ledger = _ledger_of(root, replicas={
        REPLICA: {"of": "b.out", "level": 1, "start": 20, "end": None}})
    _write(root, REPLICA, _key(2), recs)
    return ledger


# --- account, leaked_records, replica_account ------------------------------------------------


def test_a_clean_run_accounts_zero(run: Any) -> None:
    root, recs = run
    ledger = _ledger_of(root)
    assert account(root, ledger, UPTO) == {"a": _clean("a"), "b": _clean("b")}
    assert leaked_records(root, ledger, UPTO) == {}
    ledger = _with_replica(root, [r for r in recs["b.out"] if r["q"] >= 20])
    assert account(root, ledger, UPTO) == {"a": _clean("a"), "b": _clean("b")}
    assert replica_account(root, ledger, UPTO) == {REPLICA: {
        "of": "b.out", "window": [20, 30], "expected": 10, "observed": 10, "lost": 0,
        "duplicated": 0}}


def test_one_lost_record_counts_one_lost(run: Any) -> None:
    root, _ = run
    _edit(root, "a.out", 5, lambda r: [])
    acc = account(root, _ledger_of(root), UPTO)
    assert acc["b"] == _clean("b")
    a = acc["a"]
    assert (a["expected"], a["observed"], a["lost"], a["duplicated"]) == (20, 19, 1, 0)
    assert (a["lost_seqs"], a["duplicated_seqs"]) == ([5], [])
    assert [q for q, _ in a["lost_sample"]] == [5]


def test_one_duplicated_record_counts_one_duplicated(run: Any) -> None:
    """A batch written twice under two launches' names (its sink file is not overwritten)."""
    root, recs = run
    _write(root, "b.out", _key(2, launch=2), [r for r in recs["b.out"] if r["q"] == 25])
    acc = account(root, _ledger_of(root), UPTO)
    assert acc["a"] == _clean("a")
    b = acc["b"]
    assert (b["expected"], b["observed"], b["lost"], b["duplicated"]) == (22, 23, 0, 1)
    assert (b["lost_seqs"], b["duplicated_seqs"]) == ([], [25])


def test_a_record_outside_its_window_is_a_leak_not_a_dag_output(run: Any) -> None:
    """``a.out`` kept writing after its end cut (20), ``b.out`` wrote before its join (8):
    the per-DAG accounting cuts both away, the leak check names them."""
    root, _ = run
    late = json.loads(record_line({"src": "S", "seq": 22, "ts": 2200, "value": 3.14}, 5.0))
    early = json.loads(record_line({"src": "S", "seq": 3, "ts": 300, "value": 3.14}, 5.0))
    _write(root, "a.out", _key(3), [late])
    _write(root, "b.out", _key(3), [early])
    ledger = _ledger_of(root)
    assert account(root, ledger, UPTO) == {"a": _clean("a"), "b": _clean("b")}
    assert leaked_records(root, ledger, UPTO) == {"a.out": [22], "b.out": [3]}


def test_a_wrong_digest_is_one_lost_and_one_duplicated(run: Any) -> None:
    root, _ = run
    _edit(root, "b.out", 12, lambda r: [{**r, "d": BAD_DIGEST}])
    acc = account(root, _ledger_of(root), UPTO)
    assert acc["a"] == _clean("a")
    b = acc["b"]
    assert (b["expected"], b["observed"], b["lost"], b["duplicated"]) == (22, 22, 1, 1)
    assert (b["lost_seqs"], b["duplicated_seqs"]) == ([12], [12])


@pytest.mark.parametrize("fault, replica, b_counts", [
    # started two seq early: the replica's own check sees it, the union hides it
    ("early", {"expected": 10, "observed": 12, "lost": 0, "duplicated": 2}, (22, 0, 0)),
    # seeded with a wrong state: one output differs; the dataflow reads it too
    ("digest", {"expected": 10, "observed": 10, "lost": 1, "duplicated": 1}, (23, 0, 1)),
    # died at 25: its primary still has everything
    ("dead", {"expected": 10, "observed": 5, "lost": 5, "duplicated": 0}, (22, 0, 0)),
])
def test_a_bad_replica_shows_on_its_own_window(run: Any, fault: str, replica: dict[str, int],
                                               b_counts: tuple[int, int, int]) -> None:
    root, recs = run
    rep = [r for r in recs["b.out"] if r["q"] >= 20]
    if fault == "early":
        rep = [r for r in recs["b.out"] if r["q"] >= 18]
    elif fault == "digest":
        rep = [{**r, "d": BAD_DIGEST} if r["q"] == 24 else r for r in rep]
    else:
        rep = [r for r in rep if r["q"] < 25]
    ledger = _with_replica(root, rep)
    assert replica_account(root, ledger, UPTO) == {
        REPLICA: {"of": "b.out", "window": [20, 30], **replica}}
    acc = account(root, ledger, UPTO)
    assert acc["a"] == _clean("a")
    b = acc["b"]
    assert (b["observed"], b["lost"], b["duplicated"]) == b_counts
    assert b["duplicated_seqs"] == ([24] if fault == "digest" else [])


def test_a_record_its_primary_lost_is_not_lost_while_a_replica_has_it(run: Any) -> None:
    root, recs = run
    ledger = _with_replica(root, [r for r in recs["b.out"] if r["q"] >= 20])
    _edit(root, "b.out", 27, lambda r: [])
    assert account(root, ledger, UPTO)["b"] == _clean("b")
    _edit(root, REPLICA, 27, lambda r: [])  # now no copy has it
    b = account(root, ledger, UPTO)["b"]
    assert (b["observed"], b["lost"], b["lost_seqs"]) == (21, 1, [27])
    assert replica_account(root, ledger, UPTO)[REPLICA]["lost"] == 1


def test_the_reference_keeps_reused_state_warm() -> None:
    """The premise of the live warm-state test: ``etl-annotate-sys`` joins at 240 and reuses
    ``etl-sys``'s stateful Interpolation and Join (started at 160). With them warm (Reuse) its
    outputs over ``[240, 320)`` differ from those with cold copies of its own (Default), so an
    engine that ran the reused tasks cold would fail the exact check."""
    from reuse.core.paths import riotbench_dir
    from reuse.testing import riot_flows

    flows = riot_flows("etl-sys", "etl-annotate-sys")
    opts = {**OPTS, "data_dir": str(riotbench_dir(None))}
    outs = {}
    for mode, pl in (("warm", ReusePlanner()), ("cold", DefaultPlanner())):
        tasks: dict[str, dict[str, Any]] = {}
        dags: dict[str, dict[str, Any]] = {}
        for dag, at in (("etl-sys", 160), ("etl-annotate-sys", 240)):
            p = pl.submit(flows[dag])
            tasks.update({t.id: ledger_task(t, at) for t in p.start})
            dags[p.instance] = {"dag": dag, "J": at, "R": None, "sinks": dict(p.sinks)}
        ref = reference_records({"t0": 0, "rate": 20.0, "data_dir": opts["data_dir"],
                                 "opts": opts, "tasks": tasks, "dags": dags}, 320)
        sink = dags["etl-annotate-sys"]["sinks"]["publish"]
        outs[mode] = Counter({k: n for k, n in ref[sink].items() if k[0] >= 240})
        stateful = sorted(i["start"] for i in tasks.values()
                          if i["type"] in ("Interpolation", "Join"))
        assert stateful == ([160, 160] if mode == "warm" else [160, 160, 240, 240])
    assert sum(outs["warm"].values()) == sum(outs["cold"].values()) == 80
    assert sum((outs["warm"] - outs["cold"]).values()) > 0


# --- gap_s -----------------------------------------------------------------------------------

T = 1_700_000_000_000  # a wall clock in ms


def _batch(n: int, start_ms: int, wall_s: float) -> str:
    """A ``batches.jsonl`` line as the shared query's handler writes it."""
    return json.dumps({"batch": n, "lo": 10 * n, "hi": 10 * n + 10, "version": 1,
                       "ms": start_ms, "wall_s": wall_s, "driver_cpu_s": 0.01, "events": 10,
                       "shard_cpu_s": {"0": 0.1}, "shard_exec": {"0": "driver@1"},
                       "task_cpu_s": {"a.pi": 0.1}}, separators=(",", ":")) + "\n"


def test_output_gaps_are_the_longest_pause_between_batch_completions(tmp_path: Path) -> None:
    """Batches complete at +0.5, +1.5, +2.25 s; the driver is down until one completes at
    +8 s; then +9 s. A torn last line (a killed driver) is skipped."""
    from reuse.runtime.run import _output_gaps

    (tmp_path / "batches.jsonl").write_text(
        _batch(0, T, 0.5) + _batch(1, T + 1000, 0.5) + _batch(2, T + 2000, 0.25)
        + _batch(3, T + 7000, 1.0) + _batch(4, T + 8500, 0.5) + '{"batch":5,"lo":50,"h',
        encoding="utf-8")
    rows: list[dict[str, Any]] = [
        {"step": 1, "t_start_ms": T, "t_end_ms": T + 3000, "gap_s": None},  # 0.5 -> 1.5 s
        {"step": 2, "t_start_ms": T + 3000, "t_end_ms": T + 6000, "gap_s": None},  # none in it
        {"step": 3, "t_start_ms": T + 6000, "t_end_ms": T + 9500, "gap_s": None},  # 2.25 -> 8
        {"step": 4, "t_start_ms": T + 9500, "t_end_ms": None, "gap_s": None},  # not measured
    ]
    _output_gaps(rows, tmp_path)
    assert [r["gap_s"] for r in rows] == [1.0, 3.75, 5.75, None]


def test_output_gaps_before_any_batch_and_without_a_log(tmp_path: Path) -> None:
    from reuse.runtime.run import _output_gaps

    rows: list[dict[str, Any]] = [{"step": 1, "t_start_ms": T, "t_end_ms": T + 900,
                                   "gap_s": None}]
    _output_gaps(rows, tmp_path)  # the query-per-DAG engines keep no batch log
    assert rows[0]["gap_s"] is None
    (tmp_path / "batches.jsonl").write_text(_batch(0, T + 1000, 0.5), encoding="utf-8")
    _output_gaps(rows, tmp_path)  # nothing output yet: the pause runs from the first step
    assert rows[0]["gap_s"] == 0.9

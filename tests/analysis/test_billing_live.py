"""Bills from a live run (reuse.analysis.billing_live) against a brute-force Shapley value (issue 21).

A live run directory is made by hand: ``ledger.json`` from the real planners, as the
shared-query engine saves it, and ``batches.jsonl`` with each batch's per-task CPU. The costs
each step should carry are worked out by hand in the comments; the brute force then takes only
those costs, what each dataflow needs and who is present, and averages the marginal cost over
every arrival order. It never looks at the billing code or at the ledger's images.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reuse.analysis.billing import bills
from reuse.analysis.billing_live import live_steps
from reuse.core.dataflow import Dataflow, parse_dataflow
from reuse.runtime.common.planners import DefaultPlanner, Planner, ReusePlanner
from reuse.runtime.common.sink_history import ledger_task

# A: S -> X -> sink; B and C: S -> X -> Y -> sink of their own. Reuse runs A.src, A.t0 (X) for
# all three and B.t1 (Y) for B and C.
TRACE = [("submit", "A", 0), ("submit", "B", 10), ("submit", "C", 20), ("remove", "A", 30)]


def _flow(dag: str, *types: str) -> Dataflow:
    ids = ["src", *(f"t{i}" for i in range(len(types))), "out"]
    tasks = [{"id": "src", "type": "S", "config": "source"}]
    tasks += [{"id": f"t{i}", "type": t, "config": {}} for i, t in enumerate(types)]
    tasks.append({"id": "out", "type": "Sink", "config": {"topic": dag}})
    return parse_dataflow({"id": dag, "tasks": tasks,
                           "streams": list(zip(ids, ids[1:], strict=False))})


FLOWS = {"A": _flow("A", "X"), "B": _flow("B", "X", "Y"), "C": _flow("C", "X", "Y")}


def _write_run(root: Path, planner: Planner, mode: str,
               batches: list[tuple[int, int, dict[str, float]]]) -> None:
    """``ledger.json`` and ``batches.jsonl`` as ``InplaceRuntime`` and its handler write them
    (``batches``: ``(lo, hi, task -> CPU seconds)``)."""
    tasks: dict[str, dict[str, Any]] = {}
    dags: dict[str, dict[str, Any]] = {}
    log: list[dict[str, Any]] = [{"event": "launch", "query": "reuse-shared", "shards": 2,
                                  "ms": 1.0}]
    for op, dag, cut in TRACE:
        if op == "submit":
            p = planner.submit(FLOWS[dag])
            tasks.update({t.id: ledger_task(t, cut) for t in p.start})
            dags[p.instance] = {"dag": dag, "J": cut, "R": None, "sinks": dict(p.sinks),
                                "tasks": [t.id for t in p.start], "reused": list(p.reused)}
            log.append({"event": "submit", "dag": dag, "J": cut, "started": len(p.start),
                        "reused": len(p.reused), "actions": [], "s": 0.01, "ms": 2.0})
        else:
            r = planner.remove(dag)
            for t in r.stop:
                tasks[t]["end"] = cut
            dags[r.instance]["R"] = cut
            log.append({"event": "remove", "dag": dag, "R": cut, "stopped": len(r.stop),
                        "actions": [], "s": 0.01, "ms": 3.0})
    ledger = {"mode": mode, "unmerge": "free", "merge": "inplace", "engine": "inplace",
              "shards": 2, "t0": 0, "rate": 10.0, "limit": None, "data_dir": "",
              "opts": {}, "tasks": tasks, "dags": dags, "log": log, "k_safe": 0,
              "replicate_min_users": 2, "replicas": {}}
    (root / "ledger.json").write_text(json.dumps(ledger), encoding="utf-8")
    with open(root / "batches.jsonl", "w", encoding="utf-8") as fh:
        for n, (lo, hi, cpu) in enumerate(batches):
            fh.write(json.dumps({"batch": n, "lo": lo, "hi": hi, "version": n, "ms": 1000 * n,
                                 "wall_s": 0.5, "driver_cpu_s": 0.01, "events": hi - lo,
                                 "shard_cpu_s": {"0": sum(cpu.values())}, "shard_exec": {},
                                 "task_cpu_s": cpu}, separators=(",", ":")) + "\n")


def brute_shapley(players: frozenset[str], needs: Mapping[str, set[str]],
                  cost: Mapping[str, float]) -> dict[str, float]:
    """The Shapley value by its definition, for the game ``v(S)`` = the summed cost of the
    items any dataflow of ``S`` needs: the mean marginal cost over all arrival orders."""
    def v(group: set[str]) -> float:
        return sum(cost[x] for x in set().union(*(needs[p] for p in group)) if x in cost)

    orders = list(itertools.permutations(sorted(players)))
    total = dict.fromkeys(players, 0.0)
    for order in orders:
        for i, p in enumerate(order):
            total[p] += v(set(order[:i + 1])) - v(set(order[:i]))
    return {p: x / len(orders) for p, x in total.items()}


def _check(run: Path, present: list[set[str]], needs: Mapping[str, set[str]],
           costs: list[dict[str, float]]) -> None:
    """``live_steps`` charges the hand-computed costs, and the bill of every step is the
    brute-force Shapley value of that step's game."""
    steps = live_steps(run)
    assert [s.step for s in steps] == [1, 2, 3, 4]
    assert [set(s.present) for s in steps] == present
    for s, want in zip(steps, costs, strict=True):
        got = {c.item: c.cost for c in s.charges}
        assert got.keys() == want.keys(), s.step
        assert all(math.isclose(got[x], want[x], rel_tol=1e-12) for x in want), (s.step, got)
    per_dag = {b.dag: b.per_step for b in bills(steps, "shapley")}
    for k, (s, cost) in enumerate(zip(steps, costs, strict=True)):
        expected = brute_shapley(frozenset(present[k]), needs, cost)
        got = {d: per_dag[d][s.step] for d in present[k]}
        assert got.keys() == expected.keys()
        assert all(math.isclose(got[d], expected[d], rel_tol=1e-12, abs_tol=1e-12)
                   for d in expected), (s.step, got, expected)


PRESENT = [{"A"}, {"A", "B"}, {"A", "B", "C"}, {"B", "C"}]


def test_reuse_run_bills_are_the_brute_force_shapley_value(tmp_path: Path) -> None:
    """Batches of uneven size, two across a cut; A.out ends at 30 and C.out starts at 20
    inside a batch, so each takes only the ``seq`` of its own window."""
    batches = [
        (0, 10, {"A.src": 1.0, "A.t0": 2.0, "A.out": 0.5}),
        (10, 15, {"A.src": 0.5, "A.t0": 1.0, "A.out": 0.25, "B.t1": 0.75, "B.out": 0.25}),
        (15, 25, {"A.src": 1.0, "A.t0": 2.0, "A.out": 0.5, "B.t1": 1.5, "B.out": 0.5,
                  "C.out": 0.4}),
        (25, 35, {"A.src": 1.0, "A.t0": 2.0, "A.out": 0.2, "B.t1": 1.0, "B.out": 0.6,
                  "C.out": 0.8}),
        (35, 40, {"A.src": 0.5, "A.t0": 1.0, "B.t1": 0.5, "B.out": 0.3, "C.out": 0.4}),
    ]
    _write_run(tmp_path, ReusePlanner(), "reuse", batches)
    needs = {"A": {"A.src", "A.t0", "A.out"}, "B": {"A.src", "A.t0", "B.t1", "B.out"},
             "C": {"A.src", "A.t0", "B.t1", "C.out"}}
    costs = [
        # [0, 10): batch 0
        {"A.src": 1.0, "A.t0": 2.0, "A.out": 0.5},
        # [10, 20): batch 1, and half of batch 2 (seq 15..19 of 15..24)
        {"A.src": 0.5 + 0.5, "A.t0": 1.0 + 1.0, "A.out": 0.25 + 0.25, "B.t1": 0.75 + 0.75,
         "B.out": 0.25 + 0.25},
        # [20, 30): half of batch 2, half of batch 3; A.out's 0.2 in batch 3 is all of seq
        # 25..29 (it ends at 30), C.out's 0.4 in batch 2 all of seq 20..24 (it starts at 20)
        {"A.src": 0.5 + 0.5, "A.t0": 1.0 + 1.0, "A.out": 0.25 + 0.2, "B.t1": 0.75 + 0.5,
         "B.out": 0.25 + 0.3, "C.out": 0.4 + 0.4},
        # [30, 40): half of batch 3, batch 4
        {"A.src": 0.5 + 0.5, "A.t0": 1.0 + 1.0, "B.t1": 0.5 + 0.5, "B.out": 0.3 + 0.3,
         "C.out": 0.4 + 0.4},
    ]
    _check(tmp_path, PRESENT, needs, costs)
    # every CPU second measured is billed to some step
    measured = sum(c for _, _, cpu in batches for c in cpu.values())
    assert math.isclose(sum(sum(c.values()) for c in costs), measured, rel_tol=1e-12)
    # the shared source and X cost C a third of theirs at step 3, half at step 4
    c = {b.dag: b for b in bills(live_steps(tmp_path))}["C"]
    assert math.isclose(c.per_step[3], 1.0 / 3 + 2.0 / 3 + 1.25 / 2 + 0.8, rel_tol=1e-12)
    assert math.isclose(c.per_step[4], 1.0 / 2 + 2.0 / 2 + 1.0 / 2 + 0.8, rel_tol=1e-12)


def test_default_run_bills_each_dataflow_its_own_tasks(tmp_path: Path) -> None:
    """Nothing shared (Default): every dataflow's Shapley share is its standalone cost."""
    own = {"A": ["A.src", "A.t0", "A.out"], "B": ["B.src", "B.t0", "B.t1", "B.out"],
           "C": ["C.src", "C.t0", "C.t1", "C.out"]}
    running = [["A"], ["A", "B"], ["A", "B", "C"], ["B", "C"]]
    batches = [(10 * k, 10 * k + 10, {t: 0.1 * (n + 1) for d in dags for n, t in
                                      enumerate(own[d])}) for k, dags in enumerate(running)]
    _write_run(tmp_path, DefaultPlanner(), "default", batches)
    needs = {d: set(ts) for d, ts in own.items()}
    costs = [cpu for _, _, cpu in batches]  # one batch per step
    _check(tmp_path, PRESENT, needs, costs)
    assert {b.dag: round(b.bill, 9) for b in bills(live_steps(tmp_path))} == {
        "A": round(3 * 0.6, 9), "B": round(3 * 1.0, 9), "C": round(2 * 1.0, 9)}

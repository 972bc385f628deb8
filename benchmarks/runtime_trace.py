"""Default vs Reuse cores at every step of a live trace (Figure 3's shape), per merge policy.

Each mode replays the same seeded trace with ``reuse run``'s machinery (:func:`live_run`) in its
own Python process and JVM: ``default``; ``reuse`` (the paper's way: merges as partial DAGs,
removals paused); ``reuse-relaunch`` (merges hand the running DAG over to one query, removals
stop). Printed: the per-step table of cores, the peak-step saving against the task saving,
the steps where a Reuse variant used more cores than Default (the issue's "never above" goal),
lost/duplicated outputs, and the output latency (p99 over steps: the relaunch disruption).

Modes are :data:`~reuse.runtime.common.policy.LIVE_MODES` names; ``default`` replays every
dataflow's own sources (since 2026-11-23), ``default-shared`` feeds Default from the shared
replays, as every query-per-DAG Default did before. Each Reuse mode is judged against
``default-inplace`` on the shared query, else the first other Default mode given.

``--repeat N`` runs the modes N times, interleaved (``A B A B ...``, each run its own process and
JVM), and prints per step each mode's median cores and, per comparison, whether the Reuse mode
was above its baseline beyond the spread (``+``: its min-max range over the runs lies above the
baseline's), below it (``-``) or neither (``=``, no difference: the ranges overlap; see
:mod:`reuse.runtime.spread`); then the peak, the mean over the trace and over its removal steps
as median [min, max] with a verdict each. ``--n 0`` replays every DAG of the workload (the
paper's protocol, ``experiments/params/protocol.yaml``).

Run: ``.venv/bin/python benchmarks/runtime_trace.py --workload riot --n 8 --step-seconds 15``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from runtime_seq_peak import _child

from reuse.runtime.spread import Spread, compare, interleave, pairs

ROOT = Path(__file__).resolve().parent.parent


def flows_and_trace(args: argparse.Namespace) -> tuple[dict[str, Any], list[Any]]:
    from reuse.workloads.trace_registry import build_trace

    trace = build_trace(args.workload, args.kind, subset=args.n or None, subset_seed=args.seed,
                        walk=args.walk)
    return dict(trace.flows), list(trace.ops)


def op_effects(root: Path, trigger_s: float) -> dict[str, Any]:
    """What the ops did to outputs, from the run's ledger and sink records: for each submit,
    the time from the op to the new dataflow's first output; for each op, how far the output
    latency of the dataflows already running rose above their own median in the next 3
    triggers (a paused output shows as that excess)."""
    from statistics import median

    from reuse.runtime.accounting import observed_records
    from reuse.runtime.common.files import read_json

    led = read_json(root / "ledger.json")
    recs = {rid: observed_records(root, rid) for d in led["dags"].values()
            for rid in d["sinks"].values()}
    evs = [e for e in led["log"] if e["event"] in ("submit", "remove")]
    first, excess = [], []
    for e in evs:
        t_op = e["ms"] - 1000 * e["s"]
        if e["event"] == "submit":
            inst = [k for k, d in led["dags"].items() if d["dag"] == e["dag"] and d["J"] == e["J"]]
            outs = [r["o"] for k in inst for rid in led["dags"][k]["sinks"].values()
                    for r in recs[rid] if r["q"] >= e["J"]]
            if outs:
                first.append(round((min(outs) - t_op) / 1000 / trigger_s, 2))
        for d in led["dags"].values():
            if d["dag"] == e.get("dag"):
                continue
            rs = [r for rid in d["sinks"].values() for r in recs[rid]
                  if d["J"] <= r["q"] < (d["R"] if d["R"] is not None else 1 << 62)]
            base = [r["o"] - r["ts"] for r in rs]
            near = [r["o"] - r["ts"] for r in rs if t_op <= r["o"] <= t_op + 3000 * trigger_s]
            if base and near:
                excess.append(round((max(near) - median(base)) / 1000 / trigger_s, 2))
    return {"submit_to_first_output_triggers": first,
            "max_latency_excess_triggers": max(excess) if excess else None}


def run_mode(mode: str, args: argparse.Namespace) -> dict[str, Any]:
    from reuse.runtime.run import live_run
    from reuse.runtime.spec import RunSpec

    by_id, ops = flows_and_trace(args)
    root = Path(tempfile.mkdtemp(prefix=f"trace-{mode}-"))
    rows = live_run(by_id, ops, RunSpec.of(policy=mode, root=root,
                                           step_seconds=args.step_seconds, rate=args.rate,
                                           trigger_s=args.trigger,
                                           pi_iterations=args.pi_iterations,
                                           warmup_s=args.warmup))
    return {"rows": rows, "effects": op_effects(root, args.trigger)}


def baseline(mode: str, modes: list[str]) -> str | None:
    """The Default a Reuse mode is judged against: Default on the same engine, the shared query
    (``default-inplace``) for ``reuse-inplace``, else the first other Default mode run."""
    if "inplace" in mode and "default-inplace" in modes:
        return "default-inplace"
    return next((m for m in modes if m.startswith("default") and "inplace" not in m), None)


def peak_window(plan: list[Any]) -> tuple[int, list[int]]:
    """The peak step (most Default tasks; 0-based) and the steps its cores are averaged over:
    it and the next (one step is noisy)."""
    peak = max(range(len(plan)), key=lambda i: plan[i].default_tasks)
    return peak, [peak, min(peak + 1, len(plan) - 1)]


def repeats(args: argparse.Namespace, modes: list[str], ops: list[Any], plan: list[Any],
            compared: list[tuple[str, str]]) -> None:
    """Run the modes ``args.repeat`` times interleaved, then print per step the median cores and
    the verdict per comparison, and the peak, mean and removal-step mean with their spread."""
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    for rep, mode in interleave(modes, args.repeat):
        r = _child(mode, check=False)
        if r is not None:
            runs[mode].append({**r, "rep": rep})
    n = len(ops)
    cores = {m: [[x["cores"] for x in r["rows"]] for r in runs[m] if len(r["rows"]) == n]
             for m in modes}
    _, win = peak_window(plan)
    removes = [i for i, op in enumerate(ops) if op.op == "remove"]

    def col(m: str, i: int) -> list[float]:
        return [c[i] for c in cores[m]]

    marks = {(a, b): [compare(a, col(a, i), b, col(b, i)) for i in range(n)]
             for a, b in compared}
    print(f"\n{args.workload} {args.kind}: {len(ops)} steps of {args.step_seconds:g} s, rate "
          f"{args.rate}/s, trigger {args.trigger} s; {args.repeat} interleaved runs per mode "
          f"({', '.join(f'{m} {len(cores[m])}' for m in modes)} complete)")
    print("median cores per step; per comparison + above its baseline beyond the spread, "
          "- below, = no difference (ranges overlap), ? not decided")
    print("step op        tasks D/R " + " ".join(f"{m:>15}" for m in modes) + "  "
          + " ".join(f"{a} vs {b}" for a, b in compared))

    def sign(v: Any) -> str:
        return {"no difference": "=", "not decided": "?"}.get(
            v.outcome, "-" if v.lower == v.a else "+")

    for i, op in enumerate(ops):
        p = plan[i]
        med = [f"{Spread.of(col(m, i)).median:15.3f}" if cores[m] else f"{'-':>15}"
               for m in modes]
        print(f"{i + 1:4d} {op.op:6s} {p.default_tasks:4d}/{p.reuse_tasks:<4d}    "
              + " ".join(med) + "  " + " ".join(f"{sign(marks[c][i]):^{len(c[0]) + len(c[1]) + 4}}"
                                                  for c in compared))
    summary: dict[str, Any] = {"peak_steps": [i + 1 for i in win], "comparisons": []}

    def per_run(m: str, steps: list[int]) -> list[float]:
        return [sum(c[i] for i in steps) / len(steps) for c in cores[m]]

    for a, b in compared:
        vs = marks[a, b]
        above = [(i + 1, round(v.gap or 0.0, 3)) for i, v in enumerate(vs)
                 if v.outcome == "lower" and v.lower == b]
        below = sum(1 for v in vs if v.outcome == "lower" and v.lower == a)
        same = sum(1 for v in vs if v.outcome == "no difference")
        print(f"\n{a} vs {b}: above beyond the spread at {len(above)} of {n} steps "
              f"{above} (step, gap between the ranges); below at {below}; no difference at "
              f"{same}; not decided at {n - len(above) - below - same}")
        row: dict[str, Any] = {"a": a, "b": b, "steps_above": above, "steps_below": below,
                               "steps_no_difference": same,
                               "steps": [v.to_dict() for v in vs]}
        for name, steps in (("peak", win), ("mean over the trace", list(range(n))),
                            ("mean over the removal steps", removes)):
            if not steps:
                continue
            v = compare(a, per_run(a, steps), b, per_run(b, steps))
            row[name] = v.to_dict()
            span = (f"steps {steps[0] + 1}-{steps[-1] + 1}"
                    if steps == list(range(steps[0], steps[-1] + 1)) else f"{len(steps)} steps")
            print(f"  {name} ({span}): {v}")
        lost = sum(x["lost"] or 0 for r in runs[a] for x in r["rows"])
        dup = sum(x["duplicated"] or 0 for r in runs[a] for x in r["rows"])
        p99 = max((x["p99_latency_ms"] or 0 for r in runs[a] for x in r["rows"]), default=0)
        print(f"  {a}: lost {lost}, duplicated {dup} over its runs; worst step p99 {p99} ms")
        row.update({"lost": lost, "duplicated": dup, "max_p99_ms": p99})
        summary["comparisons"].append(row)
    if args.out:
        first = {m: runs[m][0]["rows"] for m in modes if runs[m]}
        Path(args.out).write_text(json.dumps({"args": vars(args), "rows": first,
                                              "runs": runs, "spread": summary}, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=["riot", "opmw"], default="riot")
    ap.add_argument("--kind", default="seq", help="seq, rw1 or rw2")
    ap.add_argument("--n", type=int, default=8,
                    help="seeded subset of the workload's DAGs (0: all of them)")
    ap.add_argument("--walk", type=int, default=8, help="random-walk steps (rw)")
    ap.add_argument("--step-seconds", type=float, default=15.0)
    ap.add_argument("--rate", type=float, default=10.0)
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds before step 1")
    ap.add_argument("--trigger", type=float, default=2.0)
    ap.add_argument("--pi-iterations", type=int, default=1600)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--modes", default="default,reuse,reuse-relaunch")
    ap.add_argument("--out", default=None, help="JSON result file")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per mode, interleaved A B A B ..., each a fresh JVM; prints "
                         "per-step spreads and a verdict per comparison")
    ap.add_argument("--compare", default="",
                    help="with --repeat: extra mode:baseline pairs, comma separated (e.g. "
                         "reuse-relaunch-lazy:reuse-relaunch)")
    ap.add_argument("--only-mode", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.only_mode:
        print("RESULT " + json.dumps(run_mode(args.only_mode, args)), flush=True)
        return
    from reuse.core.planner import replay

    by_id, ops = flows_and_trace(args)
    plan = replay(by_id, ops)
    modes = args.modes.split(",")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.repeat > 1:
        extra = []
        for p in filter(None, args.compare.split(",")):
            a, sep, b = p.partition(":")
            if not sep or a not in modes or b not in modes:
                ap.error(f"--compare {p!r}: give mode:baseline, both among --modes")
            extra.append((a, b))
        repeats(args, modes, ops, plan, pairs(modes, extra))
        return
    results = {m: _child(m) for m in modes}
    rows = {m: results[m]["rows"] for m in modes}
    print(f"\n{args.workload} {args.kind}: {len(by_id)} DAGs, {len(ops)} steps of "
          f"{args.step_seconds:g} s, rate {args.rate}/s, trigger {args.trigger} s")
    print("step op        tasks D/R " + " ".join(f"{m:>15}" for m in modes))
    for i, op in enumerate(ops):
        p = plan[i]
        print(f"{i + 1:4d} {op.op:6s} {p.default_tasks:4d}/{p.reuse_tasks:<4d}    "
              + " ".join(f"{rows[m][i]['cores']:15.3f}" for m in modes))
    peak, win = peak_window(plan)
    task_saving = 1 - plan[peak].reuse_tasks / plan[peak].default_tasks
    summary: dict[str, Any] = {"peak_step": peak + 1, "task_saving": round(task_saving, 3)}
    for m in modes:
        summary.setdefault("effects", {})[m] = results[m]["effects"]
        print(f"{m}: submit to first output (triggers) "
              f"{results[m]['effects']['submit_to_first_output_triggers']}; largest rise of a "
              f"running dataflow's output latency after an op "
              f"{results[m]['effects']['max_latency_excess_triggers']} triggers")
    for m in modes:
        if m.startswith("default"):
            continue
        base = baseline(m, modes)
        if base is None:
            continue
        d = rows[base]
        r = rows[m]
        dc = sum(d[i]["cores"] for i in win) / len(win)
        rc = sum(r[i]["cores"] for i in win) / len(win)
        above = [(i + 1, round(r[i]["cores"] - d[i]["cores"], 3)) for i in range(len(ops))
                 if r[i]["cores"] > d[i]["cores"]]
        saving = 1 - rc / dc
        # sources are shared replay streams in both modes: the non-source task saving
        ns = 1 - r[peak]["running_tasks"] / max(1, d[peak]["running_tasks"])
        p99 = max((x["p99_latency_ms"] or 0) for x in r)
        summary[m] = {"baseline": base, "peak_cores": round(rc, 3),
                      "default_peak_cores": round(dc, 3),
                      "core_saving": round(saving, 3),
                      "ratio": round(saving / task_saving, 3),
                      "nonsource_task_saving": round(ns, 3),
                      "ratio_nonsource": round(saving / ns, 3) if ns > 0 else None,
                      "steps_above_default": above,
                      "mean_cores": round(sum(x["cores"] for x in r) / len(r), 3),
                      "default_mean_cores": round(sum(x["cores"] for x in d) / len(d), 3),
                      "max_p99_ms": p99,
                      "default_max_p99_ms": max((x["p99_latency_ms"] or 0) for x in d),
                      "lost": sum(x["lost"] or 0 for x in r),
                      "duplicated": sum(x["duplicated"] or 0 for x in r)}
        s = summary[m]
        print(f"{m}: peak {rc:.3f} vs {base} {dc:.3f} cores: saving {saving:.1%} against "
              f"task saving {task_saving:.1%} (ratio {s['ratio']}; non-source tasks "
              f"{ns:.1%}, ratio {s['ratio_nonsource']}); mean {s['mean_cores']} "
              f"vs {s['default_mean_cores']}; above Default at {len(above)} of {len(ops)} "
              f"steps {above}; max p99 latency {p99} ms (Default "
              f"{s['default_max_p99_ms']}); lost {s['lost']}, duplicated {s['duplicated']}")
    if args.out:
        Path(args.out).write_text(json.dumps({"args": vars(args), "rows": rows,
                                              "summary": summary}, indent=1))


if __name__ == "__main__":
    sys.exit(main())

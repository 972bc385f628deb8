"""Default vs Reuse cores at every step of a live trace (Figure 3's shape), per merge policy.

Each mode replays the same seeded trace with ``reuse run``'s machinery (:func:`live_run`) in its
own Python process and JVM: ``default``; ``reuse`` (the paper's way: merges as partial DAGs,
removals paused); ``reuse-relaunch`` (merges hand the running DAG over to one query, removals
stop). Printed: the per-step table of cores, the peak-step saving against the task saving,
the steps where a Reuse variant used more cores than Default (the issue's "never above" goal),
lost/duplicated outputs, and the output latency (p99 over steps: the relaunch disruption).

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

ROOT = Path(__file__).resolve().parent.parent


def flows_and_trace(args: argparse.Namespace) -> tuple[dict[str, Any], list[Any]]:
    from reuse.trace_registry import build_trace

    trace = build_trace(args.workload, args.kind, subset=args.n or None, subset_seed=args.seed,
                        walk=args.walk)
    return dict(trace.flows), list(trace.ops)


def run_mode(mode: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    from reuse.runtime.run import LIVE_MODES, live_run

    by_id, ops = flows_and_trace(args)
    root = tempfile.mkdtemp(prefix=f"trace-{mode}-")
    return live_run(by_id, ops, root=root, **LIVE_MODES[mode], step_seconds=args.step_seconds, rate=args.rate, trigger_s=args.trigger,
                    pi_iterations=args.pi_iterations, warmup_s=args.warmup)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=["riot", "opmw"], default="riot")
    ap.add_argument("--kind", default="seq", help="seq, rw1 or rw2")
    ap.add_argument("--n", type=int, default=8, help="seeded subset of the workload's DAGs")
    ap.add_argument("--walk", type=int, default=8, help="random-walk steps (rw)")
    ap.add_argument("--step-seconds", type=float, default=15.0)
    ap.add_argument("--rate", type=float, default=10.0)
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds before step 1")
    ap.add_argument("--trigger", type=float, default=2.0)
    ap.add_argument("--pi-iterations", type=int, default=1600)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--modes", default="default,reuse,reuse-relaunch")
    ap.add_argument("--out", default=None, help="JSON result file")
    ap.add_argument("--only-mode", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.only_mode:
        print("RESULT " + json.dumps(run_mode(args.only_mode, args)), flush=True)
        return
    from reuse.planner import replay

    by_id, ops = flows_and_trace(args)
    plan = replay(by_id, ops)
    modes = args.modes.split(",")
    rows = {m: _child(m) for m in modes}
    print(f"\n{args.workload} {args.kind}: {len(by_id)} DAGs, {len(ops)} steps of "
          f"{args.step_seconds:g} s, rate {args.rate}/s, trigger {args.trigger} s")
    print("step op        tasks D/R " + " ".join(f"{m:>15}" for m in modes))
    for i, op in enumerate(ops):
        p = plan[i]
        print(f"{i + 1:4d} {op.op:6s} {p.default_tasks:4d}/{p.reuse_tasks:<4d}    "
              + " ".join(f"{rows[m][i]['cores']:15.3f}" for m in modes))
    peak = max(range(len(ops)), key=lambda i: plan[i].default_tasks)
    task_saving = 1 - plan[peak].reuse_tasks / plan[peak].default_tasks
    summary: dict[str, Any] = {"peak_step": peak + 1, "task_saving": round(task_saving, 3)}
    if "default" in rows:
        d = rows["default"]
        for m in modes:
            if m == "default":
                continue
            r = rows[m]
            # the peak as the mean of its step and the next (one 15 s step is noisy)
            win = [peak, min(peak + 1, len(ops) - 1)]
            dc = sum(d[i]["cores"] for i in win) / len(win)
            rc = sum(r[i]["cores"] for i in win) / len(win)
            above = [(i + 1, round(r[i]["cores"] - d[i]["cores"], 3)) for i in range(len(ops))
                     if r[i]["cores"] > d[i]["cores"]]
            saving = 1 - rc / dc
            # sources are shared replay streams in both modes: the non-source task saving
            ns = 1 - r[peak]["running_tasks"] / max(1, d[peak]["running_tasks"])
            p99 = max((x["p99_latency_ms"] or 0) for x in r)
            summary[m] = {"peak_cores": round(rc, 3), "default_peak_cores": round(dc, 3),
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
            print(f"{m}: peak {rc:.3f} vs Default {dc:.3f} cores: saving {saving:.1%} against "
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

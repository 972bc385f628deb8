"""The many-tenants RIoT workload (issue 25, item 5) at the planner level, and its floor.

For SEQ, RW1 and RW2 of ``riot-tenants`` (``reuse plan --match exact|semantic``, the same
replay): the running tasks at the step where Default peaks, Default / exact / semantic, the
containment rewrites made, and the task sharing ratio ``(Default - semantic) / (Default -
exact)`` ("running tasks saved"; issue 25's target is 2x at the SEQ peak). Then how the SEQ
ratio moves with the spelling knob (``respell_p``; what tenants mean stays fixed), with the
workload's size and seed, and, with ``--floor``, the floor's CPU per source ``seq`` (plain
Python, every tenant present as at the SEQ peak) for Default, exact and semantic.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/tenants.py [--tenants 100] [--seed 1]
[--floor --seqs 300] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RATES = (10, 100)


def peaks(flows: list[Any], trace: str, figures: bool = False) -> dict[str, Any]:
    """Default / exact / semantic running tasks at Default's peak, and the rewrites: the row of
    :func:`reuse.figures.tenants.peak_row` (the notebook's table), invariants not checked.
    With ``figures``, also what the notebook's Figures 2 and 4 show: the steps where semantic
    runs more tasks than exact, each policy's share of task-time served by 2+ DAGs, and what
    semantic without its containment rules runs (at the peak; steps where containment adds)."""
    import dataclasses

    from reuse.core.traces import Op
    from reuse.figures.tenants import peak_row, tenant_runs
    from reuse.figures.traces import planner_run
    from reuse.tasks.matching import SEMANTIC

    runs = tenant_runs(flows, trace, check=False)
    row = peak_row(runs)
    if figures:
        e, s = runs["exact"].records, runs["semantic"].records
        row["semantic_above_exact"] = [a.step for a, b in zip(e, s, strict=True) if b.reuse_tasks > a.reuse_tasks]
        row |= {f"reused_2plus_{m}": round(1 - r.histogram["1"], 3) for m, r in runs.items()}
        plain = planner_run("riot-tenants", trace, flows, [Op(r.op, r.dag) for r in e],
                            match=dataclasses.replace(SEMANTIC, containment=()), check=False)
        p = plain.records
        row["semantic_no_containment"] = p[row["step"] - 1].reuse_tasks
        row["containment_adds"] = [(a.step, b.reuse_tasks - a.reuse_tasks) for a, b in zip(p, s, strict=True)
                                   if b.reuse_tasks > a.reuse_tasks]
        row["no_containment_above_exact"] = sum(b.reuse_tasks > a.reuse_tasks for a, b in zip(e, p, strict=True))
    return row


def executed_at_peak(flows: list[Any]) -> dict[str, dict[str, int]]:
    """Running tasks at the SEQ peak (every tenant present), sources included, logical and
    *executed*: a predicate group (issue 25, item 4: filters of one type over the same parents,
    run in one pass by the shard, :func:`reuse.runtime.common.predicates.predicate_groups`)
    counted once, as if the whole peak ran in one shard (the most it can fold)."""
    from reuse.core.traces import seq_trace
    from reuse.runtime.common.planners import make_planner
    from reuse.runtime.common.predicates import predicate_groups

    by_id = {f.id: f for f in flows}
    out = {}
    for mode in ("default", "exact", "semantic"):
        planner = make_planner(mode != "default", "exact" if mode == "default" else mode)
        tasks: list[dict[str, Any]] = []
        for op in seq_trace(list(by_id), seed=1):
            if op.op != "submit":
                break
            tasks += [{"id": t.id, "type": t.type, "kind": t.kind, "parents": list(t.parents)}
                      for t in planner.submit(by_id[op.dag]).start]
        groups = predicate_groups(tasks)
        folded = sum(len(g.members) - 1 for g in groups)
        out[mode] = {"tasks": len(tasks), "groups": len(groups),
                     "grouped": sum(len(g.members) for g in groups),
                     "executed": len(tasks) - folded}
    return out


def load(tenants: int, seed: int, respell_p: float = 0.5) -> list[Any]:
    from reuse.core.dataflow import parse_dataflow
    from reuse.core.paths import riotbench_dir
    from reuse.workloads.tenants import build_tenants

    return [parse_dataflow(d) for d in sorted(build_tenants(
        riotbench_dir(), tenants=tenants, seed=seed, respell_p=respell_p), key=lambda d: d["id"])]


def floor(flows: list[Any], seqs: int) -> dict[str, Any]:
    from reuse.core.paths import riotbench_dir
    from reuse.runtime.floor import floor_run
    from reuse.tasks.matching import SEMANTIC

    dd = str(riotbench_dir())
    out: dict[str, Any] = {}
    for mode, shares, match in (("default", False, None), ("exact", True, None),
                                ("semantic", True, SEMANTIC)):
        floor_run(flows, shares=shares, seqs=20, start=10_000, data_dir=dd, match=match)  # warm
        r = floor_run(flows, shares=shares, seqs=seqs, data_dir=dd, match=match)
        out[mode] = {"tasks": r.tasks, "sources": r.sources, "ms_per_seq": round(r.ms_per_seq, 3),
                     "cores": {str(x): round(r.cores(x), 3) for x in RATES}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tenants", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--seqs", type=int, default=300)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    flows = load(args.tenants, args.seed)
    res: dict[str, Any] = {"tenants": args.tenants, "seed": args.seed, "traces": [],
                           "respell": [], "sizes": []}
    print("trace | step | Default | exact | semantic | rewrites (submits) | saved exact | "
          "saved semantic | ratio")
    for trace in ("seq", "rw1", "rw2"):
        r = peaks(flows, trace, figures=True)
        res["traces"].append(r)
        print(f"{trace} | {r['step']} | {r['default']} | {r['exact']} | {r['semantic']} | "
              f"{r['rewrites']} ({r['rewritten_submits']}) | {r['saved_exact']} | "
              f"{r['saved_semantic']} | {r['ratio']}", flush=True)
    for r in res["traces"]:
        above, adds = r["semantic_above_exact"], r["containment_adds"]
        print(f"{r['trace']} (Figures 2 and 4): task-time served by 2+ DAGs: exact "
              f"{r['reused_2plus_exact']:.0%}, semantic {r['reused_2plus_semantic']:.0%}; "
              f"semantic above exact at {len(above)} steps"
              + (f" ({above[0]}-{above[-1]})" if above else "")
              + f"; without containment: {r['semantic_no_containment']} at the peak, above exact"
              f" at {r['no_containment_above_exact']} steps; containment adds tasks at "
              f"{len(adds)} steps (first {adds[0][0] if adds else '-'}, at most "
              f"{max((d for _, d in adds), default=0)})", flush=True)
    ex = res["executed"] = executed_at_peak(flows)
    saved = {m: ex["default"]["executed"] - ex[m]["executed"] for m in ("exact", "semantic")}
    print("SEQ peak, predicate groups counted once: " + "; ".join(
        f"{m} {e['tasks']} tasks, {e['groups']} groups of {e['grouped']}, {e['executed']} "
        f"executed" for m, e in ex.items())
        + f"; saved exact {saved['exact']}, semantic {saved['semantic']}, ratio "
        f"{saved['semantic'] / saved['exact']:.2f}", flush=True)
    for p in (0.0, 0.25, 0.5, 0.75, 1.0):
        r = peaks(load(args.tenants, args.seed, p), "seq") | {"respell_p": p}
        res["respell"].append(r)
        print(f"respell_p {p}: SEQ peak {r['default']} / {r['exact']} / {r['semantic']}, "
              f"ratio {r['ratio']}", flush=True)
    for n in (21, 100, 300):
        for seed in (1, 2, 3):
            r = peaks(load(n, seed), "seq") | {"tenants": n, "seed": seed}
            res["sizes"].append(r)
            print(f"{n} tenants, seed {seed}: SEQ peak {r['default']} / {r['exact']} / "
                  f"{r['semantic']}, ratio {r['ratio']}", flush=True)
    if args.floor:
        res["floor"] = f = floor(flows, args.seqs)
        for mode, m in f.items():
            print(f"floor {mode}: {m['tasks']} tasks + {m['sources']} sources, "
                  f"{m['ms_per_seq']} ms CPU per seq; cores at " +
                  ", ".join(f"{x}/s {m['cores'][str(x)]}" for x in RATES), flush=True)
    if args.json:  # with its provenance: BENCHMARKS.md's table is generated from it
        from benchmarks.provenance import raw_file

        raw_file(args.json, res)


if __name__ == "__main__":
    main()

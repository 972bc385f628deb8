"""Default vs Reuse cores at the SEQ peak, live on Spark, with overhead vs task-work split.

For each mode (fresh local[2] session each): start the sources, submit every DAG of the workload
in the SEQ trace's order (seeded) with a short ramp step, let the peak settle for ``--settle``
seconds, then measure the CPU of the whole run (driver, JVM, Python workers) over ``--window``
seconds: that is ``cores``. In Reuse mode the DAGs are then all removed with pause, which
leaves every query deployed and batching with no task admitting events; the CPU over a second
window is the per-query overhead (``idle_cores``) at the peak's query count, and
``peak - idle`` is the task work. The ratio printed at the end is
``(1 - reuse/default cores) / (1 - reuse/default tasks)`` (the goal is >= 0.9).

Modes (``--order``): ``default`` (every dataflow replays its own sources, the paper's
baseline), ``default-shared`` (Default fed from the shared replays, as Reuse is: what
``default`` meant before 2026-11-23, and the runs BENCHMARKS.md records here), ``reuse`` (merge
as partial DAGs, the paper's way), ``reuse-defrag`` (then one defragmentation before measuring)
and ``reuse-relaunch`` (every merge hands the running DAG over to one query; see
``Runtime(merge="relaunch")``). Reuse is judged against the first Default mode of ``--order``.

``--repeat N`` runs the modes N times, interleaved (``A B A B ...``, each run its own process and
JVM), then prints each mode's peak cores as median [min, max], a verdict per Reuse mode against
each Default mode (:mod:`reuse.runtime.spread`: overlapping min-max ranges are *no difference*)
and the core saving's range against the task saving. The per-query overhead split (the
all-paused window) is printed for single runs only.

Run: ``.venv/bin/python benchmarks/runtime_seq_peak.py --workload riot --rate 60
--trigger 20``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from reuse.core.paths import opmw_corpus_dir, riotbench_dir
from reuse.runtime.spread import Spread, compare, interleave, pairs

ROOT = Path(__file__).resolve().parent.parent


def workload(name: str, n: int | None, only_source: str | None = None,
             keying: str = "field") -> list[Any]:
    from reuse.core.dataflow import parse_dataflow

    if name == "riot-tenants":  # issue 25's many tenants (seed 1; --n tenants, default 100)
        from reuse.workloads.tenants import build_tenants

        return [parse_dataflow(d) for d in sorted(
            build_tenants(riotbench_dir(), tenants=n or 100, seed=1), key=lambda d: d["id"])]
    if name == "riot":
        from reuse.workloads.riotbench import build_dataflows

        dags = build_dataflows(riotbench_dir(), keying=keying)
        if n:
            dags = dags[:n]
        if only_source:
            dags = [d for d in dags if d["tasks"][0]["type"] == only_source]
        return [parse_dataflow(d) for d in dags]
    from reuse.workloads.opmw import load_corpus, select

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        corpus = load_corpus(opmw_corpus_dir())
    return [parse_dataflow(d) for d in select(corpus.dataflows, n or 35)]


def window(rt: Any, meter: Any, tail: Any, seconds: float) -> dict[str, Any]:
    from reuse.runtime.measure import percentile

    tail.new_records()
    busy0 = {n: (q.handler.batches, q.handler.busy_s) for n, q in rt.queries.items()
             if q.kind == "partial" and q.handler is not None}
    c0, t0 = meter.total(by_category=True), time.time()
    end = t0 + seconds
    while time.time() < end:
        rt.poll()
        time.sleep(0.5)
    c1, t1 = meter.total(by_category=True), time.time()
    recs = tail.new_records()
    lat = [r["o"] - r["ts"] for r in recs]
    by = {k: round((c1[k] - c0.get(k, 0.0)) / (t1 - t0), 3) for k in c1}
    busy = {}
    for n, (b, s) in busy0.items():
        h = rt.queries[n].handler
        if h.batches > b:
            busy[n] = [len(rt.queries[n].tasks), round((h.busy_s - s) / (h.batches - b), 3)]
    return {"cores": round(sum(by.values()), 3), "by_process": by, "outputs": len(recs),
            "batch_wall_s": busy,
            "p50_ms": percentile(lat, 50), "p99_ms": percentile(lat, 99), **rt.counts()}


def run_mode(mode: str, flows: list[Any], args: argparse.Namespace) -> dict[str, Any]:
    from reuse.core.traces import seq_trace
    from reuse.runtime.engines.partial.engine import Runtime
    from reuse.runtime.measure import CpuMeter, SinkTail
    from reuse.runtime.session import get_session, stop_session
    from reuse.runtime.spec import RunSpec

    order = [op.dag for op in seq_trace([f.id for f in flows], seed=args.seed)
             if op.op == "submit"]
    by_id = {f.id: f for f in flows}
    spark = get_session("local[2]")
    root = Path(tempfile.mkdtemp(prefix=f"seqpeak-{mode}-"))
    meter = CpuMeter().start()
    tail = SinkTail(root)
    relaunch = mode == "reuse-relaunch"
    rt = Runtime(spark, RunSpec.of(mode=mode.split("-")[0],
                                   unmerge="stop" if relaunch else "pause",
                                   merge="relaunch" if relaunch else "partial",
                                   default_sources="shared" if mode == "default-shared" else None,
                                   root=root, rate=args.rate, trigger_s=args.trigger,
                                   pi_iterations=args.pi_iterations))
    out: dict[str, Any] = {"mode": mode}
    try:
        rt.start_sources(sorted({f.task(s).type for f in flows for s in f.sources}))
        t_ramp = time.time()
        for i, dag in enumerate(order, 1):
            rt.submit(by_id[dag])
            rt.poll()
            print(f"  {mode}: submitted {i}/{len(order)} {dag} "
                  f"({rt.counts()['running_tasks']} tasks, {time.time() - t_ramp:.0f}s)",
                  flush=True)
            time.sleep(args.ramp_step)
        if relaunch:  # the hand-overs of the last submits end before the peak is measured
            rt.wait_stopped(timeout_s=300)
        if mode == "reuse-defrag":
            t = time.time()
            d = rt.defragment()
            rt.wait_stopped(timeout_s=300)
            out["defragment"] = {"seconds": round(time.time() - t, 2), "stopped":
                                 len(d["stopped"]), "relaunched": len(d["relaunched"])}
            print(f"  {mode}: defragmented {out['defragment']}", flush=True)
        print(f"  {mode}: settling {args.settle:.0f}s, then measuring {args.window:.0f}s",
              flush=True)
        time.sleep(args.settle)
        out["peak"] = window(rt, meter, tail, args.window)
        print(f"  {mode} peak: {json.dumps(out['peak'])}", flush=True)
        if mode == "reuse" and not args.no_idle:
            for dag in order:
                rt.remove(dag)
            time.sleep(args.trigger * 2 + 2)
            out["idle"] = window(rt, meter, tail, args.window)
            print(f"  {mode} all paused: {json.dumps(out['idle'])}", flush=True)
    finally:
        meter.stop()
        rt.close()
        stop_session(spark)
    return out


def _child(mode: str, check: bool = True) -> Any:
    """Run one mode in its own Python process (its own JVM), so neither mode inherits the
    other's JIT state, threads or garbage. A failed run ends the benchmark, or with ``check``
    false is reported and gives ``None`` (a repetition among others)."""
    from children import run_child

    code, result = run_child([sys.executable, *sys.argv, "--only-mode", mode])
    if code != 0 or result is None:
        if check:
            raise SystemExit(f"{mode} run failed (exit {code})")
        print(f"  {mode} run failed (exit {code})", flush=True)
        return None
    return result


def report_repeats(runs: dict[str, list[dict[str, Any]]], repeat: int, workload: str,
                   task_saving: float, nonsource_saving: float) -> dict[str, Any]:
    """Print (and return) each mode's peak cores over the repetitions as median [min, max], a
    verdict per Reuse mode against each Default mode, and the core saving's range."""
    cores = {m: [r["peak"]["cores"] for r in rs] for m, rs in runs.items()}
    out: dict[str, Any] = {"modes": {}, "verdicts": []}
    print(f"SEQ peak {workload}: {repeat} interleaved runs per mode; peak cores median "
          f"[min, max]")
    for m, rs in runs.items():
        if not rs:
            print(f"  {m:>15}: no run succeeded")
            continue
        s = Spread.of(cores[m])
        queries = sorted({r["peak"]["queries"] for r in rs})
        out["modes"][m] = {**s.to_dict(), "runs": repeat, "queries": queries}
        print(f"  {m:>15}: {s} cores in {s.n} of {repeat} runs, "
              f"{'/'.join(map(str, queries))} queries")
    for a, b in pairs(list(runs)):
        v = compare(a, cores[a], b, cores[b])
        row = v.to_dict()
        print(f"  {v}")
        if v.spread_a is not None and v.spread_b is not None:
            r, d = v.spread_a, v.spread_b
            sv = (1 - r.median / d.median, 1 - r.hi / d.lo, 1 - r.lo / d.hi)
            row["core_saving"] = {"median": sv[0], "min": sv[1], "max": sv[2]}
            print(f"    core saving {sv[0]:.1%} [{sv[1]:.1%}, {sv[2]:.1%}] against task saving "
                  f"{task_saving:.1%}: ratio {sv[0] / task_saving:.3f} [{sv[1] / task_saving:.3f}"
                  f", {sv[2] / task_saving:.3f}]; to the non-source task saving "
                  f"{nonsource_saving:.1%}: {sv[0] / nonsource_saving:.3f} "
                  f"[{sv[1] / nonsource_saving:.3f}, {sv[2] / nonsource_saving:.3f}]")
        out["verdicts"].append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=["riot", "opmw"], default="riot")
    ap.add_argument("--n", type=int, default=None, help="first N RIoT / seeded N OPMW DAGs")
    ap.add_argument("--rate", type=float, default=60.0)
    ap.add_argument("--trigger", type=float, default=20.0)
    ap.add_argument("--pi-iterations", type=int, default=1600)
    ap.add_argument("--ramp-step", type=float, default=2.0)
    ap.add_argument("--settle", type=float, default=45.0)
    ap.add_argument("--window", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--source", default=None, help="RIoT: only the DAGs on this source")
    ap.add_argument("--no-idle", action="store_true", help="skip the all-paused window")
    ap.add_argument("--out", default=None, help="JSON result file")
    ap.add_argument("--only-mode", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--order", default="default,reuse", help="modes, in run order")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per mode, interleaved A B A B ..., each a fresh JVM; prints "
                         "median [min, max] and a verdict per comparison")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    from reuse.core.manager import Manager

    flows = workload(args.workload, args.n, args.source)
    if args.only_mode:  # child process: one mode in a fresh JVM, result as the last line
        print("RESULT " + json.dumps(run_mode(args.only_mode, flows, args)), flush=True)
        return
    m = Manager()
    for f in flows:
        m.submit(f)
    default_tasks, reuse_tasks = m.default_task_count, m.task_count
    from reuse.runtime.common.execution import task_kind

    # sources are shared replay streams in both modes here, so the CPU-relevant task saving is
    # the one over non-source tasks (both are printed)
    d_ns = sum(1 for f in flows for t in f.tasks if task_kind(t.type, t.config) != "source")
    r_ns = sum(1 for t in m.running_tasks() if task_kind(t.type, t.config) != "source")
    print(f"{args.workload}: {len(flows)} DAGs, tasks default {default_tasks} -> reuse "
          f"{reuse_tasks} ({1 - reuse_tasks / default_tasks:.1%} fewer; non-source {d_ns} -> "
          f"{r_ns}, {1 - r_ns / d_ns:.1%} fewer); rate {args.rate}/s, "
          f"trigger {args.trigger}s", flush=True)
    res = {"args": vars(args), "default_tasks": default_tasks, "reuse_tasks": reuse_tasks,
           "default_nonsource_tasks": d_ns, "reuse_nonsource_tasks": r_ns}
    order = args.order.split(",")
    base = next((m for m in order if m.startswith("default")), None)
    if args.repeat > 1:
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in order}
        for rep, mode in interleave(order, args.repeat):
            r = _child(mode, check=False)
            if r is not None:
                runs[mode].append({**r, "rep": rep})
        res["runs"] = runs
        res["spread"] = report_repeats(runs, args.repeat, args.workload,
                                       1 - reuse_tasks / default_tasks, 1 - r_ns / d_ns)
        if args.out:
            Path(args.out).write_text(json.dumps(res, indent=1))
        return
    for mode in order:
        res[mode] = _child(mode)
    for mode in [m for m in res if m.startswith("reuse-") and base is not None]:
        dm, rm = res[base]["peak"]["cores"], res[mode]["peak"]["cores"]
        print(f"SEQ peak {args.workload}: {mode} {rm} cores ({res[mode]['peak']['queries']} "
              f"queries) vs {base} {dm}: core saving {1 - rm / dm:.1%}, ratio to task "
              f"saving {(1 - rm / dm) / (1 - reuse_tasks / default_tasks):.3f} (to non-source "
              f"task saving {(1 - rm / dm) / (1 - r_ns / d_ns):.3f})")
    if "reuse" not in res or base is None:  # the overhead split needs the merge-only Reuse run
        if args.out:
            Path(args.out).write_text(json.dumps(res, indent=1))
        return
    d, r = res[base]["peak"]["cores"], res["reuse"]["peak"]["cores"]
    task_saving = 1 - reuse_tasks / default_tasks
    core_saving = 1 - r / d
    idle = res["reuse"].get("idle", {"cores": float("nan"), "queries": 1})
    per_query = idle["cores"] / max(1, idle["queries"])
    res["summary"] = {
        "default_cores": d, "reuse_cores": r, "core_saving": round(core_saving, 3),
        "task_saving": round(task_saving, 3), "ratio": round(core_saving / task_saving, 3),
        "per_query_overhead_cores": round(per_query, 4),
        "default_overhead_cores": round(per_query * res[base]["peak"]["queries"], 3),
        "reuse_overhead_cores": round(per_query * res["reuse"]["peak"]["queries"], 3),
    }
    s = res["summary"]
    print(f"SEQ peak {args.workload}: {base} {d} cores ({res[base]['peak']['queries']} "
          f"queries), Reuse {r} cores ({res['reuse']['peak']['queries']} queries); core "
          f"saving {core_saving:.1%} vs task saving {task_saving:.1%}: ratio {s['ratio']}; "
          f"per-query overhead {per_query:.3f} cores -> overhead Default "
          f"{s['default_overhead_cores']}, Reuse {s['reuse_overhead_cores']} cores")
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()

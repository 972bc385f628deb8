"""The cost curve: cores, latency and backlog at the SEQ peak, per live mode and source rate.

For each (mode, rate) cell, in its own Python process and JVM: start a local[2] session, submit
every DAG of the workload in the SEQ trace's order (the query-per-DAG engines with a short ramp,
since each submit starts a query), let the peak settle, then measure over ``--window`` seconds:

- ``cores``: CPU of the whole run (driver, JVM, Python workers) / wall seconds;
- ``p50_ms`` / ``p99_ms``: source-to-sink latency of the sink records written in the window;
- ``backlog``: source ``seq`` emitted but not yet processed by the slowest query, at the start
  and the end of the window. A rate is *sustained* when the backlog does not grow by more than
  two triggers' worth over the window and p99 latency stays under 5 s (or 2.5 triggers, when
  ``--trigger`` is longer than 2 s: a record waits up to one trigger for its batch).

A mode may carry k-safety (issue 13): ``reuse-inplace+k1u2`` is ``reuse-inplace`` with
``k_safe=1, replicate_min_users=2`` (replicas of every task used by at least two dataflows);
``+k1u1`` replicates every task. ``replica_tasks`` counts the replicas at the peak.
``reuse-inplace/split`` runs every running DAG split over the shards (issue 22, ``--split``).
``reuse-inplace+k1u2/apps`` runs K+1 engine instances replicated across applications (issue
24, ``--replicas apps``): each its own driver and Spark application, on ``local[N/(K+1)]``.
Issue 35: ``reuse-inplace/per-event`` runs the shared query's shards one event at a time (the
default is columnar), ``reuse-inplace/budget10`` paces its replayed sources with a 10 s latency
budget (``--latency-budget``; a batch when 1,000 seq wait or the oldest nears 10 s). With a
budget, a rate counts as sustained against the budget: a backlog growing by at most two
budgets' worth, and p99 latency under 1.25 budgets plus a trigger. ``reuse-inplace/trigger5``
runs with a 5 s trigger instead of ``--trigger`` (the cores-latency curve: several triggers
interleaved in one invocation).

Issue 22's scaling table: ``--master local[1]`` or ``local[2]`` (or ``spark://...``, a running
cluster), ``--keying sensor`` (RIoT's keyed tasks per sensor instead of per field), and for the
inplace engine the window's shard statistics from ``batches.jsonl``: shard CPU per ``seq``, the
balance (max/mean shard CPU) and, split, the critical path and the bytes exchanged per ``seq``.

``--max-rate`` then searches (doubling, then bisecting) the highest sustained rate of the
inplace modes. Beside every cell the floor (``benchmarks/limit.py``) gives the cores the same
work needs in one plain Python process: "x floor" is still against the per-event floor; the raw
file's ``floor`` also holds the columnar floor (issue 35), which engine costs are to be judged
against from then on.

``--repeat N`` runs the modes of each rate N times, interleaved (``A B A B ...``, every run its
own process and JVM), then prints each mode's cores as median [min, max] and a verdict per
comparison (:mod:`reuse.runtime.spread`): every Reuse mode against each Default mode on its
engine, and the ``--compare`` pairs. Two modes whose min-max ranges overlap show *no
difference*; otherwise the lower one is named, with the cores saved against the work saved
(the floor, measured once per invocation). ``--max-rate`` is not repeated.

Run: ``.venv/bin/python benchmarks/runtime_rates.py --workload riot --rates 10,100,300,1000
--modes default,reuse,reuse-relaunch-lazy,reuse-inplace,default-inplace --json out.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from reuse.runtime import SparkRuntimeError
from reuse.runtime.spread import Spread, compare, difference_range, interleave, pairs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import raw_file  # noqa: E402


def backlog(rt: Any) -> int:
    """Emitted but unprocessed source seq of the slowest query (0 when all caught up)."""
    b = rt.bound()
    if hasattr(rt, "deployment"):
        return max(0, b - rt.qhw())
    qs = [n for n, q in rt.queries.items() if q.kind == "partial" and q.status == "running"]
    return max([0] + [b - rt.qhw(n) for n in qs])


def p99_limit_ms(trigger_s: float) -> float:
    """The p99 latency a sustained rate stays under: 5 s, or 2.5 triggers if that is longer
    (2 s -> 5 s, 10 s -> 25 s)."""
    return max(5000.0, 2500.0 * trigger_s)


def split_mode(mode: str) -> tuple[str, dict[str, Any]]:
    """``reuse-inplace+k1u2`` -> (``reuse-inplace``, k-safety keywords of the shared query);
    ``reuse-inplace~semantic`` -> (``reuse-inplace``, ``{"match": "semantic"}``): Reuse merging
    by meaning (issue 25).

    >>> split_mode("reuse-inplace+k1u2")
    ('reuse-inplace', {'k_safe': 1, 'replicate_min_users': 2})
    >>> split_mode("reuse-inplace~semantic")
    ('reuse-inplace', {'match': 'semantic'})
    >>> split_mode("default-inplace/split")
    ('default-inplace', {'split': True})
    >>> split_mode("reuse-inplace+k1u2/apps")
    ('reuse-inplace', {'k_safe': 1, 'replicate_min_users': 2, 'replicas': 'apps'})
    >>> split_mode("reuse-inplace/per-event"), split_mode("default-inplace/budget10")
    (('reuse-inplace', {'columnar': False}), ('default-inplace', {'latency_budget_s': 10.0}))
    >>> split_mode("reuse-inplace/trigger5")
    ('reuse-inplace', {'trigger_s': 5.0})
    """
    mode, slash, how = mode.partition("/")
    extra: dict[str, Any] = {}
    if slash:
        if how == "split":
            extra["split"] = True
        elif how == "apps":
            extra["replicas"] = "apps"
        elif how == "per-event":
            extra["columnar"] = False
        elif how.startswith("budget"):
            extra["latency_budget_s"] = float(how.removeprefix("budget"))
        elif how.startswith("trigger"):
            extra["trigger_s"] = float(how.removeprefix("trigger"))
        else:
            raise SparkRuntimeError(f"unknown mode suffix /{how} (/split, /apps, /per-event, "
                                    "/budgetS or /triggerS)")
    mode, _, match = mode.partition("~")
    if match:
        extra["match"] = match
    base, _, ks = mode.partition("+")
    if not ks:
        return base, extra
    k, _, u = ks.lstrip("k").partition("u")
    return base, {"k_safe": int(k), "replicate_min_users": int(u or 2), **extra}


def cell(mode: str, rate: float, args: argparse.Namespace) -> dict[str, Any]:
    from runtime_seq_peak import workload

    from reuse.core.traces import seq_trace
    from reuse.runtime.common.policy import live_policy
    from reuse.runtime.engines.partial.engine import Runtime
    from reuse.runtime.engines.shared.engine import InplaceRuntime
    from reuse.runtime.measure import CpuMeter, SinkTail, percentile
    from reuse.runtime.session import get_session, stop_session
    from reuse.runtime.spec import RunSpec

    flows = workload(args.workload, args.n, keying=args.keying, only_source=args.source_only)
    base, ksafe = split_mode(mode)
    pol = live_policy(base)
    order = [op.dag for op in seq_trace([f.id for f in flows], seed=1) if op.op == "submit"]
    budget = ksafe.get("latency_budget_s")
    by_id = {f.id: f for f in flows}
    if ksafe.pop("replicas", None) == "apps":
        return apps_cell(mode, rate, args, by_id, order, pol.mode.value, ksafe)
    trigger = float(ksafe.pop("trigger_s", args.trigger))
    spark = get_session(args.master)
    root = Path(tempfile.mkdtemp(prefix=f"rates-{mode.replace('/', '-')}-"))
    meter = CpuMeter()
    if args.master.startswith("spark://"):  # the cluster's JVMs and executors count too
        from reuse.runtime.cluster import pids

        meter.add_roots(pids(args.cluster_dir).values())
    meter.start()
    tail = SinkTail(root)
    common = {"rate": rate, "trigger_s": trigger, "pi_iterations": args.pi_iterations}
    if pol.engine == "inplace":
        rt: Any = InplaceRuntime(spark, RunSpec.of(policy=pol, root=root, **common, **ksafe,
                                                   shared_disk=not args.no_shared_disk))
    else:
        rt = Runtime(spark, RunSpec.of(policy=pol, root=root,
                                       match=ksafe.get("match", "exact"), **common))
    out: dict[str, Any] = {"mode": mode, "rate": rate, "trigger_s": trigger}
    try:
        rt.start_sources(sorted({f.task(s).type for f in flows for s in f.sources}))
        t_ramp = time.time()
        for dag in order:
            rt.submit(by_id[dag])
            rt.poll()
            if pol.engine != "inplace":
                time.sleep(args.ramp_step)
        out["ramp_s"] = round(time.time() - t_ramp, 1)
        if pol.engine != "inplace":
            rt.wait_stopped(timeout_s=300)
        time.sleep(args.settle)
        tail.new_latencies()
        b0 = backlog(rt)
        c0, t0 = meter.total(by_category=True), time.time()
        while time.time() < t0 + args.window:
            rt.poll()
            time.sleep(0.5)
        c1, t1 = meter.total(by_category=True), time.time()
        b1 = backlog(rt)
        if pol.engine == "inplace":
            out["shards"] = shard_stats(root, t0 * 1000, t1 * 1000)
        n_out, lat = tail.new_latencies()
        by = {k: round((c1[k] - c0.get(k, 0.0)) / (t1 - t0), 3) for k in c1}
        p99 = percentile(lat, 99)
        grew = b1 - b0
        out.update({"cores": round(sum(by.values()), 3), "by_process": by,
                    "outputs": n_out, "p50_ms": percentile(lat, 50), "p99_ms": p99,
                    "backlog_start": b0, "backlog_end": b1, **rt.counts(),
                    "sustained": n_out > 0 and grew <= 2 * max(trigger, budget or 0) * rate
                    and p99 is not None and p99 < (p99_limit_ms(trigger) if budget is None
                                                   else 1250.0 * budget + 1000 * trigger)})
    finally:
        meter.stop()
        rt.close()
        stop_session(spark)
    return out


def apps_cell(mode: str, rate: float, args: argparse.Namespace, flows: dict[str, Any],
              order: list[str], how: str, ksafe: dict[str, Any]) -> dict[str, Any]:
    """A cell of K+1 instances replicated across applications (issue 24, ``/apps``): the same
    protocol as :func:`cell`, measured over every process of the run (the instances' drivers,
    JVMs and Python workers, their Redis, and this coordinator). Latency is sampled from the
    output streams' newest records (as :class:`SinkTail` samples the record files); the
    backlog is the slowest live instance's."""
    from reuse.runtime.apps.runs import start_apps
    from reuse.runtime.common.execution import emitted_bound
    from reuse.runtime.measure import percentile
    from reuse.runtime.spec import RunSpec

    root = Path(tempfile.mkdtemp(prefix=f"rates-{mode.replace('/', '-')}-"))
    spec = RunSpec.of(mode=how, root=root, master=args.master, rate=rate,
                      trigger_s=args.trigger, pi_iterations=args.pi_iterations,
                      replicas="apps", **{k: v for k, v in ksafe.items() if k != "replicas"})
    coord = start_apps(flows, spec,
                       workers=2 if args.master.startswith("spark://") else None)
    if args.master.startswith("spark://"):
        from reuse.runtime.cluster import pids

        coord.meter.add_roots(pids(args.cluster_dir).values())

    def backlog() -> int:
        fr = [i.frontier for i in coord.registry.live_instances(coord.dead_s)]
        return max(0, emitted_bound(coord.base.t0, rate) + 1 - min(fr)) if fr else -1

    out: dict[str, Any] = {"mode": mode, "rate": rate}
    try:
        t_ramp = time.time()
        for i, dag in enumerate(order):
            coord.propose("submit", dag, key=f"ramp-{i}")
        out["ramp_s"] = round(time.time() - t_ramp, 1)
        coord.hold(args.settle, sample=True)
        b0, n0 = backlog(), coord.consumer.count(sorted(coord.streams))
        c0, t0 = coord.meter.total(by_category=True), time.time()
        held = coord.hold(args.window, sample=True)
        arrivals, failures = held.arrivals, held.failures
        c1, t1 = coord.meter.total(by_category=True), time.time()
        b1, n1 = backlog(), coord.consumer.count(sorted(coord.streams))
        lat = [float(ms - ts) for ms, ts in arrivals if ts is not None]
        by = {k: round((c1[k] - c0.get(k, 0.0)) / (t1 - t0), 3) for k in c1}
        p99 = percentile(lat, 99)
        out.update({"cores": round(sum(by.values()), 3), "by_process": by,
                    "outputs": n1 - n0, "p50_ms": percentile(lat, 50), "p99_ms": p99,
                    "backlog_start": b0, "backlog_end": b1, **coord.counts(),
                    "queries": len(coord.live()), "failures": failures,
                    "sustained": n1 > n0 and b1 - b0 <= 2 * args.trigger * rate
                    and p99 is not None and p99 < p99_limit_ms(args.trigger)})
    finally:
        coord.close()
    return out


def shard_stats(root: Path, ms0: float, ms1: float) -> dict[str, Any]:
    """The shared query's batches that started in ``[ms0, ms1)``: shard CPU per ``seq`` (ms),
    balance (max over mean shard CPU, summed over the batches), and for a split run the
    critical path (ms per ``seq``: per stage the busiest partition, summed) and bytes
    exchanged per ``seq``; the driver's CPU per ``seq`` (ms) and the batches' wall time per
    ``seq`` (ms: what caps the rate, since batches run one at a time)."""
    from reuse.runtime.common.files import read_batches

    bs = [b for b in read_batches(root) if ms0 <= b["ms"] < ms1 and b["hi"] > b["lo"]]
    seqs = sum(b["hi"] - b["lo"] for b in bs)
    if not bs or not seqs:
        return {}
    per: dict[str, float] = {}
    for b in bs:
        for s, c in b["shard_cpu_s"].items():
            per[s] = per.get(s, 0.0) + c
    total = sum(per.values())
    out: dict[str, Any] = {
        "batches": len(bs), "seqs": seqs,
        "cpu_ms_per_seq": round(1000 * total / seqs, 4),
        "balance": round(max(per.values()) / (total / len(per)), 3) if total else None,
        "driver_ms_per_seq": round(1000 * sum(b["driver_cpu_s"] for b in bs) / seqs, 4),
        "wall_ms_per_seq": round(1000 * sum(b["wall_s"] for b in bs) / seqs, 4)}
    split = [b["split"] for b in bs if "split" in b]
    if split:
        out["critical_ms_per_seq"] = round(1000 * sum(x["critical_s"] for x in split) / seqs, 4)
        out["bytes_per_seq"] = round(sum(x["exchanged_bytes"] for x in split) / seqs)
        out["stages"] = max(x["stages"] for x in split)
    return out


def _child(mode: str, rate: float) -> dict[str, Any]:
    from children import run_child

    code, result = run_child([sys.executable, *sys.argv, "--only", f"{mode}@{rate}"])
    if code != 0 or result is None:
        return {"mode": mode, "rate": rate, "failed": True}
    return dict(result)


def show(r: dict[str, Any], floor: dict[str, Any] | None) -> None:
    run = f" (run {r['rep']})" if "rep" in r else ""
    if r.get("failed"):
        print(f"  {r['mode']:>20} @ {r['rate']:>6g}/s{run}: FAILED", flush=True)
        return
    fl = ""
    if floor:
        per_seq = floor[floor_key(r["mode"])]["ms_per_seq"] / 1000
        fl = f", floor {per_seq * r['rate']:.3f} ({r['cores'] / (per_seq * r['rate']):.1f}x)"
    print(f"  {r['mode']:>20} @ {r['rate']:>6g}/s{run}: {r['cores']:.3f} cores{fl}, "
          f"p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms, backlog {r['backlog_start']} -> "
          f"{r['backlog_end']}, {r['queries']} queries, {r.get('running_tasks')} tasks"
          + (f" + {r['replica_tasks']} replicas" if r.get("replica_tasks") else "")
          + f", sustained {r['sustained']}", flush=True)
    if r.get("shards"):
        print(f"  {'':>20}   shards: {json.dumps(r['shards'])}", flush=True)


def floor_key(mode: str) -> str:
    """Which of the floor's runs a mode's work is: ``reuse``, ``semantic`` or ``default``."""
    if mode.endswith("~semantic"):
        return "semantic"
    return "reuse" if mode.startswith("reuse") else "default"


def report(rate: float, modes: list[str], cells: list[dict[str, Any]],
           compared: list[tuple[str, str]], floor: dict[str, Any] | None,
           repeat: int) -> dict[str, Any]:
    """Print (and return) each mode's cores over the repetitions at ``rate`` as median [min,
    max], and a verdict per compared pair (:func:`reuse.runtime.spread.compare`)."""
    ok = {m: [c for c in cells if c["mode"] == m and not c.get("failed")] for m in modes}
    cores = {m: [c["cores"] for c in ok[m]] for m in modes}
    per_seq = {k: floor[k]["ms_per_seq"] / 1000 * rate for k in ("default", "reuse", "semantic")
               if k in floor} if floor else {}
    out: dict[str, Any] = {"modes": {}, "verdicts": []}
    print(f"== {rate:g}/s: {repeat} interleaved runs per mode; cores median [min, max]",
          flush=True)
    for m in modes:
        if not cores[m]:
            print(f"  {m:>20}: no run succeeded", flush=True)
            continue
        s = Spread.of(cores[m])
        sus = sum(1 for c in ok[m] if c["sustained"])
        fl = per_seq.get(floor_key(m))
        xf = (f", x floor {s.median / fl:.2f} [{s.lo / fl:.2f}, {s.hi / fl:.2f}]"
              if fl else "")
        out["modes"][m] = {**s.to_dict(), "runs": repeat, "sustained": sus,
                           "floor_cores": fl}
        print(f"  {m:>20}: {s} cores in {s.n} of {repeat} runs{xf}; sustained in {sus}",
              flush=True)
    for a, b in compared:
        v = compare(a, cores[a], b, cores[b])
        row = v.to_dict()
        print(f"  {v}", flush=True)
        work = per_seq.get(floor_key(b), 0.0) - per_seq.get(floor_key(a), 0.0)
        if v.spread_a is not None and v.spread_b is not None and work > 0:
            lo, hi = difference_range(v.spread_b, v.spread_a)
            saved = v.spread_b.median - v.spread_a.median
            row["saved"] = {"median": saved, "min": lo, "max": hi, "work_saved": work}
            print(f"    {b} - {a}: {saved:.3f} [{lo:.3f}, {hi:.3f}] cores against "
                  f"{work:.3f} of work saved (floor): {saved / work:.2f}x "
                  f"[{lo / work:.2f}, {hi / work:.2f}]", flush=True)
        out["verdicts"].append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=["riot", "opmw", "riot-tenants"], default="riot")
    ap.add_argument("--n", type=int, default=None, help="first N DAGs (riot-tenants: N tenants)")
    ap.add_argument("--rates", default="10,100,300,1000")
    ap.add_argument("--modes", default="default,reuse,reuse-relaunch-lazy,reuse-inplace,"
                                       "default-inplace")
    ap.add_argument("--skip", default="", help="mode@rate cells not to run, comma separated")
    ap.add_argument("--trigger", type=float, default=2.0)
    ap.add_argument("--pi-iterations", type=int, default=1600)
    ap.add_argument("--ramp-step", type=float, default=1.0)
    ap.add_argument("--settle", type=float, default=20.0)
    ap.add_argument("--window", type=float, default=60.0)
    ap.add_argument("--max-rate", default="", help="modes to search the highest sustained "
                                                     "rate for (e.g. reuse-inplace,default-inplace)")
    ap.add_argument("--floor-seqs", type=int, default=600)
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per cell, interleaved A B A B ... per rate, each a fresh JVM; "
                         "prints median [min, max] and a verdict per comparison")
    ap.add_argument("--compare", default="",
                    help="extra mode:baseline pairs to compare, comma separated (beside every "
                         "Reuse mode against each Default mode on its engine)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--master", default="local[2]", help="local[1], local[2] or spark://...")
    ap.add_argument("--cluster-dir", default="results/spark-cluster",
                    help="with --master spark://: the reuse cluster's directory (its PIDs)")
    ap.add_argument("--source-only", default=None, metavar="TYPE",
                    help="riot: only the dataflows on this source (SYS: 9 DAGs, one running "
                         "DAG under Reuse)")
    ap.add_argument("--keying", choices=["field", "sensor"], default="field",
                    help="RIoT: keyed stateful tasks per field (default) or per sensor")
    ap.add_argument("--no-shared-disk", action="store_true",
                    help="inplace: replay data shipped by Spark, sink records via the driver")
    ap.add_argument("--only", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.only:
        mode, rate = args.only.split("@")
        print("RESULT " + json.dumps(cell(mode, float(rate), args)), flush=True)
        return
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    extra = []
    for p in filter(None, args.compare.split(",")):
        a, sep, b = p.partition(":")
        if not sep:
            ap.error(f"--compare {p!r}: give mode:baseline")
        extra.append((a, b))
    try:  # an unknown mode in --compare fails before any run
        pairs(args.modes.split(","), extra)
    except SparkRuntimeError as exc:
        ap.error(str(exc))
    from limit import floors

    floor = floors(args.workload, args.floor_seqs, args.pi_iterations, n=args.n,
                   keying=args.keying, only_source=args.source_only,
                   semantic=any(m.endswith("~semantic") for m in args.modes.split(",")))
    print(f"{args.workload} floor: Default {floor['default']['ms_per_seq']} ms/seq, Reuse "
          f"{floor['reuse']['ms_per_seq']} ms/seq per event; columnar "
          f"{floor['default']['columnar']['ms_per_seq']} and "
          f"{floor['reuse']['columnar']['ms_per_seq']} ms/seq", flush=True)
    res: dict[str, Any] = {"args": vars(args), "floor": floor, "cells": [], "max_rate": {},
                           "spread": {}}
    skip = set(filter(None, args.skip.split(",")))
    for rate in [float(x) for x in args.rates.split(",")]:
        modes = [m for m in args.modes.split(",") if f"{m}@{rate:g}" not in skip]
        if not modes:
            continue
        cells = []
        for rep, mode in interleave(modes, args.repeat):
            r = _child(mode, rate)
            if args.repeat > 1:
                r["rep"] = rep
            cells.append(r)
            res["cells"].append(r)
            show(r, floor)
            if args.json:
                raw_file(args.json, res)
        if args.repeat > 1:
            pairs_here = pairs(modes, [p for p in extra if set(p) <= set(modes)])
            res["spread"][f"{rate:g}"] = report(rate, modes, cells, pairs_here, floor,
                                                args.repeat)
            if args.json:
                raw_file(args.json, res)
    for mode in filter(None, args.max_rate.split(",")):
        ok, bad = 0.0, None
        rate = 250.0
        probes = []
        while len(probes) < 6:
            r = _child(mode, rate)
            probes.append(r)
            show(r, floor)
            if r.get("sustained"):
                ok = rate
            else:
                bad = rate
            if bad is None:
                rate *= 2
            elif bad - ok <= max(50.0, 0.1 * ok):
                break
            else:
                rate = round((ok + bad) / 2 / 10) * 10
        res["max_rate"][mode] = {"sustained": ok, "failed_at": bad, "probes": probes}
        print(f"  {mode}: highest sustained rate {ok:g}/s (not at {bad})", flush=True)
        if args.json:
            raw_file(args.json, res)


if __name__ == "__main__":
    main()

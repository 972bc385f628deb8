"""Fault injection on the shared query: ``kill -9`` of a Python worker, of the executor JVM
(local standalone cluster) and of the driver (``reuse run`` and its JVM), each mid-trace and at
the SEQ peak.

Each fault kind is one ``reuse run`` of the workload's SEQ trace (every DAG) in its own
process, killed at two steps (default: the middle of the ramp-up and the peak). A killed
driver is followed by ``reuse run --resume``. Printed per kill: the failures the run recorded,
the longest output pause in the step (``gap_s``: time between two consecutive batch
completions, or since the last one) beside the median pause of the steps without a kill, the
time to recover (that excess), and lost / duplicated outputs of the whole run (the reference
execution).

k-safety (issue 13): ``--k-safe K --replicate-min-users U`` runs the trace with replicas, and
``--workers N`` gives the executor fault a cluster of ``N`` workers (``2 // N``
cores each, at least 1), of which one executor is killed (the replicas sit on the others). Per
kill it also prints the longest time in the killed step that a sink went without output
(:func:`reuse.runtime.measure.output_gaps`, over the sinks of the dataflows present for the
whole step), apart for sinks with replicas (their copies' union, as consumers read it) and for
the others, and the run's replicas; per run, the batches whose shards ran on distinct
executors before the first kill (anti-affinity).

Across applications (issue 24): ``--faults driver --k-safe 1 --replicas apps`` runs K+1
engine instances (``reuse run --replicas apps``) and kills the home instance's driver with its
JVM (its process group) in each kill step; the coordinator replaces it (no ``--resume``). Per
kill it prints the longest pause of every output as consumers read the de-duplicated streams
(``gap_s``), the longest pause of the replicated streams (every instance computes them) and of
the others, over the streams that had records before and after the step, and the time until
the replacement caught up (K-safety restored).

Run: ``.venv/bin/python benchmarks/runtime_faults.py [--workload riot] [--step-seconds 5]
[--faults worker,executor,driver] [--workers 2 --k-safe 1 --replicate-min-users 2]
[--json out.json]``  (about 15 minutes for RIoT at 5 s steps and three faults).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

import psutil

from reuse.runtime.common.files import read_batches, read_jsonl
from reuse.runtime.measure import executor_pids, kill_forked_workers

ROOT = Path(__file__).resolve().parent.parent
REUSE = [sys.executable, "-m", "reuse"]


def write_inputs(workload: str, d: Path) -> tuple[Path, Path, int]:
    """The workload's dataflows and its SEQ trace as files; the trace's peak step."""
    from reuse.workloads.trace_registry import build_trace

    trace = build_trace(workload, "seq")
    dags = d / "dags"
    dags.mkdir(parents=True)
    for f in trace.flows.values():
        (dags / f"{f.id}.json").write_text(json.dumps(f.to_dict()))
    path = d / "trace.json"
    path.write_text(json.dumps({"ops": [{"op": o.op, "dag": o.dag} for o in trace.ops]}))
    peak = sum(1 for o in trace.ops if o.op == "submit")  # SEQ: every submit, then removes
    return dags, path, peak


def journal_steps(root: Path) -> tuple[int, int]:
    """(operations enacted, rows written) so far, from the run journal."""
    kinds = [r.get("kind") for r in read_jsonl(root / "journal.jsonl")]
    return kinds.count("op"), kinds.count("row")



def start(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def kill(fault: str, proc: subprocess.Popen[bytes], one: bool = False) -> list[int]:
    """Inject one fault; the PIDs killed (``one``: a single executor, of several)."""
    if fault == "driver":
        group = [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        return group
    if fault == "executor":
        pids = executor_pids()
        pids = sorted(pids)[-1:] if one else pids
        for p in pids:
            os.kill(p, signal.SIGKILL)
        return pids
    # worker: every forked Python worker, for 3 s (to hit a batch)
    return kill_forked_workers(lambda: [proc.pid], 3.0, all_along=True)


def sink_gaps(root: Path, step: int) -> dict[str, float | None]:
    """Longest time in a step that a sink had no output: over replicated sinks (the union of
    their copies) and over the others; only the sinks of dataflows present the whole step."""
    from reuse.runtime.accounting import copies
    from reuse.runtime.measure import output_gaps

    ledger = json.loads((root / "ledger.json").read_text())
    from reuse.runtime.journal import load_journal

    row = next(r for r in load_journal(root).rows if int(r["step"]) == step)
    lo, hi = float(row["t_start_ms"]), float(row["t_end_ms"])
    t0, rate = float(ledger["t0"]), float(ledger["rate"])

    def ms(seq: int) -> float:
        return t0 + 1000 * seq / rate

    reps = ledger.get("replicas") or {}
    live = {rid for d in ledger["dags"].values() for rid in d["sinks"].values()
            if ms(int(d["J"])) <= lo and (d["R"] is None or ms(int(d["R"])) >= hi)}
    gaps = output_gaps(root, {rid: copies(ledger, rid) for rid in live}, lo, hi)
    with_rep = {rid for rid in live  # a replica ran beside it for the whole step
                if any(v["of"] == rid and ms(int(v["start"])) <= lo
                       and (v["end"] is None or ms(int(v["end"])) >= hi) for v in reps.values())}
    rep = [g for rid, g in gaps.items() if rid in with_rep]
    plain = [g for rid, g in gaps.items() if rid not in with_rep]
    return {"replicated_sinks": len(rep), "replicated_gap_s": max(rep, default=None),
            "other_sinks": len(plain), "other_gap_s": max(plain, default=None)}


def anti_affinity(root: Path, before_ms: float) -> tuple[int, int]:
    """(batches before ``before_ms`` whose shards all ran on distinct executors, batches with
    more than one shard then)."""
    ok = n = 0
    for b in read_batches(root):
        ex = list((b.get("shard_exec") or {}).values())
        if b["ms"] + 1000 * b["wall_s"] < before_ms and len(ex) > 1:
            n += 1
            ok += len(set(ex)) == len(ex)
    return ok, n


def rows_written(root: Path) -> int:
    """Steps an apps run has finished (its coordinator's ``rows.jsonl``)."""
    try:
        return len((root / "rows.jsonl").read_text().splitlines())
    except FileNotFoundError:
        return 0


def kill_home(root: Path) -> list[int]:
    """Kill the live home instance of an apps run: its driver's process group (its JVM and
    Python workers with it)."""
    apps = json.loads((root / "apps.json").read_text())
    pid = next(i["driver_pid"] for i in apps["instances"] if i["home"] and i["state"] == "live")
    group = [pid] + [c.pid for c in psutil.Process(pid).children(recursive=True)]
    os.killpg(pid, signal.SIGKILL)
    return group


def stream_gaps(root: Path, step: int, until_ms: float) -> dict[str, Any]:
    """Longest time that output stopped, as consumers read the streams, from the start of the
    killed step to ``until_ms`` (a few seconds after K-safety was back, so an outage that
    outlasts its step is counted whole): over every stream together (``gap_s``), over the
    replicated streams (every instance computes them) and over the others, among the streams
    with records before and after that window."""
    from reuse.runtime.control import longest_gap

    row = next(r for r in read_jsonl(root / "rows.jsonl") if r["step"] == step)
    lo, hi = float(row["t_start_ms"]), max(float(row["t_end_ms"]), until_ms)
    reps = set(row["replicated_streams"])
    streams = json.loads((root / "streams.json").read_text())["streams"]
    rep, other, every = [], [], []
    for name, st in streams.items():
        if not st["records"] or st["first_ms"] >= lo or st["last_ms"] <= hi:
            continue
        times = [t for t in st["arrivals_ms"] if lo <= t <= hi]
        every += times
        g = longest_gap(times, start_ms=lo, end_ms=hi) / 1000
        (rep if name in reps else other).append(g)
    return {"gap_s": round(longest_gap(every, start_ms=lo, end_ms=hi) / 1000, 3),
            "window_s": round((hi - lo) / 1000, 1),
            "replicated_sinks": len(rep), "replicated_gap_s": max(rep, default=None),
            "other_sinks": len(other), "other_gap_s": max(other, default=None)}


def run_fault(fault: str, dags: Path, trace: Path, work: Path, kill_steps: list[int],
              step_s: float, rate: float, workers: int = 1, k_safe: int = 0,
              min_users: int = 2, replicas: str = "shards") -> dict[str, Any]:
    if replicas == "apps":
        return run_apps_fault(dags, trace, work, kill_steps, step_s, rate, k_safe, min_users)
    tag = fault + (f"-w{workers}" if workers > 1 else "") + (
        f"-k{k_safe}u{min_users}" if k_safe else "")
    root, out = work / f"run-{tag}", work / f"{tag}.csv"
    cmd = [*REUSE, "run", "--dags", str(dags), "--trace", str(trace), "--root", str(root),
           "--out", str(out), "--step-seconds", str(step_s), "--rate", str(rate),
           "--warmup-seconds", "5", "--k-safe", str(k_safe),
           "--replicate-min-users", str(min_users)]
    cluster = None
    if fault == "executor":
        cluster = work / f"cluster-{tag}"
        port, ui = _free_port(), _free_port()
        res = subprocess.run([*REUSE, "cluster", "start", "--dir", str(cluster), "--port",
                              str(port), "--ui-port", str(ui), "--workers", str(workers),
                              "--cores", str(max(1, 2 // workers))],
                             capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"cluster start failed: {res.stderr.strip()[-300:]}")
        cmd += ["--master", json.loads(res.stdout)["url"], "--cluster-dir", str(cluster)]
    kills = []
    try:
        proc = start(cmd)
        for k in kill_steps:
            while journal_steps(root)[0] < k:
                if proc.poll() is not None:
                    raise SystemExit(f"{fault}: the run ended (status {proc.returncode}) "
                                     f"before step {k}")
                time.sleep(0.1)
            time.sleep(step_s / 3)
            t = time.time()
            pids = kill(fault, proc, one=workers > 1)
            kills.append({"step": k, "pids": len(pids), "at": t})
            print(f"  {fault}: killed {len(pids)} process(es) in step {k}", flush=True)
            if fault == "driver":
                time.sleep(1)
                proc = start([*REUSE, "run", "--resume", str(root), "--out", str(out)])
        if proc.wait() != 0:
            raise SystemExit(f"{fault}: the run failed (status {proc.returncode}); see {root}")
    finally:
        if cluster is not None:
            subprocess.run([*REUSE, "cluster", "stop", "--dir", str(cluster)],
                           capture_output=True)
    rows = list(csv.DictReader(out.open()))
    hit = {k["step"] for k in kills}
    normal = median(float(r["gap_s"]) for r in rows
                    if int(r["step"]) not in hit and r["gap_s"] not in ("", None))
    res_kills = []
    for k in kills:
        r = rows[k["step"] - 1]
        gap = float(r["gap_s"])
        res_kills.append({"step": k["step"], "killed": k["pids"],
                          "failures": int(r["failures"]), "gap_s": gap,
                          "recover_s": round(max(0.0, gap - normal), 2),
                          "replica_tasks": int(r["replica_tasks"] or 0),
                          "running_tasks": int(r["running_tasks"]),
                          **sink_gaps(root, k["step"])})
    ok, n = anti_affinity(root, min(k["at"] for k in kills) * 1000) if kills else (0, 0)
    steady = [float(r["cores"]) for r in rows if int(r["step"]) not in hit]
    return {"fault": fault, "workers": workers, "k_safe": k_safe, "min_users": min_users,
            "kills": res_kills, "normal_gap_s": normal,
            "distinct_executor_batches": ok, "multi_shard_batches": n,
            "mean_cores": round(sum(steady) / len(steady), 3) if steady else None,
            "peak_replicas": max(int(r["replica_tasks"] or 0) for r in rows),
            "lost": sum(int(r["lost"]) for r in rows),
            "duplicated": sum(int(r["duplicated"]) for r in rows),
            "failures": sum(int(r["failures"]) for r in rows), "steps": len(rows)}


def run_apps_fault(dags: Path, trace: Path, work: Path, kill_steps: list[int], step_s: float,
                   rate: float, k_safe: int, min_users: int) -> dict[str, Any]:
    """The driver kill across applications: the home instance killed in each kill step, the
    coordinator's replacement, the consumers' view."""
    tag = f"driver-apps-k{k_safe}u{min_users}"
    root, out = work / f"run-{tag}", work / f"{tag}.csv"
    cmd = [*REUSE, "run", "--dags", str(dags), "--trace", str(trace), "--root", str(root),
           "--out", str(out), "--step-seconds", str(step_s), "--rate", str(rate),
           "--warmup-seconds", "5", "--k-safe", str(k_safe), "--replicas", "apps",
           "--replicate-min-users", str(min_users)]
    kills = []
    proc = start(cmd)
    for k in kill_steps:
        while rows_written(root) < k - 1:
            if proc.poll() is not None:
                raise SystemExit(f"apps: the run ended (status {proc.returncode}) before step {k}")
            time.sleep(0.1)
        if rows_written(root) > k - 1:
            raise SystemExit(f"apps: step {k} ended before K-safety was back from the last kill")
        time.sleep(step_s / 3)
        t = time.time()
        pids = kill_home(root)
        kills.append({"step": k, "pids": len(pids), "at": t, "pid": pids[0]})
        print(f"  driver (apps): killed the home instance, {len(pids)} process(es), in step {k}",
              flush=True)
        deadline = time.time() + 120
        while time.time() < deadline:  # the next kill only once K-safety is back
            apps = json.loads((root / "apps.json").read_text())
            ev = [e for e in apps["replacements"] if e["dead_pid"] == pids[0]]
            if ev and ev[0]["restored_ms"] is not None or proc.poll() is not None:
                break
            time.sleep(0.5)
    if proc.wait() != 0:
        raise SystemExit(f"apps: the run failed (status {proc.returncode}); see {root}")
    return apps_result(root, out, kills, k_safe, min_users)


def apps_result(root: Path, out: Path, kills: list[dict[str, Any]], k_safe: int,
                min_users: int) -> dict[str, Any]:
    """An apps run's figures per kill (``kills``: step and the killed driver's PID)."""
    rows = list(csv.DictReader(out.open()))
    apps = json.loads((root / "apps.json").read_text())
    hit = {k["step"] for k in kills}
    normal = median(float(r["gap_s"]) for r in rows if int(r["step"]) not in hit)
    res_kills = []
    for k in kills:
        r = rows[k["step"] - 1]
        ev = next(e for e in apps["replacements"] if e["dead_pid"] == k["pid"])
        gaps = stream_gaps(root, k["step"], float(ev["restored_ms"] or 0) + 5000)
        res_kills.append({"step": k["step"], "killed": k["pids"],
                          "failures": int(r["failures"]),
                          "recover_s": round(max(0.0, gaps["gap_s"] - normal), 2),
                          "replica_tasks": int(r["replica_tasks"] or 0),
                          "running_tasks": int(r["running_tasks"]),
                          "replacement": ev["event"], "restored_s": ev.get("restored_s"),
                          **gaps})
    steady = [float(r["cores"]) for r in rows if int(r["step"]) not in hit]
    return {"fault": "driver", "replicas": "apps", "workers": 1, "k_safe": k_safe,
            "min_users": min_users, "kills": res_kills, "normal_gap_s": normal,
            "distinct_executor_batches": 0, "multi_shard_batches": 0,
            "mean_cores": round(sum(steady) / len(steady), 3) if steady else None,
            "peak_replicas": max(int(r["replica_tasks"] or 0) for r in rows),
            "lost": sum(int(r["lost"]) for r in rows),
            "duplicated": sum(int(r["duplicated"]) for r in rows),
            "failures": sum(int(r["failures"]) for r in rows), "steps": len(rows)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--workload", default="riot")
    p.add_argument("--step-seconds", type=float, default=5.0)
    p.add_argument("--rate", type=float, default=10.0)
    p.add_argument("--faults", default="worker,executor,driver")
    p.add_argument("--workers", type=int, default=1,
                   help="workers of the executor fault's cluster (one executor is killed)")
    p.add_argument("--k-safe", type=int, default=0)
    p.add_argument("--replicate-min-users", type=int, default=2)
    p.add_argument("--replicas", choices=["shards", "apps"], default="shards",
                   help="apps: K+1 instances (issue 24); only the driver fault")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    work = Path(tempfile.mkdtemp(prefix="reuse-faults-"))
    dags, trace, peak = write_inputs(args.workload, work)
    steps = [max(2, peak // 2), peak]
    print(f"{args.workload} SEQ, {peak} submits then removes; kills in steps {steps}; "
          f"{args.step_seconds:g} s steps at {args.rate:g} events/s; work dir {work}",
          flush=True)
    results = []
    for fault in args.faults.split(","):
        t = time.time()
        res = run_fault(fault, dags, trace, work, steps, args.step_seconds, args.rate,
                        args.workers, args.k_safe, args.replicate_min_users, args.replicas)
        res["wall_s"] = round(time.time() - t)
        results.append(res)
        print(json.dumps(res), flush=True)
    print("\n| fault | workers | k-safe | step | processes killed | failures recorded | "
          "longest output pause (s) | normal pause (s) | time to recover (s) | replicas | "
          "replicated sinks: longest gap (s) | other sinks: longest gap (s) | lost | "
          "duplicated | K-safe again after (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        ks = f"K={r['k_safe']}, U={r['min_users']}" if r["k_safe"] else "-"
        if r.get("replicas") == "apps":
            ks += ", apps"
        for k in r["kills"]:
            where = "peak" if k["step"] == peak else "mid-trace"
            rg = (f"{k['replicated_gap_s']:.1f} ({k['replicated_sinks']})"
                  if k["replicated_gap_s"] is not None else "- (0)")
            og = (f"{k['other_gap_s']:.1f} ({k['other_sinks']})"
                  if k["other_gap_s"] is not None else "- (0)")
            print(f"| {r['fault']} | {r['workers']} | {ks} | {k['step']} ({where}) | "
                  f"{k['killed']} | {k['failures']} | {k['gap_s']:.1f} | "
                  f"{r['normal_gap_s']:.1f} | {k['recover_s']:.1f} | {k['replica_tasks']} | "
                  f"{rg} | {og} | {r['lost']} | {r['duplicated']} | "
                  f"{k.get('restored_s', '-')} |")
    for r in results:
        print(f"{r['fault']} workers={r['workers']} k={r['k_safe']} U={r['min_users']}: "
              f"shards on distinct executors in {r['distinct_executor_batches']} of "
              f"{r['multi_shard_batches']} multi-shard batches before the first kill; mean "
              f"cores over unkilled steps {r['mean_cores']}; peak replicas "
              f"{r['peak_replicas']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Pause vs stop vs defragment: what an unmerge costs, live on Spark (local[2]).

Scenario (SYS source): submit stats-sys, clean-kalman-sys, clean-sys, pred-sys, etl-sys; then
remove clean-kalman-sys, whose bloom and range clean-sys still uses. Variants:

- ``pause``: the removed tasks stay deployed and skip events (paper);
- ``stop``: the removed DAG's query is handed over to one with only bloom and range;
- ``defrag``: pause, then ``defragment`` (one query for the running DAG).

Reported per variant: the remove (and defragment) call time, the time until the replaced
queries were stopped, cores over a window after it all settled, the latency of the surviving
DAGs' outputs around the cut (max, vs the median before it: the disruption), and the event
accounting (lost / duplicated) against the reference execution.

Run: ``.venv/bin/python benchmarks/runtime_unmerge.py``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

DAGS = ["stats-sys", "clean-kalman-sys", "clean-sys", "pred-sys", "etl-sys"]
REMOVED = "clean-kalman-sys"


def variant(spark: Any, name: str, args: argparse.Namespace) -> dict[str, Any]:
    from reuse.runtime.accounting import account, observed_records
    from reuse.runtime.engines.partial.engine import Runtime
    from reuse.runtime.measure import CpuMeter, percentile
    from reuse.runtime.spec import RunSpec
    from reuse.testing import riot_flows

    flows = riot_flows(*DAGS)
    root = Path(tempfile.mkdtemp(prefix=f"unmerge-{name}-"))
    rt = Runtime(spark, RunSpec.of(merge="partial", unmerge="stop" if name == "stop" else "pause",
                                   root=root, rate=args.rate, trigger_s=args.trigger))
    meter = CpuMeter().start()
    res: dict[str, Any] = {"variant": name}
    try:
        rt.start_sources(["SYS"])
        for d in DAGS:
            rt.submit(flows[d])
        time.sleep(args.settle)
        res["before"] = _cores(rt, meter, args.window)
        t = time.time()
        r = rt.remove(REMOVED)
        res["remove_s"] = round(time.time() - t, 3)
        cut = r["R"]
        if name == "defrag":
            t = time.time()
            dres = rt.defragment()
            res["defragment_s"] = round(time.time() - t, 3)
            res["relaunched"] = dres["relaunched"]
        t = time.time()
        rt.wait_stopped(timeout_s=180)
        res["until_stopped_s"] = round(time.time() - t + res["remove_s"]
                                       + res.get("defragment_s", 0.0), 3)
        time.sleep(args.settle)
        res["after"] = _cores(rt, meter, args.window)
        upto = rt.bound() + 1
        rt.wait_processed(upto - 1, timeout_s=120)
        ledger = rt.ledger()
        acc = account(root, ledger, upto)
        res["lost"] = sum(a["lost"] for a in acc.values())
        res["duplicated"] = sum(a["duplicated"] for a in acc.values())
        span = int(args.rate * 10)
        lat_before: list[float] = []
        lat_around: list[float] = []
        for d in DAGS:
            if d == REMOVED:
                continue
            for rid in ledger["dags"][d]["sinks"].values():
                for rec in observed_records(root, rid):
                    lag = rec["o"] - rec["ts"]
                    if cut - 3 * span <= rec["q"] < cut - span:
                        lat_before.append(lag)
                    elif cut - span <= rec["q"] < cut + span:
                        lat_around.append(lag)
        res["latency_before_p50_ms"] = percentile(lat_before, 50)
        res["latency_around_cut_max_ms"] = max(lat_around) if lat_around else None
        res["latency_around_cut_p99_ms"] = percentile(lat_around, 99)
    finally:
        meter.stop()
        rt.close()
    return res


def _cores(rt: Any, meter: Any, seconds: float) -> dict[str, Any]:
    c0, t0 = meter.total(), time.time()
    while time.time() < t0 + seconds:
        rt.poll()
        time.sleep(0.5)
    return {"cores": round((meter.total() - c0) / (time.time() - t0), 3), **rt.counts()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=20.0)
    ap.add_argument("--trigger", type=float, default=2.0)
    ap.add_argument("--settle", type=float, default=10.0)
    ap.add_argument("--window", type=float, default=20.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    from reuse.runtime.session import get_session, stop_session

    spark = get_session("local[2]")
    results = []
    try:
        for name in ("pause", "stop", "defrag"):
            res = variant(spark, name, args)
            print(json.dumps(res), flush=True)
            results.append(res)
    finally:
        stop_session(spark)
    print(f"{'variant':8} {'remove s':>8} {'stopped s':>9} {'cores before':>12} "
          f"{'cores after':>11} {'queries':>7} {'paused':>6} {'p50 before':>10} "
          f"{'max around cut':>14} {'lost':>4} {'dup':>4}")
    for r in results:
        print(f"{r['variant']:8} {r['remove_s'] + r.get('defragment_s', 0):8.2f} "
              f"{r['until_stopped_s']:9.2f} {r['before']['cores']:12.3f} "
              f"{r['after']['cores']:11.3f} {r['after']['queries']:7d} "
              f"{r['after']['paused_tasks']:6d} {r['latency_before_p50_ms']:10.0f} "
              f"{r['latency_around_cut_max_ms']:14.0f} {r['lost']:4d} {r['duplicated']:4d}")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

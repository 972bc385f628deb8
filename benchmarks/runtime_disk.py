"""Disk use over a long run of the query-per-DAG runtime (issue 12, item 4: retention).

Reuse, partial merge, at ``--rate`` events/s per source (default 100) for ``--minutes``
(default 60): five RIoTBench dataflows over the three sources (stats-moment-sys, clean-sys and
pred-classify-sys share SYS's parse task through the bus; clean-taxi; stats-fit), submitted one
after the other and left running. Every ``--sample-seconds`` (default 60) the run directory is
measured with :func:`reuse.runtime.dataplane.retention.disk_usage` (bytes allocated, as ``du`` counts):
topics, checkpoints (Spark's offset and commit logs, task states) and the runtime's own files,
and apart the sink records (outputs, which grow by design). Printed: one row per sample, then the
maximum and final bounded bytes against the bound, and the growth between the run's two halves.

The bound, for the defaults (2 s trigger, retention every 10 s), stated before measuring: **32
MiB** for topics + checkpoints + runtime files. Why: a topic keeps what its slowest consumer has
not committed, plus up to one retention period and a batch: about (10 s + 3 triggers) / 2 s = 8
messages. At 100 events/s a 2 s message is a frame of 7-60 KB on the four topics this workload
puts on the bus (the three sources and SYS's parse; measured by encoding RIoTBench batches), so
under 2 MiB. A query's checkpoint keeps 20 offset and 20 commit files (and their .crc files:
about 80 blocks of 4 KiB, 320 KiB) and 10 task-state files of at most a few KB; with 8 queries
(3 source replays, 5 partial DAGs) that is under 3 MiB. Everything else is one small file per query. 32 MiB
leaves room by a factor of about five; the run fails (exit 1) if the maximum exceeds it or the
second half's maximum exceeds the first half's by more than 25% (growth, not a bound).

Run: ``.venv/bin/python benchmarks/runtime_disk.py [--minutes 60] [--rate 100] [--check]
[--json out.json]`` (the run takes ``--minutes`` plus about a minute of set-up and drain).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DAGS = ("stats-moment-sys", "clean-sys", "pred-classify-sys", "clean-taxi", "stats-fit")
BOUND_MIB = 32


def run(args: argparse.Namespace) -> dict[str, Any]:
    from reuse.runtime.accounting import account
    from reuse.runtime.dataplane.retention import BOUNDED_PARTS, disk_usage
    from reuse.runtime.engines.partial.engine import Runtime
    from reuse.runtime.session import get_session, stop_session
    from reuse.runtime.spec import RunSpec
    from reuse.testing import riot_flows, warm_up

    root = Path(args.root or tempfile.mkdtemp(prefix="reuse-disk-"))
    spark = get_session("local[2]")
    warm_up(spark)
    flows = riot_flows(*DAGS)
    limit = int(args.minutes * 60 * args.rate)
    rt = Runtime(spark, RunSpec.of(merge="partial", root=root, rate=args.rate,
                                   trigger_s=args.trigger, limit=limit),
                 t0_ms=int(time.time() * 1000) + 1000, retention_s=args.retention)
    rows: list[dict[str, Any]] = []
    try:
        rt.start_sources(["SYS", "TAXI", "FIT"])
        t0 = time.time()
        for dag in DAGS:
            rt.submit(flows[dag])
            rt.poll()
            time.sleep(2 * args.trigger)
        next_sample = t0
        while rt.bound() < limit - 1:
            rt.poll()
            if time.time() >= next_sample:
                use = disk_usage(root)
                lag, throttled = rt.take_lag()
                rows.append({"minute": round((time.time() - t0) / 60, 1),
                             **{k: round(v / 1024) for k, v in use.items()},
                             "bounded_kib": round(sum(use[p] for p in BOUNDED_PARTS) / 1024),
                             "max_lag_events": lag, "throttled": throttled,
                             "queries": rt.counts()["queries"]})
                r = rows[-1]
                print(f"{r['minute']:6.1f} min: topics {r['topics']} KiB, ckpt {r['ckpt']} KiB, "
                      f"runtime {r['runtime']} KiB (bounded {r['bounded_kib']} KiB); sinks "
                      f"{r['sinks']} KiB; max lag {lag} events", flush=True)
                next_sample += args.sample_seconds
            time.sleep(0.5)
        rt.wait_processed(limit - 1, timeout_s=300)
        ledger = rt.ledger()
        final = disk_usage(root)
    finally:
        rt.close()
        stop_session(spark)
    acc = account(root, ledger, limit) if args.check else {}
    bounded = [r["bounded_kib"] for r in rows]
    half = len(bounded) // 2
    first, second = max(bounded[:half] or [0]), max(bounded[half:] or [0])
    return {"rate": args.rate, "minutes": args.minutes, "trigger_s": args.trigger,
            "retention_s": args.retention, "bound_kib": BOUND_MIB * 1024,
            "max_bounded_kib": max(bounded), "final_bounded_kib":
                round(sum(final[p] for p in BOUNDED_PARTS) / 1024),
            "first_half_max_kib": first, "second_half_max_kib": second,
            "final_sinks_kib": round(final["sinks"] / 1024), "bus": ledger["bus"],
            "lost": sum(a["lost"] for a in acc.values()) if acc else None,
            "duplicated": sum(a["duplicated"] for a in acc.values()) if acc else None,
            "rows": rows, "root": str(root)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--rate", type=float, default=100.0, help="events/s per source")
    p.add_argument("--trigger", type=float, default=2.0)
    p.add_argument("--retention", type=float, default=10.0)
    p.add_argument("--sample-seconds", type=float, default=60.0)
    p.add_argument("--check", action="store_true",
                   help="also count lost / duplicated outputs with the reference execution "
                        "(an hour at 100 events/s is millions of records: minutes and GBs)")
    p.add_argument("--root", default=None)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    res = run(args)
    print(json.dumps({k: v for k, v in res.items() if k != "rows"}))
    print(f"topics + checkpoints + runtime files: max {res['max_bounded_kib']} KiB, final "
          f"{res['final_bounded_kib']} KiB, bound {res['bound_kib']} KiB; halves "
          f"{res['first_half_max_kib']} / {res['second_half_max_kib']} KiB")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    ok = (res["max_bounded_kib"] <= res["bound_kib"]
          and res["second_half_max_kib"] <= 1.25 * res["first_half_max_kib"]
          and not res["lost"] and not res["duplicated"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

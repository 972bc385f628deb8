"""Backpressure: one consumer 10x slower than its producer for minutes, on the query-per-DAG
runtime (issue 12, item 3).

Reuse, partial merge. stats-moment-sys runs first; clean-sys and pred-classify-sys then each
reuse its SYS parse task, so their two queries consume one shared topic. After ``--before``
seconds clean-sys's query is made ``--factor`` times slower than its producer for ``--slow``
seconds (:meth:`~reuse.runtime.engines.partial.engine.Runtime.slow_down`, test-only: its ``foreachBatch``
sleeps ``factor`` times the source time each batch covered), then runs at full speed for
``--after`` seconds while the sources still emit, and the run drains.

Printed per ``--step`` seconds: the slow and the other consumer's largest lag (events pending
on the shared topic) and whether the slow one was throttled, p50 / p99 source-to-sink latency of
the other consumer and of the producer's own DAG for the events emitted in the step, the
topics' disk bytes and the RSS of every process of the run (driver, JVM, Python workers).
Then: how long the slow one took to catch up after the slowdown, and lost / duplicated outputs
of every DAG (the reference execution). Targets: memory and disk flat (bounded), the other
consumers' latency unchanged through the slowdown, lost = duplicated = 0.

Run: ``.venv/bin/python benchmarks/runtime_backpressure.py [--rate 20] [--slow 300]
[--factor 10] [--max-events N] [--bus file|redis] [--json out.json]`` (about 9 minutes with the
defaults: 60 s before, 300 s slow, 120 s after, then the catch-up).
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

import psutil

DAGS = ("stats-moment-sys", "clean-sys", "pred-classify-sys")


def rss_bytes(roots: list[int]) -> int:
    """Resident memory of the process trees under ``roots`` (the driver's includes its JVM
    and the JVM's Python workers)."""
    seen: dict[int, int] = {}
    for r in roots:
        try:
            procs = [psutil.Process(r)]
            procs += procs[0].children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for p in procs:
            try:
                seen[p.pid] = p.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
    return sum(seen.values())


def topic_bytes(rt: Any, root: Path) -> int:
    from reuse.runtime.dataplane.bus import FileBus
    from reuse.runtime.dataplane.retention import disk_usage

    if isinstance(rt.bus, FileBus):
        return disk_usage(root)["topics"]
    client = rt.bus.client  # Redis: the memory the streams and their index hashes use
    return sum(int(client.memory_usage(k) or 0) for k in client.scan_iter(rt.bus.prefix + "*"))


def _pct(values: list[float], q: float) -> float | None:
    from reuse.runtime.measure import percentile

    v = percentile(values, q)
    return None if v is None else round(v)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from reuse.runtime.accounting import account, observed_records
    from reuse.runtime.dataplane.bus import FileBus
    from reuse.runtime.engines.partial.engine import Runtime
    from reuse.runtime.session import get_session, stop_session
    from reuse.runtime.spec import RunSpec
    from reuse.testing import riot_flows, warm_up

    root = Path(args.root or tempfile.mkdtemp(prefix="reuse-backpressure-"))
    spark = get_session("local[2]")
    warm_up(spark)
    broker = None
    if args.bus == "redis":
        from reuse.runtime.dataplane.redis_bus import start_redis

        broker = start_redis(root / "redis")
        bus: Any = broker.bus()
    else:
        bus = FileBus(root)
    flows = riot_flows(*DAGS)
    total_s = args.before + args.slow + args.after
    limit = int(total_s * args.rate)
    rt = Runtime(spark, RunSpec.of(merge="partial", root=root, rate=args.rate,
                                   trigger_s=args.trigger, limit=limit,
                                   bus_max_events=args.max_events),
                 bus=bus, t0_ms=int(time.time() * 1000) + 1000, retention_s=args.retention,
                 lag_high=args.lag_high, lag_low=args.lag_low)
    roots = [os.getpid()] + ([broker.pid] if broker is not None else [])
    samples: list[dict[str, Any]] = []
    info: dict[str, Any] = {}
    try:
        rt.start_sources(["SYS"])
        time.sleep(3)
        for dag in DAGS:
            info[dag] = rt.submit(flows[dag])
            rt.poll()
            time.sleep(2 * args.trigger)
        q = {dag: rt.tasks[next(t for t in i["started"] if rt.tasks[t].kind != "source")].query
             for dag, i in info.items()}
        slow, other = str(q["clean-sys"]), str(q["pred-classify-sys"])
        (topic,) = rt.queries[slow].inputs[0]
        t_start = time.time()
        phase = "before"

        def sample() -> None:
            rt.poll()
            lag = rt.lag()
            s, o = lag.get(slow) or {}, lag.get(other) or {}
            samples.append({"t": time.time() - t_start, "phase": phase, "bound": rt.bound(),
                            "slow_lag": s.get("lag"), "slow_throttled": s.get("throttled"),
                            "other_lag": o.get("lag"), "topic_bytes": topic_bytes(rt, root),
                            "rss": rss_bytes(roots), "slow_hw": rt.qhw(slow)})

        def until(t_end: float) -> None:
            while time.time() < t_end:
                sample()
                time.sleep(1.0)

        until(t_start + args.before)
        rt.slow_down(slow, args.factor)
        phase, slow_seq = "slow", rt.bound()
        until(t_start + args.before + args.slow)
        rt.slow_down(slow, 0)
        phase, fast_seq, t_fast = "after", rt.bound(), time.time()
        caught_up = None
        deadline = t_start + total_s + args.drain
        while time.time() < deadline:
            sample()
            if caught_up is None and rt.qhw(slow) >= rt.qhw(other) - args.rate * args.trigger:
                caught_up = round(time.time() - t_fast, 1)
            if all(rt.qhw(n) >= limit - 1 for n, qi in rt.queries.items()
                   if qi.kind == "partial"):
                break
            time.sleep(1.0)
        rt.wait_processed(limit - 1, timeout_s=args.drain)
        ledger = rt.ledger()
    finally:
        rt.close()
        stop_session(spark)
        if broker is not None:
            broker.stop()
    acc = account(root, ledger, limit)
    sinks = {dag: next(iter(i["sinks"].values())) for dag, i in info.items()}
    recs = {dag: observed_records(root, rid) for dag, rid in sinks.items()}
    steps = []
    for k in range(0, int(max(s["t"] for s in samples)) + 1, int(args.step)):
        win = [s for s in samples if k <= s["t"] < k + args.step]
        if not win:
            continue
        lo, hi = win[0]["bound"], win[-1]["bound"]
        row: dict[str, Any] = {"t": k, "phase": win[0]["phase"],
                               "slow_lag": max((s["slow_lag"] or 0) for s in win),
                               "throttled": any(s["slow_throttled"] for s in win),
                               "other_lag": max((s["other_lag"] or 0) for s in win),
                               "topic_kb": round(max(s["topic_bytes"] for s in win) / 1024),
                               "rss_mb": round(max(s["rss"] for s in win) / 2**20)}
        for dag, key in (("pred-classify-sys", "other"), ("stats-moment-sys", "producer"),
                         ("clean-sys", "slow")):
            lat = [r["o"] - r["ts"] for r in recs[dag] if lo <= r["q"] < hi]
            row[f"{key}_p50_ms"], row[f"{key}_p99_ms"] = _pct(lat, 50), _pct(lat, 99)
        steps.append(row)
    return {"bus": args.bus, "rate": args.rate, "trigger_s": args.trigger,
            "factor": args.factor, "slow_s": args.slow, "limits": ledger["bus"],
            "slow_window": [slow_seq, fast_seq], "catch_up_s": caught_up,
            "max_topic_kb": max(r["topic_kb"] for r in steps),
            "max_rss_mb": max(r["rss_mb"] for r in steps),
            "lost": sum(a["lost"] for a in acc.values()),
            "duplicated": sum(a["duplicated"] for a in acc.values()),
            "steps": steps, "root": str(root)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rate", type=float, default=20.0, help="events/s of the SYS source")
    p.add_argument("--trigger", type=float, default=1.0)
    p.add_argument("--before", type=float, default=60.0)
    p.add_argument("--slow", type=float, default=300.0, help="seconds of slowdown")
    p.add_argument("--after", type=float, default=120.0)
    p.add_argument("--drain", type=float, default=600.0, help="most seconds to wait at the end")
    p.add_argument("--factor", type=float, default=10.0)
    p.add_argument("--max-events", type=int, default=None,
                   help="read limit (default: the runtime's, rate x trigger x 10 x 25)")
    p.add_argument("--lag-high", type=int, default=None)
    p.add_argument("--lag-low", type=int, default=None)
    p.add_argument("--retention", type=float, default=10.0, help="seconds between passes")
    p.add_argument("--step", type=float, default=30.0, help="seconds per printed row")
    p.add_argument("--bus", choices=["file", "redis"], default="file")
    p.add_argument("--root", default=None)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    res = run(args)
    cols = ["t", "phase", "slow_lag", "throttled", "other_lag", "other_p50_ms", "other_p99_ms",
            "producer_p50_ms", "producer_p99_ms", "slow_p50_ms", "topic_kb", "rss_mb"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in res["steps"]:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    print(json.dumps({k: v for k, v in res.items() if k != "steps"}))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0 if res["lost"] == res["duplicated"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

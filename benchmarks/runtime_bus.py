"""Per-hop bus latency and submit-to-first-output time, for the file bus and Redis Streams.

clean-sys runs as one query fed by the SYS source topic (source -> query -> sink: one bus hop
after the source query). clean-kalman-sys then reuses clean-sys's RangeFilter, so its new query
reads the range topic that clean-sys's query starts publishing (two bus hops). The per-hop
latency is the difference of their median source-to-sink latencies over the same window.
Submit-to-first-output: wall time from the ``submit`` call to the first sink record of the DAG.

Run: ``.venv/bin/python benchmarks/runtime_bus.py --bus file redis``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any


def first_output_s(root: Path, rid: str, since_ms: float, timeout_s: float = 120) -> float:
    from reuse.runtime.accounting import observed_records

    deadline = time.time() + timeout_s
    while time.time() < deadline:
        recs = observed_records(root, rid)
        if recs:
            return round((min(r["o"] for r in recs) - since_ms) / 1000, 3)
        time.sleep(0.1)
    return float("nan")


def one(spark: Any, bus_name: str, args: argparse.Namespace) -> dict[str, Any]:
    from reuse.runtime.accounting import observed_records
    from reuse.runtime.dataplane.bus import FileBus
    from reuse.runtime.engines.partial.engine import Runtime
    from reuse.runtime.measure import percentile
    from reuse.runtime.spec import RunSpec
    from reuse.testing import riot_flows

    flows = riot_flows("clean-sys", "clean-kalman-sys")
    root = Path(tempfile.mkdtemp(prefix=f"bus-{bus_name}-"))
    broker = None
    if bus_name == "redis":
        from reuse.runtime.dataplane.redis_bus import start_redis

        broker = start_redis(root / "redis")
        bus: Any = broker.bus()
    else:
        bus = FileBus(root)
    rt = Runtime(spark, RunSpec.of(merge="partial", root=root, rate=args.rate,
                                   trigger_s=args.trigger), bus=bus)
    res: dict[str, Any] = {"bus": bus_name, "trigger_s": args.trigger, "rate": args.rate}
    try:
        rt.start_sources(["SYS"])
        time.sleep(2)
        t = time.time() * 1000
        a = rt.submit(flows["clean-sys"])
        res["first_output_1hop_s"] = first_output_s(root, a["sinks"]["publish"], t)
        t = time.time() * 1000
        b = rt.submit(flows["clean-kalman-sys"])
        res["first_output_2hop_s"] = first_output_s(root, b["sinks"]["publish"], t)
        j = b["J"]
        time.sleep(args.window)
        hi = rt.bound() - int(args.rate * 3 * args.trigger)
        lat = {}
        for key, info in (("1hop", a), ("2hop", b)):
            recs = [r for r in observed_records(root, info["sinks"]["publish"])
                    if j <= r["q"] < hi]
            lat[key] = [r["o"] - r["ts"] for r in recs]
        for key, vals in lat.items():
            res[f"p50_{key}_ms"] = percentile(vals, 50)
            res[f"p99_{key}_ms"] = percentile(vals, 99)
        if res["p50_1hop_ms"] is not None and res["p50_2hop_ms"] is not None:
            res["per_hop_p50_ms"] = round(res["p50_2hop_ms"] - res["p50_1hop_ms"], 1)
    finally:
        rt.close()
        if broker is not None:
            broker.stop()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bus", nargs="+", default=["file"], choices=["file", "redis"])
    ap.add_argument("--rate", type=float, default=10.0)
    ap.add_argument("--trigger", type=float, nargs="+", default=[1.0, 2.0])
    ap.add_argument("--window", type=float, default=30.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    from reuse.runtime.session import get_session, stop_session

    spark = get_session("local[2]")
    out = []
    try:
        for trig in args.trigger:
            for b in args.bus:
                ns = argparse.Namespace(**{**vars(args), "trigger": trig})
                res = one(spark, b, ns)
                print(json.dumps(res), flush=True)
                out.append(res)
    finally:
        stop_session(spark)
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

"""The broker path's cost (issue 23): the shared query fed by Mosquitto against generated replay.

For each source (``replay``, ``mqtt``), in its own Python process and JVM: start the live
engine (:class:`reuse.live.Engine`, ``local[2]``, Reuse), submit every RIoTBench dataflow (the
SEQ peak: all 21 submitted), let it settle, then measure over ``--window`` seconds:

- ``cores``: CPU of the engine (driver, JVM, Python workers) and, with a broker, of what the
  broker path adds (Mosquitto, the run's Redis; the ingest runs in the driver) / wall seconds;
- ``publisher_cores`` (``mqtt`` only): the ``reuse publish`` process, the sensors' side, kept
  apart: generated replay has no such process either;
- ``p50_ms`` / ``p99_ms``: source-to-sink latency of the outputs in the window (with a broker it
  includes the way through Mosquitto and the bus);
- ``backlog``: source ``seq`` arrived but not processed, at the window's end;
- ``first_output_s``: a dataflow submitted at the peak, from its submit to its first output.

The target: the broker path costs at most 1.2x the cores of generated replay at 100 events/s
per source. ``--repeat N`` interleaves the two (``replay mqtt replay mqtt ...``, each a fresh
process and JVM) and prints each as median [min, max] with the verdict
(:mod:`reuse.runtime.spread`).

Run: ``.venv/bin/python benchmarks/broker_path.py --rate 100 --repeat 3``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from reuse.runtime.spread import Spread, compare, interleave

ROOT = Path(__file__).resolve().parent.parent


def one(source: str, rate: float, trigger_s: float, settle_s: float, window_s: float,
        record: str = "digest") -> dict[str, Any]:
    """One measurement in this process (``--one``)."""
    import psutil

    from reuse.live import Engine
    from reuse.live.metrics import latency, recent_records
    from reuse.runtime.dataplane import mosquitto
    from reuse.workloads.registry import load_workload

    flows = load_workload("riot")
    late = flows[-1]  # submitted at the peak, for the submit-to-first-output time
    tmp = Path(tempfile.mkdtemp(prefix="broker-path-"))
    pub: subprocess.Popen[bytes] | None = None
    url = "replay"
    extra: list[int] = []
    if source == "mqtt":
        from reuse.runtime.dataplane.redis_bus import free_port

        url = str(mosquitto.start(tmp / "broker", port=free_port())["url"])
        extra.append(int(mosquitto.pid(tmp / "broker") or 0))
        pub = subprocess.Popen([sys.executable, "-m", "reuse", "publish", "--workload", "riot",
                                "--rate", str(rate), "--broker", url],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    eng = None
    try:
        eng = Engine(source=url, rate=rate, trigger_s=trigger_s, root=tmp / "run",
                     record=record)
        eng.meter.add_roots(extra)
        for f in flows[:-1]:
            eng.submit(f)
        time.sleep(settle_s / 2)
        eng.submit(late)
        time.sleep(settle_s / 2)
        first = eng.first_output_s(late.id)
        pub_cpu0 = _cpu(pub.pid) if pub is not None else 0.0
        k0, t0 = eng.meter.total(by_category=True), time.time()
        time.sleep(window_s)
        k1, t1 = eng.meter.total(by_category=True), time.time()
        c0, c1 = sum(k0.values()), sum(k1.values())
        by_kind = {k: round((k1.get(k, 0.0) - k0.get(k, 0.0)) / (t1 - t0), 4) for k in k1}
        pub_cpu1 = _cpu(pub.pid) if pub is not None else 0.0
        recs = [r for info in eng.runtime.dags.values() for rid in info["sinks"].values()
                for r in recent_records(eng.root / "sinks", rid, files=int(window_s / trigger_s))
                if float(r["o"]) >= t0 * 1000]
        lat = latency(recs)
        rt = eng.runtime
        out = {"source": source, "rate": rate, "cores": round((c1 - c0) / (t1 - t0), 4),
               "publisher_cores": round((pub_cpu1 - pub_cpu0) / (t1 - t0), 4),
               "p50_ms": lat["p50_ms"], "p99_ms": lat["p99_ms"], "outputs": lat["n"],
               "backlog": max(0, rt.bound() - rt.qhw()), "first_output_s": first,
               "running_tasks": rt.counts()["running_tasks"], "by_process": by_kind,
               "record": record,
               "malformed": sum(eng.metrics()["malformed"].values()),
               "cpus": psutil.cpu_count()}
    finally:
        if eng is not None:
            eng.stop()
        if pub is not None:
            pub.terminate()
            pub.wait(timeout=30)
        if source == "mqtt" and mosquitto.pid(tmp / "broker") is not None:
            mosquitto.stop(tmp / "broker")
    return out


def _cpu(pid: int) -> float:
    import psutil

    try:
        t = psutil.Process(pid).cpu_times()
        return float(t.user + t.system)
    except psutil.Error:
        return 0.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rate", type=float, default=100.0, help="events/s per source")
    p.add_argument("--trigger", type=float, default=2.0)
    p.add_argument("--settle", type=float, default=20.0)
    p.add_argument("--window", type=float, default=30.0)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--record", choices=["digest", "full"], default="digest",
                   help="what sinks record (digest: as the batch's runs; full: whole events)")
    p.add_argument("--json", help="write every run's figures here")
    p.add_argument("--one", choices=["replay", "mqtt"], help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.one:
        print(json.dumps(one(a.one, a.rate, a.trigger, a.settle, a.window, a.record)))
        return 0
    runs: list[dict[str, Any]] = []
    for rep, source in interleave(["replay", "mqtt"], a.repeat):
        cmd = [sys.executable, __file__, "--one", source, "--rate", str(a.rate),
               "--trigger", str(a.trigger), "--settle", str(a.settle),
               "--window", str(a.window), "--record", a.record]
        got = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if got.returncode != 0:
            print(f"{source} run {rep} failed: {got.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(got.stdout.strip().splitlines()[-1])
        r["repetition"] = rep
        runs.append(r)
        print(f"[{rep}] {source:6s} cores {r['cores']:.3f} (publisher {r['publisher_cores']:.3f})"
              f"  p50 {r['p50_ms']} ms  p99 {r['p99_ms']} ms  backlog {r['backlog']}"
              f"  first output {r['first_output_s']} s  tasks {r['running_tasks']}"
              f"  by process {r['by_process']}", flush=True)
    by = {s: [r["cores"] for r in runs if r["source"] == s] for s in ("replay", "mqtt")}
    if by["replay"] and by["mqtt"]:
        sr, sm = Spread.of(by["replay"]), Spread.of(by["mqtt"])
        print(f"replay cores {sr}; mqtt cores {sm}; ratio of medians "
              f"{sm.median / sr.median:.2f} (target <= 1.2)")
        print(compare("mqtt", by["mqtt"], "replay", by["replay"]))
    if a.json:
        Path(a.json).write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

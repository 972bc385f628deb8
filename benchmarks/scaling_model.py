"""A throughput model of the shared query on N cores and N machines, from measured runs (issue 22).

Reads the JSON files ``benchmarks/runtime_rates.py --json`` wrote (each cell's window has the
shared query's batch statistics: batches, ``seq``, wall time, shard CPU, and for ``/split`` the
critical path and the bytes exchanged) and fits, per mode and core count, the wall time of one
batch as ``F + B * w``: a fixed cost per batch ``F`` (Spark's job and stages, the driver's
bookkeeping) and a cost per ``seq`` ``w`` (the busiest shard's work, plus the exchange when
split). Batches run one at a time, and a trigger of ``T`` seconds brings ``B = r * T`` new
``seq`` at ``r`` events/s, so the batches keep up while ``F + r T w <= T``:

    r_max = (1 - F / T) / w

On N cores ``w`` is the critical path plus what Spark adds per ``seq`` (``w`` minus the
measured critical path). Split: ``balance * cpu / N`` (``cpu``: total shard CPU per ``seq``
measured on the run's partitions, the split's overhead included; Spark's part shrinks as
1/N). Unsplit: the busiest shard, which is never less than the largest running DAG
(``--largest-dag``). On N machines the exchange's cross-partition bytes, ``(N - 1) / N`` of
what it carries, go over the network (``--gbit`` per second). Crude on purpose: from runs on
1 and 2 cores only, it assumes the split's overhead per ``seq`` and the balance stay as
measured on 2 partitions.

Run: ``.venv/bin/python benchmarks/scaling_model.py /tmp/bench/riot-l2.json /tmp/bench/riot-l1.json``
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any


def fit(cells: list[dict[str, Any]]) -> tuple[float, float] | None:
    """Least squares of ``wall = batches * F + seqs * w`` over the cells' windows: ``(F, w)``
    in seconds and seconds per ``seq`` (``None`` with fewer than two distinct batch sizes)."""
    rows = [(c["shards"]["batches"], c["shards"]["seqs"],
             c["shards"]["wall_ms_per_seq"] * c["shards"]["seqs"] / 1000)
            for c in cells if c.get("shards")]
    if len({round(s / b) for b, s, _ in rows}) < 2:
        return None
    # normal equations of the two-parameter fit without intercept
    sbb = sum(b * b for b, _, _ in rows)
    sbs = sum(b * s for b, s, _ in rows)
    sss = sum(s * s for _, s, _ in rows)
    sby = sum(b * y for b, _, y in rows)
    ssy = sum(s * y for _, s, y in rows)
    det = sbb * sss - sbs * sbs
    if det == 0:
        return None
    f = (sby * sss - ssy * sbs) / det
    w = (sbb * ssy - sbs * sby) / det
    return max(f, 0.0), w


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="runtime_rates.py --json files")
    ap.add_argument("--gbit", type=float, default=1.0, help="network between machines, Gbit/s")
    ap.add_argument("--cores", default="1,2,4,8,16", help="N to predict for")
    ap.add_argument("--largest-dag", type=float, default=0.6,
                    help="the largest running DAG's share of the shard CPU, unsplit, on all 21 "
                         "RIoT DAGs (0.60, the SYS DAG, measured at 750/s: BENCHMARKS.md); one "
                         "source's DAGs are one running DAG (1.0); OPMW: the busiest shard's")
    args = ap.parse_args()
    by: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    trigger = 2.0
    for path in args.runs:
        res = json.loads(Path(path).read_text())
        res = res.get("results", res)  # a raw file with its provenance header
        a = res["args"]
        trigger = float(a.get("trigger", 2.0))
        master = a.get("master", "local[2]")
        for c in res["cells"]:
            if c.get("failed"):
                continue
            wl = a.get("workload", "riot") + (f"/{a['source_only']}" if a.get("source_only")
                                              else "") + "/" + a.get("keying", "field")
            by.setdefault((wl, master, c["mode"]), []).append(c)
    print(f"trigger T = {trigger:g} s; r_max = (1 - F/T) / w")
    for (wl, master, mode), cells in sorted(by.items()):
        sh = [c["shards"] for c in cells if c.get("shards")]
        if not sh:
            continue
        f_w = fit(cells)
        seqs = sum(s["seqs"] for s in sh)
        cpu = sum(s["cpu_ms_per_seq"] * s["seqs"] for s in sh) / seqs
        bal = sum(s["balance"] * s["seqs"] for s in sh) / seqs
        line = (f"{wl} {master} {mode}: shard CPU {cpu:.3f} ms/seq, balance {bal:.2f}")
        crit = [s for s in sh if "critical_ms_per_seq" in s]
        if crit:
            cr = sum(s["critical_ms_per_seq"] * s["seqs"] for s in crit) / seqs
            by_ = sum(s["bytes_per_seq"] * s["seqs"] for s in crit) / seqs
            line += f", critical {cr:.3f} ms/seq, {by_ / 1000:.1f} KB/seq exchanged"
        if f_w is None:
            print(line + "; one batch size only: no fit")
            continue
        f, w = f_w
        rmax = (1 - f / trigger) / w if w > 0 else float("inf")
        print(line + f"; fit F = {f * 1000:.0f} ms per batch, w = {w * 1000:.3f} ms per seq "
              f"-> r_max {rmax:.0f}/s")
        m = re.fullmatch(r"local\[(\d+)\]", master)
        parts = int(m.group(1)) if m else 2  # a cluster: two one-core workers
        if not crit:
            # unsplit: a running DAG is whole in one shard, so on any N the busiest shard
            # holds at least the largest running DAG's work (--largest-dag of the shard CPU)
            over = max(0.0, w * 1000 - bal * cpu / parts)
            share = (1.0 if "/SYS/" in wl or "/TAXI/" in wl or "/FIT/" in wl  # one DAG
                     else args.largest_dag if wl.startswith("riot/")
                     else bal / parts)  # not known: the busiest shard's share bounds it
            print(f"    per seq: busiest shard {bal * cpu / parts:.3f} ms + the rest "
                  f"{over:.3f} ms; the largest running DAG {share * cpu:.3f} ms")
            for n in (int(x) for x in args.cores.split(",")):
                w_n = (max(bal * cpu / n, share * cpu) + over) / 1000
                print(f"    N = {n:>2}: {(1 - f / trigger) / w_n:>7.0f}/s on N cores or "
                      f"machines")
        if crit:
            spark_per_seq = max(0.0, w * 1000 - cr)  # below 0: the fit's noise
            print(f"    per seq: critical path {cr:.3f} ms + Spark's exchange and "
                  f"serialization {spark_per_seq:.3f} ms")
            for n in (int(x) for x in args.cores.split(",")):
                # the critical path shrinks with N (the same total work, at the same
                # balance); Spark's per-seq part moves the same bytes over N partitions;
                # the network carries (N-1)/N of them between N machines
                total = cpu  # measured on the run's partitions: the split's overhead included
                crit_n = bal * total / n
                spark_n = spark_per_seq * parts / n
                net = (by_ * (n - 1) / n) / (args.gbit * 1e9 / 8) * 1000
                w_cores = (crit_n + spark_n) / 1000
                w_machines = max(w_cores, net / 1000)
                print(f"    N = {n:>2}: {(1 - f / trigger) / w_cores:>7.0f}/s on N cores, "
                      f"{(1 - f / trigger) / w_machines:>7.0f}/s on N machines "
                      f"(network {net:.3f} ms/seq at {args.gbit:g} Gbit/s)")


if __name__ == "__main__":
    main()

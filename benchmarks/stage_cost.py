"""The staged executor's CPU and exchange per source ``seq`` at the RIoT SEQ peak (issue 22).

A sibling of ``benchmarks/shard_cost.py``, in one plain Python process, no Spark. The SEQ peak
(all 21 RIoTBench dataflows through the Reuse planner, or Default's with ``--mode default``;
``--keying field`` or ``sensor``) deployed at ``seq`` 0 on one shard, run in batches of
``--batch`` ``seq`` (300/s x a 2 s trigger) four ways, interleaved ``floor shard staged-1
staged-2`` per repetition, each timed section from a collected heap, states carried through
JSON between batches:

- ``floor``: :func:`reuse.runtime.floor.floor_run`, the task code alone;
- ``shard``: :func:`run_shard` on the whole task list (the unsplit engine);
- ``staged-N``: :func:`reuse.runtime.engines.shared.stages.run_split` over ``N`` partitions
  (every stage of every partition, outboxes encoded to bytes and decoded, as the engine's
  exchange will carry them), its plan made each batch by ``plan_split`` (included: the engine
  re-plans only when the DAG changes, so this over-counts slightly).

Printed per way: CPU ms per ``seq`` (all partitions summed), as median [min, max] over the
repetitions, and its ratio to the floor of the same repetition. For ``staged-N`` also: the
critical path (per stage the largest partition's CPU, summed: the batch's CPU time on ``N``
cores), the balance (largest over mean partition CPU), the bytes through the exchange per
``seq`` and of those the bytes bound for another partition (all of it goes through Spark's
shuffle files; only those would cross the network). Spark's own costs (Arrow frames, the
shuffle write and read, task launch per stage) are not in these figures.

With ``--breakdown``, after the table, one more run of ``--batches`` batches per partition
count splits each partition's critical-path CPU into decoding its inbox, its stages and
encoding its outbox (timers around the module's functions), and prints the stage imbalance:
the critical path less the sum over stages of the mean partition's CPU (a stage waits for
its slowest partition, whatever the totals' balance).

Run: ``nice .venv/bin/python benchmarks/stage_cost.py [--keying field] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

from reuse.core.dataflow import parse_dataflow
from reuse.core.paths import riotbench_dir
from reuse.runtime.common.planners import make_planner
from reuse.runtime.engines.shared import stages
from reuse.runtime.engines.shared.deploy import Deployment
from reuse.runtime.engines.shared.split import SplitPlan, plan_split
from reuse.runtime.engines.shared.stages import run_split, stage_count
from reuse.runtime.floor import floor_run
from reuse.runtime.spread import Spread, interleave
from reuse.testing import deployed_at_zero
from reuse.workloads.riotbench import build_dataflows

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shard_cost import ShardRun  # noqa: E402 - the sibling benchmark's unsplit run


class StagedRun:
    """Consecutive batches of the staged executor over ``partitions``, states per partition
    carried through JSON."""

    def __init__(self, dep: Deployment, opts: dict[str, Any], batch: int, rate: float,
                 partitions: int) -> None:
        self.dep, self.opts, self.batch, self.rate = dep, opts, batch, rate
        self.partitions = partitions
        self.states: list[dict[str, Any]] = [{} for _ in range(partitions)]
        self.plan: SplitPlan | None = None
        self.lo = 0

    def run(self, batches: int) -> dict[str, float]:
        cpu = critical = 0.0
        exchanged = crossed = 0
        per = [0.0] * self.partitions
        for _ in range(batches):
            lo, hi = self.lo, self.lo + self.batch
            tasks = self.dep.claim(lo, hi).shards[0]
            c0 = time.process_time()
            old = self.plan
            self.plan = plan_split(tasks, old.ranges if old else self.partitions,
                                   groups=dict(old.groups) if old else None)
            res = run_split(self.plan, tasks, lo, hi, self.states, self.opts, t0=0,
                            rate=self.rate)
            cpu += time.process_time() - c0
            critical += res.critical
            exchanged += res.exchanged
            crossed += res.crossed
            per = [a + b for a, b in zip(per, res.partition_cpu, strict=True)]
            self.states = json.loads(json.dumps(res.states, separators=(",", ":")))
            self.lo = hi
        seqs = batches * self.batch
        return {"ms": 1000 * cpu / seqs, "critical_ms": 1000 * critical / seqs,
                "balance": max(per) / (sum(per) / len(per)), "bytes": exchanged / seqs,
                "crossed": crossed / seqs}


def breakdown(run: StagedRun, batches: int) -> dict[str, float]:
    """ms per ``seq`` of one more run of ``run``: per stage, each partition's decoding, stage
    and encoding CPU (timers around :mod:`stages`' functions, which ``run_split`` calls by
    their module names), summed over stages as the critical path and as the mean."""
    spent: dict[tuple[int, str], float] = {}
    where = {"p": 0}
    saved = stages.decode_parcels, stages.run_stage, stages.encode_outbox

    def timed(name: str, f: Any) -> Any:
        def g(*a: Any, **k: Any) -> Any:
            c0 = time.process_time()
            try:
                return f(*a, **k)
            finally:
                key = (where["p"], name)
                spent[key] = spent.get(key, 0.0) + time.process_time() - c0
        return g

    def stage(tasks: Any, plan: Any, s: int, p: int, *a: Any, **k: Any) -> Any:
        where["p"] = p  # decoding and encoding are summed over partitions, not split
        return timed(f"stage {s}", saved[1])(tasks, plan, s, p, *a, **k)

    log: list[dict[tuple[int, str], float]] = []
    stages.decode_parcels = timed("decode", saved[0])
    stages.run_stage = stage
    stages.encode_outbox = timed("encode", saved[2])
    try:
        for _ in range(batches):
            spent.clear()
            run.run(1)
            log.append(dict(spent))
    finally:
        stages.decode_parcels, stages.run_stage, stages.encode_outbox = saved
    seqs = batches * run.batch
    out: dict[str, float] = {}
    for name in ("decode", "encode"):
        out[name] = 1000 * sum(v for b in log for (_, n), v in b.items() if n == name) / seqs
    crit = mean = work = 0.0
    for b in log:
        names = sorted({n for _, n in b if n.startswith("stage")})
        for n in names:
            per = [b.get((p, n), 0.0) for p in range(run.partitions)]
            crit += max(per)
            mean += sum(per) / len(per)
            work += sum(per)
    out["stages"] = 1000 * work / seqs
    out["stage imbalance"] = 1000 * (crit - mean) / seqs
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("reuse", "default"), default="reuse")
    ap.add_argument("--keying", choices=("field", "sensor"), default="field")
    ap.add_argument("--partitions", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--batch", type=int, default=600, help="seqs per batch (300/s x 2 s)")
    ap.add_argument("--batches", type=int, default=2, help="timed batches per repetition")
    ap.add_argument("--rate", type=float, default=300.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default=None)
    ap.add_argument("--breakdown", action="store_true",
                    help="after the table, split the staged runs' CPU (see the module doc)")
    args = ap.parse_args()

    shares = args.mode == "reuse"
    dd = str(riotbench_dir(None))
    opts = {"data_dir": dd, "pi_iterations": 1600, "record": "digest", "limit": None}
    flows = [parse_dataflow(d) for d in build_dataflows(dd, keying=args.keying)]

    def deployment() -> Deployment:
        return deployed_at_zero(flows, 1, {"data_dir": ""}, planner=make_planner(shares))[0]

    shard = ShardRun(deployment(), opts, args.batch, args.rate)
    staged = {n: StagedRun(deployment(), opts, args.batch, args.rate, n)
              for n in args.partitions}
    tasks = shard.dep.claim(0, 1).shards[0]
    plans = {n: plan_split(tasks, n) for n in args.partitions}
    print(f"RIoT SEQ peak, {args.mode}, {args.keying} keying: {len(flows)} DAGs, {len(tasks)} "
          f"tasks; stages {[stage_count(p) for p in plans.values()]}, exchanges "
          f"{len(plans[args.partitions[0]].exchanges())}; batches of {args.batch} seq, "
          f"{args.batches} timed per repetition", flush=True)
    shard.run(1)  # warm: stateless tasks built once per process, models trained, files read
    for run in staged.values():
        run.run(1)
    floor_run(flows, shares=shares, seqs=50, start=10_000, data_dir=dd, rate=args.rate)

    modes = ["floor", "shard"] + [f"staged-{n}" for n in args.partitions]
    got: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    n_seq = args.batch * args.batches
    for rep, what in interleave(modes, args.repeat):
        gc.collect()
        if what == "floor":
            r = floor_run(flows, shares=shares, seqs=n_seq, start=shard.lo, data_dir=dd,
                          rate=args.rate)
            got[what].append({"ms": r.ms_per_seq})
        elif what == "shard":
            cpu, _, _, seqs = shard.run(args.batches)
            got[what].append({"ms": 1000 * cpu / seqs})
        else:
            got[what].append(staged[int(what.split("-")[1])].run(args.batches))
        row = got[what][-1]
        print(f"  {rep} {what:9} " + ", ".join(f"{k} {v:.4f}" for k, v in row.items()),
              flush=True)

    floor = [r["ms"] for r in got["floor"]]
    res: dict[str, Any] = {"mode": args.mode, "keying": args.keying, "batch": args.batch}
    print(f"{'way':9} {'CPU ms/seq':24} {'x floor':24} {'critical ms/seq':24} {'balance':22} "
          f"bytes/seq (to another partition)")
    for m in modes:
        ms = [r["ms"] for r in got[m]]
        ratio = Spread.of([a / f for a, f in zip(ms, floor, strict=True)])
        line = f"{m:9} {Spread.of(ms)!s:24} {ratio!s:24}"
        res[m] = {"ms": Spread.of(ms).to_dict(), "ratio": ratio.to_dict()}
        if m.startswith("staged"):
            for k in ("critical_ms", "balance", "bytes", "crossed"):
                res[m][k] = Spread.of([r[k] for r in got[m]]).to_dict()
            crit = Spread.of([r["critical_ms"] for r in got[m]])
            bal = Spread.of([r["balance"] for r in got[m]])
            line += (f" {crit!s:24} {bal!s:22} {got[m][-1]['bytes']:.0f} "
                     f"({got[m][-1]['crossed']:.0f})")
        print(line)
    if args.breakdown:
        for n, run in staged.items():
            gc.collect()
            b = breakdown(run, args.batches)
            res[f"breakdown-{n}"] = b
            print(f"staged-{n} ms/seq, all partitions: " + ", ".join(
                f"{k} {v:.3f}" for k, v in b.items()))
    if args.json:  # a raw file: the command, commit and machine beside the results
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from provenance import raw_file

        print(f"wrote {raw_file(args.json, res, args=vars(args))}")


if __name__ == "__main__":
    main()

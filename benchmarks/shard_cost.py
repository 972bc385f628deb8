"""One shard's CPU per source ``seq`` against the floor, in one plain Python process (issue 22).

The shared-query engine runs :func:`reuse.runtime.engines.shared.shard.run_shard` once per
shard per batch in Spark's Python workers. This runs the same call without Spark: the RIoT SEQ
peak (all 21 RIoTBench dataflows submitted through the Reuse planner, or Default's with
``--mode default``) deployed at ``seq`` 0 on ``--shards`` shards, as the engine deploys them
(leaf tasks of dataflows without a sink recorded), then batches of ``--batch`` source ``seq``
(300/s x a 2 s trigger = 600) with the task states carried from batch to batch through JSON, as
the driver carries them.

Each repetition times ``--batches`` batches of the shard (``time.process_time`` around every
``run_shard`` call, all shards summed) and the floor (:func:`reuse.runtime.floor.floor_run`,
the same task code over the same ``seq`` with no engine and no records), interleaved
``floor shard floor shard ...``. Printed: each one's CPU per ``seq`` and the shard's ratio to
the floor of the same repetition, as median [min, max] (:class:`reuse.runtime.spread.Spread`);
``task_cpu`` is the engine's own figure (the sum of ``run_shard``'s per-task CPU, what
``batches.jsonl`` reports as ``shard_cpu_s``); ``whole loop`` is the repetition's CPU with the
claims and state round trips, so collector passes deferred past a ``run_shard`` call are
charged to the shard. Each timed section starts from a collected heap (``gc.collect()``). A warm-up batch and a warm-up floor run first
(models trained, files read). ``--profile`` adds a cProfile of the shard batches (top
functions by own time). ``--breakdown`` measures parts of the gap to the floor: the sink
records (:func:`reuse.runtime.common.execution.record_line` over one batch's recorded events,
timed alone), the CPU outside the per-task timers (``shard - task_cpu``: mostly freeing the
batch's events when ``run_shard`` returns) and the floor's own garbage-collector passes (the
shard pauses the collector for a batch; the floor does not).

Run: ``nice .venv/bin/python benchmarks/shard_cost.py [--shards 1] [--repeat 5] [--profile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import pstats
import sys
import time
from pathlib import Path
from typing import Any

from reuse.core.paths import riotbench_dir
from reuse.runtime.common.planners import make_planner
from reuse.runtime.engines.shared.deploy import Deployment
from reuse.runtime.engines.shared.shard import run_shard
from reuse.runtime.floor import floor_run
from reuse.runtime.spread import Spread, interleave
from reuse.testing import deployed_at_zero, riot_flows


def deployment(shards: int, shares: bool) -> Deployment:
    """The SEQ peak: every RIoTBench dataflow submitted at ``seq`` 0, as the engine does."""
    dep, _ = deployed_at_zero(riot_flows().values(), shards, {"data_dir": ""},
                              planner=make_planner(shares))
    return dep


class ShardRun:
    """Consecutive batches of one deployment, states carried through JSON between them."""

    def __init__(self, dep: Deployment, opts: dict[str, Any], batch: int, rate: float) -> None:
        self.dep, self.opts, self.batch, self.rate = dep, opts, batch, rate
        self.states: dict[str, Any] = {}
        self.lo = 0

    def run(self, batches: int) -> tuple[float, float, float, int]:
        """CPU seconds of ``run_shard`` (all shards), the engine's per-task CPU sum, the whole
        loop (claims and state round trips too, so garbage-collector passes that ``run_shard``
        defers are charged here), and seqs."""
        cpu = task_cpu = 0.0
        w0 = time.process_time()
        for _ in range(batches):
            lo, hi = self.lo, self.lo + self.batch
            epoch = self.dep.claim(lo, hi)
            new: dict[str, Any] = {}
            for tasks in epoch.shards:
                if not tasks:
                    continue
                mine = {t["id"]: self.states[t["id"]] for t in tasks if t["id"] in self.states}
                c0 = time.process_time()
                res = run_shard(tasks, lo, hi, mine, self.opts, t0=0, rate=self.rate)
                cpu += time.process_time() - c0
                task_cpu += sum(res["cpu"].values())
                new.update(res["states"])
            self.states = json.loads(json.dumps(new, separators=(",", ":")))
            self.lo = hi
        return cpu, task_cpu, time.process_time() - w0, batches * self.batch


def breakdown(run: ShardRun, flows: list[Any], shares: bool, dd: str, rate: float,
              ) -> dict[str, float]:
    """Parts of the gap to the floor, in ms of CPU per ``seq`` (see the module doc)."""
    from reuse.runtime.common import execution
    from reuse.runtime.engines.shared import shard

    seen: list[Any] = []
    real = shard.record_line

    def spy(ev: Any, now: float) -> str:
        seen.append(ev)
        return real(ev, now)

    shard.record_line = spy  # type: ignore[assignment]
    try:
        run.run(1)
    finally:
        shard.record_line = real  # type: ignore[assignment]
    c0 = time.process_time()
    for ev in seen:
        execution.record_line(ev, 0.0)
    records = time.process_time() - c0
    spent = [0.0, 0.0]

    def timer(phase: str, _: Any) -> None:
        if phase == "start":
            spent[1] = time.process_time()
        else:
            spent[0] += time.process_time() - spent[1]

    gc.callbacks.append(timer)
    try:
        r = floor_run(flows, shares=shares, seqs=run.batch, start=run.lo, data_dir=dd, rate=rate)
    finally:
        gc.callbacks.remove(timer)
    return {"records_per_seq": len(seen) / run.batch, "records_ms": 1000 * records / run.batch,
            "floor_gc_ms": 1000 * spent[0] / r.seqs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--mode", choices=("reuse", "default"), default="reuse")
    ap.add_argument("--batch", type=int, default=600, help="seqs per batch (300/s x 2 s)")
    ap.add_argument("--batches", type=int, default=3, help="timed batches per repetition")
    ap.add_argument("--rate", type=float, default=300.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="cProfile the shard batches")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--breakdown", action="store_true", help="measure parts of the gap")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    shares = args.mode == "reuse"
    dd = str(riotbench_dir(None))
    opts = {"data_dir": dd, "pi_iterations": 1600, "record": "digest", "limit": None}
    flows = list(riot_flows().values())
    dep = deployment(args.shards, shares)
    run = ShardRun(dep, opts, args.batch, args.rate)
    sizes = [len(s) for s in dep.snapshot().shards]
    print(f"RIoT SEQ peak, {args.mode}: {len(flows)} DAGs, {len(dep.tasks)} deployed tasks on "
          f"{args.shards} shard(s) {sizes}; batches of {args.batch} seq, {args.batches} timed "
          f"per repetition", flush=True)
    run.run(1)  # warm: stateless tasks built once per process, models trained, files read
    floor_run(flows, shares=shares, seqs=50, start=10_000, data_dir=dd, rate=args.rate)

    floor_ms: list[float] = []
    whole_ms: list[float] = []
    shard_ms: list[float] = []
    task_ms: list[float] = []
    ratios: list[float] = []
    n = args.batch * args.batches
    for rep, what in interleave(["floor", "shard"], args.repeat):
        gc.collect()  # neither inherits the other's garbage
        if what == "floor":
            start = run.lo  # the seqs the shard runs next
            r = floor_run(flows, shares=shares, seqs=n, start=start, data_dir=dd, rate=args.rate)
            floor_ms.append(r.ms_per_seq)
            print(f"  {rep} floor {r.ms_per_seq:.4f} ms/seq", flush=True)
        else:
            cpu, tcpu, whole, seqs = run.run(args.batches)
            shard_ms.append(1000 * cpu / seqs)
            task_ms.append(1000 * tcpu / seqs)
            whole_ms.append(1000 * whole / seqs)
            ratios.append(shard_ms[-1] / floor_ms[-1])
            print(f"  {rep} shard {shard_ms[-1]:.4f} ms/seq (task_cpu {task_ms[-1]:.4f}, whole "
                  f"loop {whole_ms[-1]:.4f}), {ratios[-1]:.3f}x floor", flush=True)
    whole_ratio = Spread.of([w / f for w, f in zip(whole_ms, floor_ms, strict=True)])
    res = {"mode": args.mode, "shards": args.shards, "batch": args.batch,
           "floor_ms": Spread.of(floor_ms).to_dict(), "shard_ms": Spread.of(shard_ms).to_dict(),
           "task_cpu_ms": Spread.of(task_ms).to_dict(), "whole_ms": Spread.of(whole_ms).to_dict(),
           "ratio": Spread.of(ratios).to_dict(),
           "whole_ratio": whole_ratio.to_dict()}
    print(f"floor ms/seq      {Spread.of(floor_ms)}")
    print(f"shard ms/seq      {Spread.of(shard_ms)}")
    print(f"task_cpu ms/seq   {Spread.of(task_ms)}")
    print(f"whole loop ms/seq {Spread.of(whole_ms)}")
    print(f"shard / floor     {Spread.of(ratios)}   (target: at most 1.3)")
    print(f"whole / floor     {whole_ratio}")
    if args.breakdown:
        parts = breakdown(run, flows, shares, dd, args.rate)
        res["breakdown"] = parts
        gap = Spread.of([s - f for s, f in zip(shard_ms, floor_ms, strict=True)])
        outside = Spread.of([s - t for s, t in zip(shard_ms, task_ms, strict=True)])
        print(f"gap shard - floor {gap} ms/seq, of which:")
        print(f"  sink records      {parts['records_ms']:.3f} ms/seq "
              f"({parts['records_per_seq']:.1f} records per seq)")
        print(f"  outside the task timers (shard - task_cpu) {outside} ms/seq")
        print(f"  the floor's own GC passes (the shard pauses GC) -{parts['floor_gc_ms']:.3f} "
              f"ms/seq")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        run.run(args.batches)
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.top)
        print(out.getvalue())
    if args.json:  # a raw file: the command, commit and machine beside the results
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from provenance import raw_file

        print(f"wrote {raw_file(args.json, res, args=vars(args))}")


if __name__ == "__main__":
    main()

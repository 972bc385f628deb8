"""Planner cost per operation with containment (issue 25, item 3): exact vs semantic at N tasks.

Builds a running state of N tasks from :mod:`bench_manager`'s synthetic dataflows, with every
``Filter`` made a ``RangeFilter`` whose range is drawn from a 9-point grid (so many filters
share inputs and nest: a containment-heavy mix), then times submit + remove of fresh 10-task
DAGs against it under ``exact``, ``semantic`` without containment, and ``semantic``.

The policies run interleaved, ``exact, semantic-no-containment, semantic`` repeated
``--repeat`` times, each run in a fresh process (the machine is shared, so one run per policy
says little). Prints one row per run (per-op median and mean, how many of the timed submits
were rewritten), then per policy the median of the runs' per-op medians with their [min, max],
and each policy's ratio to ``exact`` within a repetition, as median [min, max].

    .venv/bin/python benchmarks/bench_containment.py [--tasks 100000] [--ops 500] [--seed 1]
        [--repeat 3] [--json docs/bench/containment_cost.json]

``--json`` writes every run and the summary with their provenance (``provenance.raw_file``):
BENCHMARKS.md's table is generated from it (``benchmarks/report.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_manager import synthetic_dag  # noqa: E402

from reuse.core.dataflow import Dataflow, Task  # noqa: E402
from reuse.core.equivalence import dedup  # noqa: E402
from reuse.core.manager import Manager  # noqa: E402
from reuse.core.matching import EXACT, MatchPolicy  # noqa: E402
from reuse.tasks.matching import SEMANTIC  # noqa: E402


def ranged_dag(rng: random.Random, name: str, match: MatchPolicy) -> Dataflow:
    """A synthetic 10-task DAG whose ``Filter`` tasks are range filters on one field."""
    d = synthetic_dag(rng, name, 10)
    tasks = []
    for t in d.tasks:
        if t.type == "Filter":
            lo, hi = sorted([rng.randrange(9), rng.randrange(9)])
            t = Task(t.id, "RangeFilter", {"valid_range": {"t": [5 * lo, 5 * hi]}})
        tasks.append(t)
    return dedup(Dataflow(name, tuple(tasks), d.streams), match)


def measure(match: MatchPolicy, n_tasks: int, ops: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    m = Manager(match=match)
    k = 0
    while m.task_count < n_tasks:
        m.submit(ranged_dag(rng, f"D{k}", match))
        k += 1
    flows = [ranged_dag(rng, f"X{i}", match) for i in range(ops)]
    times, rewritten = [], 0
    for f in flows:
        t0 = time.perf_counter()
        m.submit(f)
        rewritten += bool(m.rewrites(f.id))
        m.remove(f.id)
        times.append(time.perf_counter() - t0)
    return {"tasks": m.task_count, "median_us": statistics.median(times) * 1e6,
            "mean_us": statistics.mean(times) * 1e6, "rewritten": rewritten}


POLICIES: dict[str, MatchPolicy] = {
    "exact": EXACT,
    "semantic, no containment": dataclasses.replace(SEMANTIC, containment=()),
    "semantic": SEMANTIC,
}


def spread(xs: list[float]) -> str:
    """``median [min, max]``."""
    return f"{statistics.median(xs):.0f} [{min(xs):.0f}, {max(xs):.0f}]"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--ops", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None, help="write the raw file here")
    ap.add_argument("--one", choices=list(POLICIES), help=argparse.SUPPRESS)  # a child run
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(measure(POLICIES[args.one], args.tasks, args.ops, args.seed)))
        return
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in POLICIES}
    for rep in range(args.repeat):
        for label in POLICIES:
            out = subprocess.run([sys.executable, __file__, "--one", label, "--tasks",
                                  str(args.tasks), "--ops", str(args.ops), "--seed",
                                  str(args.seed)], check=True, capture_output=True, text=True)
            r = json.loads(out.stdout)
            runs[label].append(r)
            print(f"run {rep + 1} {label:26s} {r['tasks']:>7.0f} tasks: submit+remove median "
                  f"{r['median_us']:6.0f} us, mean {r['mean_us']:6.0f} us; {r['rewritten']:.0f} "
                  f"of {args.ops} submits rewritten", flush=True)
    print(f"over {args.repeat} interleaved runs: per-op median, us, median [min, max]; "
          "ratio to exact in the same repetition")
    summary = {}
    for label, rs in runs.items():
        ratios = [r["median_us"] / e["median_us"] for r, e in zip(rs, runs["exact"], strict=True)]
        print(f"{label:26s} {spread([r['median_us'] for r in rs]):>16s} us   "
              f"x{statistics.median(ratios):.2f} [{min(ratios):.2f}, {max(ratios):.2f}]")
        summary[label] = {"median_us": [r["median_us"] for r in rs], "ratio_to_exact": ratios}
    if args.json:
        from benchmarks.provenance import raw_file

        raw_file(args.json, {"runs": runs, "summary": summary}, tasks=args.tasks, ops=args.ops,
                 seed=args.seed, repeat=args.repeat)


if __name__ == "__main__":
    main()

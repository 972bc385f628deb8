"""Merge + unmerge cost per operation, fast manager vs the literal reference, as running tasks grow.

Builds a running state of N tasks by submitting synthetic overlapping dataflows (10 source
streams, 10-task DAGs whose prefixes are drawn from a small vocabulary, 10% of them joining two
sources), then times submit + remove of fresh 10-task DAGs against it. Prints one row per N with
the per-op times and the reference/fast ratio measured in the same run, then the fast manager's
time at a fixed N for growing submitted-DAG sizes (it should grow with the DAG, not with N).

    .venv/bin/python benchmarks/bench_manager.py [--sizes 100,1000,10000,100000] [--ref-max 1000]
        [--json docs/bench/manager.json]

With ``--json`` it writes its rows as a raw file with the command, commit and machine
(``benchmarks/provenance.py``), which ``benchmarks/report.py`` renders into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from provenance import raw_file  # noqa: E402

from reuse.core.dataflow import Dataflow, Task  # noqa: E402
from reuse.core.equivalence import dedup  # noqa: E402
from reuse.core.manager import Manager  # noqa: E402
from reuse.core.reference import ReferenceManager  # noqa: E402

TYPES = ["Parse", "Filter", "Kalman", "Average", "Regress", "Count", "Annotate", "Join"]


def synthetic_dag(rng: random.Random, name: str, size: int) -> Dataflow:
    """A de-dup DAG: 1 or 2 sources, then tasks each fed by 1 (sometimes 2) earlier tasks.

    Types and configs come from small vocabularies and early tasks prefer early parents, so
    prefixes overlap across DAGs the way the RIoT and OPMW workloads do.
    """
    n_src = 2 if rng.random() < 0.1 else 1
    tasks = [Task(f"s{i}", f"SRC{rng.randrange(10)}", "source") for i in range(n_src)]
    streams = []
    for i in range(n_src, size):
        tid = f"t{i}"
        parent = tasks[min(int(rng.expovariate(0.6)), i - 1)].id if i > n_src else tasks[0].id
        streams.append((parent, tid))
        if n_src == 2 and i == n_src:
            streams.append(("s1", tid))
        elif rng.random() < 0.05 and i > 2:
            other = tasks[rng.randrange(i)].id
            if other != parent:
                streams.append((other, tid))
        depth_bias = rng.randrange(3) if i < 5 else rng.randrange(40)
        tasks.append(Task(tid, TYPES[rng.randrange(len(TYPES))], {"k": depth_bias}))
    return dedup(Dataflow(name, tuple(tasks), tuple(streams)))


def build(n_tasks: int, seed: int, make_ref: bool) -> tuple[Manager, ReferenceManager | None, int]:
    rng = random.Random(seed)
    fast = Manager()
    ref = ReferenceManager() if make_ref else None
    k = 0
    while fast.task_count < n_tasks:
        flow = synthetic_dag(rng, f"bg{k}", 10)
        fast.submit(flow)
        if ref is not None:
            ref.submit(flow)
        k += 1
    return fast, ref, k


def time_ops(manager: object, flows: list[Dataflow]) -> list[float]:
    times = []
    for f in flows:
        t0 = time.perf_counter()
        manager.submit(f)  # type: ignore[attr-defined]
        manager.remove(f.id)  # type: ignore[attr-defined]
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000,10000,100000")
    ap.add_argument("--ref-max", type=int, default=1000, help="largest N for the reference")
    ap.add_argument("--repeats", type=int, default=300)
    ap.add_argument("--json", default=None, help="write the rows as a raw file here")
    args = ap.parse_args()
    rows: list[dict[str, float | int | None]] = []
    growth: list[dict[str, float | int]] = []
    sizes = [int(s) for s in args.sizes.split(",")]
    print("running_tasks  submitted_dags  fast_us_per_op(mean/p99)  reference_ms_per_op  ratio")
    for n in sizes:
        fast, ref, k = build(n, seed=n, make_ref=n <= args.ref_max)
        rng = random.Random(-n)
        probes = [synthetic_dag(rng, f"probe{i}", 10) for i in range(args.repeats)]
        t_fast = time_ops(fast, probes)
        mean_fast = statistics.mean(t_fast)
        p99 = sorted(t_fast)[int(0.99 * len(t_fast))]
        line = f"{fast.task_count:>13}  {k:>14}  {mean_fast * 1e6:>12.1f} / {p99 * 1e6:<10.1f}"
        mean_ref = None
        if ref is not None:
            t_ref = time_ops(ref, probes[:10])
            mean_ref = statistics.mean(t_ref)
            line += f"  {mean_ref * 1e3:>18.2f}  {mean_ref / mean_fast:>6.0f}x"
        else:
            line += f"  {'(not run)':>18}  {'-':>6}"
        print(line, flush=True)
        rows.append({"running_tasks": fast.task_count, "submitted_dags": k,
                     "fast_mean_us": mean_fast * 1e6, "fast_p99_us": p99 * 1e6,
                     "ops": len(t_fast), "reference_mean_ms":
                     None if mean_ref is None else mean_ref * 1e3, "reference_ops": 10})

    n = sizes[-1]
    fast, _, _ = build(n, seed=n, make_ref=False)
    print(f"\nfast manager at {fast.task_count} running tasks, by submitted DAG size:")
    print("dag_tasks  us_per_op(mean)  us_per_task")
    for size in (5, 10, 20, 40, 80):
        rng = random.Random(size)
        probes = [synthetic_dag(rng, f"sz{size}_{i}", size) for i in range(args.repeats)]
        mean = statistics.mean(time_ops(fast, probes))
        print(f"{size:>9}  {mean * 1e6:>15.1f}  {mean * 1e6 / size:>11.1f}")
        growth.append({"dag_tasks": size, "mean_us": mean * 1e6,
                       "running_tasks": fast.task_count})
    if args.json:
        print(f"wrote {raw_file(args.json, {'rows': rows, 'growth': growth}, args=vars(args))}")


if __name__ == "__main__":
    main()

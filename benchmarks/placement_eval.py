"""Tables 5-7 and Figures 5-10 of Veith et al. from seeded generators, the paper's numbers beside.

    .venv/bin/python benchmarks/placement_eval.py --scale small [--out DIR] [--seed 0]

``small``: 7 of the 27 topologies (every class, up to 250,500 resources), all 13 graphs, 2
configurations, 5 strategies (910 runs). ``paper``: the full grid, 17,550 runs (hours).
"""

from __future__ import annotations

import argparse
import sys
import time

from reuse.figures.placement import save_evaluation
from reuse.placement.evaluation import SCALES, format_report, run_grid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", choices=sorted(SCALES), default="small")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="directory for runs.csv, report.txt, figures")
    args = ap.parse_args()
    t = time.perf_counter()
    df = run_grid(args.scale, seed=args.seed,
                  progress=lambda m: print(f"[{time.perf_counter() - t:7.1f}s] {m}",
                                           file=sys.stderr, flush=True))
    print(f"scale={args.scale} ({SCALES[args.scale].note}), seed={args.seed}, runs={len(df)}, "
          f"wall={time.perf_counter() - t:.1f} s, time limit={SCALES[args.scale].time_limit:g} s")
    print(save_evaluation(df, args.out) if args.out else format_report(df))


if __name__ == "__main__":
    main()

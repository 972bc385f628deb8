"""Tables 5-7 and Figures 5-10 of Veith et al. from seeded generators, the paper's numbers beside.

    .venv/bin/python benchmarks/placement_eval.py --scale small [--out DIR] [--seed 0]

``small``: 7 of the 27 topologies (every class, up to 250,500 resources), all 13 graphs, 2
configurations, 5 strategies (910 runs). ``paper``: the full grid, 17,550 runs (hours).

``--json PATH`` writes the AL margins (per topology class and strategy: the mean ratio and the
range over the pairs), the share of runs over the time limit, the search (per strategy and
topology class: mean evaluations, mean and max resolution time, mean AL) and the wall time as
a raw file with the command, commit and machine (``benchmarks/provenance.py``). The margins,
evaluations and AL are a function of the seeded grid only; the times depend on the machine
and its load.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from reuse.figures.placement import save_evaluation
from reuse.placement.evaluation import SCALES, format_report, run_grid

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import raw_file  # noqa: E402


def margin_rows(df: pd.DataFrame, reference: str = "aels+rp+la") -> list[dict[str, Any]]:
    """Per topology class and strategy, on the runs where both it and ``reference`` placed
    the application: pairs, the mean of ``AL / AL_ref`` and the mean, min and max of
    ``1 - AL_ref / AL`` in % (the paper's "outperforms X by Y%")."""
    key = ["topology", "graph", "config"]
    ok = df[df.status == "ok"]
    ref = ok[ok.strategy == reference].set_index(key).latency.rename("ref")
    rows = []
    for (tc, s), d in ok[ok.strategy != reference].groupby(["topo_class", "strategy"]):
        j = d.set_index(key).latency.to_frame("other").join(ref, how="inner")
        if len(j):
            better = (1 - j.ref / j.other) * 100
            rows.append({"topo_class": tc, "strategy": s, "pairs": len(j),
                         "ratio": float((j.other / j.ref).mean()),
                         "better_pct": float(better.mean()), "better_min": float(better.min()),
                         "better_max": float(better.max())})
    return rows


def search_rows(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Per strategy and topology class, over every run: the mean evaluations (operator x
    resource pairs examined, the search's size), the mean and max resolution time (s), and
    the mean AL (s) of the runs that placed (``None`` when none did)."""
    out = []
    for (s, tc), d in df.groupby(["strategy", "topo_class"]):
        ok = d[d.status == "ok"]
        out.append({"strategy": s, "topo_class": tc, "runs": len(d),
                    "evaluations_mean": float(d.evaluations.mean()),
                    "time_mean_s": float(d.resolution_time.mean()),
                    "time_max_s": float(d.resolution_time.max()),
                    "al_mean_s": float(ok.latency.mean()) if len(ok) else None})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", choices=sorted(SCALES), default="small")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="directory for runs.csv, report.txt, figures")
    ap.add_argument("--json", default=None, help="write the margins as a raw file here")
    args = ap.parse_args()
    t = time.perf_counter()
    df = run_grid(args.scale, seed=args.seed,
                  progress=lambda m: print(f"[{time.perf_counter() - t:7.1f}s] {m}",
                                           file=sys.stderr, flush=True))
    print(f"scale={args.scale} ({SCALES[args.scale].note}), seed={args.seed}, runs={len(df)}, "
          f"wall={time.perf_counter() - t:.1f} s, time limit={SCALES[args.scale].time_limit:g} s")
    print(save_evaluation(df, args.out) if args.out else format_report(df))
    if args.json:
        limit = SCALES[args.scale].time_limit
        over = {s: float((d.resolution_time > limit).mean() * 100)
                for s, d in df.groupby("strategy")}
        got = {"scale": args.scale, "runs": len(df), "wall_s": time.perf_counter() - t,
               "time_limit_s": limit, "over_limit_pct": over, "margins": margin_rows(df),
               "search": search_rows(df),
               "placed_pct": {s: float((d.status == "ok").mean() * 100)
                              for s, d in df.groupby("strategy")}}
        print(f"wrote {raw_file(args.json, got, args=vars(args))}")


if __name__ == "__main__":
    main()

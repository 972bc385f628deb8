"""Speed goal: a 50-operator application on 250,500 resources with AELS+RP+LA.

Prints the resolution time of every strategy on the same seeded (infrastructure, application)
pairs and the AL of each strategy as a ratio to AELS+RP+LA's, for several configurations.

    .venv/bin/python benchmarks/placement_speed.py [--configs 5] [--seed 0] [--skip-full]
        [--json docs/bench/placement_speed.json]

With ``--json`` it writes every cell as a raw file with the command, commit and machine
(``benchmarks/provenance.py``), which ``benchmarks/report.py`` renders into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path
from typing import Any

from reuse.placement.generators import make_application, make_infrastructure
from reuse.placement.registry import STRATEGIES, get_strategy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import raw_file  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--configs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-full", action="store_true", help="skip AELS and AELS+RP")
    ap.add_argument("--json", default=None, help="write every cell as a raw file here")
    args = ap.parse_args()
    cells_out: list[dict[str, Any]] = []
    t = time.perf_counter()
    infra = make_infrastructure(500, 500, 500, seed=args.seed)
    print(f"{infra.describe()} (generated in {time.perf_counter() - t:.2f} s); "
          f"python {platform.python_version()}")
    names = [s for s in STRATEGIES if not (args.skip_full and s in ("aels", "aels+rp"))]
    print(f"{'config':>6} " + " ".join(f"{s:>22}" for s in names))
    worst = 0.0
    for c in range(args.configs):
        app = make_application(50, infra, graph_seed=args.seed * 1000 + 12, config_seed=c)
        res = {s: get_strategy(s)(app, infra) for s in names}
        la = res["aels+rp+la"]
        worst = max(worst, la.resolution_time)
        cells = []
        for s in names:
            r = res[s]
            ratio = r.latency / la.latency if r.ok and la.ok else None
            cells_out.append({"config": c, "strategy": s, "ok": bool(r.ok),
                              "seconds": r.resolution_time, "al_ratio": ratio,
                              "constraint": None if r.ok else r.constraint})
            if not r.ok:
                cells.append(f"{'FAIL ' + r.constraint:>22}")
            else:
                cells.append(f"{r.resolution_time:7.3f}s AL x{ratio or float('nan'):7.4f}")
        print(f"{c:>6} " + " ".join(cells))
    print(f"AELS+RP+LA worst resolution time: {worst:.3f} s (goal < 10 s); "
          "AL ratios are AL(strategy) / AL(AELS+RP+LA) on the same application")
    if args.json:
        got = {"infrastructure": infra.describe(), "strategies": names, "cells": cells_out}
        print(f"wrote {raw_file(args.json, got, args=vars(args))}")


if __name__ == "__main__":
    main()

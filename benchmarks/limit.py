"""The floor (``reuse.runtime.floor``): the SEQ peak's tasks in one plain Python process.

Default (every dataflow alone, its own sources) and Reuse (the manager's running tasks) over the
same source events, for RIoTBench (all 21 DAGs) and OPMW (35 seeded DAGs). Prints CPU per
source ``seq`` and the cores that work needs at 10, 100, 300 and 1,000 events/s per source;
``work saved`` = Default - Reuse is what reuse can save at most with this task code.

Run: ``.venv/bin/python benchmarks/limit.py [--seqs 2000] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

RATES = (10, 100, 300, 1000)


def floors(workload_name: str, seqs: int, pi_iterations: int = 1600, semantic: bool = False,
           n: int | None = None, keying: str = "field",
           only_source: str | None = None) -> dict[str, Any]:
    from runtime_seq_peak import workload

    from reuse.core.paths import riotbench_dir
    from reuse.runtime.floor import floor_run

    flows = workload(workload_name, n, keying=keying, only_source=only_source)
    dd = str(riotbench_dir(None))
    out: dict[str, Any] = {"dags": len(flows)}
    from reuse.tasks.matching import SEMANTIC

    runs = [("default", False, None), ("reuse", True, None)]
    if semantic:  # Reuse merging by meaning (issue 25): the ``~semantic`` modes' work
        runs.append(("semantic", True, SEMANTIC))
    for mode, shares, match in runs:
        floor_run(flows, shares=shares, seqs=min(50, seqs), start=10_000, data_dir=dd,
                  pi_iterations=pi_iterations, match=match)  # warm: models trained, files read
        r = floor_run(flows, shares=shares, seqs=seqs, data_dir=dd, pi_iterations=pi_iterations,
                      match=match)
        out[mode] = {"tasks": r.tasks, "sources": r.sources, "ms_per_seq": round(r.ms_per_seq, 4),
                     "cores": {str(x): round(r.cores(x), 4) for x in RATES}}
    out["work_saved_cores"] = {str(x): round(out["default"]["cores"][str(x)]
                                             - out["reuse"]["cores"][str(x)], 4) for x in RATES}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seqs", type=int, default=2000)
    ap.add_argument("--workload", default="riot,opmw")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    res = {}
    for w in args.workload.split(","):
        res[w] = r = floors(w, args.seqs)
        for mode in ("default", "reuse"):
            m = r[mode]
            print(f"{w} {mode}: {r['dags']} DAGs, {m['tasks']} tasks + {m['sources']} sources, "
                  f"{m['ms_per_seq']} ms CPU per seq; cores at " +
                  ", ".join(f"{x}/s {m['cores'][str(x)]}" for x in RATES), flush=True)
        print(f"{w} work saved (Default - Reuse), cores at " +
              ", ".join(f"{x}/s {r['work_saved_cores'][str(x)]}" for x in RATES), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()

"""The floors (``reuse.runtime.floor``): the SEQ peak's tasks in one plain Python process.

Default (every dataflow alone, its own sources) and Reuse (the manager's running tasks) over the
same source events, for RIoTBench (all 21 DAGs) and OPMW (35 seeded DAGs), on both floors: per
event (each event through the task's ``process``; the floor of every figure before issue 35)
and columnar (``--batch`` source ``seq`` at a time through the tasks' kernels; issue 35: engine
costs are judged against it from then on). Prints CPU per source ``seq`` and the cores that
work needs at 10, 100, 300 and 1,000 events/s per source; ``work saved`` = Default - Reuse is
what reuse can save at most with this task code.

The raw results (``--json``, with the run's provenance) keep the per-event floor under the
names they always had (``ms_per_seq``, ``cores``, ``work_saved_cores``), so every reader of an
older file still reads it; the columnar floor is beside it (``columnar`` in each mode,
``columnar_work_saved_cores``). ``benchmarks/report.py`` renders the file's table (entry
``floor``). No Spark: ``--seqs 50 --workload riot`` is a smoke run of a few seconds.

Run: ``.venv/bin/python benchmarks/limit.py [--seqs 2000] [--batch 1000]
[--json docs/bench/floor.json]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

RATES = (10, 100, 300, 1000)
#: source ``seq`` per batch of the columnar floor (issue 35: the shared query's batches at a
#: few hundred events/s per source hold about this many)
BATCH = 1000


def _floor(r: Any) -> dict[str, Any]:
    """One floor run's figures: ms of CPU per source ``seq`` and cores at each of RATES."""
    return {"ms_per_seq": round(r.ms_per_seq, 4),
            "cores": {str(x): round(r.cores(x), 4) for x in RATES}}


def _saved(default: dict[str, Any], reuse: dict[str, Any]) -> dict[str, float]:
    return {str(x): round(default["cores"][str(x)] - reuse["cores"][str(x)], 4) for x in RATES}


def floors(workload_name: str, seqs: int, pi_iterations: int = 1600, semantic: bool = False,
           n: int | None = None, keying: str = "field",
           only_source: str | None = None, batch: int | None = BATCH) -> dict[str, Any]:
    """Both floors of each mode (``batch=None``: the per-event floor only). Each mode's
    ``ms_per_seq`` and ``cores`` are the per-event floor's, as before issue 35; its
    ``columnar`` entry is the columnar floor's (with its ``batch``)."""
    from runtime_seq_peak import workload

    from reuse.core.paths import riotbench_dir
    from reuse.runtime.floor import floor_run

    flows = workload(workload_name, n, keying=keying, only_source=only_source)
    dd = str(riotbench_dir(None))
    out: dict[str, Any] = {"dags": len(flows), "seqs": seqs}
    from reuse.tasks.matching import SEMANTIC

    runs = [("default", False, None), ("reuse", True, None)]
    if semantic:  # Reuse merging by meaning (issue 25): the ``~semantic`` modes' work
        runs.append(("semantic", True, SEMANTIC))
    kinds: list[dict[str, Any]] = [{}]
    if batch is not None:
        kinds.append({"columnar": True, "batch": batch})
    for mode, shares, match in runs:
        out[mode] = {}
        for kind in kinds:
            opts = {"shares": shares, "data_dir": dd, "pi_iterations": pi_iterations,
                    "match": match, **kind}
            floor_run(flows, seqs=min(50, seqs), start=10_000, **opts)  # warm: models
            r = floor_run(flows, seqs=seqs, **opts)  # trained, files read, columns split
            if kind:
                out[mode]["columnar"] = {"batch": batch, **_floor(r)}
            else:
                out[mode].update({"tasks": r.tasks, "sources": r.sources, **_floor(r)})
    out["work_saved_cores"] = _saved(out["default"], out["reuse"])
    if batch is not None:
        out["columnar_work_saved_cores"] = _saved(out["default"]["columnar"],
                                                  out["reuse"]["columnar"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seqs", type=int, default=2000)
    ap.add_argument("--workload", default="riot,opmw")
    ap.add_argument("--batch", type=int, default=BATCH,
                    help="source seq per batch of the columnar floor (0: per-event floor only)")
    ap.add_argument("--json", default=None,
                    help="the raw file, with provenance (the committed one: "
                         "docs/bench/floor.json)")
    args = ap.parse_args()
    if args.batch < 0 or args.seqs < 1:
        ap.error("--seqs must be at least 1 and --batch at least 0")
    res = {}
    for w in args.workload.split(","):
        res[w] = r = floors(w, args.seqs, batch=args.batch or None)
        for mode in ("default", "reuse"):
            m = r[mode]
            print(f"{w} {mode}: {r['dags']} DAGs, {m['tasks']} tasks + {m['sources']} sources, "
                  f"{m['ms_per_seq']} ms CPU per seq; cores at " +
                  ", ".join(f"{x}/s {m['cores'][str(x)]}" for x in RATES), flush=True)
            if "columnar" in m:
                c = m["columnar"]
                print(f"{w} {mode} columnar (batch {c['batch']}): {c['ms_per_seq']} ms CPU per "
                      f"seq ({c['ms_per_seq'] / m['ms_per_seq']:.2f}x per event); cores at " +
                      ", ".join(f"{x}/s {c['cores'][str(x)]}" for x in RATES), flush=True)
        for key, label in (("work_saved_cores", ""), ("columnar_work_saved_cores", " columnar")):
            if key in r:
                print(f"{w}{label} work saved (Default - Reuse), cores at " +
                      ", ".join(f"{x}/s {r[key][str(x)]}" for x in RATES), flush=True)
    if args.json:
        from provenance import raw_file

        raw_file(args.json, res)


if __name__ == "__main__":
    main()

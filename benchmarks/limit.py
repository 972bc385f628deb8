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

Run: ``.venv/bin/python benchmarks/limit.py [--seqs riot=2000,opmw=300] [--batch 1000]
[--repeat 3] [--json docs/bench/floor.json]``.
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


#: issue 35's target for the columnar floor at the RIoT SEQ peak, Reuse (ms of CPU per seq)
TARGET_MS = 0.24


def _spread(values: list[float]) -> dict[str, Any]:
    from reuse.runtime.spread import Spread

    return {"values": [round(v, 4) for v in values], **Spread.of(values).to_dict()}


def floors(workload_name: str, seqs: int, pi_iterations: int = 1600, semantic: bool = False,
           n: int | None = None, keying: str = "field",
           only_source: str | None = None, batch: int | None = BATCH,
           repeat: int = 1) -> dict[str, Any]:
    """Both floors of each mode (``batch=None``: the per-event floor only). Each mode's
    ``ms_per_seq`` and ``cores`` are the per-event floor's, as before issue 35; its
    ``columnar`` entry is the columnar floor's (with its ``batch``). With ``repeat`` > 1 each
    mode runs its floors interleaved (per event, columnar, per event, ...: a drift of the
    machine hits both alike); the figures are the medians, ``spread`` holds every run's
    ms per seq, and ``verdict`` the columnar floor against the per-event one
    (:func:`reuse.runtime.spread.compare`)."""
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
    from reuse.runtime.spread import compare

    for mode, shares, match in runs:
        out[mode] = {}
        ms: dict[int, list[float]] = {i: [] for i in range(len(kinds))}
        results: dict[int, list[Any]] = {i: [] for i in range(len(kinds))}
        for kind in kinds:
            opts = {"shares": shares, "data_dir": dd, "pi_iterations": pi_iterations,
                    "match": match, **kind}
            floor_run(flows, seqs=min(50, seqs), start=10_000, **opts)  # warm: models
        for _ in range(repeat):  # trained, files read, columns split
            for i, kind in enumerate(kinds):
                opts = {"shares": shares, "data_dir": dd, "pi_iterations": pi_iterations,
                        "match": match, **kind}
                r = floor_run(flows, seqs=seqs, **opts)
                ms[i].append(r.ms_per_seq)
                results[i].append(r)
        for i, kind in enumerate(kinds):
            rs = sorted(results[i], key=lambda r: r.ms_per_seq)
            r = rs[(len(rs) - 1) // 2]  # the median run (the lower middle of an even count)
            fig = {**_floor(r), **({"spread": _spread(ms[i])} if repeat > 1 else {})}
            if kind:
                out[mode]["columnar"] = {"batch": batch, **fig}
            else:
                out[mode].update({"tasks": r.tasks, "sources": r.sources, **fig})
        if repeat > 1 and len(kinds) == 2:
            v = compare("columnar", ms[1], "per-event", ms[0], unit="ms/seq")
            out[mode]["verdict"] = {**v.to_dict(), "text": str(v)}
    out["work_saved_cores"] = _saved(out["default"], out["reuse"])
    if batch is not None:
        out["columnar_work_saved_cores"] = _saved(out["default"]["columnar"],
                                                  out["reuse"]["columnar"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seqs", default="2000",
                    help="source seq per floor run: N, or per workload (riot=2000,opmw=300: "
                         "OPMW's Pi tasks cost 40 ms per seq per event)")
    ap.add_argument("--workload", default="riot,opmw")
    ap.add_argument("--batch", type=int, default=BATCH,
                    help="source seq per batch of the columnar floor (0: per-event floor only)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each floor per mode, interleaved (3 or more decide: "
                         "medians, spreads and the columnar-vs-per-event verdict)")
    ap.add_argument("--json", default=None,
                    help="the raw file, with provenance (the committed one: "
                         "docs/bench/floor.json)")
    args = ap.parse_args()
    workloads = args.workload.split(",")
    try:
        seqs = ({w: int(args.seqs) for w in workloads} if "=" not in args.seqs else
                {w: int(n) for w, n in (x.split("=", 1) for x in args.seqs.split(","))})
    except ValueError:
        ap.error(f"--seqs {args.seqs!r}: N or workload=N,...")
    if (args.batch < 0 or args.repeat < 1 or set(seqs) < set(workloads)
            or min(seqs.values()) < 1):
        ap.error("--seqs (for every workload) and --repeat must be at least 1, --batch at "
                 "least 0")
    res = {}
    for w in workloads:
        res[w] = r = floors(w, seqs[w], batch=args.batch or None, repeat=args.repeat)
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
            if "verdict" in m:
                print(f"{w} {mode}: {m['verdict']['text']}", flush=True)
        if w == "riot" and args.batch and "spread" in r["reuse"]["columnar"]:
            top = r["reuse"]["columnar"]["spread"]["max"]
            r["target"] = {"ms_per_seq": TARGET_MS, "reuse_columnar_max": top,
                           "met": top <= TARGET_MS}
            print(f"{w} target (Reuse's columnar floor <= {TARGET_MS} ms per seq, every run): "
                  f"{'met' if top <= TARGET_MS else 'missed'} (slowest run {top:.4f})",
                  flush=True)
        for key, label in (("work_saved_cores", ""), ("columnar_work_saved_cores", " columnar")):
            if key in r:
                print(f"{w}{label} work saved (Default - Reuse), cores at " +
                      ", ".join(f"{x}/s {r[key][str(x)]}" for x in RATES), flush=True)
    if args.json:
        from provenance import raw_file

        raw_file(args.json, res)


if __name__ == "__main__":
    main()

"""The columnar floor with and without the cyclic collector's hold (issue 35,
``reuse.tasks.columnar.gc_hold``), interleaved, into ``docs/bench/gc_hold.json``.

The hold is a choice about the interpreter, not the tasks, so it is measured where nothing
else moves: the RIoT SEQ peak's columnar floor (every dataflow, Default and Reuse, 1,000 ``seq``
a batch), one plain process, the two arms alternating (without, with, without, ...) so a drift
of the machine hits both alike; the spread rule (:func:`reuse.runtime.spread.compare`) decides
each mode::

    .venv/bin/python benchmarks/gc_hold.py [--seqs 2000] [--reps 5] [--json docs/bench/gc_hold.json]

Run it alone: it is CPU time of one process.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from benchmarks.provenance import raw_file  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seqs", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", type=Path, default=ROOT / "docs" / "bench" / "gc_hold.json")
    args = ap.parse_args(argv)
    from runtime_seq_peak import workload

    from reuse.core.paths import riotbench_dir
    from reuse.runtime.floor import floor_run
    from reuse.runtime.spread import compare
    from reuse.tasks.columnar.gc_hold import HELD_THRESHOLD

    flows = workload("riot", None, keying="field", only_source=None)
    base = {"data_dir": str(riotbench_dir(None)), "pi_iterations": 1600, "columnar": True,
            "batch": 1000}
    runs: list[dict[str, object]] = []
    verdicts = {}
    for mode, shares in (("default", False), ("reuse", True)):
        floor_run(flows, shares=shares, seqs=50, start=10_000, **base)  # warm: models, files
        ms: dict[str, list[float]] = {"without": [], "with": []}
        for rep in range(args.reps):
            for arm, hold in (("without", False), ("with", True)):
                r = floor_run(flows, shares=shares, seqs=args.seqs, hold_gc=hold, **base)
                ms[arm].append(round(r.ms_per_seq, 4))
                runs.append({"mode": mode, "arm": arm, "rep": rep + 1, "ms_per_seq": ms[arm][-1]})
                print(json.dumps(runs[-1]), flush=True)
        v = compare("with", ms["with"], "without", ms["without"], unit="ms/seq")
        verdicts[mode] = {**v.to_dict(), "text": str(v)}
        print(mode, v)
    raw_file(args.json, {"runs": runs, "verdicts": verdicts},
             args={"seqs": args.seqs, "reps": args.reps, "batch": 1000, "workload": "riot",
                   "held_threshold": HELD_THRESHOLD, "default_threshold": gc.get_threshold()[0]})
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

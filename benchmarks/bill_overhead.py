"""How much of a live run's CPU the bills cover: task CPU billed against all CPU measured.

For a shared-query run (``reuse run --merge inplace --root RUN``), the bills
(``reuse bill --run RUN``) add up to the task CPU the engine timed per batch
(``RUN/batches.jsonl``). Everything else the run's processes spent (driver, JVM, scheduling,
sink records outside the task loop) is overhead, left outside the bill. This compares the two
over the trace's steps: the run's measured CPU is the sum of the CSV rows' ``cores`` times the
step length.

Run: ``.venv/bin/python benchmarks/bill_overhead.py RUN_DIR ROWS.json MODE --step-seconds 12``,
where ROWS.json is ``benchmarks/runtime_trace.py --out``'s file (``rows[MODE]``).
"""

from __future__ import annotations

import argparse
import json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("rows")
    ap.add_argument("mode")
    ap.add_argument("--step-seconds", type=float, required=True)
    args = ap.parse_args()
    led = json.load(open(f"{args.run}/ledger.json", encoding="utf-8"))
    ops = [e for e in led["log"] if e["event"] in ("submit", "remove")]
    t0 = ops[0]["ms"] - 1000 * ops[0]["s"]
    t1 = ops[-1]["ms"] - 1000 * ops[-1]["s"] + 1000 * args.step_seconds
    task = 0.0
    with open(f"{args.run}/batches.jsonl", encoding="utf-8") as fh:
        for line in fh:
            b = json.loads(line)
            if t0 <= b["ms"] <= t1:
                task += sum(b["task_cpu_s"].values())
    rows = json.load(open(args.rows, encoding="utf-8"))["rows"][args.mode]
    total = sum(r["cores"] for r in rows) * args.step_seconds
    print(f"{args.mode}: measured CPU over the steps {total:.1f} s; task CPU billed {task:.1f} s "
          f"({task / total:.1%}); outside the bill {total - task:.1f} s ({1 - task / total:.1%})")


if __name__ == "__main__":
    main()

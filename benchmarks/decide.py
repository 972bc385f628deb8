"""Decide one registered comparison: interleaved fresh-JVM runs, paired by step (issue 33, item 3).

    .venv/bin/python benchmarks/decide.py --list                       # registry, times, total
    .venv/bin/python benchmarks/decide.py fig3-riot --reps 3 --dry-run  # the commands it runs
    .venv/bin/python benchmarks/decide.py fig3-riot --reps 3            # run, write the raw file

**Status (2026-11-28): seven comparisons run**, each at ``--reps 3`` with every run complete:
``fig3-riot`` (37 min 17 s against the 39 min ``--list`` estimates), ``fig3-opmw`` (74 min
against 70), ``trace-inplace-riot``, ``rates-riot-floor`` (15 min against 14: the first
through the cell path, the rate script's own ``--repeat``), ``trace-lazy-opmw`` (43 min
against 52), ``rates-opmw-inplace`` (20 min against 19) and ``rates-riot-inplace`` (37 min
against 37). Raw files ``docs/bench/decide_*.json``; ``benchmarks/report.py`` renders each
and checks its verdict. The whole registered set is estimated at about 8 hours at 3
repetitions: over issue 33's 3-hour target.

The registry is ``benchmarks/decisions.py`` (plain data). A ``trace`` comparison runs its arms
``A B A B ...``, each run ``decide.py NAME --only-arm ARM`` in its own process and JVM (the
pattern of ``runtime_seq_peak.py`` and ``runtime_rates.py``), which replays the trace live
(:func:`reuse.runtime.run.live_run`) and prints its CSV rows as one ``RESULT`` line. Run ``i``
of every arm is a pair: the same trace and step boundaries (the cuts are recorded per step), so
each step is decided on the paired differences and each whole-run statistic (peak, mean, the
removals) both paired and on the per-run values (:func:`reuse.runtime.spread.paired`). A
``cell`` comparison runs its script once with ``--repeat N`` (which interleaves the arms in
fresh JVMs itself) and is decided on its runs paired by repetition, a "step" per rate. The raw
file (``provenance.raw_file``: command, commit, machine, time) holds every run's rows, so
``benchmarks/report.py`` regenerates the decision from it.

**What is shortened**, against the commands that recorded the figures (docs/benchmark-plan.md):

- Traces on the shared query (Figure 3 on both workloads; the 8-DAG inplace trace): steps of 15
  s (12 s) become 8 s, 4 triggers of 2 s. The statistic, a step's cores (CPU over the step / its
  length), does not change: an op there takes under 0.02 s and starts no query, and in the
  recorded Figure 3 runs a step's cores and its second half's (``cores_steady``) differ by a
  median 0.003-0.007 cores from step 2 on, so a step measures the deployed set's steady rate,
  whatever its length. What a shorter step changes is how many batches it averages (more noise
  per step, which the repetitions' spread carries). The only part that scales with the step
  is the wait, at most one trigger (2 s), before a new DAG's tasks run: it moves a step's
  expected cores by at most 2 s x (1/8 - 1/15) /s = 0.12 of one DAG's increment (about 0.01
  cores at 10 events/s), under 0.002 cores. 8 s is a whole number of triggers (15 s was 7.5),
  so every step holds the same number of batches.
- Warm-up: still 10 s of sources only, and excluded, like the JVM start, from every step; each
  run is a fresh JVM (the recorded Figure 3 ran Default and then Reuse in one process).
- Not shortened: the query-per-DAG traces (an op starts a query, seconds of CPU that a step's
  cores spread over its length: a shorter step would change the statistic) and the cells (one
  settle and window per run; no per-window data shows a shorter window measures the same).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _p in (ROOT, ROOT / "benchmarks"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from children import run_child  # noqa: E402
from decisions import COMPARISONS, JVM_START_S, Comparison, get, total_seconds  # noqa: E402
from provenance import raw_file  # noqa: E402

from reuse.runtime.spread import MIN_REPEATS, interleave, paired  # noqa: E402

#: the whole set's time budget (issue 33's target)
BUDGET_S = 3 * 3600.0


# ---------------------------------------------------------------- plan and commands

def plan(c: Comparison, reps: int) -> list[tuple[int, str]]:
    """The runs of a trace comparison in order: ``(repetition, arm)``, ``A B A B ...``."""
    return interleave(list(c.arms), reps) if c.kind == "trace" else []


def arm_argv(c: Comparison, arm: str) -> list[str]:
    """One run of one arm, in a fresh process (and so a fresh JVM)."""
    return [sys.executable, str(Path(__file__).resolve()), c.name, "--only-arm", arm]


def cell_argv(c: Comparison, reps: int, out: str) -> list[str]:
    """A cell comparison: its script with ``--repeat`` and its JSON output."""
    return [sys.executable, str(ROOT / c.script), *c.args, "--repeat", str(reps), c.out_flag, out]


def commands(c: Comparison, reps: int, out: str = "TMP/cell.json") -> list[list[str]]:
    """Every command ``decide.py NAME --reps reps`` starts, in order."""
    if c.kind == "trace":
        return [arm_argv(c, arm) for _, arm in plan(c, reps)]
    return [cell_argv(c, reps, out)]


# ---------------------------------------------------------------- the runs (subprocesses)

def _spawn(argv: list[str]) -> dict[str, Any] | None:
    """Run ``argv``, echo its output, return its ``RESULT`` line's JSON (``None``: failed)."""
    code, result = run_child(argv, cwd=ROOT)
    if code != 0 or result is None:
        print(f"  run failed (exit {code}): {shlex.join(argv)}", flush=True)
        return None
    return dict(result)


def run_arm(c: Comparison, arm: str) -> dict[str, Any] | None:
    """One run of ``arm`` in a fresh process: ``{"rows": [...]}``, or ``None`` if it failed."""
    return _spawn(arm_argv(c, arm))


def run_cell(c: Comparison, reps: int, out: Path) -> dict[str, Any] | None:
    """The cell script's ``--repeat`` run; its JSON, or ``None`` if it failed."""
    argv = cell_argv(c, reps, str(out))
    if subprocess.run(argv, cwd=ROOT).returncode != 0 or not out.is_file():
        print(f"  failed: {shlex.join(argv)}", flush=True)
        return None
    raw = dict(json.loads(out.read_text(encoding="utf-8")))
    # a script's raw file with its provenance header (provenance.raw_file): its results
    return dict(raw["results"]) if "provenance" in raw and "results" in raw else raw


def trace_ops(c: Comparison) -> tuple[dict[str, Any], list[Any]]:
    """The comparison's dataflows and trace, built as ``runtime_trace.py`` builds them."""
    from reuse.workloads.trace_registry import build_trace

    trace = build_trace(c.workload, c.trace, subset=c.dags or None, subset_seed=1)
    return dict(trace.flows), list(trace.ops)


def trace_shape(c: Comparison) -> tuple[list[tuple[str, str]], dict[str, list[int]]]:
    """The trace's ``(op, dag)`` per step and each window's steps (0-based): the planner
    only, no Spark. ``peak``: the step with most Default tasks and the next."""
    from reuse.core.planner import replay

    flows, ops = trace_ops(c)
    steps = replay(flows, ops)
    peak = max(range(len(steps)), key=lambda i: steps[i].default_tasks)
    every = {"peak": sorted({peak, min(peak + 1, len(ops) - 1)}), "mean": list(range(len(ops))),
             "removals": [i for i, op in enumerate(ops) if op.op == "remove"]}
    return [(op.op, op.dag) for op in ops], {w: every[w] for w in c.windows}


def arm_main(c: Comparison, arm: str) -> dict[str, Any]:
    """The child process: replay the trace live as ``arm``; its rows and wall time."""
    from reuse.runtime.run import live_run
    from reuse.runtime.spec import RunSpec

    flows, ops = trace_ops(c)
    root = Path(tempfile.mkdtemp(prefix=f"decide-{c.name}-{arm}-"))
    t0 = time.time()
    try:
        rows = live_run(flows, ops, RunSpec.of(
            policy=arm, root=root, step_seconds=c.step_s, warmup_s=c.warmup_s, rate=c.rate,
            trigger_s=c.trigger_s))
    finally:
        shutil.rmtree(root, ignore_errors=True)  # the rows keep what the run measured
    return {"rows": rows, "seconds": round(time.time() - t0, 1)}


# ---------------------------------------------------------------- aggregation (pure)

def _decisions(c: Comparison, runs: list[dict[str, Any]], reps: int, labels: list[str],
               windows: dict[str, list[int]] | None) -> list[dict[str, Any]]:
    by = {(r["rep"], r["arm"]): r for r in runs if r["ok"]}
    out = []
    for a, b in c.pairs:
        both = [(by[i, a]["values"], by[i, b]["values"]) for i in range(1, reps + 1)
                if (i, a) in by and (i, b) in by]
        out.append(paired(a, b, both, windows=windows, labels=labels,
                          unit=c.statistic).to_dict())
    return out


def aggregate_trace(c: Comparison, reps: int, ops: list[tuple[str, str]],
                    windows: dict[str, list[int]], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The raw file's results from every run: a run is complete (``ok``) when its rows are the
    trace's steps, one each, in order; its ``values`` are the statistic's column."""
    for r in runs:
        rows = r.get("rows") or []
        r["ok"] = bool(r.get("ok", True)) and [(x["op"], x["dag"]) for x in rows] == ops
        r["values"] = [x.get(c.statistic) for x in rows] if r["ok"] else []
    cuts = [[x["rows"][i].get("cut") for x in runs if x["ok"]] for i in range(len(ops))]
    labels = [f"{op} {dag}" for op, dag in ops]
    return {"kind": "trace", "statistic": c.statistic, "reps": reps,
            "order": [[r["rep"], r["arm"]] for r in runs], "labels": labels,
            "cuts": [[min(cs), max(cs)] if cs and None not in cs else None for cs in cuts],
            "windows": windows, "runs": runs,
            "decisions": _decisions(c, runs, reps, labels, windows)}


def aggregate_cell(c: Comparison, reps: int, raw: dict[str, Any]) -> dict[str, Any]:
    """The raw file's results from a cell script's JSON: per arm and repetition the value at
    each rate (``runtime_rates.py``) or at the SEQ peak (``runtime_seq_peak.py``)."""
    if "cells" in raw:
        rates = list(dict.fromkeys(float(x["rate"]) for x in raw["cells"]))
        labels = [f"{r:g}/s" for r in rates]
        got = {(x.get("rep", 1), x["mode"], float(x["rate"])): x.get("cores")
               for x in raw["cells"] if not x.get("failed")}
        values = {(i, a): [got.get((i, a, r)) for r in rates] for i in range(1, reps + 1)
                  for a in c.arms}
    else:
        labels = ["SEQ peak"]
        values = {(i, a): [None] for i in range(1, reps + 1) for a in c.arms}
        for a, rs in (raw.get("runs") or {}).items():
            for x in rs:
                values[x.get("rep", 1), a] = [x["peak"]["cores"]]
    runs = [{"rep": i, "arm": a, "ok": any(v is not None for v in values[i, a]),
             "values": values[i, a]} for i, a in sorted(values)]
    return {"kind": "cell", "statistic": c.statistic, "reps": reps, "labels": labels,
            "runs": runs, "decisions": _decisions(c, runs, reps, labels, {}), "delegated": raw}


# ---------------------------------------------------------------- run, list, print

def decide(c: Comparison, reps: int, out: Path) -> Path:
    """Run ``c`` ``reps`` times and write its raw file to ``out``."""
    if c.kind == "trace":
        ops, windows = trace_shape(c)
        order = plan(c, reps)
        runs = []
        for k, (rep, arm) in enumerate(order, 1):
            print(f"== {c.name}: run {k} of {len(order)}, repetition {rep}, {arm}", flush=True)
            t0 = time.time()
            got = run_arm(c, arm)
            runs.append({"rep": rep, "arm": arm, "ok": got is not None,
                         "seconds": round(time.time() - t0, 1),
                         "rows": [] if got is None else got["rows"]})
        results = aggregate_trace(c, reps, ops, windows, runs)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            raw = run_cell(c, reps, Path(tmp) / "cell.json")
        if raw is None:
            raise SystemExit(f"{c.name}: the cell script failed; no raw file written")
        results = aggregate_cell(c, reps, raw)
    path = raw_file(out, results, comparison=c.to_dict())
    print(summary(results))
    print(f"wrote {path}")
    return path


def summary(results: dict[str, Any]) -> str:
    """The verdicts, one block per compared pair."""
    lines = []
    for d in results["decisions"]:
        n, steps = d["n"], len(d["steps"])
        lines.append(f"{d['a']} - {d['b']}: {n} paired runs; per step "
                     + ", ".join(f"{v} at {k}" for v, k in d["counts"].items())
                     + f" (by chance alone about {steps * d['chance']:.1f} each way)")
        for w in d["windows"]:
            p, whole = w["paired"], w["whole"]
            x = p["diff"]
            diff = "-" if x is None else f"{x['median']:.3f} [{x['min']:.3f}, {x['max']:.3f}]"
            unpaired = f"{whole['lower']} lower" if whole["lower"] else whole["outcome"]
            lines.append(f"  {w['name']}: paired difference {diff}: {p['verdict']}; whole "
                         f"runs (spread rule): {unpaired}")
    return "\n".join(lines)


def _hm(seconds: float) -> str:
    m = int(round(seconds / 60))
    return f"{m} min" if m < 60 else f"{m // 60} h {m % 60:02d} min"


def list_text(reps: int = 3) -> str:
    """The registry with each comparison's parameters and estimated time, and the total."""
    rows = [f"{'name':<20} {'issue':>5} {'kind':<5} {'runs':>4} {'est.':>12}  raw file"]
    for c in COMPARISONS:
        rows.append(f"{c.name:<20} {c.issue:>5} {c.kind:<5} {reps * c.runs_per_rep:>4} "
                    f"{_hm(c.seconds(reps)):>12}  {c.raw}")
    total = total_seconds(reps)
    by_kind = {k: sum(c.seconds(reps) for c in COMPARISONS if c.kind == k)
               for k in ("trace", "cell")}
    verdict = (f"within the {_hm(BUDGET_S)} target" if total < BUDGET_S else
               f"over the {_hm(BUDGET_S)} target by {_hm(total - BUDGET_S)}")
    rows.append(f"total: {_hm(total)} for {len(COMPARISONS)} comparisons at --reps {reps} "
                f"(traces {_hm(by_kind['trace'])}, cells {_hm(by_kind['cell'])}): {verdict}")
    rows.append(f"(a run: JVM start {JVM_START_S:g} s + warm-up + steps, drain and check; "
                "cells: the recorded run times)")
    for c in COMPARISONS:
        params = (f"{c.workload} {c.trace}, {f'{c.dags} DAGs' if c.dags else 'every DAG'}: "
                  f"{c.steps} steps of "
                  f"{c.step_s:g} s, warm-up {c.warmup_s:g} s, {c.rate:g} events/s, trigger "
                  f"{c.trigger_s:g} s; windows {', '.join(c.windows)}" if c.kind == "trace"
                  else f"{c.script} {shlex.join(c.args)}")
        rows += ["", f"{c.name} (issue {c.issue}): {c.target}",
                 f"  arms: {', '.join(c.arms)}; paired: "
                 + (", ".join(f"{a} - {b}" for a, b in c.pairs) or "none (against the floor)"),
                 f"  run: {params}", f"  statistic: {c.statistic}; raw file: {c.raw}",
                 f"  shortened: {c.shortened}",
                 f"  estimate: {c.formula(reps)} = {_hm(c.seconds(reps))}"]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name", nargs="?", help="a registered comparison (--list shows them)")
    ap.add_argument("--reps", type=int, default=MIN_REPEATS,
                    help=f"repetitions per arm (at least {MIN_REPEATS} decide anything)")
    ap.add_argument("--list", action="store_true", help="the registry, times and total")
    ap.add_argument("--dry-run", action="store_true", help="print the commands; run nothing")
    ap.add_argument("--out", type=Path, default=None, help="the raw file (default: registry's)")
    ap.add_argument("--only-arm", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.reps < 1:
        ap.error("--reps must be at least 1")
    if args.list:
        print(list_text(args.reps))
        return 0
    if not args.name:
        ap.error("give a comparison's name, or --list")
    try:
        c = get(args.name)
    except KeyError as exc:
        ap.error(str(exc.args[0]))
    if args.only_arm:  # the child: one run of one arm, its rows as the last line
        if args.only_arm not in c.arms:
            ap.error(f"--only-arm {args.only_arm}: not an arm of {c.name} ({', '.join(c.arms)})")
        print("RESULT " + json.dumps(arm_main(c, args.only_arm)), flush=True)
        return 0
    if args.dry_run:
        for cmd in commands(c, args.reps):
            print(shlex.join(cmd))
        print(f"# {c.name}: estimated {_hm(c.seconds(args.reps))}; raw file {args.out or c.raw}")
        return 0
    if args.reps < MIN_REPEATS:
        print(f"note: fewer than {MIN_REPEATS} repetitions decide nothing (not decided)")
    decide(c, args.reps, args.out or ROOT / c.raw)
    return 0


if __name__ == "__main__":
    sys.exit(main())

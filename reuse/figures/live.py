"""The live tables of the summary (Figure 3): Reuse against Default, printed only as far as the
measurements decide (issue 33, item 0).

A live run's CSV (:func:`reuse.runtime.run.write_rows`) has one row per step. Three things keep
the table honest:

- **Steps measured over too little of their length are excluded.** ``cores`` is CPU over a
  window divided by the step's length; a step whose window covered less than
  :data:`MIN_MEASURED` (80%) of the step is flagged, named with its reason in
  ``excluded_steps``, and left out of the peak, the mean and the step-by-step count. The window
  is ``measured_s`` where the CSV has it; in older CSVs (cores measured after the operation
  returned) it is the step's length minus ``op_seconds``, the length being ``t_end_ms -
  t_start_ms`` where present, else ``max(step_seconds, op_seconds)`` (the run idles until the
  step's time is up, or ends the step once a longer operation returns).
- **No ratio over a near-zero denominator, none the runs do not decide.** A saving is printed
  only when Default measured at least :data:`MIN_DEFAULT_CORES` (0.05 cores) at that step and
  the spread rule below decided a difference (one short run's "saving" of -1.46 over a peak
  it could not tell apart was printed before); ``core_over_task_saving`` only when both
  savings are printable (and some task was saved).
- **A cost is decided only by the project's spread rule** (:mod:`reuse.runtime.spread`): each
  run's mean cores over the steps every run measured, compared by min-max ranges, at least
  :data:`~reuse.runtime.spread.MIN_REPEATS` runs per mode. One run per mode (what the live
  notebook makes) prints ``exact: yes; cores: not decided at this length``; where a committed
  benchmark (``docs/bench/*.json``) decided the same comparison, ``decided_figure`` points to
  it (file and BENCHMARKS.md section, read from the files, no number typed here).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from reuse.analysis.paper import PAPER
from reuse.runtime.common.policy import LIVE_MODES
from reuse.runtime.spread import MIN_REPEATS, compare

__all__ = ["MIN_MEASURED", "MIN_DEFAULT_CORES", "LIVE_NOTE", "measured_fraction",
           "excluded_steps", "saving", "decided_figures", "live_baseline", "live_summary_row",
           "live_summary_table"]

#: A step whose cores were measured over less than this share of it is excluded.
MIN_MEASURED = 0.8
#: No saving is printed over a Default value below this (cores).
MIN_DEFAULT_CORES = 0.05

_ROOT = Path(__file__).resolve().parents[2]

#: What the live tables' columns mean, printed under each by :func:`reuse.figures.batch.write_summary`.
LIVE_NOTE = (
    f"Live tables: a step whose cores were measured over less than {MIN_MEASURED:.0%} of it "
    "(an operation longer than the step) is listed in `excluded_steps` and left out of "
    "`peak_cores`, `mean_cores` and `steps_reuse_above_default`. A saving is printed only "
    f"when Default measured at least {MIN_DEFAULT_CORES} cores there and `verdict` decided a "
    "difference, and "
    "`core_over_task_saving` only when both savings are. `verdict` applies the spread rule "
    f"(`reuse.runtime.spread`: at least {MIN_REPEATS} runs per mode, ranges that overlap are "
    "no difference): one run per mode decides no cost. `decided_figure` points to a committed "
    "benchmark that decided the same comparison, where there is one.\n")


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    """Column ``name`` as floats (NaN where absent or empty)."""
    if name not in df.columns:
        return pd.Series(math.nan, index=df.index, dtype=float)
    return pd.to_numeric(df[name], errors="coerce").astype(float)


def _step_lengths(df: pd.DataFrame, step_seconds: float | None) -> pd.Series:
    """Each step's length in seconds: ``t_end_ms - t_start_ms``, else ``max(step_seconds,
    op_seconds)`` (NaN when neither is known)."""
    length = (_col(df, "t_end_ms") - _col(df, "t_start_ms")) / 1000
    if step_seconds is not None:
        nominal = _col(df, "op_seconds").fillna(0.0).clip(lower=float(step_seconds))
        length = length.where(length.notna(), nominal)
    return length


def measured_fraction(df: pd.DataFrame, step_seconds: float | None = None) -> pd.Series:
    """The share of each step its ``cores`` were measured over (NaN: cannot tell).

    ``measured_s`` over the step's length where the CSV has it, else (older CSVs, measured
    after the operation returned) the length minus ``op_seconds`` over the length.

    Examples
    --------
    >>> old = pd.DataFrame({"step": [1, 2], "op_seconds": [0.5, 6.2]})
    >>> measured_fraction(old, step_seconds=4).round(3).tolist()  # step 2 lasted 6.2 s
    [0.875, 0.0]
    >>> new = pd.DataFrame({"step": [1], "op_seconds": [6.2], "measured_s": [6.25],
    ...                     "t_start_ms": [0], "t_end_ms": [6250]})
    >>> measured_fraction(new).tolist()
    [1.0]
    """
    length = _step_lengths(df, step_seconds)
    measured = _col(df, "measured_s")
    inferred = (length - _col(df, "op_seconds").fillna(0.0)).clip(lower=0.0)
    measured = measured.where(measured.notna(), inferred)
    frac = (measured / length).where(length > 0)
    return frac.clip(upper=1.0)


def excluded_steps(df: pd.DataFrame, step_seconds: float | None = None) -> dict[int, str]:
    """Step -> why its cores are left out (measured over less than :data:`MIN_MEASURED` of it).

    Examples
    --------
    >>> old = pd.DataFrame({"step": [1, 2], "op_seconds": [0.5, 6.2]})
    >>> excluded_steps(old, step_seconds=4)
    {2: 'cores over 0.0 of 6.2 s (op 6.2 s)'}
    """
    frac = measured_fraction(df, step_seconds)
    length = _step_lengths(df, step_seconds)
    op = _col(df, "op_seconds")
    out = {}
    for i in df.index[frac < MIN_MEASURED]:
        seen = frac[i] * length[i]
        why = f"cores over {seen:.1f} of {length[i]:.1f} s"
        if not math.isnan(op[i]):
            why += f" (op {op[i]:.1f} s)"
        out[int(df.loc[i, "step"])] = why
    return out


def saving(default: float | None, reuse: float, *,
           min_default: float = MIN_DEFAULT_CORES) -> float | None:
    """``1 - reuse / default``, or ``None`` when ``default`` is under ``min_default`` (or not a
    number): no ratio over a near-zero denominator.

    Examples
    --------
    >>> saving(1.0, 0.7)
    0.30000000000000004
    >>> saving(0.001, 0.4) is None
    True
    """
    if default is None or math.isnan(default) or default < min_default:
        return None
    return 1 - reuse / default


def _verdicts(obj: Any) -> Iterator[dict[str, Any]]:
    """Every spread verdict (:meth:`reuse.runtime.spread.Verdict.to_dict`) inside ``obj``."""
    if isinstance(obj, dict):
        if {"a", "b", "outcome"} <= obj.keys():
            yield obj
        for v in obj.values():
            yield from _verdicts(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _verdicts(v)


def _section(benchmarks: str, name: str) -> str | None:
    """The heading of the BENCHMARKS.md section whose table is generated from ``name``, else
    of the first section that cites it (an overview may cite a file before its section)."""
    heading = None
    first = None
    for line in benchmarks.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif name in line and heading is not None:
            if line.startswith("Generated from") or line.startswith("`" + name):
                return heading
            first = first or heading
    return first


def _decided_args(data: Any) -> tuple[Any, list[dict[str, Any]]]:
    """What a raw file compared (``workload``, and ``kind``: the trace it was run on, if one)
    and its verdicts. A ``benchmarks/decide.py`` file names them in ``comparison``, and its
    headline is the verdict of its first window (``peak``): the per-step verdicts under it
    are not the comparison's answer. Other files name them in ``args``."""
    if not isinstance(data, dict):
        return None, []
    comp = data.get("comparison")
    if isinstance(comp, dict):
        windows = comp.get("windows") or []
        verdicts = [v for v in _verdicts(data.get("results"))
                    if not windows or v.get("label") == windows[0]]
        return {"workload": comp.get("workload"), "kind": comp.get("trace")}, verdicts
    return data.get("args"), list(_verdicts(data))


@functools.lru_cache(maxsize=4)
def decided_figures(root: Path = _ROOT) -> dict[tuple[str, str, str], str]:
    """Committed comparisons the spread rule decided: ``(workload, mode, baseline)`` -> a
    pointer (``"see docs/bench/<file>.json (BENCHMARKS.md: <section>): <outcome>"``).

    Read from ``root/docs/bench/*.json``: every verdict with both modes run at least
    :data:`MIN_REPEATS` times and an outcome other than "not decided"; the workload is the
    file's ``args.workload`` (``comparison.workload`` in a ``decide.py`` file). A file that
    names a trace (``args.kind``, ``comparison.trace``) counts for that trace only: the key's
    workload is then ``workload/trace``, which a row of that trace prefers.
    """
    bench = root / "BENCHMARKS.md"
    text = bench.read_text(encoding="utf-8") if bench.exists() else ""
    out: dict[tuple[str, str, str], str] = {}
    for path in sorted((root / "docs" / "bench").glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        args, verdicts = _decided_args(data)
        if not isinstance(args, dict) or not args.get("workload"):
            continue
        key_w = str(args["workload"]) + (f"/{args['kind']}" if args.get("kind") else "")
        rel = path.relative_to(root).as_posix()
        section = _section(text, rel) or _section(text, path.name)
        for v in verdicts:
            ns = [(v.get(s) or {}).get("n", 0) for s in ("a_spread", "b_spread")]
            if v["outcome"] == "not decided" or min(ns) < MIN_REPEATS:
                continue
            what = (f"{v['lower']} lower" if v["outcome"] == "lower" else str(v["outcome"]))
            ptr = (f"see {rel}" + (f" (BENCHMARKS.md: {section})" if section else "")
                   + f": {what}, {ns[0]} and {ns[1]} runs")
            for a, b in ((v["a"], v["b"]), (v["b"], v["a"])):
                out.setdefault((key_w, str(a), str(b)), ptr)
    return out


def _decided_figure(workload: str, trace: str, mode: str, baseline: str,
                    root: Path | None) -> str:
    figs = decided_figures(root or _ROOT)
    for w in (f"{workload}/{trace}", workload):
        ptr = figs.get((w, mode, baseline))
        if ptr:
            return "decided figure: " + ptr
    return ""


def _runs(x: pd.DataFrame | Sequence[pd.DataFrame]) -> list[pd.DataFrame]:
    return [x] if isinstance(x, pd.DataFrame) else list(x)


def _fmt(x: float | None, why: str) -> str:
    return f"{x:.3f}" if x is not None else f"n/a ({why})"


def live_summary_row(default: pd.DataFrame | Sequence[pd.DataFrame],
                     reuse: pd.DataFrame | Sequence[pd.DataFrame], workload: str, trace: str,
                     mode: str = "reuse", baseline: str = "default", *,
                     step_seconds: float | None = None, root: Path | None = None,
                     ) -> dict[str, Any]:
    """Tasks and cores at the Default peak and on average, a Default run (``baseline``: the
    query-per-DAG ``default``, or ``default-inplace`` on the shared query) vs one Reuse mode.

    ``default`` and ``reuse``: one live-run frame each (the CSV of ``reuse run``), or a list of
    repetitions of each mode. The peak and mean columns are the first run's; ``verdict`` uses
    every run (:func:`reuse.runtime.spread.compare` on each run's mean cores over the steps
    measured in every run). ``step_seconds``: the runs' step length, used for CSVs without
    ``t_start_ms``/``t_end_ms`` (see :func:`measured_fraction`).

    ``peak_step`` is the step with most Default tasks; its cores are compared unless a run
    measured it over too little of it, then the next such step measured in both runs is (named
    in ``peak_cores``). ``steps_reuse_above_default`` counts the measured steps where Reuse
    measured more cores than Default; ``lost``/``duplicated`` add both modes' accounting.
    """
    d_runs, r_runs = _runs(default), _runs(reuse)
    d, r = d_runs[0].reset_index(drop=True), r_runs[0].reset_index(drop=True)
    d_ex = excluded_steps(d, step_seconds)
    r_ex = excluded_steps(r, step_seconds)
    reasons = [f"step {s}: " + "; ".join(f"{name} {ex[s]}" for name, ex
                                         in ((baseline, d_ex), (mode, r_ex)) if s in ex)
               for s in sorted(d_ex.keys() | r_ex.keys())]
    pair = d.merge(r, on="step", suffixes=("_d", "_r"))
    ok = pair[~pair["step"].isin(d_ex.keys() | r_ex.keys())]

    i = int(d["running_tasks"].idxmax())
    peak_step = int(d.loc[i, "step"])
    d_tasks, r_tasks = int(d.loc[i, "running_tasks"]), int(r.loc[i, "running_tasks"])
    task_saving = 1 - r_tasks / d_tasks if d_tasks else None

    core_saving = ratio = None
    if ok.empty:
        peak_cores = f"n/a (no step measured over {MIN_MEASURED:.0%} of it in both runs)"
        why_core = "no step measured"
    else:
        j = ok["running_tasks_d"].idxmax()
        at = ok.loc[j]
        step = int(at["step"])
        peak_cores = f"{at['cores_d']:.2f} -> {at['cores_r']:.2f}"
        if step != peak_step:
            peak_cores += f" (step {step}; peak step {peak_step} excluded)"
        core_saving = saving(float(at["cores_d"]), float(at["cores_r"]))
        why_core = f"Default < {MIN_DEFAULT_CORES} cores"
        ts = (1 - at["running_tasks_r"] / at["running_tasks_d"] if at["running_tasks_d"]
              else None)
        if core_saving is not None and ts:
            ratio = core_saving / ts
    if core_saving is None:
        why_ratio = "core saving not printable"
    else:
        why_ratio = "no task saved"
    differs, cores_verdict = _cores_verdict(d_runs, r_runs, mode, baseline, step_seconds)
    if not differs and core_saving is not None:
        # a saving is a claim about cost: printed only where the spread rule decided one
        core_saving = ratio = None
        why_core, why_ratio = "cost " + cores_verdict.split(" (")[0], "core saving not printable"
    n_ok = len(ok)
    mean = (f"{ok['cores_d'].mean():.2f} -> {ok['cores_r'].mean():.2f}" if n_ok else "n/a")
    if n_ok and n_ok < len(pair):
        mean += f" over {n_ok} of {len(pair)} steps"

    def total(key: str) -> float:
        return sum(float(df[key].fillna(0).sum()) for df in d_runs + r_runs if key in df)
    checked = all("lost" in df and df["lost"].notna().any() for df in d_runs + r_runs)
    lost, dup = int(total("lost")), int(total("duplicated"))
    exact = ("exact: not checked" if not checked else
             "exact: yes" if lost == dup == 0 else
             f"exact: no ({lost} lost, {dup} duplicated)")
    paper = PAPER.get((workload, trace), {})
    return {
        "workload": workload, "trace": trace, "mode": mode, "baseline": baseline,
        "runs": f"{len(d_runs)} / {len(r_runs)}",
        "steps": len(d),
        "peak_step": peak_step,
        "peak_tasks": f"{d_tasks} -> {r_tasks}",
        "peak_cores": peak_cores,
        "task_saving": _fmt(task_saving, "no Default task"),
        "core_saving": _fmt(core_saving, why_core),
        "core_over_task_saving": _fmt(ratio, why_ratio),
        "mean_cores": mean,
        "steps_reuse_above_default": f"{int((ok['cores_r'] > ok['cores_d']).sum())} of {n_ok}",
        "excluded_steps": "; ".join(reasons),
        "lost": lost, "duplicated": dup,
        "verdict": f"{exact}; cores: {cores_verdict}",
        "decided_figure": _decided_figure(workload, trace, mode, baseline, root),
        "paper_cores": (f"{paper['peak_default_cores']} -> {paper['peak_reuse_cores']}"
                        if "peak_default_cores" in paper else
                        (f"mean {paper['mean_default_cores']} -> {paper['mean_reuse_cores']}"
                         if "mean_default_cores" in paper else "")),
    }


def _cores_verdict(d_runs: Sequence[pd.DataFrame], r_runs: Sequence[pd.DataFrame], mode: str,
                   baseline: str, step_seconds: float | None) -> tuple[bool, str]:
    """The spread rule on each run's mean cores over the steps every run measured: whether it
    decided a difference, and the verdict in words."""
    runs = [*d_runs, *r_runs]
    steps = set.intersection(*(set(df["step"].astype(int)) for df in runs))
    for df in runs:
        steps -= excluded_steps(df, step_seconds).keys()
    if not steps:
        return False, f"not decided (no step measured over {MIN_MEASURED:.0%} of it in every run)"

    def means(dfs: Sequence[pd.DataFrame]) -> list[float]:
        return [float(df.loc[df["step"].astype(int).isin(steps), "cores"].mean()) for df in dfs]
    v = compare(mode, means(r_runs), baseline, means(d_runs))
    if v.outcome == "not decided":
        return False, (f"not decided at this length ({len(r_runs)} and {len(d_runs)} runs, at least "
                f"{MIN_REPEATS} per mode needed)")
    assert v.spread_a is not None and v.spread_b is not None and v.diff is not None
    if v.outcome == "no difference":
        return False, (f"no difference (mean over {len(steps)} steps: {mode} {v.spread_a}, "
                f"{baseline} {v.spread_b}; ranges overlap)")
    return True, (f"{v.lower} lower by {abs(v.diff):.3f} (mean over {len(steps)} steps: {mode} "
            f"{v.spread_a}, {baseline} {v.spread_b}; ranges {v.gap:.3f} apart)")


def live_baseline(mode: str, modes: Sequence[str]) -> str:
    """The Default a Reuse mode is judged against: ``default-inplace`` for the shared-query
    Reuse when it ran (the same engine), else the first mode (the notebook's baseline)."""
    if "inplace" in mode and "default-inplace" in modes:
        return "default-inplace"
    return modes[0]


def live_summary_table(results: Mapping[tuple[str, str], pd.DataFrame | Sequence[pd.DataFrame]],
                       workload: str, traces: Sequence[str], modes: Sequence[str], *,
                       step_seconds: float | None = None, root: Path | None = None,
                       ) -> pd.DataFrame:
    """The live notebook's summary: a :func:`live_summary_row` per trace and Reuse mode
    (``results[trace, mode]``: the run's frame, or its repetitions), each against
    :func:`live_baseline`."""
    rows = [live_summary_row(results[t, live_baseline(m, modes)], results[t, m], workload, t, m,
                             baseline=live_baseline(m, modes), step_seconds=step_seconds,
                             root=root)
            for t in traces for m in modes[1:] if LIVE_MODES[m].shares]
    return pd.DataFrame(rows)

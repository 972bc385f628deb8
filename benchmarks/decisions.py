"""The comparisons that decide a target, as plain data (issue 33, item 3): ``decide.py``'s registry.

Each :class:`Comparison` names the target it decides, its arms (live modes), the workload and
trace, the run parameters, the statistic and its raw file under ``docs/bench/``. Nothing runs
at import: :data:`COMPARISONS` is a literal, :func:`get` looks a name up, and the estimates are
arithmetic on the parameters, so ``decide.py --list`` can check the whole set's time budget
(issue 33: under 3 hours on the 2-core machine) before anything is run.

Two kinds:

- ``trace``: ``decide.py`` runs the trace once per arm and repetition, ``A B A B ...``, each run
  in a fresh process and JVM, and decides per step on the paired differences
  (:func:`reuse.runtime.spread.paired`) and over whole runs (``windows``).
- ``cell``: one window at a fixed load (the SEQ peak at a rate), measured by an existing script
  (``runtime_rates.py``, ``runtime_seq_peak.py``) whose ``--repeat`` already runs the arms
  interleaved in fresh processes; ``decide.py`` runs it once and decides on its runs paired by
  repetition, one "step" per rate.

The shortened parameters (trace steps on the shared query) and why the statistic does not
change are in ``decide.py``'s module docstring; each entry's ``shortened`` says what it changes
against the command that recorded the figure (``docs/benchmark-plan.md``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["COMPARISONS", "Comparison", "JVM_START_S", "get", "total_seconds"]

#: seconds to start a fresh Python process, its SparkSession and JVM (the formula of
#: ``--list``; the recorded runs' start-up, ``docs/benchmark-plan.md``)
JVM_START_S = 15.0

#: Figure 3's arms and comparison: Reuse against Default, both on the shared query
_INPLACE = ("default-inplace", "reuse-inplace")
_INPLACE_PAIR = (("reuse-inplace", "default-inplace"),)


@dataclass(frozen=True)
class Comparison:
    """One registered comparison. ``pairs`` are ``(arm, baseline)``: the paired difference is
    ``arm - baseline``, so "<arm> lower" meets a "below the baseline" target.

    Trace parameters: ``workload``, ``trace``, ``dags`` (a seeded subset, 0 for every DAG),
    ``steps`` (the trace's length, for the estimate; a test checks it against the trace),
    ``step_s``, ``warmup_s`` (sources only, not measured), ``rate`` (events/s per source),
    ``trigger_s``; ``after_s`` is the drain, the output check against the reference and the
    teardown after the last step (from the recorded runs). ``windows``: the whole-run
    statistics, from ``peak`` (the step with most Default tasks and the next, averaged, as
    ``runtime_trace.py`` takes it), ``mean`` (every step) and ``removals`` (the removal steps).

    Cell parameters: ``script`` and ``args`` (without ``--repeat`` and the output flag, which
    ``decide.py`` adds), ``out_flag``, ``cells_per_rep`` (runs per repetition), ``run_s`` (one
    run, as ``docs/benchmark-plan.md`` estimates it from the recorded runs) and ``fixed_s``
    (once per invocation: the floor, about a minute).
    """

    name: str
    issue: int
    target: str
    kind: str
    arms: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    workload: str
    statistic: str
    raw: str
    shortened: str
    trace: str = "seq"
    dags: int = 0
    steps: int = 0
    step_s: float = 0.0
    warmup_s: float = 10.0
    rate: float = 10.0
    trigger_s: float = 2.0
    after_s: float = 30.0
    windows: tuple[str, ...] = ("peak", "mean")
    script: str = ""
    args: tuple[str, ...] = ()
    out_flag: str = "--json"
    cells_per_rep: int = 0
    run_s: float = 0.0
    fixed_s: float = 0.0

    @property
    def runs_per_rep(self) -> int:
        return len(self.arms) if self.kind == "trace" else self.cells_per_rep

    @property
    def seconds_per_run(self) -> float:
        """A trace run: JVM start + warm-up + steps x step length + drain and check."""
        if self.kind == "trace":
            return JVM_START_S + self.warmup_s + self.steps * self.step_s + self.after_s
        return self.run_s

    def seconds(self, reps: int = 3) -> float:
        """The estimated wall time of ``decide.py NAME --reps reps``."""
        return reps * self.runs_per_rep * self.seconds_per_run + self.fixed_s

    def formula(self, reps: int = 3) -> str:
        """The estimate, spelled out (``--list``)."""
        if self.kind == "trace":
            per = (f"{JVM_START_S:g} s JVM + {self.warmup_s:g} s warm-up + {self.steps} x "
                   f"{self.step_s:g} s + {self.after_s:g} s drain and check")
        else:
            per = f"{self.run_s:g} s a run, recorded"
        fixed = f" + {self.fixed_s:g} s once" if self.fixed_s else ""
        return f"{reps} reps x {self.runs_per_rep} runs x ({per}){fixed}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_SHARED_STEPS = ("steps {old} s -> 8 s (4 triggers): on the shared query an op takes under "
                 "0.02 s and a step's cores equal its steady second half within 0.008 cores "
                 "(medians, docs/live/*.csv), so a step's cores are the deployed set's steady "
                 "rate whatever its length; fresh JVM per run, A B A B")
_KEPT_PARTIAL = ("nothing: on the query-per-DAG engine a submit or hand-over starts a query "
                 "(seconds of CPU) that a step's cores spread over its length, so a shorter "
                 "step would change the statistic")
_KEPT_CELL = ("nothing: one window per run (settle, then the window), already run A B A B "
              "in fresh JVMs by the script; no per-window data shows a shorter window "
              "measures the same")

COMPARISONS: tuple[Comparison, ...] = (
    Comparison(
        "fig3-riot", 14, "Figure 3, RIoT SEQ (every DAG, 10 events/s): Reuse's peak and mean "
        "cores below Default's, and never above at any step", "trace", _INPLACE, _INPLACE_PAIR,
        "riot", "cores", "docs/bench/decide_fig3_riot.json",
        _SHARED_STEPS.format(old=15), steps=42, step_s=8.0),
    Comparison(
        "fig3-opmw", 14, "Figure 3, OPMW SEQ (every DAG, 10 events/s): Reuse's peak and mean "
        "cores below Default's, and never above at any step", "trace", _INPLACE, _INPLACE_PAIR,
        "opmw", "cores", "docs/bench/decide_fig3_opmw.json",
        _SHARED_STEPS.format(old=15), steps=70, step_s=8.0,
        after_s=120.0),  # 229 s recorded after 70 steps of 15 s; the check scales with events
    Comparison(
        "trace-inplace-riot", 11, "8-DAG RIoT SEQ trace on the shared query: reuse-inplace "
        "never above default-inplace", "trace", _INPLACE, _INPLACE_PAIR, "riot", "cores",
        "docs/bench/decide_trace_inplace_riot.json", _SHARED_STEPS.format(old=12),
        dags=8, steps=16, step_s=8.0),
    Comparison(
        "trace-policy-riot", 4, "8-DAG RIoT SEQ trace per merge policy: Reuse never above "
        "Default at any step, its core saving; lazy unmerge against stop over the removals",
        "trace", ("default-shared", "reuse", "reuse-relaunch", "reuse-relaunch-lazy"),
        (("reuse", "default-shared"), ("reuse-relaunch", "default-shared"),
         ("reuse-relaunch-lazy", "default-shared"), ("reuse-relaunch-lazy", "reuse-relaunch")),
        "riot", "cores", "docs/bench/decide_trace_policy_riot.json", _KEPT_PARTIAL,
        dags=8, steps=16, step_s=15.0, windows=("peak", "mean", "removals")),
    Comparison(
        "trace-lazy-opmw", 4, "8-DAG OPMW SEQ trace, lazy unmerge: never above Default at any "
        "step; lazy against stop over the removals", "trace",
        ("default-shared", "reuse-relaunch", "reuse-relaunch-lazy"),
        (("reuse-relaunch", "default-shared"), ("reuse-relaunch-lazy", "default-shared"),
         ("reuse-relaunch-lazy", "reuse-relaunch")),
        "opmw", "cores", "docs/bench/decide_trace_lazy_opmw.json", _KEPT_PARTIAL,
        dags=8, steps=16, step_s=15.0, after_s=85.0, windows=("peak", "mean", "removals")),
    Comparison(
        "rates-riot-inplace", 11, "RIoT SEQ peak on the shared query at 10, 100, 300/s: "
        "cores saved at least 0.9x the work saved, reuse-inplace at most 2x the floor; the "
        "cost of k-safety (K=1, U=2 and U=1) at 100/s", "cell",
        ("default-inplace", "reuse-inplace", "reuse-inplace+k1u2", "reuse-inplace+k1u1"),
        (("reuse-inplace", "default-inplace"), ("reuse-inplace+k1u2", "reuse-inplace"),
         ("reuse-inplace+k1u1", "reuse-inplace")),
        "riot", "cores", "docs/bench/decide_rates_riot_inplace.json", _KEPT_CELL,
        script="benchmarks/runtime_rates.py",
        args=("--workload", "riot", "--rates", "10,100,300", "--modes",
              "default-inplace,reuse-inplace,reuse-inplace+k1u2,reuse-inplace+k1u1", "--skip",
              "reuse-inplace+k1u2@10,reuse-inplace+k1u1@10,reuse-inplace+k1u2@300,"
              "reuse-inplace+k1u1@300", "--compare",
              "reuse-inplace+k1u2:reuse-inplace,reuse-inplace+k1u1:reuse-inplace",
              "--settle", "20", "--window", "60"),
        cells_per_rep=8, run_s=90.0, fixed_s=60.0),
    Comparison(
        "rates-riot-floor", 11, "reuse-inplace at most 2x the floor at 250, 500 and 750/s "
        "(RIoT SEQ peak; against the floor, so one arm)", "cell", ("reuse-inplace",), (),
        "riot", "cores / floor", "docs/bench/decide_rates_riot_floor.json", _KEPT_CELL,
        script="benchmarks/runtime_rates.py",
        args=("--workload", "riot", "--rates", "250,500,750", "--modes", "reuse-inplace",
              "--settle", "20", "--window", "60"),
        cells_per_rep=3, run_s=90.0, fixed_s=60.0),
    Comparison(
        "rates-opmw-inplace", 11, "OPMW SEQ peak on the shared query at 10 and 30/s: cores "
        "saved against the work saved, x floor", "cell", _INPLACE, _INPLACE_PAIR, "opmw",
        "cores", "docs/bench/decide_rates_opmw_inplace.json", _KEPT_CELL,
        script="benchmarks/runtime_rates.py",
        args=("--workload", "opmw", "--rates", "10,30", "--modes",
              "default-inplace,reuse-inplace", "--settle", "15", "--window", "60"),
        cells_per_rep=4, run_s=90.0, fixed_s=60.0),
    Comparison(
        "rates-partial-riot", 12, "the paper's enactment at the RIoT SEQ peak, 100 and 300/s: "
        "Reuse below Default (own sources, and shared), saving at least half the work saved",
        "cell", ("default", "default-shared", "reuse"),
        (("reuse", "default"), ("reuse", "default-shared")), "riot", "cores",
        "docs/bench/decide_rates_partial_riot.json", _KEPT_CELL,
        script="benchmarks/runtime_rates.py",
        args=("--workload", "riot", "--rates", "100,300", "--modes", "default,default-shared,reuse",
              "--trigger", "10", "--settle", "30", "--window", "120", "--ramp-step", "0.5"),
        cells_per_rep=6, run_s=237.0, fixed_s=60.0),
    Comparison(
        "rates-partial-opmw", 12, "the paper's enactment at the OPMW SEQ peak, 10/s: Reuse "
        "below Default (own sources, and shared)", "cell", ("default", "default-shared", "reuse"),
        (("reuse", "default"), ("reuse", "default-shared")), "opmw", "cores",
        "docs/bench/decide_rates_partial_opmw.json", _KEPT_CELL,
        script="benchmarks/runtime_rates.py",
        args=("--workload", "opmw", "--rates", "10", "--modes", "default,default-shared,reuse",
              "--trigger", "10", "--settle", "30", "--window", "120", "--ramp-step", "0.5"),
        # run_s measured: 9 runs in 63 min (decide_rates_partial_opmw.json, 2026-11-29; the
        # ramp starts up to 70 queries one after another); estimated 267 s before
        cells_per_rep=3, run_s=413.0, fixed_s=60.0),
    Comparison(
        "seq-peak-riot", 4, "RIoT SEQ peak, 200/s, 20 s trigger: core saving at least 90% of "
        "the task saving (the paper's way and relaunch)", "cell",
        ("default-shared", "reuse", "reuse-relaunch"),
        (("reuse", "default-shared"), ("reuse-relaunch", "default-shared")), "riot", "cores",
        "docs/bench/decide_seq_peak_riot.json", _KEPT_CELL,
        script="benchmarks/runtime_seq_peak.py",
        args=("--workload", "riot", "--rate", "200", "--trigger", "20", "--order",
              "default-shared,reuse,reuse-relaunch", "--no-idle"),
        out_flag="--out", cells_per_rep=3, run_s=200.0),
    Comparison(
        "seq-peak-opmw", 4, "OPMW SEQ peak, 20/s: core saving at least 90% of the task saving "
        "(the paper's way and relaunch)", "cell", ("default-shared", "reuse", "reuse-relaunch"),
        (("reuse", "default-shared"), ("reuse-relaunch", "default-shared")), "opmw", "cores",
        "docs/bench/decide_seq_peak_opmw.json", _KEPT_CELL,
        script="benchmarks/runtime_seq_peak.py",
        args=("--workload", "opmw", "--rate", "20", "--pi-iterations", "1600", "--order",
              "default-shared,reuse,reuse-relaunch", "--no-idle"),
        out_flag="--out", cells_per_rep=3, run_s=227.0),
)


def get(name: str) -> Comparison:
    """The comparison called ``name``, or a ``KeyError`` naming the known ones."""
    for c in COMPARISONS:
        if c.name == name:
            return c
    raise KeyError(f"unknown comparison {name!r} (known: {', '.join(c.name for c in COMPARISONS)})")


def total_seconds(reps: int = 3) -> float:
    """The whole set's estimated wall time at ``reps`` repetitions."""
    return sum(c.seconds(reps) for c in COMPARISONS)
